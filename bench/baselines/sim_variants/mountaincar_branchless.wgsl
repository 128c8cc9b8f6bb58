/// {
///   "name": "mountaincar",
///   "summary": "MountainCar-v0 (Gymnasium), 200 steps, MLP 2-16-3",
///   "state_bytes": 16,
///   "policy": "mlp",
///   "genome": {"length": 99, "init_scale": 1.0},
///   "defaults": {"pop": 4096, "steps": 200},
///   "ga": {"tournament": 3, "elites": 2, "rate": 0.1, "sigma": 0.1, "lo": -10.0, "hi": 10.0},
///   "reference": {"builtin": "mountaincar", "horizon": 200, "rtol": 0, "atol": 0.5,
///                 "boundary_margin": 0.005}
/// }
// MountainCar-v0 as Gymnasium defines it (gymnasium/envs/classic_control/mountain_car.py; Moore
// 1990): velocity += (action - 1) * 0.001 - 0.0025 cos(3 position), clipped to +-0.07; position
// += velocity, clipped to [-1.2, 0.6], velocity zeroed at the left wall; reward -1 every step
// taken; termination at position >= 0.5 with velocity >= 0. Start: position U(-0.6, -0.4),
// velocity 0. Policy: MLP 2 -> 16 (tanh) -> 3 on (position, velocity / 0.07), action = argmax
// (ties -> lowest). Genome (99 f32): W1[16][2], b1[16], W2[3][16], b2[3] (kernels/sim_mlp.wgsl).

const MLP_IN: u32 = 2u;
const MLP_OUT: u32 = 3u;

struct State {
  pos: f32,
  vel: f32,
  ret: f32,
  done: u32,
}

fn sim_load(ind: u32) {
  mlp_load(ind);
}

// Every step depends on the previous one: a team shares the state, not the steps.
const SIM_TEAM_SPLITS_STEPS: bool = false;

fn sim_init(ind: u32, episode: u32) -> State {
  return State(-0.5 + init_uniform(episode, 0u, 0.1), 0.0, 0.0, 0u);
}

fn sim_step(t: u32, s: ptr<function, State>, ind: u32) {
  // The policy first, in uniform control flow (a team broadcasts inside it). The step has no
  // branch: the dynamics are computed after the episode's end too and kept only while it runs
  // (select), and the tests use & rather than && (no short-circuit branches).
  let action = mlp_argmax(array<f32, 2>((*s).pos, (*s).vel / 0.07));
  let live = (*s).done == 0u;
  var v = (*s).vel + ((f32(action) - 1.0) * 0.001 + cos(3.0 * (*s).pos) * (-0.0025));
  v = clamp(v, -0.07, 0.07);
  let p = clamp((*s).pos + v, -1.2, 0.6);
  v = select(v, 0.0, (p == -1.2) & (v < 0.0));
  (*s).pos = select((*s).pos, p, live);
  (*s).vel = select((*s).vel, v, live);
  (*s).ret = select((*s).ret, (*s).ret - 1.0, live);
  // An ended episode keeps done = 1 whatever this test says of its frozen state.
  (*s).done = select((*s).done, 1u, (p >= 0.5) & (v >= 0.0));
}

// The episode has ended: later steps leave the state unchanged (fused stops there).
fn sim_done(s: State) -> bool {
  return s.done != 0u;
}

fn sim_fitness(s: State) -> f32 {
  return s.ret;
}

