/// {
///   "name": "pendulum",
///   "summary": "Pendulum-v1 (Gymnasium), dt 0.05, 200 steps, continuous torque from an MLP 3-8-1",
///   "state_bytes": 12,
///   "genome": {"length": 41, "init_scale": 1.0},
///   "defaults": {"pop": 4096, "steps": 200},
///   "ga": {"tournament": 3, "elites": 2, "rate": 0.1, "sigma": 0.1, "lo": -10.0, "hi": 10.0},
///   "team": {"max": 1},
///   "reference": {"python": "pendulum_reference.py", "horizon": 40, "rtol": 1e-3, "atol": 1e-2}
/// }
// Pendulum-v1 as Gymnasium defines it (gymnasium/envs/classic_control/pendulum.py): g = 10, m = 1,
// l = 1, dt = 0.05; torque u clipped to [-2, 2];
//   cost  = angle_normalize(th)^2 + 0.1 thdot^2 + 0.001 u^2      (reward = -cost)
//   thdot += (3 g / (2 l) sin(th) + 3 / (m l^2) u) dt, clipped to [-8, 8];  th += thdot dt
// angle_normalize(x) = ((x + pi) mod 2 pi) - pi; start th ~ U(-pi, pi), thdot ~ U(-1, 1); the
// episode is the time limit's 200 steps (no termination). Fitness = the return.
// Policy (the file's own, no built-in): u = 2 tanh(W2 . tanh(W1 obs + b1) + b2) on
// obs = (cos th, sin th, thdot). Genome (41 f32): W1[8][3] row-major, b1[8], W2[8], b2.
// The CPU reference is compared over the first 40 steps ("horizon"): near the upright position the
// pendulum parts nearby trajectories by e^(sqrt(3 g / 2 l) t) = e^(3.9 t), so f32 and f64 runs of one
// policy drift apart over longer episodes whatever the arithmetic's care (docs/SIMULATIONS.md).
// A workload file for `wgfuse sim examples/sim/pendulum.wgsl`; its CPU reference is
// pendulum_reference.py (docs/SIMULATIONS.md, "Workload files").

const PI: f32 = 3.14159265358979323846;
const HIDDEN: u32 = 8u;

struct State {
  th: f32,
  thdot: f32,
  ret: f32,
}

// The policy's weights, in private memory for the whole evaluation.
var<private> w1: array<f32, 24>;
var<private> b1: array<f32, 8>;
var<private> w2: array<f32, 8>;
var<private> b2: f32;

fn sim_load(ind: u32) {
  for (var k = 0u; k < 24u; k++) {
    w1[k] = gene(ind, k);
  }
  for (var j = 0u; j < HIDDEN; j++) {
    b1[j] = gene(ind, 24u + j);
    w2[j] = gene(ind, 32u + j);
  }
  b2 = gene(ind, 40u);
}

// Every step depends on the previous one; the policy is not split across lanes ("team": max 1).
const SIM_TEAM_SPLITS_STEPS: bool = false;

fn sim_init(ind: u32, episode: u32) -> State {
  return State(init_uniform(episode, 0u, PI), init_uniform(episode, 1u, 1.0), 0.0);
}

fn angle_normalize(x: f32) -> f32 {
  let y = x + PI;
  return y - 2.0 * PI * floor(y / (2.0 * PI)) - PI;
}

fn sim_step(t: u32, s: ptr<function, State>, ind: u32) {
  let obs = array<f32, 3>(cos((*s).th), sin((*s).th), (*s).thdot);
  var out = b2;
  for (var j = 0u; j < HIDDEN; j++) {
    var a = b1[j];
    for (var k = 0u; k < 3u; k++) {
      a = a + w1[j * 3u + k] * obs[k];
    }
    out = out + w2[j] * tanh_safe(a);
  }
  let u = clamp(2.0 * tanh_safe(out), -2.0, 2.0);
  let th = (*s).th;
  let thdot = (*s).thdot;
  let an = angle_normalize(th);
  let cost = an * an + 0.1 * thdot * thdot + 0.001 * u * u;
  let newthdot = clamp(thdot + (3.0 * 10.0 / 2.0 * sin(th) + 3.0 * u) * 0.05, -8.0, 8.0);
  (*s).th = th + newthdot * 0.05;
  (*s).thdot = newthdot;
  (*s).ret = (*s).ret - cost;
}

// The time limit ends every episode.
fn sim_done(s: State) -> bool {
  return false;
}

fn sim_fitness(s: State) -> f32 {
  return s.ret;
}
