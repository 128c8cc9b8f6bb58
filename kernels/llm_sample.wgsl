// Sampling the next token from logits f32[vocab] on the GPU, with no host sync: the steps of
// Hugging Face transformers' generate in its order (repetition penalty -> temperature -> top-k ->
// top-p -> a draw from the softmax of what is left), driven by wgfuse::llm::Sampler.
//
//   prepare    (1 workgroup)  clears the scratch; marks the ids in tokens[0..=pos] in a bitmap
//   transform  (grid)         x = penalised logit / temperature as an order-preserving u32 key;
//                             the max key; histogram 0 (counts by the key's top byte)
//   histogram  (grid, PASS)   PASS 1..3: the top-k threshold, one byte of the key per pass (a
//                             radix select by counts); PASS 4..7: the top-p threshold, the same
//                             way by mass, over the tokens that top-k kept
//   partials   (grid)         the final threshold; each workgroup's kept mass
//   pick       (1 workgroup)  the draw: the chunk, then the token whose cumulative mass (in id
//                             order) first exceeds u * total; writes tokens[pos + 1], state[0]++
//
// Masses are exp(x - max) as unsigned fixed point with 44 fraction bits in two u32 words, summed
// with integer atomics: sums are exact and do not depend on the order the GPU adds them in, so
// the result depends only on the f32 exp of each token. A weight below 2^-44 of the max counts as 0.
// Each pass finishes the previous pass's selection itself (every workgroup reads the histogram
// the previous dispatch completed; workgroup 0 stores the result for later dispatches).

override PASS: u32 = 1u;  // histogram: which histogram this dispatch builds (1 .. 7)

const WG: u32 = 256u;

