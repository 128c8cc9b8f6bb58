/// {
///   "name": "rastrigin",
///   "summary": "Rastrigin function, dimension = steps (the embarrassingly parallel control)",
///   "state_bytes": 4,
///   "genome": {"length": "steps", "init_scale": 5.12},
///   "defaults": {"pop": 4096, "steps": 2000},
///   "ga": {"tournament": 3, "elites": 2, "rate": 0.05, "sigma": 0.3, "lo": -5.12, "hi": 5.12},
///   "team": {"workgroup": 1024, "max": 64},
///   "overrides": {"TEAM_STEP_UNROLL": 8},
///   "reference": {"builtin": "rastrigin", "rtol": 1e-4, "atol": 0.01}
/// }
// Rastrigin, the embarrassingly parallel control case: the genome is the point x (dimension
// D = L), and step t adds the t-th term of f(x) = 10 D + sum_t (x_t^2 - 10 cos(2 pi x_t)).
// Fitness = -f (the GA maximises). Rastrigin (1974); Muehlenbein et al. (1991).

struct State {
  sum: f32,
}

// No policy: the genome is read where it is used, once per evaluation anyway.
fn sim_load(ind: u32) {}

// The terms are independent: a team of TEAM lanes divides them (lane l adds terms t + l for t =
// 0, TEAM, 2 TEAM, ..., ignoring those past L) and the team's fitness is the sum of its lanes';
// its lanes are strided over the workgroup, so a gene is read coalesced (kernels/sim_team.wgsl).
const SIM_TEAM_SPLITS_STEPS: bool = true;

fn sim_init(ind: u32, episode: u32) -> State {
  return State(0.0);
}

// The load is unconditional (a step past L reads gene L - 1 and adds 0: every term is >= 0, so
// the sum is bitwise the same), so that the team loop's unrolled steps keep their loads in flight
// together: a load under a branch waits for the branch.
fn sim_step(t: u32, s: ptr<function, State>, ind: u32) {
  let k = t + team_lane;
  let x = gene(ind, min(k, params.steps - 1u));
  let term = x * x - 10.0 * cos(6.2831853071795864 * x) + 10.0;
  (*s).sum = (*s).sum + select(0.0, term, k < params.steps);
}

// Every episode runs its L steps.
fn sim_done(s: State) -> bool {
  return false;
}

fn sim_fitness(s: State) -> f32 {
  return -s.sum;
}

