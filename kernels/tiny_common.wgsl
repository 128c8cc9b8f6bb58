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
// The fused strategies (layer, single) run a layer as 6 phases between barriers: the products
// normalise their input on the fly (each thread computes the inverse RMS itself) and their
// epilogues take the work of the element-wise ops (RoPE and the KV-cache append after q|k|v, the
// residual after o and down, silu * up after gate|up). The op strategies (eager, batched) run
// those ops as their own dispatches, as a framework does; the arithmetic is the same.
//
// `act` (the activations of one sequence, at act_base) is declared by the including file: a
// storage buffer in tiny_ops.wgsl, workgroup memory in tiny_single.wgsl.

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

override QD: u32 = H * HD;
override KVD: u32 = KVH * HD;
override QKV: u32 = QD + 2u * KVD;
override SC_STEPS: u32 = (HD + LN_SC - 1u) / LN_SC;   // products per lane of a score
override AT_STEPS: u32 = (CAP + LN_AT - 1u) / LN_AT;  // positions per lane of an attention output

// Activations of one sequence (floats): the residual stream, its norm, q|k|v, the attention
// output, the attention scores [H][CAP], gate|up (silu(gate) * up overwrites gate), the output of
// o_proj and down_proj, the logits, the argmax's parts (ARG_PARTS values, then their indices).
const ARG_PARTS: u32 = 16u;
override A_X: u32 = 0u;
override A_XN: u32 = D;
override A_QKV: u32 = 2u * D;
override A_ATT: u32 = A_QKV + QKV;
override A_SC: u32 = A_ATT + QD;
override A_GU: u32 = A_SC + H * CAP;
override A_O: u32 = A_GU + 2u * FF;
override A_LOG: u32 = A_O + D;
override A_ARG: u32 = A_LOG + V;
override ACT_SIZE: u32 = A_ARG + 2u * ARG_PARTS;

// Packed weights (floats, src/tiny/tiny_model.cpp pack_weights; every part starts at a multiple of
// 4 floats): embedding [V][D], final norm [D], LM head, RoPE table [CAP][HD/2] (cos, sin), then per
// layer: input norm [D], q|k|v, their bias [QKV], o, post-attention norm [D], gate|up, down.
// A matrix [rows][cols] is stored in blocks of 4 columns, [cols/4][rows][4] (see rows_dot).
override W_FNORM: u32 = V * D;
override W_HEAD: u32 = W_FNORM + D;
override W_ROPE: u32 = W_HEAD + V * D;
override W_LAYERS: u32 = W_ROPE + (CAP * HD + 3u) / 4u * 4u;
override L_QKV: u32 = D;
override L_BQKV: u32 = L_QKV + QKV * D;
override L_O: u32 = L_BQKV + (QKV + 3u) / 4u * 4u;
override L_POST: u32 = L_O + D * QD;
override L_GU: u32 = L_POST + D;
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
  _ = vec3<u32>(LN_HEAD, LN_SC, LN_AT);
  _ = EPS;
  _ = params.layer;
  _ = &w;
  _ = &kv;
  _ = &tokens;
  _ = &logits;
  _ = &state;
}

