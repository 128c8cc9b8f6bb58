enable subgroups;

// The team strategy (docs/SIMULATIONS.md, "Team strategy"), generated for every workload:
// fuse::SimProgram places this file before the workload's module (kernels/sim_solo.wgsl is the
// one-invocation version). A team of TEAM consecutive invocations of one subgroup evaluates one
// individual: each lane loads its slice of the policy's weights once per evaluation (sim_load)
// and the lanes exchange values by subgroup shuffles (team_sum, team_broadcast). How the work
// splits is the workload's: the MLP and Market policies split hidden units across lanes and
// broadcast the activations, Rastrigin splits its independent steps (SIM_TEAM_SPLITS_STEPS).
// TEAM is a power of two dividing the adapter's smallest subgroup and WORKGROUP_SIZE, so a team
// never spans two subgroups (SimProgram checks; subgroups cover consecutive invocation indices).
// Subgroup built-ins must be reached in uniform control flow (shared/reference/README.md): the
// step loops have uniform trip counts, teams past the population evaluate a copy of the last
// individual and write nothing, and every workload computes its policy before any early return.

var<private> team_sg_base: u32;  // the subgroup lane of this team's lane 0

fn team_sum(x: f32) -> f32 {
  var v = x;
  // Butterfly: every lane ends with the same sum (f32 addition is commutative).
  for (var m = 1u; m < TEAM; m = m << 1u) {
    v = v + subgroupShuffleXor(v, m);
  }
  return v;
}

// Lane `lane`'s value of x, in every lane of the team.
fn team_broadcast(x: f32, lane: u32) -> f32 {
  return subgroupShuffle(x, team_sg_base + lane);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn sim_team_main(@builtin(global_invocation_id) gid: vec3<u32>,
                 @builtin(subgroup_invocation_id) sg_lane: u32) {
  let ind = gid.x / TEAM;
  team_lane = gid.x % TEAM;
  team_sg_base = sg_lane - team_lane;
  let src = individual_of(ind);
  sim_load(src);
  let stride = select(1u, TEAM, SIM_TEAM_SPLITS_STEPS);
  var total = 0.0;
  for (var e = 0u; e < params.episodes; e++) {
    var s = sim_init(src, e);
    for (var t = 0u; t < params.steps; t += stride) {
      sim_step(t, &s, src);
    }
    total = total + sim_fitness(s);
  }
  if (ind < params.pop && team_lane == 0u) {
    fitness[ind] = total / f32(params.episodes);
  }
}