// Mirrored by wgfuse::llm::SamplerParams (static_asserted): 48 bytes.
struct Params {
  vocab: u32,
  chunk: u32,   // elements per workgroup of the grid kernels, a multiple of 256
  groups: u32,  // workgroups of the grid kernels, <= 256 (64 as Sampler chooses)
  top_k: u32,   // 0: off
  top_p: f32,   // 1: off (the top-p passes are not dispatched)
  temperature: f32,
  penalty: f32,  // 1: off
  greedy: u32,   // 1: the draw is 0, i.e. the first kept token in id order
  seed_lo: u32,
  seed_hi: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> state: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read_write> keys: array<u32>;
@group(0) @binding(5) var<storage, read_write> scratch: array<atomic<u32>>;

// Scratch words (wgfuse::llm::Sampler sizes the buffer the same way).
const MAX_KEY: u32 = 0u;     // atomicMax of the keys
const KK: u32 = 1u;          // the top-k threshold key (0 when top-k is off)
const TAU: u32 = 2u;         // 2 words: top_p * (mass kept by top-k)
const THRESHOLD: u32 = 4u;   // the final threshold key: tokens with key >= it are kept
const K_STATE: u32 = 8u;     // after top-k step r: (prefix, remaining rank) at 8 + 2r
const P_STATE: u32 = 16u;    // after top-p step r: (prefix, mass above lo, hi) at 16 + 4r
const HIST: u32 = 32u;       // histogram h: counts, mass lo, mass hi, 256 words each
const PARTIALS: u32 = 32u + 8u * 768u;  // 2 words per workgroup
const BITMAP: u32 = PARTIALS + 512u;    // one bit per token id

// Every entry point names every binding, so that one bind group fits all of them.
fn use_all_bindings() {
  _ = &logits;
  _ = &tokens;
  _ = &state;
  _ = &keys;
  _ = &scratch;
  _ = params.vocab;
}

// ---- 64-bit unsigned arithmetic on (lo, hi) pairs ----

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}
fn less64(a: vec2<u32>, b: vec2<u32>) -> bool {
  return a.y < b.y || (a.y == b.y && a.x < b.x);
}
fn mul32(a: u32, b: u32) -> vec2<u32> {  // the full 64-bit product
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
fn scale64(a: vec2<u32>, f: u32) -> vec2<u32> {  // floor(a * f / 2^32)
  return add64(mul32(a.y, f), vec2<u32>(mul32(a.x, f).y, 0u));
}

// ---- keys and weights ----

const NAN_KEY: u32 = 0x007fffffu;  // key_of(-inf)

// f32 -> u32 with the same order (-inf lowest, +inf highest).
fn key_of(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}
fn value_of(k: u32) -> f32 {
  return bitcast<f32>(select(~k, k & 0x7fffffffu, (k & 0x80000000u) != 0u));
}

// exp(x - max) * 2^44, truncated. exp of a value <= 0 is at most 1 (a little over from a loose
// exp is harmless: 2^45 * 2^19 tokens still fits in 64 bits); x = max = +-inf counts as 1.
fn weight(key: u32, max_value: f32) -> vec2<u32> {
  let b = bitcast<u32>(exp(value_of(key) - max_value));
  let e = (b >> 23u) & 0xffu;
  if (e > 127u) {
    return vec2<u32>(0u, 1u << 12u);
  }
  let m = (b & 0x7fffffu) | 0x800000u;  // the value is m * 2^(e - 150), so m * 2^(e - 106) units
  if (e >= 106u) {
    let s = e - 106u;  // 0 .. 21
    return vec2<u32>(m << s, (m >> 1u) >> (31u - s));
  }
  if (e == 0u || 106u - e >= 24u) {
    return vec2<u32>(0u);
  }
  return vec2<u32>(m >> (106u - e), 0u);
}

fn hist_word(h: u32, field: u32, bucket: u32) -> u32 {  // field 0: count, 1: mass lo, 2: mass hi
  return HIST + h * 768u + field * 256u + bucket;
}
fn load64(i: u32) -> vec2<u32> {
  return vec2<u32>(atomicLoad(&scratch[i]), atomicLoad(&scratch[i + 1u]));
}
fn store64(i: u32, v: vec2<u32>) {
  atomicStore(&scratch[i], v.x);
  atomicStore(&scratch[i + 1u], v.y);
}
fn add64_global(lo: u32, hi: u32, v: vec2<u32>) {
  let old = atomicAdd(&scratch[lo], v.x);
  let h = v.y + select(0u, 1u, old + v.x < old);
  if (h != 0u) {
    atomicAdd(&scratch[hi], h);
  }
}

// ---- workgroup scans and local histograms ----

var<workgroup> sh: array<vec4<u32>, WG>;  // (count, mass lo, mass hi, -)
var<workgroup> local_count: array<atomic<u32>, WG>;
var<workgroup> local_lo: array<atomic<u32>, WG>;
var<workgroup> local_hi: array<atomic<u32>, WG>;
var<workgroup> local_max: atomic<u32>;
var<workgroup> chosen: atomic<u32>;
var<workgroup> chosen_state: vec4<u32>;

fn combine(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
  let m = add64(a.yz, b.yz);
  return vec4<u32>(a.x + b.x, m.x, m.y, 0u);
}
var<workgroup> block_offset: array<vec4<u32>, 16>;

// Inclusive prefix sums of sh[0 .. 256) in place; every invocation calls it. Three barriers
// (16 runs of 16 summed serially, then the 16 run totals) rather than the 16 of a Hillis-Steele
// scan: barriers are what a CPU device (SwiftShader) pays for most.
fn scan(t: u32) {
  workgroupBarrier();
  if (t < 16u) {
    var acc = sh[16u * t];
    for (var i = 1u; i < 16u; i++) {
      acc = combine(acc, sh[16u * t + i]);
      sh[16u * t + i] = acc;
    }
  }
  workgroupBarrier();
  if (t == 0u) {
    var acc = vec4<u32>(0u);
    for (var b = 0u; b < 16u; b++) {
      block_offset[b] = acc;
      acc = combine(acc, sh[16u * b + 15u]);
    }
  }
  workgroupBarrier();
  if (t >= 16u) {
    sh[t] = combine(block_offset[t / 16u], sh[t]);
  }
  workgroupBarrier();
}

fn clear_local(t: u32) {
  atomicStore(&local_count[t], 0u);
  atomicStore(&local_lo[t], 0u);
  atomicStore(&local_hi[t], 0u);
  if (t == 0u) {
    atomicStore(&local_max, 0u);
    atomicStore(&chosen, 0xffffffffu);
  }
  workgroupBarrier();
}

// Workgroup histogram of this workgroup's chunk into global histogram h: the keys whose bits
// above byte `digit` (0 = top byte) equal `prefix` and that are >= floor_key; with masses or not.
fn histogram_chunk(wg: u32, t: u32, h: u32, digit: u32, prefix: u32, floor_key: u32, with_mass: bool) {
  let mask = ~(0xffffffffu >> (8u * digit));
  let shift = 24u - 8u * digit;
  let max_value = value_of(atomicLoad(&scratch[MAX_KEY]));
  let end = min(params.vocab, (wg + 1u) * params.chunk);
  for (var i = wg * params.chunk + t; i < end; i += WG) {
    let key = keys[i];
    if ((key & mask) == prefix && key >= floor_key) {
      let b = (key >> shift) & 0xffu;
      atomicAdd(&local_count[b], 1u);
      if (with_mass) {
        let w = weight(key, max_value);
        let old = atomicAdd(&local_lo[b], w.x);
        let hi = w.y + select(0u, 1u, old + w.x < old);
        if (hi != 0u) {
          atomicAdd(&local_hi[b], hi);
        }
      }
    }
  }
  workgroupBarrier();
  let c = atomicLoad(&local_count[t]);
  if (c != 0u) {
    atomicAdd(&scratch[hist_word(h, 0u, t)], c);
    if (with_mass) {
      add64_global(hist_word(h, 1u, t), hist_word(h, 2u, t),
                   vec2<u32>(atomicLoad(&local_lo[t]), atomicLoad(&local_hi[t])));
    }
  }
}

// Top-k step r (byte r of the key, from the top): the bucket of histogram r holding the token of
// the remaining rank. Returns (prefix, remaining rank) after the step.
fn finish_k(r: u32, t: u32) -> vec2<u32> {
  var prev = vec2<u32>(0u, params.top_k);
  if (r > 0u) {
    prev = load64(K_STATE + 2u * (r - 1u));
  }
  let c = atomicLoad(&scratch[hist_word(r, 0u, t)]);
  sh[WG - 1u - t] = vec4<u32>(c, 0u, 0u, 0u);  // reversed: prefix sums are counts at >= bucket t
  scan(t);
  let at_or_above = sh[WG - 1u - t].x;
  let above = at_or_above - c;
  if (above < prev.y && prev.y <= at_or_above) {
    chosen_state = vec4<u32>(prev.x | (t << (24u - 8u * r)), prev.y - above, 0u, 0u);
  }
  return workgroupUniformLoad(&chosen_state).xy;
}

// Top-p step r over histogram 4 + r (tokens >= the top-k threshold): the lowest non-empty bucket
// whose tokens may still have less than tau of mass strictly above them. Returns (prefix, mass
// above lo, hi) after the step; step 0 also computes tau from the total kept mass.
fn finish_p(r: u32, t: u32, first_workgroup: bool) -> vec3<u32> {
  var prefix = 0u;
  var above = vec2<u32>(0u);
  if (r > 0u) {
    prefix = atomicLoad(&scratch[P_STATE + 4u * (r - 1u)]);
    above = load64(P_STATE + 4u * (r - 1u) + 1u);
  }
  let h = 4u + r;
  let c = atomicLoad(&scratch[hist_word(h, 0u, t)]);
  let m = vec2<u32>(atomicLoad(&scratch[hist_word(h, 1u, t)]), atomicLoad(&scratch[hist_word(h, 2u, t)]));
  sh[WG - 1u - t] = vec4<u32>(c, m, 0u);
  scan(t);
  let strictly_above = add64(above, sub64(sh[WG - 1u - t].yz, m));
  var tau: vec2<u32>;
  if (r == 0u) {
    // top_p < 1 here, so top_p * 2^32 is below 2^32 (and exact for top_p >= 2^-9); at least 1,
    // so that a top_p below 2^-32 keeps the top tokens instead of switching top-p off.
    tau = scale64(sh[WG - 1u].yz, max(1u, u32(params.top_p * 4294967296.0)));
    if (first_workgroup && t == 0u) {
      store64(TAU, tau);
    }
  } else {
    tau = load64(TAU);
  }
  if (c != 0u && less64(strictly_above, tau)) {
    atomicMin(&chosen, t);
  }
  workgroupBarrier();
  let b = atomicLoad(&chosen);
  if (t == b) {
    chosen_state = vec4<u32>(prefix | (b << (24u - 8u * r)), strictly_above, 0u);
  }
  return workgroupUniformLoad(&chosen_state).xyz;
}

// ---- entry points ----

@compute @workgroup_size(WG)
fn prepare(@builtin(local_invocation_index) t: u32) {
  use_all_bindings();
  let words = BITMAP + (params.vocab + 31u) / 32u;
  for (var i = t; i < words; i += WG) {
    atomicStore(&scratch[i], 0u);
  }
  storageBarrier();
  workgroupBarrier();
  if (params.penalty != 1.0) {
    // tokens[0 ..= pos]: the whole sequence so far, prompt included, as Hugging Face does.
    let count = min(state[0] + 1u, arrayLength(&tokens));
    for (var j = t; j < count; j += WG) {
      let id = tokens[j];
      if (id < params.vocab) {
        atomicOr(&scratch[BITMAP + id / 32u], 1u << (id % 32u));
      }
    }
  }
}

@compute @workgroup_size(WG)
fn transform(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  use_all_bindings();
  clear_local(t);
  let end = min(params.vocab, (wg.x + 1u) * params.chunk);
  for (var i = wg.x * params.chunk + t; i < end; i += WG) {
    let l = logits[i];
    var x = l;
    if (params.penalty != 1.0 && (atomicLoad(&scratch[BITMAP + i / 32u]) & (1u << (i % 32u))) != 0u) {
      x = select(l / params.penalty, l * params.penalty, l < 0.0);  // HF: score < 0 ? score * p : score / p
    }
    x = x / params.temperature;
    var key = key_of(x);
    if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) {
      key = NAN_KEY;  // NaN counts as -inf
    }
    keys[i] = key;
    atomicMax(&local_max, key);
    atomicAdd(&local_count[key >> 24u], 1u);
  }
  workgroupBarrier();
  if (t == 0u) {
    atomicMax(&scratch[MAX_KEY], atomicLoad(&local_max));
  }
  let c = atomicLoad(&local_count[t]);
  if (c != 0u) {
    atomicAdd(&scratch[hist_word(0u, 0u, t)], c);
  }
}

