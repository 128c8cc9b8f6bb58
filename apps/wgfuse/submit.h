// Native results in the submission JSON of POST /api/results (docs/WEB_API.md), for
// `wgfuse bench --submit URL` and `wgfuse sim --submit URL`.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/dispatch_bench.h"
#include "gpu/context.h"

namespace wgfuse::cli {

// wgfuse-serve beside this binary (the server and the --submit client); throws Error saying how to
// get it when it is missing.
std::filesystem::path serve_tool();

// The chain of `wgfuse bench`: fused and unfused per chain length, fused with its speedup.
nlohmann::json bench_submission_results(const bench::BenchReport& report);
// `wgfuse sim --check --json`'s report: each timed mode, with its speedup over perstep.
// `from_file`: the workload came from a workload file, not a built-in: its results go to suite
// "sim-file", apart from the built-ins' figures (a file may reuse a built-in's name).
nlohmann::json sim_submission_results(const nlohmann::json& sim_report, bool from_file);

// Wraps `results` with the adapter, OS and version and POSTs them through `wgfuse-serve --submit`
// (which adds each result's kernel_version), prints the id.
void submit_native(const std::string& url, const gpu::Context& ctx, nlohmann::json results);

}  // namespace wgfuse::cli
