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
};

// Runs every strategy of `o` on `m`; prints the table when o.print. The JSON has "config",
// "strategies" (one object each), "speedups" and, with --check, "check": {"pass": ...}.
nlohmann::json run_report(gpu::Context& ctx, const TinyModel& m, const TinyOptions& o);

// The sweep: d in {32, 64, 128, 256} x layers {1, 2, 4} x sequences {1, 64, 1024, and 16384 at
// d = 64}, heads and kv heads from `shape`, random weights from o.seed. A configuration the device
// cannot hold is listed with the reason. JSON: {"sweep": [{"d", "layers", "sequences",
// "strategies" | "skipped"}]}.
nlohmann::json run_sweep(gpu::Context& ctx, const Shape& shape, const TinyOptions& o);

}  // namespace wgfuse::tiny
