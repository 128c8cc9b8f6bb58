// One definition of a simulation, several execution strategies.
//
// A simulation is written once, in one WGSL file (kernels/sim_<workload>.wgsl for the built-ins,
// any FILE.wgsl for a user's): a State struct, sim_init, sim_step, sim_fitness (the contract is
// at the top of kernels/sim_common.wgsl) and a JSON header (src/sim/workload_file.h loads it into
// a SimDefinition). generated_source composes the module of a strategy from embedded families
// and that text, concatenated in a fixed order: the strategy's prefix, the fixed head
// (kernels/sim_common.wgsl: bindings, params, RNG, genome access), the policy library the
// definition names (kernels/sim_mlp.wgsl), the definition, and the fixed tail
// (kernels/sim_entries.wgsl: the entry points of every strategy). SimProgram compiles it and
// runs it as
//   PerStep: init, then one dispatch per time step with a submit and a wait after each,
//            then fitness: what an eager framework does;
//   Batched: the same dispatches recorded into one command buffer, one wait;
//   Fused:   one dispatch for the whole episode, one invocation per individual, the step loop
//            inside the shader and the state in registers.
//   Team:    one dispatch for the whole episode, a team of TEAM invocations per individual
//            (an override constant), each holding its slice of the weights in private memory
//            and exchanging values by subgroup shuffles (kernels/sim_team.wgsl placed before
//            the same definition; only where the adapter has subgroups).
// PerStep and Batched run the same kernels in the same order, so they agree bitwise; Fused
// compiles the same functions into one loop and may differ by floating-point contraction; Team
// calls the same functions from a different kernel and may differ likewise (and Rastrigin sums
// its terms in another order).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "fuse/strategy.h"
#include "gpu/buffer.h"
#include "gpu/context.h"
#include "gpu/plan.h"
#include "gpu/recorder.h"

