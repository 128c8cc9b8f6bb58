/// {
///   "name": "cartpole",
///   "summary": "CartPole-v1 (Gymnasium), Euler tau 0.02, MLP 4-16-2",
///   "state_bytes": 24,
///   "policy": "mlp",
///   "genome": {"length": 114, "init_scale": 1.0},
///   "defaults": {"pop": 4096, "steps": 500},
///   "ga": {"tournament": 3, "elites": 2, "rate": 0.1, "sigma": 0.1, "lo": -10.0, "hi": 10.0},
///   "reference": {"builtin": "cartpole", "horizon": 500, "rtol": 0, "atol": 0.5,
///                 "boundary_margin": 0.02}
/// }
// CartPole-v1 as Gymnasium defines it (gymnasium/envs/classic_control/cartpole.py; Barto, Sutton
// and Anderson 1983): Euler integration with tau = 0.02, force +-10, reward +1 for every step
// taken (the terminating one included), termination at |x| > 2.4 or |theta| > 12 degrees.
// Policy: MLP 4 -> 16 (tanh) -> 2, action = argmax (ties -> 0). Genome (114 f32):
//   W1[16][4] row-major, b1[16], W2[2][16], b2[2] (kernels/sim_mlp.wgsl).

const MLP_IN: u32 = 4u;
const MLP_OUT: u32 = 2u;

struct State {
  x: f32,
  x_dot: f32,
  theta: f32,
  theta_dot: f32,
  ret: f32,
  done: u32,
}

fn sim_load(ind: u32) {
  mlp_load(ind);
}

// Every step depends on the previous one: a team shares the state, not the steps.
const SIM_TEAM_SPLITS_STEPS: bool = false;

fn sim_init(ind: u32, episode: u32) -> State {
  return State(init_uniform(episode, 0u, 0.05), init_uniform(episode, 1u, 0.05),
               init_uniform(episode, 2u, 0.05), init_uniform(episode, 3u, 0.05), 0.0, 0u);
}

fn sim_step(t: u32, s: ptr<function, State>, ind: u32) {
  // The policy first, in uniform control flow (a team broadcasts inside it). The step has no
  // branch: the dynamics are computed after the episode's end too and kept only while it runs
  // (select), so the lanes of a subgroup never diverge inside a step (branches here made the
  // whole evaluation measurably slower on the H100, docs/RESULTS.md).
  let obs = array<f32, 4>((*s).x, (*s).x_dot, (*s).theta, (*s).theta_dot);
  let action = mlp_argmax(obs);
  let live = (*s).done == 0u;
  let gravity = 9.8;
  let masspole = 0.1;
  let total_mass = 1.1;      // masscart 1.0 + masspole
  let length = 0.5;          // half the pole's length
  let polemass_length = 0.05;
  let tau = 0.02;
  let force = select(-10.0, 10.0, action == 1u);
  let costheta = cos((*s).theta);
  let sintheta = sin((*s).theta);
  let temp = (force + polemass_length * (*s).theta_dot * (*s).theta_dot * sintheta) / total_mass;
  let thetaacc = (gravity * sintheta - costheta * temp) /
                 (length * (4.0 / 3.0 - masspole * costheta * costheta / total_mass));
  let xacc = temp - polemass_length * thetaacc * costheta / total_mass;
  (*s).x = select((*s).x, (*s).x + tau * (*s).x_dot, live);
  (*s).x_dot = select((*s).x_dot, (*s).x_dot + tau * xacc, live);
  (*s).theta = select((*s).theta, (*s).theta + tau * (*s).theta_dot, live);
  (*s).theta_dot = select((*s).theta_dot, (*s).theta_dot + tau * thetaacc, live);
  (*s).ret = select((*s).ret, (*s).ret + 1.0, live);
  let theta_limit = 0.20943951023931953;  // 12 * 2 * pi / 360
  // | rather than ||: no short-circuit branches. An ended episode stays outside, so done stays 1.
  let outside = ((*s).x < -2.4) | ((*s).x > 2.4) | ((*s).theta < -theta_limit) | ((*s).theta > theta_limit);
  (*s).done = select((*s).done, 1u, outside);
}

// The episode has ended: later steps leave the state unchanged (fused stops there).
fn sim_done(s: State) -> bool {
  return s.done != 0u;
}

fn sim_fitness(s: State) -> f32 {
  return s.ret;
}

