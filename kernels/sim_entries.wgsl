// The fixed tail of every simulation kernel (see sim_common.wgsl): the execution strategies,
// generated around the one definition of State, sim_init, sim_step and sim_fitness.
//   per-step and batched: sim_init_main, then for each of the E episodes L x sim_step_main
//                         followed by sim_next_episode_main (between episodes) or
//                         sim_fitness_main (after the last), with the state of each individual
//                         in the storage buffer `slots`;
//   fused:                sim_fused_main, the E episodes in one invocation, state in registers;
//   team:                 sim_team_main (kernels/sim_team.wgsl), a team of TEAM invocations.
// Fitness is the mean return over the episodes: summed in f32 in episode order from 0, divided
// by E, in every strategy (and in the baselines).
// Per-step and batched run the same kernels, so their results are bitwise equal.
// Included at the bottom of every workload file, after its definition.

struct Slot {
  t: u32,  // steps taken: every step dispatch of the per-step strategies is the same
  episode: u32,
  total: f32,  // the returns of the finished episodes
  s: State,
}

@group(0) @binding(4) var<storage, read_write> slots: array<Slot>;

// Every entry point uses bindings 0..4 (the phony reads are never executed) so that all share
// one bind-group layout.
fn use_all_bindings() {
  _ = params.pop;
  _ = genomes[0];
  _ = sim_data[0];
  _ = fitness[0];
  _ = slots[0].t;
}

// The individual of invocation `g`: invocations past the population compute a copy of the last
// one and write nothing, rather than return early: in the team module (kernels/sim_team.wgsl) the
// definition's functions exchange values by subgroup shuffles, which must be reached in uniform
// control flow from every entry point of the module.
fn individual_of(g: u32) -> u32 {
  if (params.pop == 0u) {
    use_all_bindings();  // never executed: the shared bind-group layout
  }
  return min(g, params.pop - 1u);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn sim_init_main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = individual_of(gid.x);
  let s = sim_init(i, 0u);
  if (gid.x < params.pop) {
    slots[i].t = 0u;
    slots[i].episode = 0u;
    slots[i].total = 0.0;
    slots[i].s = s;
  }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn sim_step_main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = individual_of(gid.x);
  let t = slots[i].t;
  var s = slots[i].s;
  sim_load(i);
  sim_step(t, &s, i);
  if (gid.x < params.pop) {
    slots[i].s = s;
    slots[i].t = t + 1u;
  }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn sim_fitness_main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = individual_of(gid.x);
  let f = (slots[i].total + sim_fitness(slots[i].s)) / f32(params.episodes);
  if (gid.x < params.pop) {
    fitness[i] = f;
  }
}

// Between episodes: adds the finished episode's return and starts the next.
@compute @workgroup_size(WORKGROUP_SIZE)
fn sim_next_episode_main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = individual_of(gid.x);
  let e = slots[i].episode + 1u;
  let total = slots[i].total + sim_fitness(slots[i].s);
  let s = sim_init(i, e);
  if (gid.x < params.pop) {
    slots[i].total = total;
    slots[i].episode = e;
    slots[i].t = 0u;
    slots[i].s = s;
  }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn sim_fused_main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = individual_of(gid.x);
  sim_load(i);
  var total = 0.0;
  for (var e = 0u; e < params.episodes; e++) {
    var s = sim_init(i, e);
    // Stops at the end of the episode, as the CUDA kernels do (no subgroup operation here: a
    // team of one).
    for (var t = 0u; t < params.steps && !sim_done(s); t++) {
      sim_step(t, &s, i);
    }
    total = total + sim_fitness(s);
  }
  if (gid.x < params.pop) {
    fitness[i] = total / f32(params.episodes);
  }
}
