// The tiny transformer (a Qwen2-architecture decoder, src/tiny/tiny_model.h) as WGSL: sizes, the
// packed weight layout, the bindings every strategy shares, and every op of one decode step as a
// function of (tid, nthr): thread `tid` of `nthr` cooperating threads takes items tid,
// tid + nthr, ... So the same text runs as one dispatch per op (grid-wide threads, tiny_ops.wgsl)
// and inside one workgroup (tiny_ops.wgsl's layer entries, tiny_single.wgsl), and every strategy
// does the same arithmetic in the same order.
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

override QD: u32 = H * HD;
override KVD: u32 = KVH * HD;
override QKV: u32 = QD + 2u * KVD;

// Activations of one sequence (floats): the residual stream, its norm, q|k|v, the attention
// output, the attention scores [H][CAP], gate|up (silu(gate) * up overwrites gate), the output of
// o_proj and down_proj, the logits.
override A_X: u32 = 0u;
override A_XN: u32 = D;
override A_QKV: u32 = 2u * D;
override A_ATT: u32 = A_QKV + QKV;
override A_SC: u32 = A_ATT + QD;
override A_GU: u32 = A_SC + H * CAP;
override A_O: u32 = A_GU + 2u * FF;
override A_LOG: u32 = A_O + D;
override ACT_SIZE: u32 = A_LOG + V;

// Packed weights (floats, src/tiny/tiny_model.cpp pack_weights; every part starts at a multiple of
// 4 floats): embedding [V][D], final norm [D], LM head, RoPE table [CAP][HD/2] (cos, sin), then per
// layer: input norm [D], q|k|v, their bias [QKV], o, post-attention norm [D], gate|up, down.
// A matrix [rows][cols] is stored in blocks of 4 columns, [cols/4][rows][4] (see matvec).
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

fn embed(pos: u32, tid: u32, nthr: u32) {
  let row = tokens[seq * CAP + pos] * D;
  for (var i = tid; i < D; i += nthr) {
    act[act_base + A_X + i] = wf(row + i);
  }
}

// y = x / sqrt(mean(x^2) + eps) * g; every thread sums the squares itself (D <= 1024 reads), so
// no reduction (and no barrier) is needed inside.
fn rmsnorm(g: u32, x: u32, y: u32, tid: u32, nthr: u32) {
  var ss = 0.0;
  for (var j = 0u; j < D; j++) {
    let v = act[act_base + x + j];
    ss += v * v;
  }
  let inv = inverseSqrt(ss / f32(D) + EPS);
  for (var i = tid; i < D; i += nthr) {
    act[act_base + y + i] = act[act_base + x + i] * inv * wf(g + i);
  }
}

// acc + w . x[xj..xj+3], summed in order.
fn dot4(acc: f32, wv: vec4<f32>, xj: u32) -> f32 {
  return (((acc + wv.x * act[xj]) + wv.y * act[xj + 1u]) + wv.z * act[xj + 2u]) + wv.w * act[xj + 3u];
}

// y[r] = W[r] . x (+ bias[r]): one thread per row, the row summed in order. W (at wm, a multiple
// of 4) is stored [cols/4][rows][4]: each load brings 4 weights of the thread's row, and threads
// of consecutive rows read consecutive 16 bytes. Four loads are issued before their sums, so that
// a thread has four in flight rather than waiting on each (the weights come from L2).
fn matvec(wm: u32, bias: u32, has_bias: bool, x: u32, y: u32, rows: u32, cols: u32, tid: u32, nthr: u32) {
  for (var r = tid; r < rows; r += nthr) {
    var acc = 0.0;
    var at = wm / 4u + r;  // the row's next vec4
    var j = 0u;
    for (; j + 16u <= cols; j += 16u) {
      let w0 = w[at];
      let w1 = w[at + rows];
      let w2 = w[at + 2u * rows];
      let w3 = w[at + 3u * rows];
      let xj = act_base + x + j;
      acc = dot4(dot4(dot4(dot4(acc, w0, xj), w1, xj + 4u), w2, xj + 8u), w3, xj + 12u);
      at += 4u * rows;
    }
    for (; j < cols; j += 4u) {
      acc = dot4(acc, w[at], act_base + x + j);
      at += rows;
    }
    if (has_bias) {
      acc += wf(bias + r);
    }
    act[act_base + y + r] = acc;
  }
}

fn qkv(layer: u32, tid: u32, nthr: u32) {
  let lw = layer_w(layer);
  matvec(lw + L_QKV, lw + L_BQKV, true, A_XN, A_QKV, QKV, D, tid, nthr);
}

// RoPE (Hugging Face rotate_half: pairs i, i + HD/2) on q in place and on k into the cache at
// `pos`; v copied into the cache.
fn rope_kv(layer: u32, pos: u32, tid: u32, nthr: u32) {
  let half_dim = HD / 2u;
  let pairs = (H + KVH) * half_dim;
  for (var item = tid; item < pairs + KVD; item += nthr) {
    if (item < pairs) {
      let head = item / half_dim;  // q heads, then k heads (k follows q in act)
      let i = item % half_dim;
      let base = act_base + A_QKV + head * HD;
      let a = act[base + i];
      let b = act[base + i + half_dim];
      let cs = W_ROPE + 2u * (pos * half_dim + i);
      let c = wf(cs);
      let s = wf(cs + 1u);
      let ra = a * c - b * s;
      let rb = b * c + a * s;
      if (head < H) {
        act[base + i] = ra;
        act[base + i + half_dim] = rb;
      } else {
        let k = kv_index(layer, 0u, head - H, pos);
        kv[k + i] = ra;
        kv[k + i + half_dim] = rb;
      }
    } else {
      let j = item - pairs;
      kv[kv_index(layer, 1u, j / HD, pos) + j % HD] = act[act_base + A_QKV + QD + KVD + j];
    }
  }
}