namespace wgfuse::fuse {

// A simulation's definition as loaded from its file (sim::load_workload), what SimProgram needs.
struct SimDefinition {
  std::string name;          // for labels and messages, e.g. "acrobot"
  std::string origin;        // the file it came from, for messages, e.g. "kernels/sim_acrobot.wgsl"
  std::string source;        // the file's text: the definition
  std::string policy;        // the embedded policy library it uses ("sim_mlp"), or empty
  uint32_t state_bytes = 0;  // size of the WGSL State struct (slot_bytes)
  uint32_t state_align = 4;  // its alignment: 16 with a vec3 or vec4 in it (WGSL's layout rules)
  uint32_t workgroup_size = 64;
  // The team strategy's workgroup size (0: workgroup_size), halved down to the device's limit
  // where it is over (fit_team_workgroup). A step-splitting team wants wide workgroups: their
  // workgroup / T teams are the consecutive individuals whose gene a subgroup's load covers.
  uint32_t team_workgroup_size = 0;
  // The largest team the definition splits its work for (a power of two): 16 where hidden units
  // are split across lanes (16 units), more where steps are (Rastrigin).
  uint32_t max_team = 16;
  // The definition's SIM_TEAM_SPLITS_STEPS (read from its text by the loader): its steps are
  // independent, so a team divides them and its lanes are strided (kernels/sim_team.wgsl).
  bool team_splits_steps = false;
  // --mode auto's target of invocations for a policy team (0: kAutoTargetInvocations), where the
  // workload's own measurement says otherwise.
  uint64_t auto_invocations = 0;
  // --mode auto's smallest and largest team where subgroups allow (0: max_team), where the
  // workload's measurement says so (Market: teams of 4 at every population, kernels/sim_market.wgsl).
  uint32_t auto_min_team = 1;
  uint32_t auto_max_team = 0;
  // More pipeline-overridable constants for every kernel of the definition (the CLI's
  // --override, e.g. MARKET_PREFETCH), besides WORKGROUP_SIZE and TEAM, which SimProgram sets.
  std::map<std::string, double> overrides;
};

// The workgroup size of strategy `s` for `spec`.
uint32_t workgroup_size(const SimDefinition& spec, Strategy s);
// `spec` with its team workgroup size (a preference) halved down to the device's limit, but not
// below workgroup_size, which stays as given (SimProgram names the limit when it is over).
SimDefinition fit_team_workgroup(const gpu::Context& ctx, SimDefinition spec);

// Mirrors SimParams in kernels/sim_common.wgsl.
struct SimParams {
  uint32_t pop, steps, genome_len, seed, data_stride;
  uint32_t generation;  // start states are drawn afresh for each GA generation
  uint32_t episodes;    // fitness = mean return over this many start states
  uint32_t pad0;
};
static_assert(sizeof(SimParams) == 32);
static_assert(offsetof(SimParams, data_stride) == 16);
static_assert(offsetof(SimParams, episodes) == 24);

// Start states per evaluation at most (the per-step plan records episodes x (steps + 1) + 1
// dispatches).
inline constexpr uint32_t kMaxEpisodes = 1024;

// Slot in kernels/sim_entries.wgsl: {t, episode, total} before the State.
inline constexpr uint32_t kSlotHeaderBytes = 12;
// The array stride of Slot by WGSL's layout rules: the State at its alignment after the header, the
// whole rounded up to it.
inline uint32_t slot_bytes(const SimDefinition& spec) {
  const uint32_t a = spec.state_align;
  return ((kSlotHeaderBytes + a - 1) / a * a + spec.state_bytes + a - 1) / a * a;
}

// The WGSL module that runs strategy `s` of `spec`: the strategy's prefix (kernels/sim_solo.wgsl,
// or kernels/sim_team.wgsl for Team: the team helpers and entry point), kernels/sim_common.wgsl,
// the policy library, the definition's text, kernels/sim_entries.wgsl.
std::string generated_source(const SimDefinition& spec, Strategy s = Strategy::Fused);
// The line of generated_source(spec, s) on which the definition's first line lies.
uint32_t definition_first_line(const SimDefinition& spec, Strategy s);
// A WGSL compiler error about generated_source(spec, s) ("... at line N, column C: ..."; gpu::Context)
// with the line told in the definition's file ("ORIGIN:LINE:COLUMN") where it lies there, else
// as a line of wgfuse's own part of the module.
std::string locate_wgsl_error(const SimDefinition& spec, Strategy s, const std::string& message);

// Entry points of the generated module before and after the time steps of the step-loop
// strategies; the strategies' own entry points are in their rows (fuse/strategy.h).
inline constexpr const char* kInitEntry = "sim_init_main";
inline constexpr const char* kFitnessEntry = "sim_fitness_main";
inline constexpr const char* kNextEpisodeEntry = "sim_next_episode_main";

// Whether strategy `s` can run on this adapter (team needs subgroups).
bool offered(const gpu::Context& ctx, Strategy s);
// Throws Error naming what `s` needs when the adapter lacks it.
void require_offered(const gpu::Context& ctx, Strategy s);

// The team sizes `spec` can run with on this adapter: powers of two up to min(spec.max_team,
// the adapter's smallest subgroup (not for a step-splitting team, which exchanges through
// workgroup memory), the team's workgroup size). 1 where the adapter has no subgroups.
uint32_t max_team(const gpu::Context& ctx, const SimDefinition& spec);
// Throws Error naming the limit when `team` is not a power of two within max_team.
void check_team(const gpu::Context& ctx, const SimDefinition& spec, uint32_t team);

// --mode auto: the strategy and team size for a population, and why.
struct AutoChoice {
  Strategy strategy = Strategy::Fused;
  uint32_t team = 1;
  std::string why;
};
// The rule (one place, named in the report): a team whose lanes share the state (a policy)
// grows until pop x team reaches kAutoTargetInvocations: measured on the H100 (2026-11-22),
// Acrobot (4,096) ran 3,032 gen/s with teams of 4 and 2,373 with 8, Market (10,000) 551 with
// teams of 2, 521 with 4 and 485 with 8: past ~16k invocations more lanes per individual add
// shuffles and barriers faster than they hide latency. A step-splitting team (light invocations that stream
// genes from memory) takes the largest size allowed: the more loads in flight, the nearer the bandwidth
// bound. Without subgroups, fused.
inline constexpr uint64_t kAutoTargetInvocations = 16384;
AutoChoice choose_auto(const gpu::Context& ctx, const SimDefinition& spec, uint32_t pop);

struct EvalCounts {
  uint64_t dispatches = 0;
  uint64_t submits = 0;
};

class SimProgram {
 public:
  // `data` is the workload's shared read-only data (may be empty: a 4-byte placeholder is bound).
  // Fitness is the mean return over `episodes` start states (common to all individuals).
  // Throws Error naming the device limit when the sizes cannot run on this device.
  // `team`: the invocations per individual of the team strategy (check_team).
  SimProgram(gpu::Context& ctx, SimDefinition spec, uint32_t pop, uint32_t steps, uint32_t genome_len,
             uint32_t seed, std::span<const float> data, uint32_t data_stride, uint32_t episodes = 1,
             uint32_t team = 1);

