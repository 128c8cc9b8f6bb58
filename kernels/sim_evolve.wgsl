// One generation of the genetic algorithm on the GPU (docs/SIMULATIONS.md says why a GA):
//   reduce: one workgroup: best fitness, mean, count of non-finite, and the indices of the E best
//           (the elites; ties -> lowest index), one pass over the population per elite;
//   select: per child: children 0..E-1 are the elites, the others get two size-T tournaments;
//   breed:  per child and GENES_PER_THREAD genes: uniform crossover of the two parents, then
//           Gaussian mutation with probability `rate`, clamped to [lo, hi]; the elites are copied
//           unchanged.
// Every random number is a hash of (seed, stream, generation, child, gene), so a generation is
// reproducible whatever the dispatch order. Non-finite fitness loses every comparison.
// The hash chain's first three rounds (seed, stream, generation) are the same for the whole
// generation: the host computes them once per stream (the *_key params), the kernels add the
// child's round once per child and the gene's round per gene: hash5(seed, stream, generation,
// child, gene) == pcg_hash(pcg_hash(key + child) + gene).
// #include "sim_rng.wgsl"

override WORKGROUP_SIZE: u32 = 64;
// Genes of one child per breed invocation: its parents and hash prefixes are read and computed
// once for them, and their loads are all issued before the first store (no aliasing is known
// between src and dst, so a load after a store waits for it); the invocations of a workgroup are
// consecutive children (coalesced writes).
const GENES_PER_THREAD: u32 = 8u;
const REDUCE_SIZE: u32 = 256u;
const MAX_ELITES: u32 = 8u;
const NONE: u32 = 0xffffffffu;

