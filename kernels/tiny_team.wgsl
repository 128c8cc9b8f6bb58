enable subgroups;

// The lane reductions of the tiny transformer's ops (kernels/tiny_common.wgsl) by subgroup
// shuffles: src/tiny/runner.cpp places this file before the family where the adapter has
// subgroups (kernels/tiny_solo.wgsl otherwise). A team is `lanes` consecutive invocations, a power
// of two dividing the adapter's smallest subgroup and the thread count, so it never spans two
// subgroups (subgroups cover consecutive invocation indices). Callers reach these in uniform
// control flow (every thread runs the same rounds; shared/reference/README.md).

// The sum of x over the team, in every lane (butterfly; f32 addition is commutative).
fn lane_sum(x: f32, lanes: u32) -> f32 {
  var v = x;
  for (var m = 1u; m < lanes; m = m << 1u) {
    v = v + subgroupShuffleXor(v, m);
  }
  return v;
}

fn lane_max(x: f32, lanes: u32) -> f32 {
  var v = x;
  for (var m = 1u; m < lanes; m = m << 1u) {
    v = max(v, subgroupShuffleXor(v, m));
  }
  return v;
}
