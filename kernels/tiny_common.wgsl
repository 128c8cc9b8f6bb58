// The tiny transformer (a Qwen2-architecture decoder, src/tiny/tiny_model.h) as WGSL: sizes, the
// packed weight layout, the bindings every strategy shares, and every op of one decode step as a
// function of (tid, nthr): thread `tid` of `nthr` cooperating threads. So the same text runs as
// one dispatch per op (grid-wide threads, tiny_ops.wgsl) and inside one workgroup (tiny_ops.wgsl's
// layer entries, tiny_single.wgsl).
//
// An item (an output row, a score, an attention output) is taken by a team of `lanes` consecutive
// threads that split its sum and add their parts (lane_sum, lane_max: kernels/tiny_team.wgsl by
// subgroup shuffles, or kernels/tiny_solo.wgsl with teams of one; src/tiny/runner.cpp places one
// of them before the family and chooses the LN_* lane counts). Every thread runs the same number
// of rounds, so the reductions are reached in uniform control flow.
//
// The RMSNorm weights are folded into the matrix each norm feeds (src/tiny/tiny_model.cpp
// pack_weights: q|k|v, gate|up, the LM head), so a norm is x * inv_rms(x), and a product of a
// normalised input is inv_rms(x) * (W' . x): the scale multiplies the sum, not every element.
//
// The fused strategies (layer, single) run a layer as 6 phases between barriers: the products
// normalise their input on the fly (each thread computes the inverse RMS itself) and their
// epilogues take the work of the element-wise ops (RoPE and the KV-cache append after q|k|v, the
// residual after o and down, silu * up after gate|up). The op strategies (eager, batched) run
// those ops as their own dispatches, as a framework does; the arithmetic is the same.
//
// `act` (the activations of one sequence, at act_base) is declared by the including file, with
// its accessors act_ld (a float), act_ld4 (4 floats from a multiple of 4), act_st and its barrier
// act_barrier: a storage buffer of floats in tiny_ops.wgsl, workgroup memory of vec4s in
// tiny_single.wgsl (one 16-byte load where the products read 4 floats).

override D: u32 = 64u;     // d_model
override H: u32 = 2u;      // query heads
override KVH: u32 = 2u;    // key/value heads (grouped-query attention)
override HD: u32 = 32u;    // head_dim
override FF: u32 = 256u;   // SwiGLU width
override L: u32 = 1u;      // layers
override P: u32 = 1u;      // prompt length
override T: u32 = 1u;      // generated tokens
override CAP: u32 = 2u;    // positions per sequence: P + T (KV cache and tokens)
override EPS: f32 = 1e-6;  // RMSNorm
override WG: u32 = 64u;    // workgroup size
const V: u32 = 256u;       // byte vocabulary

// Lanes per item (powers of two dividing WG and the adapter's smallest subgroup): the products
// q|k|v (per RoPE pair of rows), o, gate|up (per pair gate_i, up_i), down, LM head; the scores
// (split over head_dim) and the attention outputs (split over positions).
override LN_QKV: u32 = 1u;
override LN_O: u32 = 1u;
override LN_GU: u32 = 1u;
override LN_DOWN: u32 = 1u;
override LN_HEAD: u32 = 1u;
override LN_SC: u32 = 1u;
override LN_AT: u32 = 1u;
override LN_RMS: u32 = 1u;  // lanes sharing a sum of squares: the lane cap

override QD: u32 = H * HD;
override KVD: u32 = KVH * HD;
override QKV: u32 = QD + 2u * KVD;
override SC_STEPS: u32 = (HD + LN_SC - 1u) / LN_SC;   // products per lane of a score
override AT_STEPS: u32 = (CAP + LN_AT - 1u) / LN_AT;  // positions per lane of an attention output
override RMS_STEPS: u32 = (D / 4u + LN_RMS - 1u) / LN_RMS;  // blocks of 4 per lane of a norm

