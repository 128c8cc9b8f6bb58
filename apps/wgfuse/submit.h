// Native results in the submission JSON of POST /api/results (docs/WEB_API.md), for
// `wgfuse bench --submit URL` and `wgfuse sim --submit URL`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bench/dispatch_bench.h"
#include "gpu/context.h"
#include "serve/kernel_index.h"

namespace wgfuse::cli {

// The embedded kernel families as GET /kernels/index.json lists them (its version is every
// result's kernel_version).
serve::KernelIndex embedded_kernel_index();

// The chain of `wgfuse bench`: fused and unfused per chain length, fused with its speedup.
nlohmann::json bench_submission_results(const bench::BenchReport& report);
// `wgfuse sim --check --json`'s report: each timed mode, with its speedup over perstep.
nlohmann::json sim_submission_results(const nlohmann::json& sim_report);

// Wraps `results` with the adapter, OS and version, POSTs them, prints the id.
void submit_native(const std::string& url, const gpu::Context& ctx, nlohmann::json results);

}  // namespace wgfuse::cli