  uint32_t pop() const { return params_.pop; }
  uint32_t steps() const { return params_.steps; }
  uint32_t genome_len() const { return params_.genome_len; }
  uint32_t episodes() const { return params_.episodes; }
  uint32_t team() const { return team_; }
  uint32_t generation() const { return params_.generation; }
  // The generation whose start states the next evaluations use (written to the params before
  // the next submit; 0 until set).
  void set_generation(uint32_t g);
  // The same inside `rec`'s command buffer: the params are queue-written into slot g % kParamsRing
  // of a ring and copied from there by a command, so that up to kParamsRing generations, each with
  // its own params, can share one command buffer.
  void record_generation(gpu::Recorder& rec, uint32_t g);
  static constexpr uint32_t kParamsRing = 16;
  const SimDefinition& spec() const { return spec_; }

  // Compiles every pipeline now (otherwise on first use).
  void compile();
  // Each strategy's dispatches are resolved into a gpu::Plan once per (genomes, fitness) pair
  // and re-encoded on every evaluation.

  // Evaluates `genomes` (genome_len x pop f32, gene-major: gene k of individual i at k * pop + i;
  // Storage) into `fitness` (pop f32, StorageIO).
  // Team throws Error when the adapter has no subgroups.
  // PerStep submits and waits after the init dispatch and after every step dispatch (work
  // already recorded in `rec` goes with the first submit); its fitness dispatch, like all of
  // Batched and Fused, is only recorded: the caller submits, so that the GA's dispatches follow
  // in the same command buffer.
  EvalCounts evaluate(Strategy strategy, gpu::Recorder& rec, const gpu::Buffer& genomes,
                      const gpu::Buffer& fitness);

  // The slot buffer of the per-step strategies (t, then State, per individual); for tests that
  // read the state after a number of steps. Allocated on first per-step use.
  const gpu::Buffer& slots() const { return slots_; }
  uint32_t slot_bytes() const { return slot_bytes_; }
  // Records init and then `n` step dispatches of the first episode only (no fitness): for state
  // trajectories.
  void record_init_and_steps(gpu::Recorder& rec, const gpu::Buffer& genomes, uint32_t n);

  // Dispatches per evaluation of each strategy.
  uint64_t dispatches(Strategy s) const;

 private:
  gpu::BindGroup group(const gpu::Kernel& k, const gpu::Buffer& genomes, const gpu::Buffer& fitness);
  void ensure_slots();
  // The plan of `s` for these buffers: PerStep and Batched share one (init, steps, fitness).
  gpu::Plan& plan(Strategy s, const gpu::Buffer& genomes, const gpu::Buffer& fitness);
  gpu::Context* ctx_;
  SimDefinition spec_;
  SimParams params_;
  std::string source_, team_source_;
  uint32_t team_ = 1;
  gpu::Buffer params_buf_, params_ring_, data_, slots_, no_slots_, no_fitness_;
  uint32_t slot_bytes_ = 0;
  uint32_t groups_ = 0;
  // Resolved by compile(): the pipelines of the entry points.
  const gpu::Kernel *init_ = nullptr, *fitness_ = nullptr, *next_episode_ = nullptr;
  std::map<std::string_view, const gpu::Kernel*> entries_;  // by the strategies' entry points
  // By (strategy, genomes id, fitness id); the GA alternates two genome buffers, so this stays
  // small (cleared past a handful in case a caller cycles through many).
  std::map<std::tuple<Strategy, uint64_t, uint64_t>, gpu::Plan> plans_;
};

}  // namespace wgfuse::fuse