// Activations of one sequence (floats): the residual stream, its norm, q|k|v, the attention
// output, gate|up (silu(gate) * up overwrites gate), the output of o_proj and down_proj, the
// logits, the argmax's parts (ARG_PARTS values, then their indices), the attention scores
// [H][CAP]. Every part read 4 at a time (act_ld4) starts at a multiple of 4 (D, QKV, QD, FF are),
// so the scores, whose size need not be, come last.
const ARG_PARTS: u32 = 16u;
override A_X: u32 = 0u;
override A_XN: u32 = D;
override A_QKV: u32 = 2u * D;
override A_ATT: u32 = A_QKV + QKV;
override A_GU: u32 = A_ATT + QD;
override A_O: u32 = A_GU + 2u * FF;
override A_LOG: u32 = A_O + D;
override A_ARG: u32 = A_LOG + V;
override A_SC: u32 = A_ARG + 2u * ARG_PARTS;
override ACT_SIZE: u32 = A_SC + H * CAP;

// Packed weights (floats, src/tiny/tiny_model.cpp pack_weights; every part starts at a multiple of
// 4 floats): embedding [V][D], LM head (final norm folded in), RoPE table [CAP][HD/2] (cos, sin),
// then per layer: q|k|v (input norm folded in), their bias [QKV], o, gate|up (post-attention norm
// folded in), down. A matrix [rows][cols] is stored in blocks of 4 columns, [cols/4][rows][4] (see
// rows_dot).
override W_HEAD: u32 = V * D;
override W_ROPE: u32 = W_HEAD + V * D;
override W_LAYERS: u32 = W_ROPE + (CAP * HD + 3u) / 4u * 4u;
override L_QKV: u32 = 0u;
override L_BQKV: u32 = L_QKV + QKV * D;
override L_O: u32 = L_BQKV + (QKV + 3u) / 4u * 4u;
override L_GU: u32 = L_O + D * QD;
override L_DOWN: u32 = L_GU + 2u * FF * D;
override L_STRIDE: u32 = L_DOWN + D * FF;
// KV cache of one sequence: [L][K|V][KVH][CAP][HD].
override KV_SEQ: u32 = L * 2u * KVD * CAP;

