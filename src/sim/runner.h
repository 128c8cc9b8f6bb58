// Runs a workload on the GPU: the initial population, evaluation under each strategy, timed
// generations (evaluation + GA step + one read-back), and the equivalence checks behind
// `wgfuse sim --check`.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "fuse/sim_program.h"
#include "gpu/context.h"
#include "sim/evolution.h"
#include "sim/market_data.h"
#include "sim/workloads.h"

namespace wgfuse::sim {

struct ModeRun {
  fuse::Strategy strategy;
  std::vector<double> seconds;  // wall time of each timed generation
  std::vector<GenerationStats> stats;
  // GPU time of the evaluation pass of each timed generation (timestamp queries), in ms; empty
  // for per-step (one pass per dispatch) or where the device has no timestamp-query.
  std::vector<double> gpu_eval_ms;
  std::vector<double> gpu_ga_ms;  // the same for the GA's pass (reduce, select, breed)
  // GPU idle time (ms) between two timed generations: from the end of one's GA to the start of the
  // next one's evaluation (the submit boundary, the read-back copies, the timestamp resolve).
  std::vector<double> gpu_between_generations_ms;
  std::vector<double> gpu_between_passes_ms;  // from the end of the evaluation to the start of the GA
  // With `ga_kernels` (SimRunner::run): each GA kernel in its own timed pass (reduce, select,
  // breed), and gpu_ga_ms the span from the start of reduce to the end of breed.
  std::vector<std::array<double, Evolution::kKernels>> gpu_ga_kernel_ms;
  // Submits per generation are rounded up: a command buffer of several generations counts one
  // for each (its exact share is 1 / per_submit).
  uint64_t dispatches_per_generation = 0, submits_per_generation = 0;
  uint32_t in_flight = 1;   // command buffers submitted before the oldest one's read-back
  uint32_t per_submit = 1;  // generations per command buffer
  // seconds: with several generations per command buffer, each gets the interval of its command
  // buffer over their number.
};

// Agreement of two fitness vectors.
struct Agreement {
  bool bitwise = true;
  double max_rel = 0;  // max |a - b| / max(|a|, |b|) (0 where both are 0)
  uint32_t over = 0;   // individuals over the tolerance
  int64_t first_over = -1;
};
Agreement compare_fitness(const std::vector<float>& a, const std::vector<float>& b, double rtol);

// The individuals where `other` differs from `perstep` by more than rtol, judged against the CPU
// double reference over all `steps` (--check and the tests): `near_reference` where `other` is
// within the workload's reference tolerance; else `sensitive` where the episode is sensitive to
// rounding (per-step is not within it either, or the double episode itself moves by more than the
// tolerance when every weight moves by 2^-20 relative, a few f32 ulps): one order of the f32
// sums is then as good as another; else `wrong`. `genomes`: one after another.
struct OverJudged {
  uint32_t over = 0, near_reference = 0, sensitive = 0, wrong = 0;
  bool judged = true;  // false: more than kMaxJudged over
  bool pass() const { return judged && wrong == 0; }
};
inline constexpr uint32_t kMaxJudged = 1000;
OverJudged judge_over(const Workload& w, std::span<const float> genomes, uint32_t steps, const Starts& starts,
                      std::span<const float> data, const std::vector<float>& perstep,
                      const std::vector<float>& other, double rtol);

struct ReferenceCheck {
  uint32_t horizon = 0, samples = 0, agree = 0;
  uint32_t at_boundary = 0;         // different, but the reference came within boundary_margin of a decision
  double max_boundary_margin = 0;   // the largest margin among those
  double max_abs = 0, max_rel = 0;  // over the individuals that agree
  int64_t first_bad = -1;           // first individual that differs without a boundary nearby
  double got = 0, want = 0, margin = 0;  // at first_bad
  // Every sampled individual agrees or is at a decision boundary, and at least half agree.
  bool pass() const { return samples > 0 && agree + at_boundary == samples && 2 * agree >= samples; }
};

// Individual-major genomes (pop x len) to the GPU's gene-major layout (len x pop).
std::vector<float> gene_major(const std::vector<float>& genomes, uint32_t pop, uint32_t len);

// Generations in flight by default (SimRunner::run).
inline constexpr uint32_t kDefaultInFlight = 2;
// Generations per command buffer by default (SimRunner::run): on the H100 each submit left the GPU
// idle ~35 us between generations (acrobot 0.331 -> 0.313 ms per generation with 8 per submit).
inline constexpr uint32_t kDefaultPerSubmit = 8;
// Generations in one command buffer at most (the params rings of the evaluation and the GA).
inline constexpr uint32_t kMaxPerSubmit = std::min(fuse::SimProgram::kParamsRing, Evolution::kParamsRing);

class SimRunner {
 public:
  // Fitness is the mean return over `episodes` start states per generation (common to all
  // individuals, drawn afresh each generation).
  // `team`: the invocations per individual of the team strategy (fuse::check_team); `workgroup`:
  // the workgroup size of every strategy's kernels (0: the workload's); `overrides`: more
  // pipeline constants of the definition (the header's "overrides").
  SimRunner(gpu::Context& ctx, const Workload& w, uint32_t pop, uint32_t steps, uint32_t seed,
            uint32_t episodes = 1, uint32_t team = 1, uint32_t workgroup = 0,
            std::map<std::string, double> overrides = {});

