// The MLP policy of the classic-control workloads (acrobot, cartpole, mountaincar): one hidden
// layer of MLP_HIDDEN tanh units, then linear logits; the action is their argmax (ties -> lowest
// index, and a NaN logit is never chosen over logit 0). The including file declares the consts
// MLP_IN and MLP_OUT. Genome layout:
//   W1[MLP_HIDDEN][MLP_IN] row-major, b1[MLP_HIDDEN], W2[MLP_OUT][MLP_HIDDEN], b2[MLP_OUT].
// Its CPU reference is wgfuse::sim::mlp_argmax (src/sim/reference.h): the same order of summation
// (bias first, then the inputs in order), so that only rounding separates the two.
// #include "sim_common.wgsl"

const MLP_HIDDEN: u32 = 16u;

fn mlp_argmax(obs: array<f32, MLP_IN>, ind: u32) -> u32 {
  let b1 = MLP_HIDDEN * MLP_IN;
  let w2 = b1 + MLP_HIDDEN;
  let b2 = w2 + MLP_OUT * MLP_HIDDEN;
  var l: array<f32, MLP_OUT>;
  for (var o = 0u; o < MLP_OUT; o++) {
    l[o] = gene(ind, b2 + o);
  }
  for (var j = 0u; j < MLP_HIDDEN; j++) {
    var a = gene(ind, b1 + j);
    for (var k = 0u; k < MLP_IN; k++) {
      a = a + gene(ind, j * MLP_IN + k) * obs[k];
    }
    let h = tanh_safe(a);
    for (var o = 0u; o < MLP_OUT; o++) {
      l[o] = l[o] + gene(ind, w2 + o * MLP_HIDDEN + j) * h;
    }
  }
  var best = 0u;
  for (var o = 1u; o < MLP_OUT; o++) {
    if (l[o] > l[best]) {
      best = o;
    }
  }
  return best;
}