struct Params {
  layer: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> w: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> kv: array<f32>;
@group(0) @binding(3) var<storage, read_write> tokens: array<u32>;  // [seq][CAP]: prompt, then generated
@group(0) @binding(4) var<storage, read_write> logits: array<f32>;  // [seq][T][V]
@group(0) @binding(5) var<storage, read_write> state: array<u32>;   // [seq]: the position to feed

var<private> seq: u32;
var<private> act_base: u32;

// Every binding and size is used by every entry point, so that all of them share one bind group
// shape and accept the same override constants.
fn use_bindings() {
  _ = vec4<u32>(D, H, KVH, HD);
  _ = vec4<u32>(FF, L, P, T);
  _ = vec2<u32>(CAP, WG);
  _ = vec4<u32>(LN_QKV, LN_O, LN_GU, LN_DOWN);
  _ = vec4<u32>(LN_HEAD, LN_SC, LN_AT, LN_RMS);
  _ = EPS;
  _ = params.layer;
  _ = &w;
  _ = &kv;
  _ = &tokens;
  _ = &logits;
  _ = &state;
}

// Orders the cooperating threads of one workgroup over the activations: act_barrier() is the
// including file's (a workgroup barrier where `act` is workgroup memory; storage too where it is a
// storage buffer). Only the KV cache append needs a storage barrier otherwise (kv_sync): the
// logits and generated tokens are not read back inside a dispatch.
fn sync() {
  act_barrier();
}

fn kv_sync() {
  storageBarrier();
  workgroupBarrier();
}

// The weight float at index i.
fn wf(i: u32) -> f32 {
  return w[i / 4u][i % 4u];
}

fn layer_w(layer: u32) -> u32 {
  return W_LAYERS + layer * L_STRIDE;
}

fn kv_index(layer: u32, kind: u32, kv_head: u32, pos: u32) -> u32 {
  return seq * KV_SEQ + ((layer * 2u + kind) * KVH + kv_head) * CAP * HD + pos * HD;
}

// Rounds of a loop over `items` teams of `lanes` threads by `nthr` threads: the same for every
// thread.
fn rounds(items: u32, lanes: u32, nthr: u32) -> u32 {
  return (items * lanes + nthr - 1u) / nthr;
}

// Round k's work for thread tid (slot k * nthr + tid): its item (past the end the last one again,
// for indices only: such a slot loads nothing and writes nothing), its lane, whether the item is
// real (a whole team is real or not), and whether it writes the item (lane 0 of a real item).
struct Slot {
  item: u32,
  lane: u32,
  real: bool,
  writes: bool,
}

fn slot_of(k: u32, items: u32, lanes: u32, tid: u32, nthr: u32) -> Slot {
  let s = k * nthr + tid;
  let real = s / lanes < items;
  return Slot(min(s / lanes, items - 1u), s % lanes, real, real && s % lanes == 0u);
}

// x = the embedding of `token`.
fn embed(token: u32, tid: u32, nthr: u32) {
  let row = token * D;
  for (var i = tid; i < D; i += nthr) {
    act_st(act_base + A_X + i, wf(row + i));
  }
}


// 1 / sqrt(mean(x^2) + eps), in every thread: a team of LN_RMS lanes (the lane cap) splits x's
// blocks of 4 and adds its parts (lane_sum), so no barrier is needed and a subgroup issues
// D / 4 / LN_RMS loads rather than D / 4.
fn rms_inv(x: u32, tid: u32) -> f32 {
  let lane = tid % LN_RMS;
  var ss4 = vec4<f32>(0.0);
  for (var step = 0u; step < RMS_STEPS; step++) {
    let b = lane + step * LN_RMS;
    if (b < D / 4u) {
      let v = act_ld4(act_base + x + 4u * b);
      ss4 += v * v;
    }
  }
  let ss = lane_sum((ss4.x + ss4.y) + (ss4.z + ss4.w), LN_RMS);
  return inverseSqrt(ss / f32(D) + EPS);
}

// y = x * rms_inv(x) (the norm's weights are folded into the next matrix)
fn rmsnorm(x: u32, y: u32, tid: u32, nthr: u32) {
  let inv = rms_inv(x, tid);
  for (var i = tid; i < D; i += nthr) {
    act_st(act_base + y + i, act_ld(act_base + x + i) * inv);
  }
}

// acc + w . x, summed in order.
fn dot4(acc: f32, wv: vec4<f32>, xv: vec4<f32>) -> f32 {
  return (((acc + wv.x * xv.x) + wv.y * xv.y) + wv.z * xv.z) + wv.w * xv.w;
}

// Column block b of the row whose first block is at vec4 `row` (zero past the last block).
fn wblock(row: u32, rows: u32, blocks: u32, b: u32) -> vec4<f32> {
  return select(vec4<f32>(0.0), w[row + min(b, blocks - 1u) * rows], b < blocks);
}

// The product's input: x as it is (inv 1), or (the fused strategies) x normalised on the fly,
// whose inverse RMS scales the product's sum (the norm's weights are folded into the matrix).
struct Input {
  x: u32,
  inv: f32,
}

fn plain(x: u32) -> Input {
  return Input(x, 1.0);
}

// x normalised: every thread gets the inverse RMS (rms_inv).
fn normed(x: u32, tid: u32) -> Input {
  return Input(x, rms_inv(x, tid));
}

fn xblock(x: Input, blocks: u32, b: u32) -> vec4<f32> {
  return act_ld4(act_base + x.x + 4u * min(b, blocks - 1u));
}

// Lane `lane` of `lanes`'s part of W[ra] . x and (when `pair`) W[rb] . x: column blocks lane,
// lane + lanes, ... W (at wm, a multiple of 4) is stored [cols/4][rows][4], so one load brings 4
// weights of a row and threads of consecutive rows read consecutive 16 bytes. Four blocks of each
// row are loaded before their sums, in a constant number of steps (the same for every lane), so
// that the compiler can unroll them and have every step's loads in flight at once rather than
// waiting on each (the weights come from L2). A slot that is not `real` loads nothing.
fn rows_dot(wm: u32, rows: u32, cols: u32, ra: u32, rb: u32, pair: bool, x: Input, lane: u32,
            lanes: u32, real: bool) -> vec2<f32> {
  let blocks = cols / 4u;
  let wa = wm / 4u + ra;
  let wb = wm / 4u + rb;
  var acc = vec2<f32>(0.0);
  let steps = (blocks + 4u * lanes - 1u) / (4u * lanes);
  for (var step = 0u; step < steps; step++) {
    let b = lane + step * 4u * lanes;
    let b1 = b + lanes;
    let b2 = b1 + lanes;
    let b3 = b2 + lanes;
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    var c0 = vec4<f32>(0.0);
    var c1 = vec4<f32>(0.0);
    var c2 = vec4<f32>(0.0);
    var c3 = vec4<f32>(0.0);
    if (real) {
      a0 = wblock(wa, rows, blocks, b);
      a1 = wblock(wa, rows, blocks, b1);
      a2 = wblock(wa, rows, blocks, b2);
      a3 = wblock(wa, rows, blocks, b3);
      if (pair) {
        c0 = wblock(wb, rows, blocks, b);
        c1 = wblock(wb, rows, blocks, b1);
        c2 = wblock(wb, rows, blocks, b2);
        c3 = wblock(wb, rows, blocks, b3);
      }
    }
    let x0 = xblock(x, blocks, b);
    let x1 = xblock(x, blocks, b1);
    let x2 = xblock(x, blocks, b2);
    let x3 = xblock(x, blocks, b3);
    acc.x = dot4(dot4(dot4(dot4(acc.x, a0, x0), a1, x1), a2, x2), a3, x3);
    if (pair) {
      acc.y = dot4(dot4(dot4(dot4(acc.y, c0, x0), c1, x1), c2, x2), c3, x3);
    }
  }
  return acc;
}

// y[r] = W[r] . x (+ bias[r]), or y[r] += W[r] . x when `accumulate` (a residual).
fn matvec(wm: u32, bias: u32, has_bias: bool, x: Input, y: u32, rows: u32, cols: u32, lanes: u32,
          accumulate: bool, tid: u32, nthr: u32) {
  for (var k = 0u; k < rounds(rows, lanes, nthr); k++) {
    let sl = slot_of(k, rows, lanes, tid, nthr);
    let r = sl.item;
    var acc = lane_sum(rows_dot(wm, rows, cols, r, r, false, x, sl.lane, lanes, sl.real).x, lanes) * x.inv;
    if (sl.writes) {
      if (has_bias) {
        acc += wf(bias + r);
      }
      if (accumulate) {
        act_st(act_base + y + r, act_ld(act_base + y + r) + acc);
      } else {
        act_st(act_base + y + r, acc);
      }
    }
  }
}

fn qkv(layer: u32, tid: u32, nthr: u32) {
  let lw = layer_w(layer);
  matvec(lw + L_QKV, lw + L_BQKV, true, plain(A_XN), A_QKV, QKV, D, LN_QKV, false, tid, nthr);
}

// RoPE's (cos, sin) of pair i at `pos`.
fn rope_cs(pos: u32, i: u32) -> vec2<f32> {
  let cs = W_ROPE + 2u * (pos * (HD / 2u) + i);
  return vec2<f32>(wf(cs), wf(cs + 1u));
}

// Elements i and i + HD/2 of head `head` (q heads, then k heads, then v heads) at `pos`: q and k
// rotated by cs (RoPE, Hugging Face rotate_half), q into the activations, k and v into the KV cache.
fn store_head_pair(layer: u32, pos: u32, head: u32, i: u32, a: f32, b: f32, cs: vec2<f32>) {
  let half_dim = HD / 2u;
  if (head < H + KVH) {
    let ra = a * cs.x - b * cs.y;
    let rb = b * cs.x + a * cs.y;
    if (head < H) {
      let q = act_base + A_QKV + head * HD + i;
      act_st(q, ra);
      act_st(q + half_dim, rb);
    } else {
      let k = kv_index(layer, 0u, head - H, pos) + i;
      kv[k] = ra;
      kv[k + half_dim] = rb;
    }
  } else {
    let v = kv_index(layer, 1u, head - H - KVH, pos) + i;
    kv[v] = a;
    kv[v + half_dim] = b;
  }
}

// The op after qkv: RoPE on q in place, k and v into the cache at `pos`.
fn rope_kv(layer: u32, pos: u32, tid: u32, nthr: u32) {
  let half_dim = HD / 2u;
  for (var item = tid; item < (H + 2u * KVH) * half_dim; item += nthr) {
    let head = item / half_dim;
    let i = item % half_dim;
    let a = act_base + A_QKV + head * HD + i;
    store_head_pair(layer, pos, head, i, act_ld(a), act_ld(a + half_dim), rope_cs(pos, i));
  }
}

// Fused input norm and q|k|v: a team per pair of rows (i, i + HD/2) of a head, the bias added,
// then RoPE and the cache append as rope_kv does. The bias and RoPE's (cos, sin) are loaded
// before the product, so that their loads overlap the weights' rather than follow them.
fn qkv_rope(layer: u32, pos: u32, tid: u32, nthr: u32) {
  let lw = layer_w(layer);
  let half_dim = HD / 2u;
  let pairs = (H + 2u * KVH) * half_dim;
  let x = normed(A_X, tid);
  for (var k = 0u; k < rounds(pairs, LN_QKV, nthr); k++) {
    let sl = slot_of(k, pairs, LN_QKV, tid, nthr);
    let head = sl.item / half_dim;
    let i = sl.item % half_dim;
    let ra = head * HD + i;
    let bias = vec2<f32>(wf(lw + L_BQKV + ra), wf(lw + L_BQKV + ra + half_dim));
    let cs = rope_cs(pos, i);
    let part = rows_dot(lw + L_QKV, QKV, D, ra, ra + half_dim, true, x, sl.lane, LN_QKV, sl.real);
    let a = lane_sum(part.x, LN_QKV) * x.inv + bias.x;
    let b = lane_sum(part.y, LN_QKV) * x.inv + bias.y;
    if (sl.writes) {
      store_head_pair(layer, pos, head, i, a, b, cs);
    }
  }
}

// scores[h][t] = q_h . k_t / sqrt(HD) for t <= pos; a team per score, its lanes splitting HD.
fn scores(layer: u32, pos: u32, tid: u32, nthr: u32) {
  let n = pos + 1u;
  let scale = 1.0 / sqrt(f32(HD));
  for (var k = 0u; k < rounds(H * n, LN_SC, nthr); k++) {
    let sl = slot_of(k, H * n, LN_SC, tid, nthr);
    let h = sl.item / n;
    let t = sl.item % n;
    let kt = kv_index(layer, 0u, h / (H / KVH), t);
    let q = act_base + A_QKV + h * HD;
    var acc = 0.0;
    for (var u = 0u; u < SC_STEPS; u++) {
      let i = sl.lane + u * LN_SC;
      if (sl.real && i < HD) {
        acc += act_ld(q + i) * kv[kt + i];
      }
    }
    acc = lane_sum(acc, LN_SC);
    if (sl.writes) {
      act_st(act_base + A_SC + h * CAP + t, acc * scale);
    }
  }
}

// att[h][j] = sum_t softmax(scores[h])[t] * v_t[j]; a team per output, its lanes splitting the
// positions (the max, the sum of exponentials and the weighted sum of each lane, then the team's).
fn attend(layer: u32, pos: u32, tid: u32, nthr: u32) {
  let n = pos + 1u;
  for (var k = 0u; k < rounds(QD, LN_AT, nthr); k++) {
    let sl = slot_of(k, QD, LN_AT, tid, nthr);
    let lane = sl.lane;
    let h = sl.item / HD;
    let j = sl.item % HD;
    let sc = act_base + A_SC + h * CAP;
    // Positions lane, lane + LN_AT, ... < n; the trip count is a constant (AT_STEPS, positions
    // past n masked) so that the loads of all steps can be in flight together.
    var m = act_ld(sc + min(lane, n - 1u));
    for (var u = 1u; u < AT_STEPS; u++) {
      let t = lane + u * LN_AT;
      if (t < n) {
        m = max(m, act_ld(sc + t));
      }
    }
    m = lane_max(m, LN_AT);
    let v = kv_index(layer, 1u, h / (H / KVH), 0u) + j;
    var sum = 0.0;
    var acc = 0.0;
    for (var u = 0u; u < AT_STEPS; u++) {
      let t = lane + u * LN_AT;
      if (t < n) {
        let e = exp(act_ld(sc + t) - m);
        sum += e;
        acc += e * kv[v + t * HD];
      }
    }
    sum = lane_sum(sum, LN_AT);
    acc = lane_sum(acc, LN_AT);
    if (sl.writes) {
      act_st(act_base + A_ATT + sl.item, acc / sum);
    }
  }
}

fn o_proj(layer: u32, tid: u32, nthr: u32) {
  matvec(layer_w(layer) + L_O, 0u, false, plain(A_ATT), A_O, D, QD, LN_O, false, tid, nthr);
}

// x += out (of o_proj or down_proj)
fn residual(tid: u32, nthr: u32) {
  for (var i = tid; i < D; i += nthr) {
    act_st(act_base + A_X + i, act_ld(act_base + A_X + i) + act_ld(act_base + A_O + i));
  }
}

fn gate_up(layer: u32, tid: u32, nthr: u32) {
  matvec(layer_w(layer) + L_GU, 0u, false, plain(A_XN), A_GU, 2u * FF, D, LN_GU, false, tid, nthr);
}

fn silu_times(g: f32, u: f32) -> f32 {
  return g / (1.0 + exp(-g)) * u;
}

fn silu_mul(tid: u32, nthr: u32) {
  for (var i = tid; i < FF; i += nthr) {
    let g = act_base + A_GU + i;
    act_st(g, silu_times(act_ld(g), act_ld(g + FF)));
  }
}

// Fused post-attention norm and gate|up: a team per pair of rows (gate_i, up_i), silu(gate_i) *
// up_i into gate_i.
fn gate_up_silu(layer: u32, tid: u32, nthr: u32) {
  let wm = layer_w(layer) + L_GU;
  let x = normed(A_X, tid);
  for (var k = 0u; k < rounds(FF, LN_GU, nthr); k++) {
    let sl = slot_of(k, FF, LN_GU, tid, nthr);
    let i = sl.item;
    let part = rows_dot(wm, 2u * FF, D, i, FF + i, true, x, sl.lane, LN_GU, sl.real);
    let g = lane_sum(part.x, LN_GU) * x.inv;
    let u = lane_sum(part.y, LN_GU) * x.inv;
    if (sl.writes) {
      act_st(act_base + A_GU + i, silu_times(g, u));
    }
  }
}

fn down(layer: u32, tid: u32, nthr: u32) {
  matvec(layer_w(layer) + L_DOWN, 0u, false, plain(A_GU), A_O, D, FF, LN_DOWN, false, tid, nthr);
}

fn head(x: Input, tid: u32, nthr: u32) {
  matvec(W_HEAD, 0u, false, x, A_LOG, V, D, LN_HEAD, false, tid, nthr);
}

// After the token at `pos` (uniform across the workgroup; nthr >= ARG_PARTS), the token fed at
// pos + 1, in every thread: the prompt's, or from the last prompt position on the argmax of the
// logits (the lowest index on ties, as torch.argmax), which are stored as generated step
// pos + 1 - P, the token appended to the tokens. The argmax in two levels: ARG_PARTS threads each
// take V / ARG_PARTS consecutive logits, then every thread their winners in order (strictly
// greater wins, so ties keep the lowest index), reading 4 values at a time.
fn emit(pos: u32, tid: u32, nthr: u32) -> u32 {
  if (pos + 1u < P) {
    return tokens[seq * CAP + pos + 1u];
  }
  let out = (seq * T + pos + 1u - P) * V;
  for (var i = tid; i < V; i += nthr) {
    logits[out + i] = act_ld(act_base + A_LOG + i);
  }
  if (tid < ARG_PARTS) {
    let first = tid * (V / ARG_PARTS);
    var best = first;
    var best_v = act_ld(act_base + A_LOG + first);
    for (var i = first; i < first + V / ARG_PARTS; i += 4u) {
      let v4 = act_ld4(act_base + A_LOG + i);
      for (var c = 0u; c < 4u; c++) {
        if (v4[c] > best_v) {
          best = i + c;
          best_v = v4[c];
        }
      }
    }
    act_st(act_base + A_ARG + tid, best_v);
    act_st(act_base + A_ARG + ARG_PARTS + tid, f32(best));
  }
  sync();
  var best = 0u;
  var best_v = act_ld(act_base + A_ARG);
  for (var p = 0u; p < ARG_PARTS; p += 4u) {
    let v4 = act_ld4(act_base + A_ARG + p);
    for (var c = 0u; c < 4u; c++) {
      if (v4[c] > best_v) {
        best = p + c;
        best_v = v4[c];
      }
    }
  }
  let token = u32(act_ld(act_base + A_ARG + ARG_PARTS + best));
  if (tid == 0u) {
    tokens[seq * CAP + pos + 1u] = token;
  }
  return token;
}

// One decoder layer for the token at `pos`, by the threads of one workgroup: 6 phases.
fn layer_step(layer: u32, pos: u32, tid: u32, nthr: u32) {
  let lw = layer_w(layer);
  qkv_rope(layer, pos, tid, nthr);
  kv_sync();
  scores(layer, pos, tid, nthr);
  sync();
  attend(layer, pos, tid, nthr);
  sync();
  matvec(lw + L_O, 0u, false, plain(A_ATT), A_X, D, QD, LN_O, true, tid, nthr);  // o, + residual
  sync();
  gate_up_silu(layer, tid, nthr);
  sync();
  matvec(lw + L_DOWN, 0u, false, plain(A_GU), A_X, D, FF, LN_DOWN, true, tid, nthr);  // down, + residual
  sync();
}

// Final norm and LM head, by the threads of one workgroup; then the next token (emit).
fn head_step(pos: u32, tid: u32, nthr: u32) -> u32 {
  head(normed(A_X, tid), tid, nthr);
  sync();
  return emit(pos, tid, nthr);
}

// The whole generation of sequence `seq` by the threads of one workgroup (pos is uniform): each
// position's layers and head, then the next token's embedding by every thread.
fn generation(tid: u32, nthr: u32) {
  embed(tokens[seq * CAP], tid, nthr);
  sync();
  for (var pos = 0u; pos + 1u < CAP; pos++) {
    for (var layer = 0u; layer < L; layer++) {
      layer_step(layer, pos, tid, nthr);
    }
    embed(head_step(pos, tid, nthr), tid, nthr);
    sync();
  }
  if (tid == 0u) {
    state[seq] = CAP - 1u;
  }
}
