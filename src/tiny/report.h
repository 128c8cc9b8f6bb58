// `wgfuse tiny`: each strategy timed (median of repeats after a warm-up), its GPU time by
// timestamps, dispatches and submits per generated token, speedups of single over the others,
// --check against the reference; a table on stdout and JSON. The sweep runs a grid of sizes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu/context.h"
#include "tiny/runner.h"
#include "tiny/tiny_model.h"

namespace wgfuse::tiny {

struct TinyOptions {
  std::vector<Strategy> strategies{std::begin(kStrategies), std::end(kStrategies)};
  std::string prompt = "Hello";
  uint32_t tokens = 64;
  uint32_t sequences = 1;
  uint32_t seed = 1;
  uint32_t repeats = 3;  // timed runs per strategy, after one warm-up (the checked run)
  bool check = false;
  bool print = true;  // the table on stdout
  Tuning tuning;      // the fused strategies' threads and lanes
  // The sweep's grid (run_sweep).
  std::vector<uint32_t> sweep_widths{32, 64, 128, 256, 512, 1024};
  std::vector<uint32_t> sweep_layers{1, 2, 4};
  std::vector<uint32_t> sweep_sequences{1, 64, 1024, 16384};
};

// Runs every strategy of `o` on `m`; prints the table when o.print. The JSON has "config",
// "strategies" (one object each), "speedups" and, with --check, "check": {"pass": ...}.
nlohmann::json run_report(gpu::Context& ctx, const TinyModel& m, const TinyOptions& o);

// The sweep: o.sweep_widths x o.sweep_layers x o.sweep_sequences, random weights from o.seed.
// Up to d = 256: heads and kv heads from `shape`, 16,384 sequences only at d = 64. Wider (the
// crossover with real widths): head_dim 128, one layer, one sequence, at most 8 tokens (one
// workgroup streams every weight once per position, so each row costs seconds at d = 3,072). A
// configuration the device cannot hold is listed with the reason. JSON: {"sweep": [{"d", "layers",
// "heads", "sequences", "tokens", "threads", "strategies" | "skipped"}]}.
nlohmann::json run_sweep(gpu::Context& ctx, const Shape& shape, const TinyOptions& o);

}  // namespace wgfuse::tiny
