// The dispatch-overhead characterization (docs/METHODOLOGY.md): how much issuing one dispatch
// costs on this adapter, by method and variant, through wgfuse's runtime and through the bare C
// API, and what fusing an elementwise chain into one dispatch saves.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu/context.h"
#include "gpu/profiler.h"
#include "util/stats.h"

namespace wgfuse::bench {

// Mirrors `ChainParams` in kernels/elementwise.wgsl.
constexpr uint32_t kMaxChain = 16;
struct ChainParams {
  uint32_t n, first, count, pad;
  float factors[kMaxChain];
};
static_assert(sizeof(ChainParams) == 80);
static_assert(offsetof(ChainParams, first) == 4 && offsetof(ChainParams, count) == 8);
static_assert(offsetof(ChainParams, factors) == 16);

// Factor of op j of the chain: 1 + 1e-4·(j+1), as in bench/baselines/dispatch_cuda.cu.
float chain_factor(uint32_t j);

struct BenchConfig {
  bool quick = false;
  uint32_t reps = 10;              // timed repetitions per point, after one warm-up
  uint32_t max_dispatches = 4096;  // sweep 1, 2, 4, … up to this
  double point_budget_ms = 40;     // a series stops growing N once one repetition takes longer
  uint32_t small_elements = 4096;
  uint32_t large_elements = 16u << 20;  // 16M floats = 64 MiB
  uint32_t max_chain = 16;
  std::vector<std::string> only_kernels;  // empty: all of empty, small, large
  static BenchConfig quick_config();      // CI scale
  // The default suite sized for the adapter: on a CPU adapter (SwiftShader) the large kernel has
  // 1M floats, 5 repetitions and chains of 1, 2, 4, 8, 16 ops, so that it ends in minutes.
  static BenchConfig default_for(const gpu::AdapterInfo& adapter);
  bool all_chain_lengths = true;  // k = 1 .. max_chain; else powers of two
};

constexpr uint32_t kSteadyMaxN = 128;

// A fit whose R² is below this is not reported as a per-dispatch cost: its points do not lie on a
// line (typical of a CPU adapter). Every fit on the H100 (docs/RESULTS.md) has R² ≥ 0.93.
constexpr double kMinReliableR2 = 0.9;
inline bool reliable(const LinearFit& f) {
  return f.r2 >= kMinReliableR2;
}

struct Point {
  uint32_t n = 0;
  Summary total_us;  // first encode .. wait returned
  Summary issue_us;  // first encode .. last submit returned (CPU side)
  // GPU time of the same work by timestamps (median of separate timed runs, so that timestamp
  // writes and their resolve never sit inside the wall-clock samples); < 0 when not measured.
  double gpu_us = -1;
};

struct Series {
  std::string variant;  // e.g. "one_pass"
  std::string api;      // "runtime" or "raw"
  std::string description;
  std::vector<Point> points;
  LinearFit total, issue;  // slopes: µs per dispatch, over every N
  // Over N <= kSteadyMaxN only: for the first hundred or so submits of a batch the per-dispatch
  // cost is flat; past that it steps up (docs/METHODOLOGY.md), which the all-N fit mixes in.
  LinearFit total_steady, issue_steady;
  bool has_gpu = false;
  LinearFit gpu;
};

struct KernelReport {
  std::string name;  // empty | small | large
  std::string description;
  uint64_t elements = 0;
  uint64_t bytes_per_dispatch = 0;
  std::vector<Series> series;
  double achieved_bandwidth_gbs = -1;  // bytes_per_dispatch / GPU slope, when measured
};

struct ChainResult {
  uint64_t elements = 0;
  uint32_t k = 0;
  uint32_t runs_per_sample = 0;
  Summary unfused_us, fused_us;                              // per chain run, wall clock
  std::vector<double> unfused_samples_us, fused_samples_us;  // what they summarise
  double unfused_gpu_us = -1, fused_gpu_us = -1;
  uint64_t unfused_bytes = 0, fused_bytes = 0;
  double unfused_bound_us = 0, fused_bound_us = 0;  // bytes / measured copy bandwidth
  bool bitwise_equal = false;
  double max_rel_diff = 0;     // fused vs unfused
  double max_rel_err_cpu = 0;  // fused vs double-precision CPU reference
  bool passed = false;
};

// CPU cost of encoding a gpu::Plan: `dispatches` dispatches (two pipelines alternating, a bind
// group and params record each, as in an LLM decode step), encoded into a command buffer; the
// submit and the GPU work are outside the timing.
struct PlanEncodeResult {
  uint32_t dispatches = 0;
  uint32_t passes = 0;
  Summary us_per_dispatch;  // over the repetitions
};

struct BenchReport {
  BenchConfig config;
  std::string date_utc;
  double copy_bandwidth_gbs = 0;          // copy kernel (vec4), by GPU timestamps where available
  double copy_command_bandwidth_gbs = 0;  // copyBufferToBuffer, by wall clock
  // copyBufferToBuffer by GPU timestamps: the span between two timed passes with only the copies
  // between them; < 0 without timestamps.
  double copy_command_gpu_bandwidth_gbs = -1;
  std::vector<KernelReport> kernels;
  std::vector<ChainResult> chain;
  PlanEncodeResult plan_encode;
  double wall_s = 0;
};

using Progress = std::function<void(const std::string&)>;

PlanEncodeResult measure_plan_encode(gpu::Context& ctx, uint32_t dispatches, uint32_t reps);
BenchReport run_dispatch_bench(gpu::Context& ctx, const BenchConfig& config, const Progress& progress);

// The fixed costs at one size, each kernel one dispatch in its own timed pass (as a simulation's
// evaluation is timed): an empty pass, read-only kernels over `bytes` (vec4 and f32 loads), Rastrigin's
// terms over them, and a copy of them. `warm_us`: repeated on the same buffers (what L2 holds
// stays); `written_us`: right after a copy of the same size into the buffer read (as a GA
// writes the genomes before their evaluation); `cold_us`: after an untimed copy of 4x the size.
// Medians of `reps`; wall clock where the adapter has no timestamps.
struct PassTime {
  std::string name;
  double warm_us = 0, written_us = 0, cold_us = 0;
};
std::vector<PassTime> same_size_bound(gpu::Context& ctx, uint64_t bytes, uint32_t reps);

// Output. The JSON schema is docs/bench.schema.json ("wgfuse.bench/1").
nlohmann::json to_json(const BenchReport& r, const nlohmann::json& adapter);
std::string to_table(const BenchReport& r, const gpu::AdapterInfo& adapter);
std::string to_csv(const BenchReport& r);

}  // namespace wgfuse::bench