@compute @workgroup_size(WG)
fn histogram(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  use_all_bindings();
  clear_local(t);
  let store = wg.x == 0u && t == 0u;
  if (PASS < 4u) {
    let k = finish_k(PASS - 1u, t);
    if (store) {
      store64(K_STATE + 2u * (PASS - 1u), k);
    }
    histogram_chunk(wg.x, t, PASS, PASS, k.x, 0u, false);
    return;
  }
  var kk = 0u;
  if (PASS == 4u) {
    if (params.top_k != 0u) {
      kk = finish_k(3u, t).x;
    }
    if (store) {
      atomicStore(&scratch[KK], kk);
    }
    histogram_chunk(wg.x, t, PASS, 0u, 0u, kk, true);
    return;
  }
  kk = atomicLoad(&scratch[KK]);
  let p = finish_p(PASS - 5u, t, wg.x == 0u);
  if (store) {
    atomicStore(&scratch[P_STATE + 4u * (PASS - 5u)], p.x);
    store64(P_STATE + 4u * (PASS - 5u) + 1u, p.yz);
  }
  histogram_chunk(wg.x, t, PASS, PASS - 4u, p.x, kk, true);
}

@compute @workgroup_size(WG)
fn partials(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  use_all_bindings();
  clear_local(t);
  var threshold = 0u;
  if (params.top_p < 1.0) {
    threshold = finish_p(3u, t, wg.x == 0u).x;
  } else if (params.top_k != 0u) {
    threshold = finish_k(3u, t).x;
  }
  if (wg.x == 0u && t == 0u) {
    atomicStore(&scratch[THRESHOLD], threshold);
  }
  let max_value = value_of(atomicLoad(&scratch[MAX_KEY]));
  var sum = vec2<u32>(0u);
  let end = min(params.vocab, (wg.x + 1u) * params.chunk);
  for (var i = wg.x * params.chunk + t; i < end; i += WG) {
    let key = keys[i];
    if (key >= threshold) {
      sum = add64(sum, weight(key, max_value));
    }
  }
  workgroupBarrier();  // finish_* may still read sh
  sh[t] = vec4<u32>(0u, sum, 0u);
  scan(t);
  if (t == 0u) {
    store64(PARTIALS + 2u * wg.x, sh[WG - 1u].yz);
  }
}

