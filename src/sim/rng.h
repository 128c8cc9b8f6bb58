// The counter-based RNG of the simulations, bit-identical to kernels/sim_common.wgsl and
// bench/baselines/sim_common.py: the PCG hash (Jarzynski and Olano, "Hash Functions for GPU
// Rendering", JCGT 2020) chained over key words, and uniforms that are exact in f32.
#pragma once

#include <cstdint>

namespace wgfuse::sim {

inline constexpr uint32_t kStreamGenome = 1;
inline constexpr uint32_t kStreamState = 2;
inline constexpr uint32_t kStreamMarket = 6;

constexpr uint32_t pcg_hash(uint32_t v) {
  uint32_t state = v * 747796405u + 2891336453u;
  uint32_t word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

constexpr uint32_t hash4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return pcg_hash(pcg_hash(pcg_hash(pcg_hash(a) + b) + c) + d);
}

constexpr uint32_t hash5(uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t e) {
  return pcg_hash(hash4(a, b, c, d) + e);
}

// A multiple of 2^-23 in [-1, 1), exact in f32.
constexpr float unit_sym(uint32_t h) {
  return float(h >> 8u) * (1.0f / 8388608.0f) - 1.0f;
}

// Start-state variable k of episode `episode` in generation `generation`, as sim_common.wgsl's
// init_uniform: the same for every individual of the generation (common random numbers).
constexpr float init_uniform(uint32_t seed, uint32_t generation, uint32_t episode, uint32_t k, float scale) {
  return scale * unit_sym(hash5(seed, kStreamState, generation, episode, k));
}

// Gene k of individual ind of the initial population: uniform in [-scale, scale).
constexpr float initial_gene(uint32_t seed, uint32_t ind, uint32_t k, float scale) {
  return scale * unit_sym(hash4(seed, kStreamGenome, ind, k));
}

}  // namespace wgfuse::sim
