// The fixed tail of every simulation kernel (see sim_common.wgsl): the execution strategies,
// generated around the one definition of State, sim_init, sim_step and sim_fitness.
//   per-step and batched: sim_init_main, then L x sim_step_main, then sim_fitness_main, with the
//                         state of each individual in the storage buffer `slots`;
//   fused:                sim_fused_main, the whole episode in one invocation, state in registers.
// Per-step and batched run the same kernels, so their results are bitwise equal.
// Included at the bottom of every workload file, after its definition.
// #include "sim_common.wgsl"

struct Slot {
  t: u32,  // steps taken: every step dispatch of the per-step strategies is the same
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

@compute @workgroup_size(WORKGROUP_SIZE)
fn sim_init_main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= params.pop) {
    use_all_bindings();
    return;
  }
  slots[i].t = 0u;
  slots[i].s = sim_init(i);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn sim_step_main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= params.pop) {
    use_all_bindings();
    return;
  }
  let t = slots[i].t;
  var s = slots[i].s;
  sim_step(t, &s, i);
  slots[i].s = s;
  slots[i].t = t + 1u;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn sim_fitness_main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= params.pop) {
    use_all_bindings();
    return;
  }
  fitness[i] = sim_fitness(slots[i].s);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn sim_fused_main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= params.pop) {
    use_all_bindings();
    return;
  }
  var s = sim_init(i);
  for (var t = 0u; t < params.steps; t++) {
    sim_step(t, &s, i);
  }
  fitness[i] = sim_fitness(s);
}
