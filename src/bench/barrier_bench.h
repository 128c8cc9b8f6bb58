// The grid-barrier characterization (kernels/bench_barrier.wgsl): what one grid barrier costs
// inside a dispatch, for several designs and grid sizes, against a dispatch boundary of the same
// grid. It answers whether a persistent kernel's stages can be cheaper than dispatches on this
// adapter, and where the cost of a WGSL grid barrier goes.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu/context.h"
#include "util/stats.h"

namespace wgfuse::bench {

struct BarrierConfig {
  std::vector<uint32_t> workgroups;  // grids to try, each probed for co-residency first
  uint32_t workgroup_size = 256;
  uint32_t barriers = 256;  // K: barriers in the timed dispatch (dependent dispatches for "dispatch")
  uint32_t reads = 4;       // exchange: words each invocation reads across each barrier
  uint32_t reps = 9;
  uint32_t probe_spin =
      1u << 16;  // atomic loads a probe's waiter spends before calling a grid not co-resident
  static BarrierConfig quick_config();  // CI scale: grids of 1 and 2, K = 8
  static BarrierConfig default_for(const gpu::AdapterInfo& adapter);
};

struct BarrierResult {
  std::string design;  // counter | flags | exchange_atomic | exchange_plain | dispatch
  uint32_t workgroups = 0;
  Summary base_us;         // the dispatch without barriers (dispatch: one step)
  Summary with_us;         // with K barriers (dispatch: K + 1 steps in one pass)
  Summary per_barrier_us;  // (each sample with K - the base median) / K
  bool passed = false;     // no wait gave up, and every value read across a barrier was the one stored
  std::string failure;     // why not
};

struct BarrierReport {
  BarrierConfig config;
  std::string date_utc;
  bool gpu_timestamps = false;            // else wall clock of submit + wait
  std::vector<uint32_t> not_co_resident;  // grids the probe refused
  std::vector<BarrierResult> results;
};

BarrierReport run_barrier_bench(gpu::Context& ctx, const BarrierConfig& config,
                                const std::function<void(const std::string&)>& progress);

nlohmann::json to_json(const BarrierReport& r, const nlohmann::json& adapter);
std::string to_table(const BarrierReport& r, const gpu::AdapterInfo& adapter);

}  // namespace wgfuse::bench
