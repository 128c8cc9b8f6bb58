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

// arrayLength(&slots) in the module of `spec` for a binding of n slots of fuse::slot_bytes(spec): n only when
// the shader's Slot stride is exactly that (a larger stride gives fewer, a smaller one more). A probe entry
// appended to the module reads it.
inline uint32_t slots_that_fit(const fuse::SimDefinition& spec, uint32_t n) {
  auto& ctx = context();
  const std::string probe = R"(
@compute @workgroup_size(1)
fn state_size_probe() {
  use_all_bindings();
  fitness[0] = f32(arrayLength(&slots));
}
)";
  const fuse::SimParams params{.pop = 1, .steps = 1, .genome_len = 1};
  auto params_buf = ctx.upload<fuse::SimParams>(std::span<const fuse::SimParams>(&params, 1),
                                                gpu::BufferUsage::Uniform, "probe.params");
  const float one = 1;
  auto genomes = ctx.upload<float>(std::span<const float>(&one, 1), gpu::BufferUsage::Storage, "probe.g");
  const float record[4] = {1, 2, 3, 4};  // sim_data holds vec4s
  auto data = ctx.upload<float>(std::span<const float>(record), gpu::BufferUsage::Storage, "probe.d");
  auto out = ctx.buffer(4, gpu::BufferUsage::StorageIO, "probe.out");
  auto slots = ctx.buffer(uint64_t(n) * fuse::slot_bytes(spec), gpu::BufferUsage::StorageIO, "probe.slots");
  auto& k = ctx.kernel({"state_probe." + spec.name,
                        fuse::generated_source(spec) + probe,
                        "state_size_probe",
                        {{"WORKGROUP_SIZE", double(spec.workgroup_size)}}});
  gpu::Recorder rec(ctx);
  rec.dispatch(k, ctx.bind(k, {params_buf, genomes, data, out, slots}), 1);
  rec.submit();
  return uint32_t(ctx.read<float>(out, 0, 1)[0]);
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
