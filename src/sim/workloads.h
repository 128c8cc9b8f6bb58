// The simulation workloads of `wgfuse sim`: each is one WGSL definition (kernels/sim_NAME.wgsl),
// its sizes, its GA settings and its CPU double-precision reference (src/sim/reference.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuse/sim_program.h"
#include "sim/evolution.h"

namespace wgfuse::sim {

struct Workload {
  std::string name;
  std::string summary;
  fuse::SimSpec spec;
  uint32_t default_pop = 0;
  uint32_t default_steps = 0;
  uint32_t genome_len = 0;  // 0: the genome length is the step count (Rastrigin)
  float init_scale = 1.0f;  // initial genes uniform in [-init_scale, init_scale)
  GaConfig ga;              // seed filled in at run time
  bool needs_market_data = false;
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

const std::vector<Workload>& workloads();
// Throws Error listing the known workloads.
const Workload& find_workload(std::string_view name);

}  // namespace wgfuse::sim
