/// {
///   "name": "acrobot",
///   "summary": "Acrobot-v1 (Gymnasium), RK4 dt 0.2, MLP 6-16-3",
///   "state_bytes": 24,
///   "policy": "mlp_tree",
///   "genome": {"length": 163, "init_scale": 1.0},
///   "defaults": {"pop": 4096, "steps": 500},
///   "ga": {"tournament": 3, "elites": 2, "rate": 0.1, "sigma": 0.1, "lo": -10.0, "hi": 10.0},
///   "reference": {"builtin": "acrobot", "horizon": 60, "rtol": 0, "atol": 0.5,
///                 "boundary_margin": 0.01}
/// }
// Acrobot-v1 as Gymnasium defines it (gymnasium/envs/classic_control/acrobot.py; Sutton 1996,
// Sutton and Barto 2018): the book dynamics, one classic RK4 step over [0, dt = 0.2] with the
// torque held, angles wrapped to [-pi, pi], velocities clipped to +-4 pi and +-9 pi; reward -1
// per step until the terminal step (0), terminal when -cos(th1) - cos(th2 + th1) > 1.
// Policy: MLP 6 -> 16 (tanh) -> 3 on (cos th1, sin th1, cos th2, sin th2, dth1, dth2),
// torque = action - 1 with action = argmax (ties -> lowest). Genome (163 f32):
//   W1[16][6] row-major, b1[16], W2[3][16], b2[3] (kernels/sim_mlp.wgsl).

const MLP_IN: u32 = 6u;
const MLP_OUT: u32 = 3u;

struct State {
  th1: f32,
  th2: f32,
  dth1: f32,
  dth2: f32,
  ret: f32,
  done: u32,
}

const PI: f32 = 3.14159265358979323846;

fn sim_load(ind: u32) {
  mlp_load(ind);
}

// Every step depends on the previous one: a team shares the state, not the steps.
const SIM_TEAM_SPLITS_STEPS: bool = false;

fn sim_init(ind: u32, episode: u32) -> State {
  return State(init_uniform(episode, 0u, 0.1), init_uniform(episode, 1u, 0.1),
               init_uniform(episode, 2u, 0.1), init_uniform(episode, 3u, 0.1), 0.0, 0u);
}

// d/dt of (th1, th2, dth1, dth2) under torque a: Gymnasium's _dsdt, with two identities that
// cut the transcendentals and divisions (the GPU's special-function units bound a team's step):
// cos(x - pi/2) = sin(x) (sin th1 is also the observation's, so one sine serves both in the
// first stage), and the three divisions by d1 are products with its reciprocal.
fn acrobot_dsdt(s: vec4<f32>, a: f32) -> vec4<f32> {
  let m1 = 1.0;
  let m2 = 1.0;
  let l1 = 1.0;
  let lc1 = 0.5;
  let lc2 = 0.5;
  let I1 = 1.0;
  let I2 = 1.0;
  let g = 9.8;
  let theta1 = s.x;
  let theta2 = s.y;
  let dtheta1 = s.z;
  let dtheta2 = s.w;
  let c2 = cos(theta2);
  let s2 = sin(theta2);
  let d1 = m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2 + 2.0 * l1 * lc2 * c2) + I1 + I2;
  let d2 = m2 * (lc2 * lc2 + l1 * lc2 * c2) + I2;
  let inv_d1 = 1.0 / d1;
  let phi2 = m2 * lc2 * g * sin(theta1 + theta2);
  let phi1 = -m2 * l1 * lc2 * dtheta2 * dtheta2 * s2 - 2.0 * m2 * l1 * lc2 * dtheta2 * dtheta1 * s2 +
             (m1 * lc1 + m2 * l1) * g * sin(theta1) + phi2;
  let ddtheta2 = (a + d2 * inv_d1 * phi1 - m2 * l1 * lc2 * dtheta1 * dtheta1 * s2 - phi2) /
                 (m2 * lc2 * lc2 + I2 - d2 * d2 * inv_d1);
  let ddtheta1 = -(d2 * ddtheta2 + phi1) * inv_d1;
  return vec4<f32>(dtheta1, dtheta2, ddtheta1, ddtheta2);
}

// Gymnasium's wrap() loops without bound; here at most 16 turns each way, which any finite state
// of this system needs far fewer of (|velocities| <= 9 pi, dt = 0.2), so that a non-finite value
// can never hang the GPU.
fn wrap_angle(x: f32) -> f32 {
  var y = x;
  for (var n = 0u; n < 16u && y > PI; n++) {
    y = y - 2.0 * PI;
  }
  for (var n = 0u; n < 16u && y < -PI; n++) {
    y = y + 2.0 * PI;
  }
  return y;
}

fn sim_step(t: u32, s: ptr<function, State>, ind: u32) {
  // The policy first, in uniform control flow (a team broadcasts inside it), then the done test.
  let y0 = vec4<f32>((*s).th1, (*s).th2, (*s).dth1, (*s).dth2);
  let obs = array<f32, 6>(cos(y0.x), sin(y0.x), cos(y0.y), sin(y0.y), y0.z, y0.w);
  let torque = f32(mlp_argmax(obs)) - 1.0;
  if ((*s).done != 0u) {
    return;
  }
  let dt = 0.2;
  let k1 = acrobot_dsdt(y0, torque);
  let k2 = acrobot_dsdt(y0 + dt / 2.0 * k1, torque);
  let k3 = acrobot_dsdt(y0 + dt / 2.0 * k2, torque);
  let k4 = acrobot_dsdt(y0 + dt * k3, torque);
  let y1 = y0 + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
  (*s).th1 = wrap_angle(y1.x);
  (*s).th2 = wrap_angle(y1.y);
  (*s).dth1 = clamp(y1.z, -4.0 * PI, 4.0 * PI);
  (*s).dth2 = clamp(y1.w, -9.0 * PI, 9.0 * PI);
  if (-cos((*s).th1) - cos((*s).th2 + (*s).th1) > 1.0) {
    (*s).done = 1u;
  } else {
    (*s).ret = (*s).ret - 1.0;
  }
}

// The episode has ended: later steps leave the state unchanged (fused stops there).
fn sim_done(s: State) -> bool {
  return s.done != 0u;
}

fn sim_fitness(s: State) -> f32 {
  return s.ret;
}

