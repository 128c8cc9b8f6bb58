// Market: a recurrent trading policy on 16 synthetic assets, one step per hour (see
// docs/SIMULATIONS.md and src/sim/market_data.h for the price generator). Step record t of
// sim_data (22 f32): 6 features known at hour t, then the 16 assets' simple returns from hour t
// to t + 1.
// Policy: RNN 8 -> 16 -> 6. Inputs: the 6 features and the 2 fed-back outputs.
//   h'  = tanh(W_in [f; fb] + W_h h / 4 + b)          (16; the 1/4 = 1/sqrt(16) keeps a random
//                                                        genome's recurrence contractive)
//   out = W_out h' + b_out                            (6)
//   pos_g = tanh(out_g), g < 4: position in asset group g (assets 4g .. 4g+3), weight pos_g / 4
//   fb  = tanh(out_4, out_5)                          (fed back at the next step)
// Portfolio return r_t = sum_g pos_g / 4 * mean(group returns) - 0.0005 * sum_g |pos_g - prev_g| / 4.
// Fitness = Sharpe (mean / std of r, annualised by sqrt(8760)) - 5 * max drawdown of cum. r.
// Genome (502 f32): W_in[16][8] row-major, W_h[16][16], b[16], W_out[6][16], b_out[6].
// #include "sim_common.wgsl"

struct State {
  h: array<f32, 16>,
  pos: array<f32, 4>,
  fb0: f32,
  fb1: f32,
  sum_r: f32,
  sum_r2: f32,
  equity: f32,  // cumulative return
  peak: f32,
  mdd: f32,
}


fn sim_init(ind: u32, episode: u32) -> State {
  var s: State;  // zero-initialised
  return s;
}

// Every step depends on the previous one: a team shares the state, not the steps.
const SIM_TEAM_SPLITS_STEPS: bool = false;

// The dynamics, in pieces: the observation, the recurrent unit, the readout, the trade and the
// reward. In a team of TEAM lanes (kernels/sim_team.wgsl), lane l holds, in private memory for
// the whole evaluation, the weights of hidden units l, l + TEAM, ... and of outputs l, l + TEAM,
// ... (< 6); each step the lanes compute their units, broadcast them, compute their outputs,
// broadcast those, and every lane applies the trade (the same arithmetic in every lane, so each
// holds the portfolio state). A team of one (per-step, batched, fused) holds all 502 weights.

const MARKET_RECORD: u32 = 22u;

// Step t's record, 0 <= t < L.
fn market_load_record(t: u32) -> array<f32, MARKET_RECORD> {
  var r: array<f32, MARKET_RECORD>;
  for (var k = 0u; k < MARKET_RECORD; k++) {
    r[k] = data(t, k);
  }
  return r;
}

// Whether a step loads the next step's record before its own arithmetic, so that the latency of
// those loads hides behind it (the strategies that loop over the steps in one invocation; a
// per-step dispatch loads its own record as well). An override, to measure it both ways
// (`wgfuse sim market --override MARKET_PREFETCH=0`).
override MARKET_PREFETCH: bool = true;
var<private> market_next: array<f32, MARKET_RECORD>;  // the record of step market_next_t
var<private> market_next_t: u32 = 0xffffffffu;

// Step t's record: the one prefetched by step t - 1, else loaded now; then prefetches t + 1.
fn market_record(t: u32) -> array<f32, MARKET_RECORD> {
  var r = market_next;
  if (!MARKET_PREFETCH || market_next_t != t) {
    r = market_load_record(t);
  }
  if (MARKET_PREFETCH) {
    market_next = market_load_record(min(t + 1u, params.steps - 1u));
    market_next_t = t + 1u;
  }
  return r;
}

// The policy's input: the 6 features of the step's record and the 2 fed-back outputs.
fn market_observe(rec: array<f32, MARKET_RECORD>, s: State) -> array<f32, 8> {
  var x: array<f32, 8>;
  for (var k = 0u; k < 6u; k++) {
    x[k] = rec[k];
  }
  x[6] = s.fb0;
  x[7] = s.fb1;
  return x;
}

// The weights of hidden unit j: W_in[j][0..8], W_h[j][0..16], b[j].
struct MarketUnit {
  w_in: array<f32, 8>,
  w_h: array<f32, 16>,
  b: f32,
}

fn market_unit(ind: u32, j: u32) -> MarketUnit {
  var u: MarketUnit;
  for (var k = 0u; k < 8u; k++) {
    u.w_in[k] = gene(ind, j * 8u + k);
  }
  for (var m = 0u; m < 16u; m++) {
    u.w_h[m] = gene(ind, 128u + j * 16u + m);
  }
  u.b = gene(ind, 384u + j);
  return u;
}

