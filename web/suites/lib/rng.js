// The simulations' counter-based RNG, bit-identical to src/sim/rng.h and kernels/sim_rng.wgsl:
// the PCG hash chained over key words, and uniforms that are exact in f32.

export const STREAM_GENOME = 1;
export const STREAM_STATE = 2;
export const STREAM_MARKET = 6;

export function pcgHash(v) {
  const state = (Math.imul(v >>> 0, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

export function hash4(a, b, c, d) {
  return pcgHash((pcgHash((pcgHash((pcgHash(a) + b) >>> 0) + c) >>> 0) + d) >>> 0);
}

export function hash5(a, b, c, d, e) { return pcgHash((hash4(a, b, c, d) + e) >>> 0); }

// A multiple of 2^-23 in [-1, 1): exact in f32.
export function unitSym(h) { return (h >>> 8) / 8388608 - 1; }

// Gene k of individual ind of the initial population: uniform in [-scale, scale) (rng.h initial_gene).
export function initialGene(seed, ind, k, scale) {
  return Math.fround(scale * unitSym(hash4(seed, STREAM_GENOME, ind, k)));
}
