// Dawn's and the Vulkan loader's own messages, routed through wgfuse: hidden by default, shown on
// stderr as "wgfuse: dawn: ..." with `wgfuse -v`. On a machine without a GPU, probing for one makes
// Dawn print "vkCreateInstance: Found no drivers!" and VK_ERROR_INCOMPATIBLE_DRIVER: expected there,
// and noise to a user who only needs to know that the CPU adapter is used.
#pragma once

#include <string>
#include <string_view>

#include "webgpu/webgpu_abi.h"

namespace wgfuse::webgpu {

void set_verbose(bool on);
bool verbose();

// One message of Dawn or the loader: printed when verbose, dropped otherwise.
void library_message(std::string_view text);

// Dawn's messages about a device (warnings, deprecations) go to library_message().
void route_device_logging(WGPUDevice device);

// Dawn writes what it meets while discovering adapters (and the Vulkan loader its own errors)
// straight to file descriptor 2, with no callback to route them: while an object of this class
// lives, fd 2 goes to a temporary file; its destructor restores fd 2 and passes each captured line
// to library_message(). One capture at a time per process (others wait).
class CapturedStderr {
 public:
  CapturedStderr();
  ~CapturedStderr();
  CapturedStderr(const CapturedStderr&) = delete;
  CapturedStderr& operator=(const CapturedStderr&) = delete;

 private:
  int saved_fd_ = -1;
  int capture_fd_ = -1;
};

}  // namespace wgfuse::webgpu
