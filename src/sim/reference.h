// CPU references in double precision, written from the published equations (Gymnasium's
// classic-control environments, Rastrigin, the Market definition of docs/SIMULATIONS.md). They
// start from the same f32 initial states and genomes as the GPU (src/sim/rng.h) and compute
// everything else in double.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/workloads.h"

namespace wgfuse::sim {

struct AcrobotState {
  double th1, th2, dth1, dth2;
};
// One Acrobot-v1 step: RK4 over [0, 0.2] with the torque held, wrap, clip.
AcrobotState acrobot_step(const AcrobotState& s, double torque);
bool acrobot_terminal(const AcrobotState& s);

struct CartPoleState {
  double x, x_dot, theta, theta_dot;
};
CartPoleState cartpole_step(const CartPoleState& s, int action);  // action 0 pushes left, 1 right
bool cartpole_terminal(const CartPoleState& s);

struct MountainCarState {
  double pos, vel;
};
MountainCarState mountaincar_step(const MountainCarState& s, int action);  // 0 left, 1 none, 2 right
bool mountaincar_terminal(const MountainCarState& s);

// The policy of the classic-control workloads (kernels/sim_mlp.wgsl), in double: `hidden` tanh
// units on the `in` observations `obs`, then `out` linear logits; returns their argmax (ties ->
// lowest index). Genome layout: W1[hidden][in] row-major, b1[hidden], W2[out][hidden], b2[out].
// Where `margin` is given, it is lowered to the gap between the chosen logit and every other one
// (how close the decision came to flipping). Throws Error for more than kMaxMlpOutputs outputs or
// a genome too short for the sizes.
inline constexpr int kMaxMlpOutputs = 8;
int mlp_argmax(std::span<const float> genome, int in, int hidden, int out, const double* obs,
               double* margin = nullptr);

// The initial population (pop x genome_len), as uploaded to the GPU.
std::vector<float> initial_genomes(const Workload& w, uint32_t pop, uint32_t steps, uint32_t seed);

// The reference episode of the built-in workload `name` (a workload file's "reference":
// {"builtin": NAME}): rastrigin, acrobot, cartpole, mountaincar, market (e.data: the Market records,
// steps x 22). Throws Error naming `where` and the known names for any other.
using ReferenceEpisode = std::function<ReferenceRun(const Episode&)>;
ReferenceEpisode builtin_reference(std::string_view name, const std::string& where);

// Workload `w`'s reference evaluation of `genome`: the mean return over the episodes of
// `starts`, each of `steps` steps, and the smallest decision margin of any of them. `individual`:
// the genome's index in the population, for the workloads whose randomness is drawn per individual
// (examples/sim/option_pricer.wgsl). Throws Error for a genome of the wrong length or no episodes.
ReferenceRun reference_run(const Workload& w, std::span<const float> genome, uint32_t steps,
                           const Starts& starts, std::span<const float> data, uint32_t individual = 0);

// The fitness of `genome` (reference_run's), in double. `data` is the workload's shared data
// (runner.data().records; empty where it has none).
double reference_fitness(const Workload& w, std::span<const float> genome, uint32_t steps,
                         const Starts& starts, std::span<const float> data, uint32_t individual = 0);

}  // namespace wgfuse::sim
