// The `stop` strings of an OpenAI request over streamed text: the text before the first stop string
// is passed on, the stop string and anything after it are not, and text that could be the start
// of a stop string is held back until the next piece decides it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace wgfuse::serve {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // The text that may be shown now, after this piece.
  std::string push(std::string_view piece);
  // A stop string has been seen: push() returns nothing more.
  bool hit() const { return hit_; }
  // At the end of the generation: the text still held back (none after a hit).
  std::string finish();

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool hit_ = false;
};

}  // namespace wgfuse::serve