// Orders the cooperating threads of one workgroup (workgroup memory and storage).
fn sync() {
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
// computed but not written), its lane, and whether it writes the item (lane 0 of a real item).
struct Slot {
  item: u32,
  lane: u32,
  writes: bool,
}

fn slot_of(k: u32, items: u32, lanes: u32, tid: u32, nthr: u32) -> Slot {
  let s = k * nthr + tid;
  return Slot(min(s / lanes, items - 1u), s % lanes, s / lanes < items && s % lanes == 0u);
}

// x = the embedding of `token`.
fn embed(token: u32, tid: u32, nthr: u32) {
  let row = token * D;
  for (var i = tid; i < D; i += nthr) {
    act[act_base + A_X + i] = wf(row + i);
  }
}

fn act4(i: u32) -> vec4<f32> {
  return vec4<f32>(act[i], act[i + 1u], act[i + 2u], act[i + 3u]);
}

// 1 / sqrt(mean(x^2) + eps); every thread sums the squares itself (four partial sums of D / 4
// terms each), so no reduction (and no barrier) is needed.
fn rms_inv(x: u32) -> f32 {
  var ss4 = vec4<f32>(0.0);
  for (var j = 0u; j < D; j += 4u) {
    let v = act4(act_base + x + j);
    ss4 += v * v;
  }
  return inverseSqrt(((ss4.x + ss4.y) + (ss4.z + ss4.w)) / f32(D) + EPS);
}

// y = x * rms_inv(x) * g
fn rmsnorm(g: u32, x: u32, y: u32, tid: u32, nthr: u32) {
  let inv = rms_inv(x);
  for (var i = tid; i < D; i += nthr) {
    act[act_base + y + i] = act[act_base + x + i] * inv * wf(g + i);
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

// The product's input: x as it is, or (the fused strategies) x normalised on the fly, x * inv * g
// as rmsnorm computes it (g: the norm's weights, a multiple of 4).
struct Input {
  x: u32,
  normed: bool,
  g: u32,
  inv: f32,
}

fn plain(x: u32) -> Input {
  return Input(x, false, 0u, 1.0);
}

// x normalised by the norm at g: every thread computes the inverse RMS itself.
fn normed(x: u32, g: u32) -> Input {
  return Input(x, true, g, rms_inv(x));
}

fn xblock(x: Input, blocks: u32, b: u32) -> vec4<f32> {
  let j = 4u * min(b, blocks - 1u);
  let v = act4(act_base + x.x + j);
  if (x.normed) {
    return v * x.inv * w[(x.g + j) / 4u];
  }
  return v;
}

// Lane `lane` of `lanes`'s part of W[ra] . x and (when `pair`) W[rb] . x: column blocks lane,
// lane + lanes, ... W (at wm, a multiple of 4) is stored [cols/4][rows][4], so one load brings 4
// weights of a row and threads of consecutive rows read consecutive 16 bytes. Four blocks of each
// row are loaded before their sums, so that a thread has 4 (or 8) loads in flight rather than
// waiting on each (the weights come from L2).
fn rows_dot(wm: u32, rows: u32, cols: u32, ra: u32, rb: u32, pair: bool, x: Input, lane: u32,
            lanes: u32) -> vec2<f32> {
  let blocks = cols / 4u;
  let wa = wm / 4u + ra;
  let wb = wm / 4u + rb;
  var acc = vec2<f32>(0.0);
  for (var b = lane; b < blocks; b += 4u * lanes) {
    let b1 = b + lanes;
    let b2 = b1 + lanes;
    let b3 = b2 + lanes;
    let a0 = wblock(wa, rows, blocks, b);
    let a1 = wblock(wa, rows, blocks, b1);
    let a2 = wblock(wa, rows, blocks, b2);
    let a3 = wblock(wa, rows, blocks, b3);
    var c0 = vec4<f32>(0.0);
    var c1 = vec4<f32>(0.0);
    var c2 = vec4<f32>(0.0);
    var c3 = vec4<f32>(0.0);
    if (pair) {
      c0 = wblock(wb, rows, blocks, b);
      c1 = wblock(wb, rows, blocks, b1);
      c2 = wblock(wb, rows, blocks, b2);
      c3 = wblock(wb, rows, blocks, b3);
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
    var acc = lane_sum(rows_dot(wm, rows, cols, r, r, false, x, sl.lane, lanes).x, lanes);
    if (sl.writes) {
      if (has_bias) {
        acc += wf(bias + r);
      }
      if (accumulate) {
        act[act_base + y + r] += acc;
      } else {
        act[act_base + y + r] = acc;
      }
    }
  }
}

fn qkv(layer: u32, tid: u32, nthr: u32) {
  let lw = layer_w(layer);
  matvec(lw + L_QKV, lw + L_BQKV, true, plain(A_XN), A_QKV, QKV, D, LN_QKV, false, tid, nthr);
}

// Elements i and i + HD/2 of head `head` (q heads, then k heads, then v heads) at `pos`: q and k
// rotated (RoPE, Hugging Face rotate_half), q into the activations, k and v into the KV cache.
fn store_head_pair(layer: u32, pos: u32, head: u32, i: u32, a: f32, b: f32) {
  let half_dim = HD / 2u;
  if (head < H + KVH) {
    let cs = W_ROPE + 2u * (pos * half_dim + i);
    let c = wf(cs);
    let s = wf(cs + 1u);
    let ra = a * c - b * s;
    let rb = b * c + a * s;
    if (head < H) {
      let q = act_base + A_QKV + head * HD + i;
      act[q] = ra;
      act[q + half_dim] = rb;
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
    store_head_pair(layer, pos, head, i, act[a], act[a + half_dim]);
  }
}

// Fused input norm and q|k|v: a team per pair of rows (i, i + HD/2) of a head, the bias added,
// then RoPE and the cache append as rope_kv does.
fn qkv_rope(layer: u32, pos: u32, tid: u32, nthr: u32) {
  let lw = layer_w(layer);
  let x = normed(A_X, lw);
  let half_dim = HD / 2u;
  let pairs = (H + 2u * KVH) * half_dim;
  for (var k = 0u; k < rounds(pairs, LN_QKV, nthr); k++) {
    let sl = slot_of(k, pairs, LN_QKV, tid, nthr);
    let head = sl.item / half_dim;
    let i = sl.item % half_dim;
    let ra = head * HD + i;
    let part = rows_dot(lw + L_QKV, QKV, D, ra, ra + half_dim, true, x, sl.lane, LN_QKV);
    let a = lane_sum(part.x, LN_QKV) + wf(lw + L_BQKV + ra);
    let b = lane_sum(part.y, LN_QKV) + wf(lw + L_BQKV + ra + half_dim);
    if (sl.writes) {
      store_head_pair(layer, pos, head, i, a, b);
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
      let j = min(i, HD - 1u);
      acc += select(0.0, act[q + j] * kv[kt + j], i < HD);
    }
    acc = lane_sum(acc, LN_SC);
    if (sl.writes) {
      act[act_base + A_SC + h * CAP + t] = acc * scale;
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
    var m = act[sc + min(lane, n - 1u)];
    for (var u = 1u; u < AT_STEPS; u++) {
      m = max(m, act[sc + min(lane + u * LN_AT, n - 1u)]);
    }
    m = lane_max(m, LN_AT);
    let v = kv_index(layer, 1u, h / (H / KVH), 0u) + j;
    var sum = 0.0;
    var acc = 0.0;
    for (var u = 0u; u < AT_STEPS; u++) {
      let t = lane + u * LN_AT;
      let tc = min(t, n - 1u);
      let e = select(0.0, exp(act[sc + tc] - m), t < n);
      sum += e;
      acc += e * kv[v + tc * HD];
    }
    sum = lane_sum(sum, LN_AT);
    acc = lane_sum(acc, LN_AT);
    if (sl.writes) {
      act[act_base + A_ATT + sl.item] = acc / sum;
    }
  }
}

fn o_proj(layer: u32, tid: u32, nthr: u32) {
  matvec(layer_w(layer) + L_O, 0u, false, plain(A_ATT), A_O, D, QD, LN_O, false, tid, nthr);
}

// x += out (of o_proj or down_proj)
fn residual(tid: u32, nthr: u32) {
  for (var i = tid; i < D; i += nthr) {
    act[act_base + A_X + i] += act[act_base + A_O + i];
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
    act[g] = silu_times(act[g], act[g + FF]);
  }
}

// Fused post-attention norm and gate|up: a team per pair of rows (gate_i, up_i), silu(gate_i) *
// up_i into gate_i.
fn gate_up_silu(layer: u32, tid: u32, nthr: u32) {
  let wm = layer_w(layer) + L_GU;
  let x = normed(A_X, layer_w(layer) + L_POST);
  for (var k = 0u; k < rounds(FF, LN_GU, nthr); k++) {
    let sl = slot_of(k, FF, LN_GU, tid, nthr);
    let i = sl.item;
    let part = rows_dot(wm, 2u * FF, D, i, FF + i, true, x, sl.lane, LN_GU);
    let g = lane_sum(part.x, LN_GU);
    let u = lane_sum(part.y, LN_GU);
    if (sl.writes) {
      act[act_base + A_GU + i] = silu_times(g, u);
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
// greater wins, so ties keep the lowest index).
fn emit(pos: u32, tid: u32, nthr: u32) -> u32 {
  if (pos + 1u < P) {
    return tokens[seq * CAP + pos + 1u];
  }
  let out = (seq * T + pos + 1u - P) * V;
  for (var i = tid; i < V; i += nthr) {
    logits[out + i] = act[act_base + A_LOG + i];
  }
  if (tid < ARG_PARTS) {
    let first = tid * (V / ARG_PARTS);
    var best = first;
    var best_v = act[act_base + A_LOG + first];
    for (var i = first + 1u; i < first + V / ARG_PARTS; i++) {
      let v = act[act_base + A_LOG + i];
      if (v > best_v) {
        best = i;
        best_v = v;
      }
    }
    act[act_base + A_ARG + tid] = best_v;
    act[act_base + A_ARG + ARG_PARTS + tid] = f32(best);
  }
  sync();
  var best = 0u;
  var best_v = act[act_base + A_ARG];
  for (var p = 1u; p < ARG_PARTS; p++) {
    let v = act[act_base + A_ARG + p];
    if (v > best_v) {
      best = p;
      best_v = v;
    }
  }
  let token = u32(act[act_base + A_ARG + ARG_PARTS + best]);
  if (tid == 0u) {
    tokens[seq * CAP + pos + 1u] = token;
  }
  return token;
}

// One decoder layer for the token at `pos`, by the threads of one workgroup: 6 phases.
fn layer_step(layer: u32, pos: u32, tid: u32, nthr: u32) {
  let lw = layer_w(layer);
  qkv_rope(layer, pos, tid, nthr);
  sync();
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
  head(normed(A_X, W_FNORM), tid, nthr);
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
