// What the decode (llm_matvec.wgsl) and prefill (llm_matmul.wgsl) products share: the weight
// layout, the bindings of their fused epilogues, and the epilogues themselves.
// Weights are laid out on load (src/llm/decode_kernels.cpp): rows read in groups of 8 elements
// (w8: llm_weights.wgsl's weight_group, whatever the encoding WEIGHT_FORMAT), each row padded
// with zeros to whole blocks; fused matrices interleave the rows an epilogue needs together (RoPE
// pairs i, i + hd/2; gate j beside up j).
enable subgroups;
// #include "llm_weights.wgsl"

override ROWS: u32 = 1u;         // rows of W
override COLS: u32 = 8u;         // logical length of x
override COLS8: u32 = 1u;        // ceil(COLS / 8): padded row length in groups of 8
override XS_V4: u32 = 2u;        // vec4s of that staging (2 * COLS8 when NORM_X, else 2)
override EPS: f32 = 1e-6;
// qkv_rope only
override Q_ROWS: u32 = 0u;       // heads * head_dim
override KV_ROWS: u32 = 0u;      // kv_heads * head_dim
override HEAD_DIM: u32 = 2u;
override CTX: u32 = 1u;          // KV-cache capacity (positions)
// Per-head q/k norms (Qwen3): q and k are stored raw (bias added, not rotated) for qk_norm_rope
// (llm_qk_norm.wgsl), which normalises each head and then rotates it.
override QK_NORM: bool = false;

@group(0) @binding(1) var<storage, read> xin: array<vec4<f32>>;  // padded to a multiple of 8 floats
@group(0) @binding(2) var<storage, read> norm_w: array<vec4<f32>>;  // padded like x

// Weights (8 of them) of row `row`, column group c8.
fn w8(row: u32, c8: u32) -> array<vec4<f32>, 2> {
  return weight_group(0u, row, COLS8, c8);
}

// The built-in inputs of every entry point.
struct Ids {
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) groups: vec3<u32>,
  @builtin(subgroup_invocation_id) sg_lane: u32,
  @builtin(subgroup_size) sg_size: u32,
}

// Packed rows: Q heads, then K heads (each head's rows in RoPE pairs: i, i + hd/2 for i < hd/2),
// then V rows in order. bias in the same order.
@group(0) @binding(3) var<storage, read> qkv_bias: array<f32>;
@group(0) @binding(4) var<storage, read> rope_cs: array<vec2<f32>>;  // [CTX][hd/2] (cos, sin)
@group(0) @binding(5) var<storage, read> state: array<u32>;         // word 0: pos
@group(0) @binding(6) var<storage, read_write> q_out: array<f32>;   // [heads * hd]
@group(0) @binding(7) var<storage, read_write> k_cache: array<f32>; // [kv_heads][CTX][hd]
@group(0) @binding(8) var<storage, read_write> v_cache: array<f32>;

// Rows ra, ra + 1 of the packed Q/K/V projection (without bias: a, b) for the token at `pos`:
// bias, RoPE (unless QK_NORM), and the store into q (at q_base) or the caches.
fn store_qkv(ra: u32, a_dot: f32, b_dot: f32, pos: u32, q_base: u32) {
  let a = a_dot + qkv_bias[ra];
  let b = b_dot + qkv_bias[ra + 1u];
  let half_dim = HEAD_DIM / 2u;
  if (ra < Q_ROWS + KV_ROWS) {
    let r = select(ra - Q_ROWS, ra, ra < Q_ROWS);
    let head = r / HEAD_DIM;
    let i = (r % HEAD_DIM) / 2u;
    var cs = vec2<f32>(1.0, 0.0);  // QK_NORM: the identity rotation, the pair stored raw
    if (!QK_NORM) {
      cs = rope_cs[pos * half_dim + i];
    }
    let ya = a * cs.x - b * cs.y;
    let yb = b * cs.x + a * cs.y;
    if (ra < Q_ROWS) {
      q_out[q_base + head * HEAD_DIM + i] = ya;
      q_out[q_base + head * HEAD_DIM + i + half_dim] = yb;
    } else {
      let at = (head * CTX + pos) * HEAD_DIM + i;
      k_cache[at] = ya;
      k_cache[at + half_dim] = yb;
    }
  } else {
    let r = ra - Q_ROWS - KV_ROWS;
    let at = ((r / HEAD_DIM) * CTX + pos) * HEAD_DIM + r % HEAD_DIM;
    v_cache[at] = a;
    v_cache[at + 1u] = b;
  }
}

@group(0) @binding(3) var<storage, read_write> act: array<f32>;  // [intermediate]

fn silu_mul(g: f32, u: f32) -> f32 {
  return g / (1.0 + exp(-g)) * u;
}

@group(0) @binding(2) var<storage, read_write> resid: array<f32>;