// scores[h][t] = q_h . k_t / sqrt(HD) for t <= pos.
fn scores(layer: u32, pos: u32, tid: u32, nthr: u32) {
  let n = pos + 1u;
  let scale = 1.0 / sqrt(f32(HD));
  for (var item = tid; item < H * n; item += nthr) {
    let h = item / n;
    let t = item % n;
    let k = kv_index(layer, 0u, h / (H / KVH), t);
    let q = act_base + A_QKV + h * HD;
    var acc = 0.0;
    for (var i = 0u; i < HD; i++) {
      acc += act[q + i] * kv[k + i];
    }
    act[act_base + A_SC + h * CAP + t] = acc * scale;
  }
}

// att[h][j] = sum_t softmax(scores[h])[t] * v_t[j]; each thread takes the max and the sum over
// its head's scores itself (pos + 1 <= CAP values), again no reduction.
fn attend(layer: u32, pos: u32, tid: u32, nthr: u32) {
  let n = pos + 1u;
  for (var item = tid; item < QD; item += nthr) {
    let h = item / HD;
    let j = item % HD;
    let sc = act_base + A_SC + h * CAP;
    var m = act[sc];
    for (var t = 1u; t < n; t++) {
      m = max(m, act[sc + t]);
    }
    let v = kv_index(layer, 1u, h / (H / KVH), 0u) + j;
    var sum = 0.0;
    var acc = 0.0;
    for (var t = 0u; t < n; t++) {
      let e = exp(act[sc + t] - m);
      sum += e;
      acc += e * kv[v + t * HD];
    }
    act[act_base + A_ATT + item] = acc / sum;
  }
}

fn o_proj(layer: u32, tid: u32, nthr: u32) {
  matvec(layer_w(layer) + L_O, 0u, false, A_ATT, A_O, D, QD, tid, nthr);
}

// x += out (of o_proj or down_proj)
fn residual(tid: u32, nthr: u32) {
  for (var i = tid; i < D; i += nthr) {
    act[act_base + A_X + i] += act[act_base + A_O + i];
  }
}

fn gate_up(layer: u32, tid: u32, nthr: u32) {
  matvec(layer_w(layer) + L_GU, 0u, false, A_XN, A_GU, 2u * FF, D, tid, nthr);
}

fn silu_mul(tid: u32, nthr: u32) {
  for (var i = tid; i < FF; i += nthr) {
    let g = act[act_base + A_GU + i];
    act[act_base + A_GU + i] = g / (1.0 + exp(-g)) * act[act_base + A_GU + FF + i];
  }
}

fn down(layer: u32, tid: u32, nthr: u32) {
  matvec(layer_w(layer) + L_DOWN, 0u, false, A_GU, A_O, D, FF, tid, nthr);
}

fn head(tid: u32, nthr: u32) {
  matvec(W_HEAD, 0u, false, A_XN, A_LOG, V, D, tid, nthr);
}

// After the token at `pos`: from the last prompt position on, the logits are stored as generated
// step pos + 1 - P and thread 0 appends their argmax (the lowest index on ties, as torch.argmax)
// to the tokens, which the next position reads.
fn emit(pos: u32, tid: u32, nthr: u32) {
  if (pos + 1u >= P) {
    let out = (seq * T + pos + 1u - P) * V;
    for (var i = tid; i < V; i += nthr) {
      logits[out + i] = act[act_base + A_LOG + i];
    }
    if (tid == 0u) {
      var best = 0u;
      var best_v = act[act_base + A_LOG];
      for (var i = 1u; i < V; i++) {
        let v = act[act_base + A_LOG + i];
        if (v > best_v) {
          best = i;
          best_v = v;
        }
      }
      tokens[seq * CAP + pos + 1u] = best;
    }
  }
}

// One decoder layer for the token at `pos`, by the threads of one workgroup.
fn layer_step(layer: u32, pos: u32, tid: u32, nthr: u32) {
  let lw = layer_w(layer);
  rmsnorm(lw, A_X, A_XN, tid, nthr);
  sync();
  qkv(layer, tid, nthr);
  sync();
  rope_kv(layer, pos, tid, nthr);
  sync();
  scores(layer, pos, tid, nthr);
  sync();
  attend(layer, pos, tid, nthr);
  sync();
  o_proj(layer, tid, nthr);
  sync();
  residual(tid, nthr);
  sync();
  rmsnorm(lw + L_POST, A_X, A_XN, tid, nthr);
  sync();
  gate_up(layer, tid, nthr);
  sync();
  silu_mul(tid, nthr);
  sync();
  down(layer, tid, nthr);
  sync();
  residual(tid, nthr);
  sync();
}

// Final norm, LM head and the next token, by the threads of one workgroup.
fn head_step(pos: u32, tid: u32, nthr: u32) {
  rmsnorm(W_FNORM, A_X, A_XN, tid, nthr);
  sync();
  head(tid, nthr);
  sync();
  emit(pos, tid, nthr);
  sync();
}
