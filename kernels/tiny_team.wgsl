enable subgroups;
// Teams past a round's items skip it together (tiny_common.wgsl slot_of): the shuffles run on all
// lanes of a team, in control flow the analysis cannot prove uniform.
diagnostic(off, subgroup_uniformity);

// The lane reductions of the tiny transformer's ops (kernels/tiny_common.wgsl) by subgroup
// shuffles: src/tiny/runner.cpp places this file before the family where the adapter has
// subgroups (kernels/tiny_solo.wgsl otherwise). A team is `lanes` consecutive invocations, a power
// of two dividing the adapter's smallest subgroup and the thread count, so it never spans two
// subgroups (subgroups cover consecutive invocation indices). A team's lanes reach these together
// (all lanes of a real item, or none).

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
