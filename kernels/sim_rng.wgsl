// Counter-based RNG of the simulation and GA modules (included by sim_common.wgsl and
// sim_evolve.wgsl), identical in C++ (src/sim/rng.h), Python and CUDA (bench/baselines): the PCG
// hash of Jarzynski and Olano (JCGT 2020), chained over the key words.
fn pcg_hash(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

fn hash4(a: u32, b: u32, c: u32, d: u32) -> u32 {
  return pcg_hash(pcg_hash(pcg_hash(pcg_hash(a) + b) + c) + d);
}

fn hash5(a: u32, b: u32, c: u32, d: u32, e: u32) -> u32 {
  return pcg_hash(hash4(a, b, c, d) + e);
}
