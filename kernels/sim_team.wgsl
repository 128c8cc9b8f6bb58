enable subgroups;
// A team's lanes always agree on the state, so a subgroup leaves the step loop together
// (subgroupAll): the shuffles run on all lanes of a subgroup whose control flow the analysis
// cannot prove uniform. (The module also holds sim_fused_main, never run with TEAM > 1.)
diagnostic(off, subgroup_uniformity);

// The team strategy (docs/SIMULATIONS.md, "Team strategy"), generated for every workload:
// fuse::SimProgram places this file before the workload's module (kernels/sim_solo.wgsl is the
// one-invocation version). A team of TEAM invocations evaluates one individual: each lane loads
// its slice of the policy's weights once per evaluation (sim_load) and the lanes exchange values
// (team_sum, team_broadcast). How the work splits is the workload's, and so is the team's layout:
//   - lanes together (the policies, whose lanes exchange values every step: the MLP and Market
//     split hidden units across lanes and broadcast the activations): a team is TEAM consecutive
//     invocations of one subgroup and exchanges by subgroup shuffles. TEAM divides the adapter's
//     smallest subgroup and WORKGROUP_SIZE, so a team never spans two subgroups (SimProgram
//     checks; subgroups cover consecutive invocation indices).
//   - lanes strided (SIM_TEAM_SPLITS_STEPS: independent steps, as Rastrigin's terms): lane l of
//     the workgroup's P = WORKGROUP_SIZE / TEAM teams is invocation l * P + team, so consecutive
//     invocations are consecutive individuals and read a gene in one coalesced run (genomes are
//     gene-major). The lanes exchange nothing during an episode; the team's fitness is the sum of
//     its lanes' sim_fitness, added through workgroup memory, so TEAM is bounded by the workgroup
//     only (it may exceed the subgroup).
// Subgroup built-ins must be reached in uniform control flow (shared/reference/README.md): the
// step loops' trip counts are uniform over the subgroup, teams past the population evaluate a
// copy of the last individual and write nothing, and every workload computes its policy before
// any early return.

var<private> team_sg_base: u32;  // lanes together: the subgroup lane of this team's lane 0
var<workgroup> team_exchange: array<f32, WORKGROUP_SIZE>;

// Lanes together only (a step-splitting workload never exchanges during an episode).
fn team_sum(x: f32) -> f32 {
  var v = x;
  // Butterfly: every lane ends with the same sum (f32 addition is commutative). A loop with a
  // constant bound (TEAM <= 32): Tint guards `m = m << 1u` loops with an iteration counter.
  for (var k = 0u; k < 5u; k++) {
    if ((1u << k) < TEAM) {
      v = v + subgroupShuffleXor(v, 1u << k);
    }
  }
  return v;
}

// Lane `lane`'s value of x, in every lane of the team (lanes together only).
fn team_broadcast(x: f32, lane: u32) -> f32 {
  return subgroupShuffle(x, team_sg_base + lane);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn sim_team_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
                 @builtin(subgroup_invocation_id) sg_lane: u32) {
  var ind: u32;
  if (SIM_TEAM_SPLITS_STEPS) {
    let per_group = WORKGROUP_SIZE / TEAM;
    ind = wid.x * per_group + lid % per_group;
    team_lane = lid / per_group;
  } else {
    let g = wid.x * WORKGROUP_SIZE + lid;
    ind = g / TEAM;
    team_lane = g % TEAM;
    team_sg_base = sg_lane - team_lane;
  }
  let src = individual_of(ind);
  sim_load(src);
  var total = 0.0;
  for (var e = 0u; e < params.episodes; e++) {
    var s = sim_init(src, e);
    if (SIM_TEAM_SPLITS_STEPS) {
      // Lane l takes steps t + l for t = 0, TEAM, 2 TEAM, ... (sim_step ignores those >= L),
      // TEAM_STEP_UNROLL per iteration so that their loads are in flight together (the order of
      // each lane's sum is the same whatever the unroll).
      for (var t = 0u; t < params.steps; t += TEAM_STEP_UNROLL * TEAM) {
        for (var u = 0u; u < TEAM_STEP_UNROLL; u++) {
          sim_step(t + u * TEAM, &s, src);
        }
      }
    } else {
      // Stops once every episode of the subgroup has ended.
      for (var t = 0u; t < params.steps && !subgroupAll(sim_done(s)); t++) {
        sim_step(t, &s, src);
      }
    }
    total = total + sim_fitness(s);
  }
  if (SIM_TEAM_SPLITS_STEPS) {
    // The team's fitness is the sum of its lanes' (each over its share of the steps), in lane
    // order, through workgroup memory.
    // Only lane 0 (which writes) adds: TEAM reads of workgroup memory per invocation add up.
    team_exchange[lid] = total;
    workgroupBarrier();
    if (team_lane == 0u) {
      let per_group = WORKGROUP_SIZE / TEAM;
      total = 0.0;
      for (var l = 0u; l < TEAM; l++) {
        total = total + team_exchange[l * per_group + lid % per_group];
      }
    }
  }
  if (ind < params.pop && team_lane == 0u) {
    fitness[ind] = total / f32(params.episodes);
  }
}
