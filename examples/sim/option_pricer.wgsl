/// {
///   "name": "option_pricer",
///   "summary": "Monte Carlo European call under GBM (S0 100, K 105, r 5%, vol 20%, T 1 year), a path per individual",
///   "state_bytes": 8,
///   "genome": {"length": 1},
///   "defaults": {"pop": 65536, "steps": 64},
///   "team": {"max": 1},
///   "reference": {"python": "option_pricer_reference.py", "rtol": 2e-3, "atol": 0.25}
/// }
// A Monte Carlo pricer of a European call option: individual i of generation g is one price path
// of geometric Brownian motion, dS = r S dt + sigma S dW, stepped exactly in log space over L steps
// of dt = T / L:
//   log S += (r - sigma^2 / 2) dt + sigma sqrt(dt) Z,   Z ~ N(0, 1) by Box-Muller,
// and its fitness is the discounted payoff e^(-r T) max(S_T - K, 0). The mean fitness of a
// generation is the Monte Carlo price, which converges to the Black-Scholes closed form (Black and
// Scholes 1973; tests/test_sim_file.cpp checks it). The normals are drawn from the counter-based
// RNG keyed by (seed, episode, generation, individual, step), so each generation draws fresh paths
// and every strategy the same ones. The genome (1 gene) is not used: the GA has nothing to
// optimise here; the workload measures how the strategies run independent paths.
// The CPU reference (option_pricer_reference.py) draws the same uniforms and computes in double:
// WGSL's log and cos carry errors up to ~2^-11 absolute on some GPUs: over 64 steps of sigma sqrt(dt)
// = 0.025 that bounds log S_T within ~0.002 of the double path, S_T within ~0.2 (atol 0.25).

const S0: f32 = 100.0;
const STRIKE: f32 = 105.0;
const RATE: f32 = 0.05;
const VOL: f32 = 0.2;
const MATURITY: f32 = 1.0;
const PI: f32 = 3.14159265358979323846;
const STREAM_PATH: u32 = 16u;  // the key stream of the path normals (sim_common.wgsl uses 1 and 2)

struct State {
  log_s: f32,
  episode: u32,
}

fn sim_load(ind: u32) {}

// Every step depends on the previous one (the path), and a path is one lane's work.
const SIM_TEAM_SPLITS_STEPS: bool = false;

fn sim_init(ind: u32, episode: u32) -> State {
  return State(log(S0), episode);
}

// A uniform in (0, 1), exact in f32: (h >> 8 + 0.5) / 2^24.
fn unit_open(h: u32) -> f32 {
  return (f32(h >> 8u) + 0.5) * (1.0 / 16777216.0);
}

fn sim_step(t: u32, s: ptr<function, State>, ind: u32) {
  let h = hash5(params.seed, STREAM_PATH + (*s).episode, params.generation, ind, t);
  let u1 = unit_open(h);
  let u2 = unit_open(pcg_hash(h ^ 0x9e3779b9u));
  let z = sqrt(-2.0 * log(u1)) * cos(2.0 * PI * u2);
  let dt = MATURITY / f32(params.steps);
  (*s).log_s = (*s).log_s + (RATE - 0.5 * VOL * VOL) * dt + VOL * sqrt(dt) * z;
}

// Every path runs to maturity.
fn sim_done(s: State) -> bool {
  return false;
}

fn sim_fitness(s: State) -> f32 {
  return exp(-RATE * MATURITY) * max(exp(s.log_s) - STRIKE, 0.0);
}