fn mix32(x: u32) -> u32 {  // a bijective integer hash (xor-shift-multiply)
  var h = x;
  h ^= h >> 16u;
  h *= 0x7feb352du;
  h ^= h >> 15u;
  h *= 0x846ca68bu;
  h ^= h >> 16u;
  return h;
}
// The uniform draw for position pos: a counter-based hash of (seed, pos), so it does not depend
// on how many steps a submit holds. wgfuse::llm::sample_draw computes the same.
fn draw(pos: u32) -> u32 {
  return mix32(mix32(mix32(pos ^ 0x9e3779b9u) + params.seed_lo) ^ params.seed_hi);
}

@compute @workgroup_size(WG)
fn pick(@builtin(local_invocation_index) t: u32) {
  use_all_bindings();
  clear_local(t);
  let threshold = atomicLoad(&scratch[THRESHOLD]);
  let max_value = value_of(atomicLoad(&scratch[MAX_KEY]));
  let pos = state[0];
  let u = select(draw(pos), 0u, params.greedy != 0u);

  // The workgroup chunk where the cumulative kept mass passes goal = floor(u * total / 2^32).
  var own = vec2<u32>(0u);
  if (t < params.groups) {
    own = load64(PARTIALS + 2u * t);
  }
  sh[t] = vec4<u32>(0u, own, 0u);
  scan(t);
  let goal = scale64(sh[WG - 1u].yz, u);
  let through = sh[t].yz;
  let before = sub64(through, own);
  if (!less64(goal, before) && less64(goal, through)) {
    chosen_state = vec4<u32>(t, sub64(goal, before), 0u);
  }
  let group = workgroupUniformLoad(&chosen_state);

  // Within the chunk: invocation t takes a contiguous run of ids, so id order is kept.
  let run = params.chunk / WG;
  let first = group.x * params.chunk + t * run;
  let end = min(params.vocab, first + run);
  var mine = vec2<u32>(0u);
  for (var i = first; i < end; i++) {
    let key = keys[i];
    if (key >= threshold) {
      mine = add64(mine, weight(key, max_value));
    }
  }
  workgroupBarrier();
  sh[t] = vec4<u32>(0u, mine, 0u);
  scan(t);
  var cumulative = sub64(sh[t].yz, mine);
  let rest = group.yz;
  if (!less64(rest, cumulative) && less64(rest, sh[t].yz)) {
    for (var i = first; i < end; i++) {
      let key = keys[i];
      if (key >= threshold) {
        cumulative = add64(cumulative, weight(key, max_value));
        if (less64(rest, cumulative)) {
          atomicStore(&chosen, i);
          break;
        }
      }
    }
  }
  workgroupBarrier();
  if (t == 0u) {
    // No logit above -inf (all NaN or -inf): an id outside the vocabulary, as argmax_final
    // leaves, so that the host stops and names the position instead of printing a draw.
    var id = atomicLoad(&chosen);
    if (atomicLoad(&scratch[MAX_KEY]) <= NAN_KEY) {
      id = 0xffffffffu;
    }
    if (pos + 1u < arrayLength(&tokens)) {
      tokens[pos + 1u] = id;
    }
    state[0] = pos + 1u;
  }
}
