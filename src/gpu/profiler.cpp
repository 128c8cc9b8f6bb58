#include "gpu/profiler.h"

#include "gpu/context.h"
#include "gpu/recorder.h"

namespace wgfuse::gpu {

using webgpu::api;
using webgpu::Handle;

Profiler::Profiler(Context& ctx, uint32_t max_passes) : ctx_(&ctx), capacity_(max_passes) {
  if (!ctx.features().timestamp_query || max_passes == 0) return;
  WGPUQuerySetDescriptor d{};
  d.type = WGPUQueryType_Timestamp;
  d.count = 2 * max_passes;
  ctx.scoped("creating a timestamp query set",
             [&] { queries_ = Handle<WGPUQuerySet>(api().DeviceCreateQuerySet(ctx.raw_device(), &d)); });
  resolved_ =
      ctx.buffer(uint64_t(d.count) * 8, BufferUsage::QueryResolve | BufferUsage::CopySrc, "timestamps");
}

bool Profiler::next_slot(uint32_t& begin_index, uint32_t& end_index) {
  if (!enabled() || used_ >= capacity_) return false;
  begin_index = 2 * used_;
  end_index = 2 * used_ + 1;
  ++used_;
  return true;
}

void Profiler::resolve(Recorder& rec) {
  if (!enabled() || used_ == 0) return;
  api().CommandEncoderResolveQuerySet(rec.raw_encoder_outside_pass(), queries_.get(), 0, 2 * used_,
                                      resolved_.raw(), 0);
}

std::vector<uint64_t> Profiler::read_ticks() {
  if (!enabled() || used_ == 0) return {};
  auto ticks = ctx_->read<uint64_t>(resolved_, 0, 2 * used_);
  used_ = 0;
  return ticks;
}

std::vector<double> Profiler::pass_ns(std::span<const uint64_t> ticks) {
  std::vector<double> out;
  for (size_t k = 0; k + 1 < ticks.size(); k += 2)
    out.push_back(ticks[k + 1] >= ticks[k] ? double(ticks[k + 1] - ticks[k]) : 0.0);
  return out;
}

std::vector<double> Profiler::read_ns() {
  return pass_ns(read_ticks());
}

uint64_t Profiler::resolve_to(Recorder& rec, const Buffer& staging, uint64_t offset) {
  if (!enabled() || used_ == 0) return 0;
  const uint64_t bytes = 16ull * used_;
  resolve(rec);
  rec.copy(resolved_, 0, staging, offset, bytes);
  used_ = 0;
  return bytes;
}

}  // namespace wgfuse::gpu
