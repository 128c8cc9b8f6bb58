#include "gpu/recorder.h"

#include "gpu/context.h"
#include "gpu/profiler.h"

namespace wgfuse::gpu {

using webgpu::api;
using webgpu::Handle;

Recorder::Recorder(Context& ctx) : ctx_(&ctx) {}

Recorder::~Recorder() {
  if (pass_) api().ComputePassEncoderEnd(pass_.get());
}

void Recorder::begin_pass() {
  if (!encoder_)
    encoder_ = Handle<WGPUCommandEncoder>(api().DeviceCreateCommandEncoder(ctx_->raw_device(), nullptr));
  WGPUComputePassDescriptor d{};
  WGPUPassTimestampWrites tw{};
  if (timed_) {
    if (timed_->next_slot(tw.beginningOfPassWriteIndex, tw.endOfPassWriteIndex)) {
      tw.querySet = timed_->raw_query_set();
      d.timestampWrites = &tw;
    }
    timed_ = nullptr;
  }
  pass_ = Handle<WGPUComputePassEncoder>(api().CommandEncoderBeginComputePass(encoder_.get(), &d));
  current_pipeline_ = nullptr;
  current_group_ = nullptr;
}

void Recorder::dispatch(const Kernel& kernel, const BindGroup& group, uint32_t x, uint32_t y, uint32_t z) {
  if (!pass_) begin_pass();
  WGPUComputePassEncoder p = pass_.get();
  if (kernel.raw_pipeline() != current_pipeline_) {
    api().ComputePassEncoderSetPipeline(p, kernel.raw_pipeline());
    current_pipeline_ = kernel.raw_pipeline();
    current_group_ = nullptr;  // a new pipeline's layout needs its group set again
  }
  if (group.raw() != current_group_) {
    api().ComputePassEncoderSetBindGroup(p, 0, group.raw(), 0, nullptr);
    current_group_ = group.raw();
  }
  api().ComputePassEncoderDispatchWorkgroups(p, x, y, z);
  ++dispatches_;
}

void Recorder::end_pass() {
  if (!pass_) return;
  api().ComputePassEncoderEnd(pass_.get());
  pass_.reset();
}

void Recorder::time_next_pass(Profiler& profiler) {
  end_pass();
  timed_ = &profiler;
}

WGPUCommandEncoder Recorder::raw_encoder_outside_pass() {
  end_pass();
  if (!encoder_)
    encoder_ = Handle<WGPUCommandEncoder>(api().DeviceCreateCommandEncoder(ctx_->raw_device(), nullptr));
  return encoder_.get();
}

void Recorder::copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset,
                    uint64_t bytes) {
  api().CommandEncoderCopyBufferToBuffer(raw_encoder_outside_pass(), src.raw(), src_offset, dst.raw(),
                                         dst_offset, bytes);
}

void Recorder::submit() {
  end_pass();
  if (!encoder_) return;
  Handle<WGPUCommandBuffer> cb(api().CommandEncoderFinish(encoder_.get(), nullptr));
  encoder_.reset();
  ctx_->submit(cb.get());
  ++submits_;
}

}  // namespace wgfuse::gpu
