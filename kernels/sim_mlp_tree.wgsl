// The MLP policy of kernels/sim_mlp.wgsl (same genome layout, same MLP_IN / MLP_OUT contract, same
// mlp_load and mlp_argmax), with its logits summed as one pairwise tree instead of in unit order:
// a header selects it with "policy": "mlp_tree". Where sim_mlp.wgsl's team broadcasts all 16
// activations and every lane sums all 16 units of every logit, here a lane sums only its own
// units and the team adds the lanes' sums by log2(TEAM) butterfly shuffles per logit (team_sum),
// the work a team of the CUDA baseline (bench/baselines/sim_cuda.cu, MlpPolicy) does per step.
//
// The tree, the same for every team size (so every strategy agrees bitwise): with p_j the
// product w2[o][j] * h[j], level 1 adds adjacent units, fma(w2[o][j + 1], h[j + 1], p_j) for even
// j (the explicit fma leaves a compiler nothing to contract differently), and level k > 1 adds the
// partial sums of units that differ in bit k - 1 of their index; the logit is b2[o] + the tree.
// Lane l of a team holds the U = 16 / TEAM consecutive units l U .. l U + U - 1, so a lane adds
// the levels inside its units and team_sum (lanes 1, 2, 4, ... apart) the rest. In a team of 16 a
// lane holds one unit: the even lane of each pair adds its partner's product (the partner's
// activation by a shuffle, its W2 column loaded beside its own) and the odd lane adds 0.
// Its CPU reference wgfuse::sim::mlp_argmax (src/sim/reference.h) sums in double in unit order:
// only rounding separates the two.
//
// Everything is written for the NVIDIA compiler to keep in registers: a lane's units as vec4s,
// loops of constant count, and the tree in branches on TEAM (a constant once the pipeline is
// compiled), never arrays indexed by a loop whose count depends on TEAM (measured 2-3.5x slower
// on the H100 when such arrays went to memory, commits 5a6ea98 and 846845b).
// Call mlp_argmax in uniform control flow (before any early return): it shuffles.

const MLP_HIDDEN: u32 = 16u;
// vec4s of units a team of one holds; a team of TEAM uses the first max(1, 4 / TEAM).
const MLP_VECS: u32 = 4u;

// Component c of vec4 v is the lane's unit 4 v + c (zeros past its units).
var<private> mlp_w1: array<vec4<f32>, MLP_VECS * MLP_IN>;  // [v * MLP_IN + k]: input k's weights
var<private> mlp_b1: array<vec4<f32>, MLP_VECS>;
var<private> mlp_w2: array<vec4<f32>, MLP_VECS * MLP_OUT>;  // [o * MLP_VECS + v]; team of 16: .y the partner's
var<private> mlp_b2: array<f32, MLP_OUT>;

// Units per lane.
fn mlp_units() -> u32 {
  return MLP_HIDDEN / TEAM;
}

// Gene `base + stride * j` of the lane's unit u (unit j = team_lane U + u), 0 past its units.
fn mlp_unit_gene(ind: u32, u: u32, base: u32, stride: u32) -> f32 {
  if (u >= mlp_units()) {
    return 0.0;
  }
  return gene(ind, base + stride * (team_lane * mlp_units() + u));
}

fn mlp_unit_genes4(ind: u32, v: u32, base: u32, stride: u32) -> vec4<f32> {
  return vec4<f32>(mlp_unit_gene(ind, 4u * v, base, stride), mlp_unit_gene(ind, 4u * v + 1u, base, stride),
                   mlp_unit_gene(ind, 4u * v + 2u, base, stride), mlp_unit_gene(ind, 4u * v + 3u, base, stride));
}

