// The fixed head of every simulation kernel: each kernels/sim_<workload>.wgsl includes it at its
// top and sim_entries.wgsl (the strategies' entry points) at its bottom, so that the embedded
// family is the whole module that wgfuse::fuse::SimProgram compiles. Between the two, the
// workload file defines only the simulation (see docs/SIMULATIONS.md):
//   struct State { ... }                                  (f32/u32 fields: it lives in a storage
//                                                          buffer for per-step and batched runs)
//   fn sim_init(ind: u32, episode: u32) -> State          (start states: init_uniform(episode, ...))
//   fn sim_step(t: u32, s: ptr<function, State>, ind: u32)
//   fn sim_fitness(s: State) -> f32
//   fn sim_done(s: State) -> bool                         (the episode has ended: every later
//                                                          step leaves the state unchanged, so a
//                                                          strategy may stop stepping)
// and reads its genome with gene(ind, k) and shared data (market prices) with data4(t, i). In a
// team (kernels/sim_team.wgsl) it splits its work by team_lane (< TEAM) and combines it with
// team_sum / team_broadcast (kernels/sim_solo.wgsl: the identity, for a team of one); a
// step-splitting workload (SIM_TEAM_SPLITS_STEPS) instead takes steps t + team_lane, ignores
// those >= L, exchanges nothing, and its fitness is summed over the lanes.
// This file declares nothing a workload must not see and has no entry point.
// #include "sim_rng.wgsl"

override WORKGROUP_SIZE: u32 = 64;
// Invocations per individual: 1 for per-step, batched and fused; the team strategy's size.
override TEAM: u32 = 1u;
// A step-splitting team's steps per loop iteration, per lane (kernels/sim_team.wgsl): loads in
// flight together. Declared here so that every module of a definition takes the same overrides.
override TEAM_STEP_UNROLL: u32 = 16u;

// This invocation's lane in its team (0 in a team of one).
var<private> team_lane: u32;

// Mirrored by wgfuse::fuse::SimParams (static_asserted): 32 bytes.
struct SimParams {
  pop: u32,
  steps: u32,       // L: the loop length of the episode
  genome_len: u32,  // f32 words per individual
  seed: u32,
  data_stride: u32,  // f32 words per step record in sim_data, a multiple of 4 (0: no data)
  generation: u32,   // the GA generation: start states are drawn afresh for each
  episodes: u32,     // fitness = the mean return over this many start states
  _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<storage, read> genomes: array<f32>;
// vec4s: a workload lays its records out so that each load fetches 4 values it uses together
// (under Dawn's robustness every load of a runtime-sized array is clamped: one clamp per vec4).
@group(0) @binding(2) var<storage, read> sim_data: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> fitness: array<f32>;

// Key streams (the second key word).
const STREAM_GENOME: u32 = 1u;
const STREAM_STATE: u32 = 2u;

// A multiple of 2^-23 in [-1, 1): exact in f32, so every implementation gets the same number.
fn unit_sym(h: u32) -> f32 {
  return f32(h >> 8u) * (1.0 / 8388608.0) - 1.0;
}

// Start-state variable k of episode `episode`: uniform in [-scale, scale) (one f32 rounding),
// the same for every individual of the generation (common random numbers), so that fitness
// compares policies and not their luck; drawn afresh each generation.
fn init_uniform(episode: u32, k: u32, scale: f32) -> f32 {
  return scale * unit_sym(hash5(params.seed, STREAM_STATE, params.generation, episode, k));
}

// Genomes are stored gene-major: gene k of individual i at k * pop + i, so that the invocations
// of a workgroup (consecutive individuals) reading gene k read consecutive words (coalesced).
fn gene(ind: u32, k: u32) -> f32 {
  return genomes[k * params.pop + ind];
}

// The i-th vec4 of step t's record (f32 words 4 i .. 4 i + 3).
fn data4(t: u32, i: u32) -> vec4<f32> {
  return sim_data[t * (params.data_stride / 4u) + i];
}

// tanh without overflow for large |x| (some implementations compute (e^2x - 1) / (e^2x + 1)).
fn tanh_safe(x: f32) -> f32 {
  let e = exp(-2.0 * abs(x));
  return sign(x) * (1.0 - e) / (1.0 + e);
}