  const gpu::Context& context() const { return *ctx_; }

  const Workload& workload() const { return *w_; }
  // The workload's spec as run: with the workgroup size and overrides asked for.
  const fuse::SimDefinition& spec() const { return spec_; }
  uint32_t pop() const { return pop_; }
  uint32_t steps() const { return steps_; }
  uint32_t genome_len() const { return genome_len_; }
  // The population's genomes (f32), which every evaluation reads at least once.
  uint64_t genome_bytes() const { return uint64_t(pop_) * genome_len_ * sizeof(float); }
  uint32_t episodes() const { return episodes_; }
  uint32_t team() const { return team_; }
  // The start states of generation `g` (what the reference needs to score an evaluation).
  Starts starts(uint32_t g = 0) const { return {.seed = seed_, .generation = g, .episodes = episodes_}; }
  // The initial population, one genome after another (the documented layout).
  const std::vector<float>& initial_genomes() const { return initial_; }
  // The same, as stored on the GPU: gene-major (gene k of individual i at k * pop + i).
  const std::vector<float>& initial_genomes_device() const { return initial_device_; }
  // The workload's shared data (empty where it has none).
  const WorkloadData& data() const { return data_; }

  // Compiles every kernel (simulation entry points and the GA).
  void compile();
  // The fitness of the initial population after `steps` steps (default: the run's steps) on the
  // start states of generation `generation`.
  std::vector<float> evaluate_initial(fuse::Strategy s, uint32_t steps = 0, uint32_t generation = 0);
  // GPU µs of one evaluation of the initial population when `count` of them run back to back in
  // one timed pass, over copies of the population that together exceed the GPU's L2: the kernel's
  // own rate from memory, as the copy kernel's bandwidth is measured (bench), free of the fixed
  // cost of a pass that a generation's evaluation pass carries. 0 without timestamps; strategies
  // that wait after every dispatch (per-step) are refused.
  double evaluation_us_back_to_back(fuse::Strategy s, uint32_t count);
  // One warm-up generation (not timed, discarded), then `generations` timed generations from the
  // initial population, with up to `in_flight` of them submitted before the oldest is read back
  // (1: each read back before the next is recorded; per-step always 1). Every generation's
  // statistics are read back. `progress` is called after each timed generation. `per_submit`:
  // generations recorded into one command buffer (1 to kMaxPerSubmit; per-step always 1), each
  // with its own statistics copy; `in_flight` then counts command buffers. `ga_kernels`: time
  // each GA kernel in its own pass (ModeRun::gpu_ga_kernel_ms).
  ModeRun run(fuse::Strategy s, uint32_t generations,
              const std::function<void(uint32_t, const GenerationStats&, double)>& progress = {},
              uint32_t in_flight = kDefaultInFlight, uint32_t per_submit = kDefaultPerSubmit,
              bool ga_kernels = false);
  // GPU fitness (under `s`, at min(steps, horizon)) of a sample of individuals against the
  // double-precision reference.
  ReferenceCheck check_reference(fuse::Strategy s, uint32_t samples);

  fuse::SimProgram& program(uint32_t steps);

 private:
  gpu::Context* ctx_;
  const Workload* w_;
  fuse::SimDefinition spec_;  // the workload's, with the workgroup size and overrides asked for
  uint32_t pop_, steps_, seed_, episodes_, team_, genome_len_;
  WorkloadData data_;
  std::vector<float> initial_, initial_device_;
  std::map<uint32_t, std::unique_ptr<fuse::SimProgram>> programs_;
  std::unique_ptr<Evolution> evo_;
  gpu::Buffer genomes_[2], fitness_;
};

}  // namespace wgfuse::sim
