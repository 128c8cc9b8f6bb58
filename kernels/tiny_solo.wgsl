// The lane reductions of the tiny transformer's ops (kernels/tiny_common.wgsl) for adapters
// without subgroups: every team is one thread (src/tiny/runner.cpp sets every lane count to 1),
// so a team's value is its only lane's. kernels/tiny_team.wgsl is the subgroup version.

fn lane_sum(x: f32, lanes: u32) -> f32 {
  _ = lanes;
  return x;
}

fn lane_max(x: f32, lanes: u32) -> f32 {
  _ = lanes;
  return x;
}
