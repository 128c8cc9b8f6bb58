// Helpers shared by the simulation tests.
#pragma once

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuse/sim_program.h"
#include "gpu/recorder.h"
#include "support.h"

namespace wgfuse::test {

// Evaluates gene-major `genomes` under `s` into a fresh NaN-filled fitness buffer: an individual
// the strategy does not write stays NaN and fails every comparison.
inline std::vector<float> evaluate(fuse::SimProgram& p, fuse::Strategy s, const std::vector<float>& genomes) {
  auto& ctx = context();
  auto g = ctx.upload<float>(genomes, gpu::BufferUsage::StorageIO, "sim_test.genomes");
  std::vector<float> nan(p.pop(), std::numeric_limits<float>::quiet_NaN());
  auto f = ctx.upload<float>(nan, gpu::BufferUsage::StorageIO, "sim_test.fitness");
  gpu::Recorder rec(ctx);
  p.evaluate(s, rec, g, f);
  rec.submit();
  return ctx.read<float>(f, 0, p.pop());
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

// `wgfuse ARGS` fails and its output names `words`.
inline void expect_cli_error(const std::string& args, const std::string& words) {
  auto r = run_wgfuse(args);
  EXPECT_NE(r.rc, 0) << args;
  EXPECT_NE(r.out.find(words), std::string::npos) << args << ":\n" << r.out;
}

}  // namespace wgfuse::test
