// The simulation workloads of `wgfuse sim`: each is one WGSL file, the definition and a JSON header
// (its sizes, its GA settings, its CPU double-precision reference: docs/SIMULATIONS.md, "Workload
// files"). The built-ins are the embedded kernels/sim_NAME.wgsl that have a header; a user's file
// is loaded the same way (load_workload_file).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuse/sim_program.h"
#include "sim/evolution.h"

namespace wgfuse::sim {

// A reference episode: its fitness, and how close it came to a discrete decision boundary: the
// smallest gap between the chosen logit and another one, or between the state and a termination
// threshold (infinity for the continuous workloads). An f32 run can only end with a different
// step count where that margin is within its own error.
struct ReferenceRun {
  double fitness;
  double min_margin;
};

// Which start states an evaluation uses: episodes 0 .. episodes - 1 of GA generation
// `generation`, drawn from `seed`, the same for every individual (common random numbers).
struct Starts {
  uint32_t seed = 1, generation = 0, episodes = 1;
};

// What the CPU reference of one episode is given: the genome, the episode length, which start
// state (seed, generation, episode index), the individual's index in the population (for
// randomness drawn per individual), and the workload's shared data (empty where it has none).
struct Episode {
  std::span<const float> genome;
  uint32_t steps = 0, seed = 0, generation = 0, episode = 0, individual = 0;
  std::span<const float> data;
};

// A workload's shared read-only data: records of `stride` f32, one per time step (what the CPU
// reference and the baselines read), and the same records as the kernels read them (`device`,
// `device_stride` f32 per step, a multiple of 4: the workload's vec4 layout).
struct WorkloadData {
  std::vector<float> records;
  uint32_t stride = 0;
  std::vector<float> device;
  uint32_t device_stride = 0;
};

struct Workload {
  std::string name;
  std::string summary;
  fuse::SimDefinition spec;
  uint32_t default_pop = 0;
  uint32_t default_steps = 0;
  uint32_t genome_len = 0;  // 0: the genome length is the step count (Rastrigin)
  float init_scale = 1.0f;  // initial genes uniform in [-init_scale, init_scale)
  GaConfig ga;              // seed filled in at run time
  // The shared data of an episode of `steps` steps with `seed`; unset where there is none.
  std::function<WorkloadData(uint32_t steps, uint32_t seed)> data;
  std::string data_name;  // the header's "data": the generator's name ("market"), empty where none
  // The header's own records ("data": {"stride", "records"}), all of them; null where none.
  std::shared_ptr<const WorkloadData> inline_data;
  // The CPU double-precision reference of one episode (src/sim/reference.h); unset where the file
  // names none (--check then compares the strategies with each other only).
  std::function<ReferenceRun(const Episode&)> reference;
  // The GPU-versus-CPU-reference check runs min(steps, reference_horizon) steps: beyond it,
  // chaotic dynamics (Acrobot) let f32 and f64 trajectories part, which says nothing about
  // correctness (docs/SIMULATIONS.md).
  uint32_t reference_horizon = 0;
  double reference_rtol = 0;  // relative tolerance, with reference_atol as a floor
  double reference_atol = 0;
  // A sampled individual whose fitness differs from the reference is accepted as "at a decision
  // boundary" only when the reference episode came within this margin of one (an argmax gap or a
  // termination threshold; reference.h): f32 arithmetic and WGSL's sin/cos (absolute error up to
  // 2^-11) can decide such a step the other way. Every other difference fails the check.
  double boundary_margin = 0;

  uint32_t genome_length(uint32_t steps) const { return genome_len ? genome_len : steps; }
};

// The State of a workload is at most this many bytes: the fused and team strategies keep it in
// each invocation's registers (256 32-bit words; a GPU thread has at most 255 registers).
inline constexpr uint32_t kMaxStateBytes = 1024;
// f32 per record at most in a header's own per-step data ("data": {"stride": S, ...}).
inline constexpr uint32_t kMaxInlineStride = 64;
// A workload file is at most this many bytes (the built-ins are under 16 KiB).
inline constexpr size_t kMaxWorkloadBytes = 256 * 1024;
// The header block of a workload file: its leading `///` lines (docs/SIMULATIONS.md).
inline constexpr std::string_view kHeaderMark = "///";

// Whether loading a workload sets up the CPU reference its header names (a Python script is looked
// up beside the file, and run when the reference is first asked). `skip`: the header is still
// checked and its tolerances read, but nothing is looked up or run (a server loading a visitor's file).
enum class References { resolve, skip };

// The workload that `text`, the contents of the file `origin`, defines. Throws Error naming the
// file and what is wrong: the header (a field, its expected type or range), a missing declaration.
Workload load_workload(std::string text, std::string origin, References references = References::resolve);
// The same, read from the file at `path`.
Workload load_workload_file(const std::string& path, References references = References::resolve);

// What the browser needs to run workload `w` exactly as native does (docs/WEB_API.md, POST
// /api/sim/workload): the generated module of the one-invocation strategies and of the team
// strategy (fuse::generated_source), the line of each on which the file's first line lies, the
// slot layout, the sizes, overrides and tolerances of its header.
nlohmann::json web_workload(const Workload& w);

// The built-in workloads: every embedded kernel family with a header.
const std::vector<Workload>& workloads();
// Throws Error listing the known workloads.
const Workload& find_workload(std::string_view name);

}  // namespace wgfuse::sim
