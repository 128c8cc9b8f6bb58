// qk_norm_rope: the per-head q/k RMSNorm of Qwen3, then RoPE. The fused projection
// (llm_matvec.wgsl qkv_rope, llm_matmul.wgsl qkv_rope_prompt, with QK_NORM) sees RoPE pairs of
// rows, not whole heads, so it stores q and k raw; this kernel takes one head per workgroup (grid
// x: the q heads, then the kv heads; grid y: the tokens of a prompt chunk, 1 when decoding),
// normalises it over HEAD_DIM with its weight (q_norm or k_norm) and rotates it in place:
//   y = x / sqrt(mean(x^2) + EPS) * w;  (y_i, y_{i+hd/2}) rotated by (cos, sin) of pos, i
override HEAD_DIM: u32 = 2u;
override HEADS: u32 = 1u;     // query heads; workgroups from HEADS on take the kv heads
override CTX: u32 = 1u;       // KV-cache capacity (positions)
override EPS: f32 = 1e-6;
override WG: u32 = 64u;       // a power of two
override POS_WORD: u32 = 0u;  // the position: state word 0 (decode) or word 1 + token (a prompt chunk)

@group(0) @binding(0) var<storage, read> norm_w: array<f32>;         // q_norm [HEAD_DIM], then k_norm
@group(0) @binding(1) var<storage, read> rope_cs: array<vec2<f32>>;  // [CTX][HEAD_DIM / 2] (cos, sin)
@group(0) @binding(2) var<storage, read> state: array<u32>;
@group(0) @binding(3) var<storage, read_write> q: array<f32>;        // [tokens][HEADS * HEAD_DIM]
@group(0) @binding(4) var<storage, read_write> k_cache: array<f32>;  // [kv_heads][CTX][HEAD_DIM]

var<workgroup> head: array<f32, HEAD_DIM>;
var<workgroup> partial: array<f32, WG>;

fn load(is_q: bool, at: u32) -> f32 {
  if (is_q) {
    return q[at];
  }
  return k_cache[at];
}

fn store(is_q: bool, at: u32, v: f32) {
  if (is_q) {
    q[at] = v;
  } else {
    k_cache[at] = v;
  }
}

@compute @workgroup_size(WG)
fn qk_norm_rope(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let token = wid.y;
  let pos = state[POS_WORD] + token;
  if (pos >= CTX) {
    return;
  }
  let is_q = wid.x < HEADS;
  let base = select(((wid.x - HEADS) * CTX + pos) * HEAD_DIM, (token * HEADS + wid.x) * HEAD_DIM, is_q);
  let w0 = select(HEAD_DIM, 0u, is_q);
  var ss = 0.0;
  for (var i = lid; i < HEAD_DIM; i += WG) {
    let v = load(is_q, base + i);
    head[i] = v;
    ss += v * v;
  }
  partial[lid] = ss;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride) {
      partial[lid] += partial[lid + stride];
    }
    workgroupBarrier();
  }
  let inv = inverseSqrt(partial[0] / f32(HEAD_DIM) + EPS);
  let half_dim = HEAD_DIM / 2u;
  for (var i = lid; i < half_dim; i += WG) {
    let a = head[i] * inv * norm_w[w0 + i];
    let b = head[i + half_dim] * inv * norm_w[w0 + i + half_dim];
    let cs = rope_cs[pos * half_dim + i];
    store(is_q, base + i, a * cs.x - b * cs.y);
    store(is_q, base + i + half_dim, b * cs.x + a * cs.y);
  }
}
