// The device's copy bandwidth: the roofline that kernel reports (bench, sim, the LLM's profile)
// compare their achieved bandwidth with.
#pragma once

#include <cstdint>
#include <utility>

#include "gpu/context.h"
#include "gpu/profiler.h"

namespace wgfuse::gpu {

// A 2D grid covering `groups` workgroups (one dimension holds at most 65,535).
std::pair<uint32_t, uint32_t> grid_2d(uint64_t groups);

struct CopyBandwidth {
  double kernel_gbs = 0, command_gbs = 0, command_gpu_gbs = -1;
};

// Device copy bandwidth in GB/s, counting bytes read and written, median of `reps`: (1) a vec4
// copy kernel timed by GPU timestamps (wall clock where timestamps are missing), (2)
// copyBufferToBuffer, by the wall time of enough back-to-back copies to dwarf the wait, and (3)
// the same copies by GPU timestamps: no pass can hold a copy, so they sit between two timed
// passes of one small dispatch each, and the span from the end of the first pass to the start of
// the second is theirs (with Dawn's barriers between them); -1 without timestamps. Without
// `commands`, (1) alone.
CopyBandwidth measure_copy_bandwidth(Context& ctx, Profiler& prof, uint64_t bytes, uint32_t reps,
                                     bool commands = true);

// (1) alone over `bytes` (at most the largest buffer), on a profiler of its own.
double copy_kernel_bandwidth_gbs(Context& ctx, uint64_t bytes, uint32_t reps);

}  // namespace wgfuse::gpu