// Mirrored by wgfuse::sim::EvolveParams (static_asserted): 48 bytes.
struct EvolveParams {
  pop: u32,
  genome_len: u32,
  tournament: u32,
  elites: u32,  // E, 1 <= E <= MAX_ELITES
  rate: f32,
  sigma: f32,
  lo: f32,
  hi: f32,
  // pcg_hash(pcg_hash(pcg_hash(seed) + stream) + generation) of the three streams below.
  select_key: u32,
  cross_key: u32,
  mutate_key: u32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> ep: EvolveParams;
@group(0) @binding(1) var<storage, read> fit: array<f32>;
// best, mean (f32 bits), best index, non-finite count, then the E elite indices.
@group(0) @binding(2) var<storage, read_write> stats: array<u32>;
@group(0) @binding(3) var<storage, read_write> parents: array<u32>;
@group(0) @binding(4) var<storage, read> src: array<f32>;
@group(0) @binding(5) var<storage, read_write> dst: array<f32>;

fn ev_use_all_bindings() {
  _ = ep.pop;
  _ = fit[0];
  _ = stats[0];
  _ = parents[0];
  _ = src[0];
  _ = dst[0];
}

fn finite(x: f32) -> bool {
  return x == x && abs(x) <= 3.4028234e38;
}

// a (index ia) beats b (index ib): larger finite fitness, ties to the lower index.
fn beats(a: f32, ia: u32, b: f32, ib: u32) -> bool {
  if (!finite(a)) { return false; }
  if (!finite(b)) { return true; }
  return a > b || (a == b && ia < ib);
}

// As beats(), where NONE (no candidate yet) loses to any candidate.
fn better(a: f32, ia: u32, b: f32, ib: u32) -> bool {
  if (ia == NONE) { return false; }
  if (ib == NONE) { return true; }
  return beats(a, ia, b, ib);
}

var<workgroup> red_best: array<f32, REDUCE_SIZE>;
var<workgroup> red_idx: array<u32, REDUCE_SIZE>;
var<workgroup> red_sum: array<f32, REDUCE_SIZE>;
var<workgroup> red_bad: array<u32, REDUCE_SIZE>;
var<workgroup> elite: array<u32, MAX_ELITES>;

@compute @workgroup_size(REDUCE_SIZE)
fn reduce(@builtin(local_invocation_index) lid: u32) {
  if (ep.pop == 0u) {
    ev_use_all_bindings();
  }
  for (var e = 0u; e < ep.elites; e++) {
    // The best individual that is not already an elite.
    var best = 0.0;
    var best_i = NONE;
    var sum = 0.0;
    var bad = 0u;
    for (var i = lid; i < ep.pop; i += REDUCE_SIZE) {
      let f = fit[i];
      if (e == 0u) {
        if (finite(f)) {
          sum = sum + f;
        } else {
          bad = bad + 1u;
        }
      }
      var taken = false;
      for (var k = 0u; k < e; k++) {
        taken = taken || elite[k] == i;
      }
      if (!taken && better(f, i, best, best_i)) {
        best = f;
        best_i = i;
      }
    }
    red_best[lid] = best;
    red_idx[lid] = best_i;
    red_sum[lid] = sum;
    red_bad[lid] = bad;
    workgroupBarrier();
    for (var w = REDUCE_SIZE / 2u; w > 0u; w = w / 2u) {
      if (lid < w) {
        if (better(red_best[lid + w], red_idx[lid + w], red_best[lid], red_idx[lid])) {
          red_best[lid] = red_best[lid + w];
          red_idx[lid] = red_idx[lid + w];
        }
        red_sum[lid] = red_sum[lid] + red_sum[lid + w];
        red_bad[lid] = red_bad[lid] + red_bad[lid + w];
      }
      workgroupBarrier();
    }
    if (lid == 0u) {
      elite[e] = red_idx[0];
      stats[4u + e] = red_idx[0];
      if (e == 0u) {
        stats[0] = bitcast<u32>(red_best[0]);
        let good = ep.pop - red_bad[0];
        stats[1] = bitcast<u32>(select(0.0, red_sum[0] / f32(max(good, 1u)), good > 0u));
        stats[2] = red_idx[0];
        stats[3] = red_bad[0];
      }
    }
    workgroupBarrier();
  }
}

// hash5(seed, stream, generation, child, gene) from the stream's key (see the top).
fn child_key(key: u32, child: u32) -> u32 {
  return pcg_hash(key + child);
}

fn tournament(child_sel: u32, which: u32) -> u32 {
  var w = pcg_hash(child_sel + which * 64u) % ep.pop;
  for (var k = 1u; k < ep.tournament; k++) {
    let c = pcg_hash(child_sel + which * 64u + k) % ep.pop;
    if (beats(fit[c], c, fit[w], w)) {
      w = c;
    }
  }
  return w;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn select_parents(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  if (c >= ep.pop) {
    ev_use_all_bindings();
    return;
  }
  if (c < ep.elites) {
    parents[2u * c] = stats[4u + c];
    parents[2u * c + 1u] = stats[4u + c];
    return;
  }
  let child_sel = child_key(ep.select_key, c);
  parents[2u * c] = tournament(child_sel, 0u);
  parents[2u * c + 1u] = tournament(child_sel, 1u);
}

// (0, 1], never 0 (log in Box-Muller).
fn unit_open(h: u32) -> f32 {
  return (f32(h >> 8u) + 1.0) * (1.0 / 16777216.0);
}

// Grid: x over children (WORKGROUP_SIZE per workgroup), y over runs of GENES_PER_THREAD genes.
@compute @workgroup_size(WORKGROUP_SIZE)
fn breed(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  if (c >= ep.pop) {
    ev_use_all_bindings();
    return;
  }
  let k0 = gid.y * GENES_PER_THREAD;
  let k1 = min(k0 + GENES_PER_THREAD, ep.genome_len);
  let pa = parents[2u * c];
  let pb = parents[2u * c + 1u];
  // Gene-major storage (as sim_common.wgsl): gene k of individual c at k * pop + c.
  if (c < ep.elites) {
    for (var k = k0; k < k1; k++) {
      dst[k * ep.pop + c] = src[k * ep.pop + pa];
    }
    return;
  }
  let child_cross = child_key(ep.cross_key, c);
  let child_mutate = child_key(ep.mutate_key, c);
  var genes: array<f32, GENES_PER_THREAD>;
  for (var j = 0u; j < GENES_PER_THREAD; j++) {
    let k = min(k0 + j, ep.genome_len - 1u);  // past the end: loaded, never stored
    let p = select(pb, pa, (pcg_hash(child_cross + k) & 1u) == 0u);
    genes[j] = src[k * ep.pop + p];
  }
  for (var j = 0u; j < GENES_PER_THREAD; j++) {
    let k = k0 + j;
    if (k >= k1) {
      break;
    }
    var g = genes[j];
    let hm = pcg_hash(child_mutate + k);
    if (unit_open(hm) <= ep.rate) {
      let u1 = unit_open(pcg_hash(hm + 1u));
      let u2 = unit_open(pcg_hash(hm + 2u));
      let z = sqrt(-2.0 * log(u1)) * cos(6.2831853071795864 * u2);
      g = clamp(g + ep.sigma * z, ep.lo, ep.hi);
    }
    dst[k * ep.pop + c] = g;
  }
}
