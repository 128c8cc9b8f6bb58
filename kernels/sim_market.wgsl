/// {
///   "name": "market",
///   "summary": "16 synthetic assets, hourly, RNN 8-16-6 with 2 outputs fed back, Sharpe - 5 x drawdown",
///   "state_bytes": 108,
///   "genome": {"length": 502, "init_scale": 1.0},
///   "defaults": {"pop": 10000, "steps": 1500},
///   "ga": {"tournament": 3, "elites": 2, "rate": 0.1, "sigma": 0.05, "lo": -10.0, "hi": 10.0},
///   "team": {"auto_invocations": 40000, "auto_min": 4, "auto_max": 4},
///   "data": "market",
///   "reference": {"builtin": "market", "rtol": 2e-3, "atol": 2e-3}
/// }
// Market: a recurrent trading policy on 16 synthetic assets, one step per hour (see
// docs/SIMULATIONS.md and src/sim/market_data.h for the price generator). Step record t of
// sim_data (6 vec4, src/sim/market_data.h device_records): the 6 features known at hour t and 2
// zeros, then the simple returns from hour t to t + 1 of asset group g's 4 assets as vec4 2 + g.
// Policy: RNN 8 -> 16 -> 6. Inputs: the 6 features and the 2 fed-back outputs.
//   h'  = tanh(W_in [f; fb] + W_h h / 4 + b)          (16; the 1/4 = 1/sqrt(16) keeps a random
//                                                        genome's recurrence contractive)
//   out = W_out h' + b_out                            (6)
//   pos_g = tanh(out_g), g < 4: position in asset group g (assets 4g .. 4g+3), weight pos_g / 4
//   fb  = tanh(out_4, out_5)                          (fed back at the next step)
// Portfolio return r_t = sum_g pos_g / 4 * mean(group returns) - 0.0005 * sum_g |pos_g - prev_g| / 4.
// Fitness = Sharpe (mean / std of r, annualised by sqrt(8760)) - 5 * max drawdown of cum. r.
// Genome (502 f32): W_in[16][8] row-major, W_h[16][16], b[16], W_out[6][16], b_out[6].

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
// the whole evaluation, the weights of hidden units l, l + TEAM, ... (W_in, W_h, b); each step
// the lanes compute their units and broadcast them (every lane keeps the whole h for the
// recurrence). The readout and the trade are split by MARKET_SPLIT:
//   - split (the default): lane l also holds the W_out columns of its units and sums each
//     output over its units only; the team adds those partial outputs by shuffles (lane 0 adds
//     the bias). Lane l trades asset groups l, l + TEAM, ... (< 4) and the team adds the lanes'
//     returns and turnovers. Fewer weights and tanh per lane, and no wait for the broadcast
//     before the readout; but the sums' order depends on TEAM, so a team's fitness is within
//     rounding of the fused one, not bitwise equal (docs/SIMULATIONS.md says how it is checked).
//   - not split: lane l holds the readouts l, l + TEAM, ... (< 6) over all 16 units, computed
//     after the broadcast, then broadcast in turn; every lane trades every group. The arithmetic
//     is the fused strategy's whatever TEAM, so the fitness is bitwise the fused one's.
// A team of one (per-step, batched, fused) holds all 502 weights and computes the same sums in
// the same order either way.

const MARKET_GROUPS: u32 = 4u;

// An override, to measure both (`wgfuse sim market --override MARKET_SPLIT=0`).
override MARKET_SPLIT: bool = true;
// A lane trades asset groups market_group(q) for q < select(MARKET_GROUPS, (MARKET_GROUPS + TEAM
// - 1u) / TEAM, MARKET_SPLIT), written out as each loop's bound: an expression of override
// constants is a constant once the pipeline is compiled, so the loop unrolls and the arrays it
// indexes stay in registers (behind a function call, Tint guards the loop with an iteration
// counter, the driver keeps it rolled and the arrays go to local memory: 3x slower on the H100).

// The q-th asset group of this lane; MARKET_GROUPS (none) for lanes past the last group.
fn market_group(q: u32) -> u32 {
  if (MARKET_SPLIT && TEAM > 1u) {
    return min(team_lane + q * TEAM, MARKET_GROUPS);
  }
  return q;
}

// What a lane reads of step t's record: the 6 features (and 2 zeros) and the 4 returns of each
// of its groups (q-th group: returns[q]; summed where used, so that a prefetch does not wait for
// its loads). Three vec4 loads per lane in a split team of 4, 6 in a team of one.
struct MarketRecord {
  features: array<vec4<f32>, 2>,
  returns: array<vec4<f32>, 4>,
}

// Step t's record, 0 <= t < L.
fn market_load_record(t: u32) -> MarketRecord {
  var r: MarketRecord;
  r.features[0] = data4(t, 0u);
  r.features[1] = data4(t, 1u);
  for (var q = 0u; q < select(MARKET_GROUPS, (MARKET_GROUPS + TEAM - 1u) / TEAM, MARKET_SPLIT); q++) {
    r.returns[q] = data4(t, 2u + min(market_group(q), MARKET_GROUPS - 1u));
  }
  return r;
}

