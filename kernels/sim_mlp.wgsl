// The MLP policy of the classic-control workloads (acrobot, cartpole, mountaincar): one hidden
// layer of MLP_HIDDEN tanh units, then linear logits; the action is their argmax (ties -> lowest
// index, and a NaN logit is never chosen over logit 0). The including file declares the consts
// MLP_IN and MLP_OUT. Genome layout:
//   W1[MLP_HIDDEN][MLP_IN] row-major, b1[MLP_HIDDEN], W2[MLP_OUT][MLP_HIDDEN], b2[MLP_OUT].
// The weights are loaded once per evaluation into private memory (mlp_load): lane l of a team of
// TEAM holds the U = MLP_HIDDEN / TEAM consecutive hidden units l U, ..., l U + U - 1 (their W1
// rows, b1 and W2 columns). A logit is b2 + the sum of the units' products w2 h as one pairwise
// tree over the units in order (adjacent units first: level k adds the partial sums of units that
// differ in bit k of their index): a lane adds the tree's levels inside its units, then team_sum
// adds the rest across the lanes (lanes 2^k apart at level k). So the arithmetic is the same
// whatever the team size (the products of the first level through an explicit fma, so that no
// compiler contracts them differently), a team exchanges log2(TEAM) values per logit instead of
// every unit's activation, and every lane ends with the same logits. Its CPU reference
// wgfuse::sim::mlp_argmax (src/sim/reference.h) sums in double in unit order: only rounding
// separates the two.
// Call mlp_argmax in uniform control flow (before any early return): team_sum shuffles.
// #include "sim_common.wgsl"

const MLP_HIDDEN: u32 = 16u;

// Sized for a team of one; a team of TEAM lanes uses the first MLP_HIDDEN / TEAM units (TEAM is
// a constant when the pipeline is compiled, so the loops unroll and the rest is never touched).
// TEAM <= MLP_HIDDEN / 2: a lane's products pair up in the tree's first level (SimSpec max_team).
var<private> mlp_w1: array<f32, MLP_HIDDEN * MLP_IN>;
var<private> mlp_b1: array<f32, MLP_HIDDEN>;
var<private> mlp_w2: array<f32, MLP_OUT * MLP_HIDDEN>;  // [o][u], this lane's units
var<private> mlp_b2: array<f32, MLP_OUT>;

fn mlp_load(ind: u32) {
  let b1 = MLP_HIDDEN * MLP_IN;
  let w2 = b1 + MLP_HIDDEN;
  let b2 = w2 + MLP_OUT * MLP_HIDDEN;
  let units = MLP_HIDDEN / TEAM;
  for (var u = 0u; u < units; u++) {
    let j = team_lane * units + u;
    for (var k = 0u; k < MLP_IN; k++) {
      mlp_w1[u * MLP_IN + k] = gene(ind, j * MLP_IN + k);
    }
    mlp_b1[u] = gene(ind, b1 + j);
    for (var o = 0u; o < MLP_OUT; o++) {
      mlp_w2[o * MLP_HIDDEN + u] = gene(ind, w2 + o * MLP_HIDDEN + j);
    }
  }
  for (var o = 0u; o < MLP_OUT; o++) {
    mlp_b2[o] = gene(ind, b2 + o);
  }
}

fn mlp_argmax(obs: array<f32, MLP_IN>) -> u32 {
  let units = MLP_HIDDEN / TEAM;
  var h: array<f32, MLP_HIDDEN>;
  for (var u = 0u; u < units; u++) {
    var a = mlp_b1[u];
    for (var k = 0u; k < MLP_IN; k++) {
      a = a + mlp_w1[u * MLP_IN + k] * obs[k];
    }
    h[u] = tanh_safe(a);
  }
  var l: array<f32, MLP_OUT>;
  for (var o = 0u; o < MLP_OUT; o++) {
    // The tree's levels inside this lane's units: the first from the products, each next one
    // halving the partial sums in place (p[i] = p[2i] + p[2i + 1]). Every loop runs a constant
    // count with the team's size in its test, so that it unrolls and p stays in registers (a
    // loop whose count depends on a halving variable did not: 3.5x slower on the H100).
    var p: array<f32, MLP_HIDDEN / 2u>;
    for (var i = 0u; i < MLP_HIDDEN / 2u; i++) {
      if (2u * i < units) {
        let w = o * MLP_HIDDEN + 2u * i;
        p[i] = fma(mlp_w2[w + 1u], h[2u * i + 1u], mlp_w2[w] * h[2u * i]);
      }
    }
    for (var k = 2u; k <= 4u; k++) {
      for (var i = 0u; i < MLP_HIDDEN / 4u; i++) {
        if (((i + 1u) << k) <= units) {
          p[i] = p[2u * i] + p[2u * i + 1u];
        }
      }
    }
    l[o] = mlp_b2[o] + team_sum(p[0]);
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
