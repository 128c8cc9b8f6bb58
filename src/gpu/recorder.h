// Recorder: records dispatches into compute passes of one command encoder and submits on demand.
//   - "submit and wait after every dispatch":  rec.dispatch(...); rec.submit(); ctx.wait();
//   - "10,000 dispatches in one command buffer": for (...) rec.dispatch(...); rec.submit();
// Dispatches in one pass are ordered: WebGPU makes each dispatch its own usage scope, so the
// implementation inserts the barrier a dependent dispatch needs.
//
// WGPU types in this header: raw_encoder_outside_pass() (for the Profiler) and the members.
#pragma once

#include <cstdint>

#include "gpu/buffer.h"
#include "gpu/kernel.h"
#include "webgpu/handle.h"

namespace wgfuse::gpu {

class Context;
class Profiler;

class Recorder {
 public:
  explicit Recorder(Context& ctx);
  Recorder(Recorder&&) noexcept = default;
  Recorder(const Recorder&) = delete;
  ~Recorder();  // ends an open pass; unsubmitted work is dropped

  // Into the current compute pass, opened on demand. Pipeline and bind group are set only when
  // they change.
  void dispatch(const Kernel& kernel, const BindGroup& group, uint32_t x, uint32_t y = 1, uint32_t z = 1);
  // Closes the current pass; the next dispatch opens a new one.
  void end_pass();
  // The next pass opened writes GPU timestamps at its start and end into `profiler`.
  void time_next_pass(Profiler& profiler);
  void copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t bytes);
  // Finishes the command buffer, submits it, and starts recording a new one. Does not wait.
  void submit();

  uint64_t dispatches() const { return dispatches_; }
  uint64_t submits() const { return submits_; }

  // For the Profiler: the encoder being recorded (opens one if needed, ends an open pass).
  WGPUCommandEncoder raw_encoder_outside_pass();

 private:
  void begin_pass();
  Context* ctx_;
  webgpu::Handle<WGPUCommandEncoder> encoder_;
  webgpu::Handle<WGPUComputePassEncoder> pass_;
  Profiler* timed_ = nullptr;
  WGPUComputePipeline current_pipeline_ = nullptr;
  WGPUBindGroup current_group_ = nullptr;
  uint64_t dispatches_ = 0, submits_ = 0;
};

}  // namespace wgfuse::gpu
