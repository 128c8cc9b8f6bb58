// The team helpers of a one-invocation-per-individual module (per-step, batched, fused): a team of
// one, so a team sum or broadcast is the value itself. fuse::SimProgram places this file before
// the workload's module for those strategies; kernels/sim_team.wgsl is the subgroup version, for
// the team strategy. Needs no extension, so these strategies run on every adapter.

fn team_sum(x: f32) -> f32 {
  return x;
}

// Lane `lane`'s value of x: in a team of one, this invocation's.
fn team_broadcast(x: f32, lane: u32) -> f32 {
  return x;
}