// h'_j = tanh(b_j + W_in[j] . x + W_h[j] . h / 4)
fn market_hidden(u: MarketUnit, x: array<f32, 8>, h: array<f32, 16>) -> f32 {
  var a = u.b;
  for (var k = 0u; k < 8u; k++) {
    a = a + u.w_in[k] * x[k];
  }
  var rec = 0.0;
  for (var m = 0u; m < 16u; m++) {
    rec = rec + u.w_h[m] * h[m];
  }
  return tanh_safe(a + 0.25 * rec);
}

// The weights of output o: W_out[o][0..16], b_out[o].
struct MarketReadout {
  w: array<f32, 16>,
  b: f32,
}

fn market_readout(ind: u32, o: u32) -> MarketReadout {
  var r: MarketReadout;
  for (var j = 0u; j < 16u; j++) {
    r.w[j] = gene(ind, 400u + o * 16u + j);
  }
  r.b = gene(ind, 496u + o);
  return r;
}

// out_o = b_out[o] + W_out[o] . h'
fn market_output(r: MarketReadout, hn: array<f32, 16>) -> f32 {
  var a = r.b;
  for (var j = 0u; j < 16u; j++) {
    a = a + r.w[j] * hn[j];
  }
  return a;
}

// Everything after the policy: positions, the portfolio return of hour t net of costs, the
// fed-back outputs, and the statistics the fitness is computed from. Touches every field of
// State but h.
fn market_trade(rec: array<f32, MARKET_RECORD>, s: ptr<function, State>, out: array<f32, 6>) {
  var r = 0.0;
  var turnover = 0.0;
  for (var g = 0u; g < 4u; g++) {
    let p = tanh_safe(out[g]);
    let base = 6u + 4u * g;
    let group_ret = (rec[base] + rec[base + 1u] + rec[base + 2u] + rec[base + 3u]) * 0.25;
    r = r + p * 0.25 * group_ret;
    turnover = turnover + abs(p - (*s).pos[g]) * 0.25;
    (*s).pos[g] = p;
  }
  r = r - 0.0005 * turnover;
  (*s).fb0 = tanh_safe(out[4]);
  (*s).fb1 = tanh_safe(out[5]);
  (*s).sum_r = (*s).sum_r + r;
  (*s).sum_r2 = (*s).sum_r2 + r * r;
  (*s).equity = (*s).equity + r;
  (*s).peak = max((*s).peak, (*s).equity);
  (*s).mdd = max((*s).mdd, (*s).peak - (*s).equity);
}

// This lane's weights (sized for a team of one; a team uses the first 16 / TEAM units and
// ceil(6 / TEAM) readouts: TEAM is a constant when the pipeline is compiled).
var<private> market_units: array<MarketUnit, 16>;
var<private> market_reads: array<MarketReadout, 6>;

fn sim_load(ind: u32) {
  for (var u = 0u; u < 16u / TEAM; u++) {
    market_units[u] = market_unit(ind, team_lane + u * TEAM);
  }
  for (var q = 0u; q < (6u + TEAM - 1u) / TEAM; q++) {
    market_reads[q] = market_readout(ind, min(team_lane + q * TEAM, 5u));
  }
}

fn sim_step(t: u32, s: ptr<function, State>, ind: u32) {
  let rec = market_record(t);
  let x = market_observe(rec, *s);
  var h_lane: array<f32, 16>;
  for (var u = 0u; u < 16u / TEAM; u++) {
    h_lane[u] = market_hidden(market_units[u], x, (*s).h);
  }
  var hn: array<f32, 16>;
  for (var j = 0u; j < 16u; j++) {
    hn[j] = team_broadcast(h_lane[j / TEAM], j % TEAM);
  }
  var out_lane: array<f32, 6>;
  for (var q = 0u; q < (6u + TEAM - 1u) / TEAM; q++) {
    out_lane[q] = market_output(market_reads[q], hn);
  }
  var out: array<f32, 6>;
  for (var o = 0u; o < 6u; o++) {
    out[o] = team_broadcast(out_lane[o / TEAM], o % TEAM);
  }
  (*s).h = hn;
  market_trade(rec, s, out);
}

// The annualised Sharpe ratio of the hourly returns minus 5 x the maximum drawdown.
// Every episode runs its L steps.
fn sim_done(s: State) -> bool {
  return false;
}

fn sim_fitness(s: State) -> f32 {
  let n = f32(params.steps);
  let mean = s.sum_r / n;
  let var_r = max(s.sum_r2 / n - mean * mean, 0.0);
  return mean / sqrt(var_r + 1e-12) * 93.59487165438072 - 5.0 * s.mdd;  // sqrt(8760)
}

// The entry points of every strategy around this definition.
// #include "sim_entries.wgsl"
