// Step: one resolved dispatch (pipeline, bind group, grid), built once and recorded for every
// token. The model's decode step and the sampler are lists of them.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "gpu/buffer.h"
#include "gpu/kernel.h"
#include "gpu/recorder.h"

namespace wgfuse::llm {

struct Step {
  const gpu::Kernel* kernel;
  gpu::BindGroup group;
  uint32_t x, y = 1, z = 1;
  // For `generate --profile`: what the step is, and the bytes it must move per call (weights and
  // activations read and written), plus per cached position for attention over the KV cache.
  std::string_view name = {};
  uint64_t bytes = 0, bytes_per_position = 0;
};

inline void record(gpu::Recorder& rec, std::span<const Step> steps) {
  for (const Step& s : steps) rec.dispatch(*s.kernel, s.group, s.x, s.y, s.z);
}

}  // namespace wgfuse::llm