// Whether a step loads the next step's record before its own arithmetic, so that the latency of
// those loads hides behind it (the strategies that loop over the steps in one invocation; a
// per-step dispatch loads its own record as well). By default in a team of one only: on the H100
// at 10,000 x 1,500, fused 2.83 ms with it, 3.04 without; a split team of 4 (3 vec4 loads per
// step) 1.49 with it, 1.02 without. An override, to measure it both ways
// (`wgfuse sim market --override MARKET_PREFETCH=0`).
override MARKET_PREFETCH: bool = TEAM == 1u;
var<private> market_next: MarketRecord;  // the record of step market_next_t
var<private> market_next_t: u32 = 0xffffffffu;

// Step t's record: the one prefetched by step t - 1, else loaded now; then prefetches t + 1.
fn market_record(t: u32) -> MarketRecord {
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
fn market_observe(rec: MarketRecord, s: State) -> array<f32, 8> {
  let f = rec.features;
  return array<f32, 8>(f[0].x, f[0].y, f[0].z, f[0].w, f[1].x, f[1].y, s.fb0, s.fb1);
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

// Everything after the policy: positions in this lane's groups, the portfolio return of hour t
// net of costs (the team's sum), the fed-back outputs, and the statistics the fitness is
// computed from. Touches every field of State but h; pos[q] is the position in group
// market_group(q).
fn market_trade(rec: MarketRecord, s: ptr<function, State>, out: array<f32, 6>) {
  var r = 0.0;
  var turnover = 0.0;
  for (var q = 0u; q < select(MARKET_GROUPS, (MARKET_GROUPS + TEAM - 1u) / TEAM, MARKET_SPLIT); q++) {
    let g = market_group(q);
    // out[g] by constant indices: g depends on the lane, and a variable index would put `out`
    // in local memory.
    var out_g = out[0];
    for (var k = 1u; k < MARKET_GROUPS; k++) {
      out_g = select(out_g, out[k], g == k);
    }
    let p = tanh_safe(out_g);
    let v = rec.returns[q];
    let group_ret = (v.x + v.y + v.z + v.w) * 0.25;
    if (g < MARKET_GROUPS) {
      r = r + p * 0.25 * group_ret;
      turnover = turnover + abs(p - (*s).pos[q]) * 0.25;
      (*s).pos[q] = p;
    }
  }
  if (MARKET_SPLIT) {
    r = team_sum(r);
    turnover = team_sum(turnover);
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

// This lane's weights (sized for a team of one; a team uses the first 16 / TEAM units, and the
// W_out columns of those units (split) or ceil(6 / TEAM) readouts (not split): TEAM is a constant
// when the pipeline is compiled).
var<private> market_units: array<MarketUnit, 16>;
var<private> market_w_out: array<array<f32, 6>, 16>;  // [unit][output]: W_out[o][j] (split)
var<private> market_b_out: array<f32, 6>;  // b_out in lane 0, zeros in the others (split)
var<private> market_reads: array<MarketReadout, 6>;

fn sim_load(ind: u32) {
  for (var u = 0u; u < 16u / TEAM; u++) {
    let j = team_lane + u * TEAM;
    market_units[u] = market_unit(ind, j);
    if (MARKET_SPLIT) {
      for (var o = 0u; o < 6u; o++) {
        market_w_out[u][o] = gene(ind, 400u + o * 16u + j);
      }
    }
  }
  if (MARKET_SPLIT) {
    for (var o = 0u; o < 6u; o++) {
      market_b_out[o] = select(0.0, gene(ind, 496u + o), team_lane == 0u);
    }
  } else {
    for (var q = 0u; q < (6u + TEAM - 1u) / TEAM; q++) {
      market_reads[q] = market_readout(ind, min(team_lane + q * TEAM, 5u));
    }
  }
}

// The 6 outputs from this lane's units h_lane (split): lane 0 starts each from its bias, every
// lane adds its units in order, and the team adds the lanes' partial sums.
fn market_outputs_split(h_lane: array<f32, 16>) -> array<f32, 6> {
  var out: array<f32, 6>;
  for (var o = 0u; o < 6u; o++) {
    var a = market_b_out[o];
    for (var u = 0u; u < 16u / TEAM; u++) {
      a = a + market_w_out[u][o] * h_lane[u];
    }
    out[o] = team_sum(a);
  }
  return out;
}

// The 6 outputs over all 16 units hn (not split): each lane computes its readouts, the team
// broadcasts them.
fn market_outputs_whole(hn: array<f32, 16>) -> array<f32, 6> {
  var out_lane: array<f32, 6>;
  for (var q = 0u; q < (6u + TEAM - 1u) / TEAM; q++) {
    out_lane[q] = market_output(market_reads[q], hn);
  }
  var out: array<f32, 6>;
  for (var o = 0u; o < 6u; o++) {
    out[o] = team_broadcast(out_lane[o / TEAM], o % TEAM);
  }
  return out;
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
  var out: array<f32, 6>;
  if (MARKET_SPLIT) {
    out = market_outputs_split(h_lane);
  } else {
    out = market_outputs_whole(hn);
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

