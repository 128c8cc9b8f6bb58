/// {
///   "name": "tracker",
///   "summary": "a linear follower of a recorded target: per-step data held in the header",
///   "genome": {"length": 2, "init_scale": 0.75},
///   "defaults": {"pop": 64, "steps": 7},
///   "team": {"max": 1},
///   "data": {"stride": 5, "records": [
///     [0.5, -1.25, 2.0, 0.125, 3.0], [1.5, 0.25, -2.0, 0.75, -1.0], [-0.5, 1.25, 4.0, -0.125, 0.5],
///     [2.25, -0.5, 1.5, 1.0, -2.5], [0.0, 3.0, -0.25, 0.5, 1.75], [-1.75, 0.5, 0.5, -1.5, 0.25],
///     [1.0, 1.0, 1.0, 1.0, 1.0], [-2.0, -0.75, 2.5, 0.25, -0.5], [0.75, 2.5, -1.0, -0.5, 2.0]]}
/// }
// A test workload (tests/test_sim_file.cpp, tests/web/playground.mjs): record t of the header's data
// is what data4(t, 0) and data4(t, 1) read at step t (5 values, then the zeros that pad a record to
// 8); each step moves x towards the target r0 + r1 r2 - r3 + r4 by the gain gene 0, plus gene 1
// times a padding zero, and fitness is minus the summed squared miss.
struct State {
  x: f32,
  cost: f32,
}

fn sim_load(ind: u32) {}

const SIM_TEAM_SPLITS_STEPS: bool = false;

fn sim_init(ind: u32, episode: u32) -> State {
  return State(0.0, 0.0);
}

fn sim_step(t: u32, s: ptr<function, State>, ind: u32) {
  let a = data4(t, 0u);
  let b = data4(t, 1u);
  let goal = a.x + a.y * a.z - a.w + b.x;
  (*s).x = (*s).x + gene(ind, 0u) * (goal - (*s).x) + gene(ind, 1u) * (b.y + b.z + b.w);
  let miss = (*s).x - goal;
  (*s).cost = (*s).cost + miss * miss;
}

fn sim_done(s: State) -> bool {
  return false;
}

fn sim_fitness(s: State) -> f32 {
  return -s.cost;
}
