// The MLP policy of the classic-control workloads (acrobot, cartpole, mountaincar): one hidden
// layer of MLP_HIDDEN tanh units, then linear logits; the action is their argmax (ties -> lowest
// index, and a NaN logit is never chosen over logit 0). The including file declares the consts
// MLP_IN and MLP_OUT. Genome layout:
//   W1[MLP_HIDDEN][MLP_IN] row-major, b1[MLP_HIDDEN], W2[MLP_OUT][MLP_HIDDEN], b2[MLP_OUT].
// The weights are loaded once per evaluation into private memory (mlp_load): lane l of a team
// holds the W1 rows and b1 of hidden units l, l + TEAM, ... and all of W2 and b2; each lane
// computes its units, the team broadcasts them, and every lane sums the logits over all units in
// order. So the arithmetic is the same whatever the team size (bias first, then the inputs in
// order; logits from their bias over the units in order), as in its CPU reference
// wgfuse::sim::mlp_argmax (src/sim/reference.h): only rounding separates the two.
// Call mlp_argmax in uniform control flow (before any early return): it broadcasts.

const MLP_HIDDEN: u32 = 16u;

// Sized for a team of one; a team of TEAM lanes uses the first MLP_HIDDEN / TEAM units (TEAM is
// a constant when the pipeline is compiled, so the loops unroll and the rest is never touched).
var<private> mlp_w1: array<f32, MLP_HIDDEN * MLP_IN>;
var<private> mlp_b1: array<f32, MLP_HIDDEN>;
var<private> mlp_w2: array<f32, MLP_OUT * MLP_HIDDEN>;
var<private> mlp_b2: array<f32, MLP_OUT>;

fn mlp_load(ind: u32) {
  let b1 = MLP_HIDDEN * MLP_IN;
  let w2 = b1 + MLP_HIDDEN;
  let b2 = w2 + MLP_OUT * MLP_HIDDEN;
  for (var u = 0u; u < MLP_HIDDEN / TEAM; u++) {
    let j = team_lane + u * TEAM;
    for (var k = 0u; k < MLP_IN; k++) {
      mlp_w1[u * MLP_IN + k] = gene(ind, j * MLP_IN + k);
    }
    mlp_b1[u] = gene(ind, b1 + j);
  }
  for (var k = 0u; k < MLP_OUT * MLP_HIDDEN; k++) {
    mlp_w2[k] = gene(ind, w2 + k);
  }
  for (var o = 0u; o < MLP_OUT; o++) {
    mlp_b2[o] = gene(ind, b2 + o);
  }
}

fn mlp_argmax(obs: array<f32, MLP_IN>) -> u32 {
  var h_lane: array<f32, MLP_HIDDEN>;
  for (var u = 0u; u < MLP_HIDDEN / TEAM; u++) {
    var a = mlp_b1[u];
    for (var k = 0u; k < MLP_IN; k++) {
      a = a + mlp_w1[u * MLP_IN + k] * obs[k];
    }
    h_lane[u] = tanh_safe(a);
  }
  var l: array<f32, MLP_OUT>;
  for (var o = 0u; o < MLP_OUT; o++) {
    l[o] = mlp_b2[o];
  }
  for (var j = 0u; j < MLP_HIDDEN; j++) {
    let h = team_broadcast(h_lane[j / TEAM], j % TEAM);
    for (var o = 0u; o < MLP_OUT; o++) {
      l[o] = l[o] + mlp_w2[o * MLP_HIDDEN + j] * h;
    }
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
