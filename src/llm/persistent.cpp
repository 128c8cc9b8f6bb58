#include "llm/persistent.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gpu/recorder.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

using gpu::BufferUsage;

// Dispatches `probe` (values null) or `exchange` once over fresh buffers (the arrival count at
// zero) and returns how many workgroups met every barrier in time.
uint32_t run_grid(gpu::Context& ctx, uint32_t workgroups, uint32_t wg, uint32_t stages, uint32_t spin_limit,
                  const gpu::Buffer* values) {
  const std::string entry = values ? "exchange" : "probe";
  auto& k = ctx.kernel(gpu::embedded_kernel("llm_persistent", entry,
                                            {{"WG", wg}, {"SPIN_LIMIT", spin_limit}, {"STAGES", stages}}));
  const std::vector<uint32_t> zeros(std::max<uint32_t>(workgroups, 4), 0);
  gpu::Buffer arrivals =
      ctx.upload<uint32_t>(std::span(zeros).first(4), BufferUsage::StorageIO, "grid.arrivals");
  gpu::Buffer in_time = ctx.upload<uint32_t>(zeros, BufferUsage::StorageIO, "grid.in_time");
  gpu::Recorder rec(ctx);
  rec.dispatch(k, values ? ctx.bind(k, {arrivals, in_time, *values}) : ctx.bind(k, {arrivals, in_time}),
               workgroups);
  rec.submit();
  const auto met = ctx.read<uint32_t>(in_time, 0, workgroups);
  return uint32_t(std::count(met.begin(), met.end(), 1u));
}

}  // namespace

GridSyncCheck check_grid_sync(gpu::Context& ctx, uint32_t workgroups, uint32_t wg, uint32_t stages,
                              uint32_t spin_limit) {
  if (workgroups == 0 || workgroups > ctx.limits().max_compute_workgroups_per_dimension)
    throw Error("grid sync check: " + std::to_string(workgroups) +
                " workgroups, expected 1 .. maxComputeWorkgroupsPerDimension (" +
                std::to_string(ctx.limits().max_compute_workgroups_per_dimension) + ")");
  GridSyncCheck r{.workgroups = workgroups};
  const uint32_t met = run_grid(ctx, workgroups, wg, stages, spin_limit, nullptr);
  r.co_resident = met == workgroups;
  if (!r.co_resident) {
    r.message = std::to_string(workgroups - met) + " of " + std::to_string(workgroups) +
                " workgroups waited " + std::to_string(spin_limit) +
                " atomic loads at a grid barrier without seeing all arrive: they are not co-resident "
                "on this device";
    return r;
  }

  // Stage 0 random, later stages poisoned with NaN: a stale read shows as a wrong value.
  const uint32_t n = workgroups * wg;
  std::vector<float> values(size_t(stages + 1) * n, NAN);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (uint32_t i = 0; i < n; ++i) values[i] = dist(rng);
  gpu::Buffer buf = ctx.upload<float>(values, BufferUsage::StorageIO, "grid.values");
  const uint32_t exchanged = run_grid(ctx, workgroups, wg, stages, spin_limit, &buf);
  if (exchanged != workgroups) {
    r.message = std::to_string(workgroups - exchanged) + " of " + std::to_string(workgroups) +
                " workgroups timed out at a grid barrier of the exchange after the probe passed";
    return r;
  }
  std::vector<double> want(values.begin(), values.begin() + n), next(n);
  for (uint32_t s = 0; s < stages; ++s) {
    for (uint32_t i = 0; i < n; ++i)
      next[i] = 0.25 * want[i] + 0.25 * want[(i + wg) % n] + 0.5 * want[(uint64_t(i) * 7 + s + 1) % n];
    std::swap(want, next);
  }
  const auto got = ctx.read<float>(buf, uint64_t(stages) * n, n);
  uint32_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (!(std::abs(double(got[i]) - want[i]) <= 1e-5)) ++wrong;  // NaN counts as wrong
  r.visible = wrong == 0;
  if (!r.visible)
    r.message = std::to_string(wrong) + " of " + std::to_string(n) +
                " values read across grid barriers differ from the reference: writes of one workgroup "
                "were not visible to another";
  return r;
}

}  // namespace wgfuse::llm
