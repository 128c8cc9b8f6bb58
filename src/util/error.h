// The one exception type of wgfuse: a message a user can act on (what failed, which file, field,
// limit or kernel, and how to fix it where we know).
#pragma once

#include <stdexcept>
#include <string>

namespace wgfuse {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace wgfuse
