// The Market workload's synthetic prices, a port of src/sim/market_data.cpp (generate_market):
// the same regime-switching geometric Brownian motion from the same counter-based RNG, in double,
// stored as f32 records (6 features, then 16 asset returns, per step). JS's Math.log/exp/cos may
// differ from the C library's in the last bit of a double, so a record can differ from native in
// the last bit of its f32 at most rarely; the suite's equivalence checks compare fitness with a
// tolerance, never the data.
import {hash4, pcgHash, STREAM_MARKET} from './rng.js';

export const ASSETS = 16;
export const FEATURES = 6;
export const MARKET_RECORD = FEATURES + ASSETS;
const WARMUP_HOURS = 24;

const unitOpen = (h) => (h + 0.5) / 4294967296;

function normal(seed, a, b) {
  const h = hash4(seed, STREAM_MARKET, a, b);
  const u1 = unitOpen(h), u2 = unitOpen(pcgHash((h ^ 0x9e3779b9) >>> 0));
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(6.283185307179586 * u2);
}

const uniform01 = (seed, a, b) => unitOpen(hash4(seed, STREAM_MARKET, a, b));

export function generateMarket(steps, seed) {
  const hours = WARMUP_HOURS + steps + 1;
  const dt = 1 / 8760;
  const muM = [0.08, -0.2], sigM = [0.12, 0.4], pSwitch = [1 / 720, 1 / 168];
  const beta = [], sigI = [], alpha = [];
  for (let a = 0; a < ASSETS; ++a) {
    beta.push(0.6 + 0.8 * uniform01(seed, 0xffff0000, a));
    sigI.push(0.1 + 0.2 * uniform01(seed, 0xffff0001, a));
    alpha.push(-0.05 + 0.1 * uniform01(seed, 0xffff0002, a));
  }
  const logp = new Float64Array(hours * ASSETS).fill(Math.log(100));
  const prices = new Float64Array(hours * ASSETS).fill(100);
  let regime = 0;
  for (let t = 1; t < hours; ++t) {
    if (uniform01(seed, 0xfffe0000, t) < pSwitch[regime]) regime = 1 - regime;
    const zm = normal(seed, t, ASSETS);
    for (let a = 0; a < ASSETS; ++a) {
      const z = normal(seed, t, a);
      const drift = beta[a] * muM[regime] + alpha[a];
      const variance = beta[a] * beta[a] * sigM[regime] * sigM[regime] + sigI[a] * sigI[a];
      const r = (drift - 0.5 * variance) * dt + Math.sqrt(dt) * (beta[a] * sigM[regime] * zm + sigI[a] * z);
      logp[t * ASSETS + a] = logp[(t - 1) * ASSETS + a] + r;
      prices[t * ASSETS + a] = Math.exp(logp[t * ASSETS + a]);
    }
  }
  const lp = (hour, a) => logp[hour * ASSETS + a];
  const records = new Float32Array(steps * MARKET_RECORD);
  for (let i = 0; i < steps; ++i) {
    const t = WARMUP_HOURS + i;
    const rec = i * MARKET_RECORD;
    for (let g = 0; g < 4; ++g) {
      let s = 0;
      for (let a = 4 * g; a < 4 * g + 4; ++a) s += lp(t, a) - lp(t - 1, a);
      records[rec + g] = (100 * s) / 4;
    }
    let mom = 0, sq = 0;
    for (let a = 0; a < ASSETS; ++a) {
      mom += lp(t, a) - lp(t - WARMUP_HOURS, a);
      for (let k = 0; k < WARMUP_HOURS; ++k) {
        const r = lp(t - k, a) - lp(t - k - 1, a);
        sq += r * r;
      }
    }
    records[rec + 4] = (10 * mom) / ASSETS;
    records[rec + 5] = 100 * Math.sqrt(sq / (ASSETS * WARMUP_HOURS));
    for (let a = 0; a < ASSETS; ++a)
      records[rec + FEATURES + a] = prices[(t + 1) * ASSETS + a] / prices[t * ASSETS + a] - 1;
  }
  return records;
}
