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


fn sim_init(ind: u32) -> State {
  var s: State;  // zero-initialised
  return s;
}

fn sim_step(t: u32, s: ptr<function, State>, ind: u32) {
  var x: array<f32, 8>;
  for (var k = 0u; k < 6u; k++) {
    x[k] = data(t, k);
  }
  x[6] = (*s).fb0;
  x[7] = (*s).fb1;
  var hn: array<f32, 16>;
  for (var j = 0u; j < 16u; j++) {
    var a = gene(ind, 384u + j);
    for (var k = 0u; k < 8u; k++) {
      a = a + gene(ind, j * 8u + k) * x[k];
    }
    var rec = 0.0;
    for (var m = 0u; m < 16u; m++) {
      rec = rec + gene(ind, 128u + j * 16u + m) * (*s).h[m];
    }
    hn[j] = tanh_safe(a + 0.25 * rec);
  }
  var out: array<f32, 6>;
  for (var o = 0u; o < 6u; o++) {
    var a = gene(ind, 496u + o);
    for (var j = 0u; j < 16u; j++) {
      a = a + gene(ind, 400u + o * 16u + j) * hn[j];
    }
    out[o] = a;
  }
  var r = 0.0;
  var turnover = 0.0;
  for (var g = 0u; g < 4u; g++) {
    let p = tanh_safe(out[g]);
    let base = 6u + 4u * g;
    let group_ret = (data(t, base) + data(t, base + 1u) + data(t, base + 2u) + data(t, base + 3u)) * 0.25;
    r = r + p * 0.25 * group_ret;
    turnover = turnover + abs(p - (*s).pos[g]) * 0.25;
    (*s).pos[g] = p;
  }
  r = r - 0.0005 * turnover;
  (*s).h = hn;
  (*s).fb0 = tanh_safe(out[4]);
  (*s).fb1 = tanh_safe(out[5]);
  (*s).sum_r = (*s).sum_r + r;
  (*s).sum_r2 = (*s).sum_r2 + r * r;
  (*s).equity = (*s).equity + r;
  (*s).peak = max((*s).peak, (*s).equity);
  (*s).mdd = max((*s).mdd, (*s).peak - (*s).equity);
}

// The annualised Sharpe ratio of the hourly returns minus 5 x the maximum drawdown.
fn sim_fitness(s: State) -> f32 {
  let n = f32(params.steps);
  let mean = s.sum_r / n;
  let var_r = max(s.sum_r2 / n - mean * mean, 0.0);
  return mean / sqrt(var_r + 1e-12) * 93.59487165438072 - 5.0 * s.mdd;  // sqrt(8760)
}
