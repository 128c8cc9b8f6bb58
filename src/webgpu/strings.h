// WGPUStringView <-> std::string.
#pragma once

#include <string>
#include <string_view>

#include "webgpu/webgpu_abi.h"

namespace wgfuse::webgpu {

inline WGPUStringView sv(std::string_view s) {
  return {s.data(), s.size()};
}
inline std::string str(WGPUStringView v) {
  if (!v.data) return {};
  return v.length == WGPU_STRLEN ? std::string(v.data) : std::string(v.data, v.length);
}

}  // namespace wgfuse::webgpu