fn mlp_load(ind: u32) {
  let b1 = MLP_HIDDEN * MLP_IN;
  let w2 = b1 + MLP_HIDDEN;
  let b2 = w2 + MLP_OUT * MLP_HIDDEN;
  for (var v = 0u; v < MLP_VECS; v++) {
    if (4u * v < mlp_units()) {
      for (var k = 0u; k < MLP_IN; k++) {
        mlp_w1[v * MLP_IN + k] = mlp_unit_genes4(ind, v, k, MLP_IN);
      }
      mlp_b1[v] = mlp_unit_genes4(ind, v, b1, 1u);
      for (var o = 0u; o < MLP_OUT; o++) {
        mlp_w2[o * MLP_VECS + v] = mlp_unit_genes4(ind, v, w2 + o * MLP_HIDDEN, 1u);
      }
    }
  }
  if (TEAM == MLP_HIDDEN) {
    for (var o = 0u; o < MLP_OUT; o++) {
      mlp_w2[o * MLP_VECS].y = gene(ind, w2 + o * MLP_HIDDEN + (team_lane ^ 1u));
    }
  }
  for (var o = 0u; o < MLP_OUT; o++) {
    mlp_b2[o] = gene(ind, b2 + o);
  }
}

// The activations of the lane's units 4 v .. 4 v + 3 (bias first, then the inputs in order);
// tanh only where the lane has units.
fn mlp_hidden4(v: u32, obs: array<f32, MLP_IN>) -> vec4<f32> {
  var a = mlp_b1[v];
  for (var k = 0u; k < MLP_IN; k++) {
    a = a + mlp_w1[v * MLP_IN + k] * obs[k];
  }
  if (mlp_units() == 1u) {
    return vec4<f32>(tanh_safe(a.x), 0.0, 0.0, 0.0);
  }
  if (mlp_units() == 2u) {
    return vec4<f32>(tanh_safe(a.x), tanh_safe(a.y), 0.0, 0.0);
  }
  return vec4<f32>(tanh_safe(a.x), tanh_safe(a.y), tanh_safe(a.z), tanh_safe(a.w));
}

// Levels 1 and 2 of the tree over the four units of w and h.
fn mlp_tree4(w: vec4<f32>, h: vec4<f32>) -> f32 {
  let pairs = fma(w.yw, h.yw, w.xz * h.xz);
  return pairs.x + pairs.y;
}

// The lane's part of logit o: the tree's levels inside its units.
fn mlp_lane_sum(o: u32, h0: vec4<f32>, h1: vec4<f32>, h2: vec4<f32>, h3: vec4<f32>) -> f32 {
  let w = o * MLP_VECS;
  switch (mlp_units()) {
    case 1u: {
      let even = fma(mlp_w2[w].y, h0.y, mlp_w2[w].x * h0.x);
      return select(0.0, even, (team_lane & 1u) == 0u);
    }
    case 2u: {
      return fma(mlp_w2[w].y, h0.y, mlp_w2[w].x * h0.x);
    }
    case 4u: {
      return mlp_tree4(mlp_w2[w], h0);
    }
    case 8u: {
      return mlp_tree4(mlp_w2[w], h0) + mlp_tree4(mlp_w2[w + 1u], h1);
    }
    default: {
      return (mlp_tree4(mlp_w2[w], h0) + mlp_tree4(mlp_w2[w + 1u], h1)) +
             (mlp_tree4(mlp_w2[w + 2u], h2) + mlp_tree4(mlp_w2[w + 3u], h3));
    }
  }
}

fn mlp_argmax(obs: array<f32, MLP_IN>) -> u32 {
  var h0 = mlp_hidden4(0u, obs);
  var h1 = vec4<f32>(0.0);
  var h2 = vec4<f32>(0.0);
  var h3 = vec4<f32>(0.0);
  if (mlp_units() >= 8u) {
    h1 = mlp_hidden4(1u, obs);
  }
  if (mlp_units() == 16u) {
    h2 = mlp_hidden4(2u, obs);
    h3 = mlp_hidden4(3u, obs);
  }
  // A team of 16: the odd partner's activation, for the even lane's level 1 (TEAM is uniform).
  if (mlp_units() == 1u) {
    h0.y = team_broadcast(h0.x, team_lane ^ 1u);
  }
  var l: array<f32, MLP_OUT>;
  for (var o = 0u; o < MLP_OUT; o++) {
    l[o] = mlp_b2[o] + team_sum(mlp_lane_sum(o, h0, h1, h2, h3));
  }
  // The best logit kept beside its index: l[best] would index a private array dynamically
  // (clamped by robustness, and no longer a register once unrolled).
  var best = 0u;
  var best_logit = l[0];
  for (var o = 1u; o < MLP_OUT; o++) {
    if (l[o] > best_logit) {
      best = o;
      best_logit = l[o];
    }
  }
  return best;
}
