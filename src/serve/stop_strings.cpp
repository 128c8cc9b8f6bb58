#include "serve/stop_strings.h"

#include <algorithm>
#include <utility>

namespace wgfuse::serve {

std::string StopStrings::push(std::string_view piece) {
  if (hit_) return {};
  held_ += piece;
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    hit_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold back the longest tail of the text that begins some stop string.
  size_t keep = 0;
  for (const auto& s : stops_)
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n)
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStrings::finish() {
  return std::exchange(held_, {});
}

}  // namespace wgfuse::serve
