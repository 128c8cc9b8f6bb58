// Profiler: GPU timestamps (timestamp-query) at the start and end of compute passes. Where the
// device lacks the feature, enabled() is false, timed passes are plain passes and read_ns()
// returns nothing: callers report "n/a" rather than fail.
//
// WGPU types in this header: raw_query_set() (for the Recorder) and the members.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gpu/buffer.h"
#include "webgpu/handle.h"

namespace wgfuse::gpu {

class Context;
class Recorder;

class Profiler {
 public:
  Profiler(Context& ctx, uint32_t max_passes);
  bool enabled() const { return static_cast<bool>(queries_); }

  // Called by Recorder when it opens a timed pass: the two query indices for it.
  bool next_slot(uint32_t& begin_index, uint32_t& end_index);
  WGPUQuerySet raw_query_set() const { return queries_.get(); }

  // Records the resolve of all timed passes so far into `rec`'s command buffer; submit after.
  void resolve(Recorder& rec);
  // GPU time of each timed pass, in nanoseconds (waits for submitted work). Resets the slots.
  std::vector<double> read_ns();
  // For several command buffers in flight: records the resolve and a copy of the raw timestamps
  // (2 x 8 bytes per timed pass) into `staging` (MapRead | CopyDst) at `offset`, to be read with
  // Context::map_read once this command buffer is done (read_ns would wait for everything
  // submitted). Resets the slots; returns the bytes copied (0 where nothing was timed).
  uint64_t resolve_to(Recorder& rec, const Buffer& staging, uint64_t offset);
  // The durations (ns) of the timed passes from their raw timestamps.
  static std::vector<double> pass_ns(std::span<const uint64_t> ticks);
  // The raw timestamps (ns) instead: begin and end of each timed pass, in order, for spans between
  // passes (e.g. copies, which no pass can hold). Waits for submitted work; resets the slots.
  std::vector<uint64_t> read_ticks();

 private:
  Context* ctx_;
  uint32_t capacity_;
  uint32_t used_ = 0;
  webgpu::Handle<WGPUQuerySet> queries_;
  Buffer resolved_;
};

}  // namespace wgfuse::gpu
