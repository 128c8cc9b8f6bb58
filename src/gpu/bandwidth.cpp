#include "gpu/bandwidth.h"

#include <algorithm>
#include <vector>

#include "gpu/kernel.h"
#include "gpu/recorder.h"
#include "util/clock.h"
#include "util/stats.h"

namespace wgfuse::gpu {

std::pair<uint32_t, uint32_t> grid_2d(uint64_t groups) {
  uint64_t x = std::min<uint64_t>(groups, 32768);
  return {uint32_t(x), uint32_t((groups + x - 1) / x)};
}

CopyBandwidth measure_copy_bandwidth(Context& ctx, Profiler& prof, uint64_t bytes, uint32_t reps,
                                     bool commands) {
  bytes = bytes / 16 * 16;
  Buffer src = ctx.buffer(bytes, BufferUsage::StorageIO, "copy.src");
  Buffer dst = ctx.buffer(bytes, BufferUsage::StorageIO, "copy.dst");
  auto& k = ctx.kernel(embedded_kernel("elementwise", "copy_vec4"));
  auto group = ctx.bind(k, {src, dst});
  const auto g = grid_2d((bytes / 16 + 255) / 256);
  auto kernel_run = [&](uint32_t m) {  // returns µs per copy
    auto t0 = SteadyClock::now();
    Recorder r(ctx);
    r.time_next_pass(prof);
    for (uint32_t i = 0; i < m; ++i) r.dispatch(k, group, g.first, g.second);
    prof.resolve(r);
    r.submit();
    ctx.wait();
    double wall = 1e3 * ms_since(t0);
    auto ns = prof.read_ns();
    return (ns.empty() ? wall : ns[0] / 1000.0) / m;
  };
  auto command_run = [&](uint32_t m) {  // µs per copy
    auto t0 = SteadyClock::now();
    Recorder r(ctx);
    for (uint32_t i = 0; i < m; ++i) r.copy(src, 0, dst, 0, bytes);
    r.submit();
    ctx.wait();
    return 1e3 * ms_since(t0) / m;
  };
  Profiler span(ctx, 2);
  auto command_gpu_run = [&](uint32_t m) {  // µs per copy, < 0 without timestamps
    Recorder r(ctx);
    r.time_next_pass(span);
    r.dispatch(k, group, 1);
    for (uint32_t i = 0; i < m; ++i) r.copy(src, 0, dst, 0, bytes);
    r.time_next_pass(span);
    r.dispatch(k, group, 1);
    span.resolve(r);
    r.submit();
    ctx.wait();
    auto t = span.read_ticks();  // begin, end of pass 1; begin, end of pass 2
    return t.size() == 4 && t[2] > t[1] ? double(t[2] - t[1]) / 1000.0 / m : -1.0;
  };
  kernel_run(1);
  command_run(1);
  // ~20 ms of copies per sample.
  const uint32_t m = uint32_t(std::clamp(20'000.0 / std::max(command_run(1), 1.0), 2.0, 256.0));
  std::vector<double> by_kernel, by_command, by_command_gpu;
  for (uint32_t i = 0; i < reps; ++i) {
    by_kernel.push_back(2.0 * double(bytes) / (kernel_run(m) * 1e3));
    if (!commands) continue;
    by_command.push_back(2.0 * double(bytes) / (command_run(m) * 1e3));
    if (double us = command_gpu_run(m); us > 0) by_command_gpu.push_back(2.0 * double(bytes) / (us * 1e3));
  }
  return {summarize(by_kernel).median, by_command.empty() ? 0.0 : summarize(by_command).median,
          by_command_gpu.empty() ? -1.0 : summarize(by_command_gpu).median};
}

double copy_kernel_bandwidth_gbs(Context& ctx, uint64_t bytes, uint32_t reps) {
  Profiler prof(ctx, 1);
  return measure_copy_bandwidth(ctx, prof, std::min(bytes, ctx.limits().max_buffer_size), reps, false)
      .kernel_gbs;
}

}  // namespace wgfuse::gpu
