// Matrix-vector products of the decode step, y = W x, each with its epilogue fused:
//   qkv_rope        RMSNorm(x) -> Q/K/V rows + bias -> RoPE -> q, and K/V appended to the cache
//   gate_up_silu    RMSNorm(x) -> gate/up rows -> act = silu(gate) * up
//   matvec_norm     RMSNorm(x) -> rows (the LM head: logits)
//   matvec_residual rows added into the residual stream (o_proj, down_proj)
// One source for both storage dtypes: WEIGHT_F16 picks f16 (two halves per u32, unpacked here,
// arithmetic in f32) or f32 weights. Rows are laid out on load (src/llm/model.cpp): each row padded
// with zeros to a multiple of 8 elements, so one vec4<u32> holds 8 halves (or two hold 8 floats);
// fused matrices interleave the rows an epilogue needs together (RoPE pairs i, i + hd/2; gate j
// beside up j) so that they land in the same workgroup.
// A workgroup computes ROWS_PER_WG rows, TEAM threads per row: consecutive lanes read consecutive
// 16-byte words of a row (coalesced), then a subgroup sum and a sum over the team's subgroups.
// TEAM >= the adapter's largest subgroup, so no subgroup spans two rows.
enable subgroups;

override WEIGHT_F16: bool = true;
override ROWS: u32 = 1u;         // rows of W
override COLS: u32 = 8u;         // logical length of x
override COLS8: u32 = 1u;        // ceil(COLS / 8): padded row length in groups of 8
override TEAM: u32 = 32u;        // threads per row
override ROWS_PER_WG: u32 = 4u;
override WG: u32 = 128u;         // TEAM * ROWS_PER_WG
override ITERS: u32 = 1u;        // ceil(COLS8 / TEAM): uniform trip count of the row loop
override NORM_X: bool = false;   // x is RMS-normalised into workgroup memory first
override XS_V4: u32 = 2u;        // vec4s of that staging (2 * COLS8 when NORM_X, else 2)
override EPS: f32 = 1e-6;
// qkv_rope only
override Q_ROWS: u32 = 0u;       // heads * head_dim
override KV_ROWS: u32 = 0u;      // kv_heads * head_dim
override HEAD_DIM: u32 = 2u;
override CTX: u32 = 1u;          // KV-cache capacity (positions)

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> xin: array<vec4<f32>>;  // padded to a multiple of 8 floats

var<workgroup> xs: array<vec4<f32>, XS_V4>;
var<workgroup> red: array<f32, WG>;
var<workgroup> dots: array<f32, ROWS_PER_WG>;
var<workgroup> wg_total: f32;

// The 8 inputs of column group c8 (zero past COLS: padded weights are zero, but x's padding may
// hold anything).
fn x8(c8: u32) -> array<vec4<f32>, 2> {
  if (NORM_X) {
    return array<vec4<f32>, 2>(xs[2u * c8], xs[2u * c8 + 1u]);
  }
  let i = vec4<u32>(0u, 1u, 2u, 3u) + 8u * c8;
  let a = select(vec4<f32>(0.0), xin[2u * c8], i < vec4<u32>(COLS));
  let b = select(vec4<f32>(0.0), xin[2u * c8 + 1u], i + 4u < vec4<u32>(COLS));
  return array<vec4<f32>, 2>(a, b);
}

// Weights (8 of them) of row `row`, column group c8.
fn w8(row: u32, c8: u32) -> array<vec4<f32>, 2> {
  if (WEIGHT_F16) {
    let q = w[row * COLS8 + c8];
    return array<vec4<f32>, 2>(vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y)),
                               vec4<f32>(unpack2x16float(q.z), unpack2x16float(q.w)));
  }
  let base = 2u * (row * COLS8 + c8);
  return array<vec4<f32>, 2>(bitcast<vec4<f32>>(w[base]), bitcast<vec4<f32>>(w[base + 1u]));
}

// The sum of `v` over the workgroup, returned to every thread.
fn workgroup_sum(v: f32, lid: u32, sg_lane: u32, sg_size: u32) -> f32 {
  let s = subgroupAdd(v);
  if (sg_lane == 0u) {
    red[lid / sg_size] = s;
  }
  workgroupBarrier();
  if (lid == 0u) {
    var t = 0.0;
    for (var i = 0u; i < WG / sg_size; i++) {
      t += red[i];
    }
    wg_total = t;
  }
  workgroupBarrier();
  let total = wg_total;
  workgroupBarrier();
  return total;
}

// dots[r] = W[row0 + r] . x for the workgroup's rows (0 past ROWS).
fn row_dots(row0: u32, lid: u32, sg_lane: u32, sg_size: u32) {
  let row = row0 + lid / TEAM;
  let lane = lid % TEAM;
  var acc = 0.0;
  for (var it = 0u; it < ITERS; it++) {
    let c8 = it * TEAM + lane;
    if (c8 < COLS8 && row < ROWS) {
      let wv = w8(row, c8);
      let xv = x8(c8);
      acc += dot(wv[0], xv[0]) + dot(wv[1], xv[1]);
    }
  }
  let s = subgroupAdd(acc);
  if (sg_lane == 0u) {
    red[lid / sg_size] = s;
  }
  workgroupBarrier();
  if (lid < ROWS_PER_WG) {
    let per = TEAM / sg_size;
    var t = 0.0;
    for (var i = 0u; i < per; i++) {
      t += red[lid * per + i];
    }
    dots[lid] = t;
  }
  workgroupBarrier();
}

// The built-in inputs of every entry point.
struct Ids {
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) groups: vec3<u32>,
  @builtin(subgroup_invocation_id) sg_lane: u32,
  @builtin(subgroup_size) sg_size: u32,
}

// The workgroup's first row (workgroups beyond 65,535 spill into y), after computing its dots.
fn dots_of_workgroup(ids: Ids) -> u32 {
  let row0 = (ids.wid.y * ids.groups.x + ids.wid.x) * ROWS_PER_WG;
  row_dots(row0, ids.lid, ids.sg_lane, ids.sg_size);
  return row0;
}

// ---- RMSNorm folded in: xs = x / rms(x) * norm_w ----
@group(0) @binding(2) var<storage, read> norm_w: array<vec4<f32>>;  // padded like x

fn stage_normed_x(ids: Ids) {
  let lid = ids.lid;
  // Trip counts uniform across the workgroup: subgroupAdd and barriers follow.
  var ss = 0.0;
  for (var i0 = 0u; i0 < XS_V4; i0 += WG) {
    let i = i0 + lid;
    if (i < XS_V4) {
      let m = select(vec4<f32>(0.0), xin[i], vec4<u32>(0u, 1u, 2u, 3u) + 4u * i < vec4<u32>(COLS));
      ss += dot(m, m);
      xs[i] = m;
    }
  }
  let inv = inverseSqrt(workgroup_sum(ss, lid, ids.sg_lane, ids.sg_size) / f32(COLS) + EPS);
  for (var i0 = 0u; i0 < XS_V4; i0 += WG) {
    let i = i0 + lid;
    if (i < XS_V4) {
      xs[i] = xs[i] * inv * norm_w[i];
    }
  }
  workgroupBarrier();
}

// ---- qkv_rope ----
// Packed rows: Q heads, then K heads (each head's rows in RoPE pairs: i, i + hd/2 for i < hd/2),
// then V rows in order. bias in the same order.
@group(0) @binding(3) var<storage, read> qkv_bias: array<f32>;
@group(0) @binding(4) var<storage, read> rope_cs: array<vec2<f32>>;  // [CTX][hd/2] (cos, sin)
@group(0) @binding(5) var<storage, read> state: array<u32>;         // word 0: pos
@group(0) @binding(6) var<storage, read_write> q_out: array<f32>;   // [heads * hd]
@group(0) @binding(7) var<storage, read_write> k_cache: array<f32>; // [kv_heads][CTX][hd]
@group(0) @binding(8) var<storage, read_write> v_cache: array<f32>;

// Rows ra, ra + 1 of the packed Q/K/V projection (without bias: a, b) for the token at `pos`:
// bias, RoPE, and the store into q (at q_base) or the caches.
fn store_qkv(ra: u32, a_dot: f32, b_dot: f32, pos: u32, q_base: u32) {
  let a = a_dot + qkv_bias[ra];
  let b = b_dot + qkv_bias[ra + 1u];
  let half_dim = HEAD_DIM / 2u;
  if (ra < Q_ROWS + KV_ROWS) {
    let r = select(ra - Q_ROWS, ra, ra < Q_ROWS);
    let head = r / HEAD_DIM;
    let i = (r % HEAD_DIM) / 2u;
    let cs = rope_cs[pos * half_dim + i];
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

@compute @workgroup_size(WG)
fn qkv_rope(ids: Ids) {
  stage_normed_x(ids);
  let row0 = dots_of_workgroup(ids);
  let lid = ids.lid;
  let ra = row0 + 2u * lid;  // this thread's pair: rows ra, ra + 1
  if (lid < ROWS_PER_WG / 2u && ra < ROWS) {
    store_qkv(ra, dots[2u * lid], dots[2u * lid + 1u], state[0], 0u);
  }
}

// ---- gate_up_silu: packed rows gate 0, up 0, gate 1, up 1, ... ----
@group(0) @binding(3) var<storage, read_write> act: array<f32>;  // [intermediate]

fn silu_mul(g: f32, u: f32) -> f32 {
  return g / (1.0 + exp(-g)) * u;
}

@compute @workgroup_size(WG)
fn gate_up_silu(ids: Ids) {
  stage_normed_x(ids);
  let row0 = dots_of_workgroup(ids);
  let lid = ids.lid;
  let ra = row0 + 2u * lid;
  if (lid < ROWS_PER_WG / 2u && ra < ROWS) {
    act[ra / 2u] = silu_mul(dots[2u * lid], dots[2u * lid + 1u]);
  }
}

// ---- matvec_norm: y = W rmsnorm(x) (the LM head) ----
@group(0) @binding(3) var<storage, read_write> y_out: array<f32>;

@compute @workgroup_size(WG)
fn matvec_norm(ids: Ids) {
  stage_normed_x(ids);
  let row0 = dots_of_workgroup(ids);
  let lid = ids.lid;
  if (lid < ROWS_PER_WG && row0 + lid < ROWS) {
    y_out[row0 + lid] = dots[lid];
  }
}

// ---- matvec_residual: resid += W x ----
@group(0) @binding(2) var<storage, read_write> resid: array<f32>;

@compute @workgroup_size(WG)
fn matvec_residual(ids: Ids) {
  let row0 = dots_of_workgroup(ids);
  let lid = ids.lid;
  if (lid < ROWS_PER_WG && row0 + lid < ROWS) {
    resid[row0 + lid] += dots[lid];
  }
}

// ==== Prefill: the same products for a prompt chunk of T tokens, C[T, ROWS] = A[T, COLS] W^T ====
// Tiles of 32 tokens x 32 rows per workgroup of 256 threads, 32 columns at a time through
// workgroup memory; each thread owns 2 tokens x 2 adjacent rows (a RoPE or gate/up pair).
// A has rows of COLS8 * 8 floats (COLS padded); the host sizes the grid to ceil(T / 32) tiles
// of tokens, and the rows of the last tile past T compute on stale rows of A whose results nobody
// reads (cache positions past the prompt are rewritten before they are attended to).
// The chunk's first position is state word 1 (word 0 stays the decode position).
override OUT_STRIDE: u32 = 8u;  // floats per row of the output (act, resid): ROWS padded
const TILE: u32 = 32u;

var<workgroup> a_tile: array<array<f32, 33>, 32>;  // [token][k], +1 against bank conflicts
var<workgroup> w_tile: array<array<f32, 33>, 32>;  // [row][k]
var<workgroup> row_scale: array<f32, 32>;          // 1 / rms of each token row

// The RMSNorm weight into xs (workgroup memory), for tile_products(normed = true): the residual
// entry has no norm weight to bind.
fn stage_norm_weight(lid: u32) {
  for (var i = lid; i < XS_V4; i += 256u) {
    xs[i] = norm_w[i];
  }
}

// acc[2i + j]: token 2ty + i, row 2tx + j of the workgroup's tile. When normed, A's rows are
// RMS-normalised with the weight staged in xs.
fn tile_products(ids: Ids, normed: bool) -> array<f32, 4> {
  let lid = ids.lid;
  let t0 = ids.wid.y * TILE;
  let r0 = ids.wid.x * TILE;
  if (normed && lid < TILE) {
    var ss = 0.0;
    for (var k = 0u; k < COLS8 * 2u; k++) {
      let v = xin[(t0 + lid) * COLS8 * 2u + k];
      ss += dot(v, v);  // padding is zero: A rows are written only up to COLS
    }
    row_scale[lid] = inverseSqrt(ss / f32(COLS) + EPS);
  }
  workgroupBarrier();
  let tx = lid % 16u;
  let ty = lid / 16u;
  var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
  for (var k0 = 0u; k0 < COLS8 * 8u; k0 += TILE) {
    for (var i = 0u; i < 4u; i++) {  // A: 32 x 32 floats, 4 per thread
      let e = lid + i * 256u;
      let t = e / TILE;
      let k = k0 + e % TILE;
      var v = 0.0;
      if (k < COLS) {
        v = xin[(t0 + t) * COLS8 * 2u + k / 4u][k % 4u];
        if (normed) {
          v *= row_scale[t] * xs[k / 4u][k % 4u];
        }
      }
      a_tile[t][e % TILE] = v;
    }
    // W: 32 rows x 4 groups of 8; threads 0..127 one group each.
    if (lid < 128u) {
      let r = lid / 4u;
      let g = lid % 4u;
      let c8 = k0 / 8u + g;
      var w2 = array<vec4<f32>, 2>(vec4<f32>(0.0), vec4<f32>(0.0));
      if (r0 + r < ROWS && c8 < COLS8) {
        w2 = w8(r0 + r, c8);
      }
      for (var j = 0u; j < 4u; j++) {
        w_tile[r][g * 8u + j] = w2[0][j];
        w_tile[r][g * 8u + 4u + j] = w2[1][j];
      }
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TILE; kk++) {
      let a0 = a_tile[2u * ty][kk];
      let a1 = a_tile[2u * ty + 1u][kk];
      let w0 = w_tile[2u * tx][kk];
      let w1 = w_tile[2u * tx + 1u][kk];
      acc[0] += a0 * w0;
      acc[1] += a0 * w1;
      acc[2] += a1 * w0;
      acc[3] += a1 * w1;
    }
    workgroupBarrier();
  }
  return acc;
}

// This thread's outputs: rows ra, ra + 1 for tokens t0, t0 + 1.
fn pair_row(ids: Ids) -> u32 {
  return ids.wid.x * TILE + 2u * (ids.lid % 16u);
}
fn first_token(ids: Ids) -> u32 {
  return ids.wid.y * TILE + 2u * (ids.lid / 16u);
}

@compute @workgroup_size(256)
fn qkv_rope_prompt(ids: Ids) {
  stage_norm_weight(ids.lid);
  let acc = tile_products(ids, true);
  let ra = pair_row(ids);
  for (var i = 0u; i < 2u; i++) {
    let t = first_token(ids) + i;
    if (ra < ROWS && state[1] + t < CTX) {
      store_qkv(ra, acc[2u * i], acc[2u * i + 1u], state[1] + t, t * Q_ROWS);
    }
  }
}

@compute @workgroup_size(256)
fn gate_up_silu_prompt(ids: Ids) {
  stage_norm_weight(ids.lid);
  let acc = tile_products(ids, true);
  let j = pair_row(ids) / 2u;
  let t = first_token(ids);
  if (j < ROWS / 2u) {
    act[t * OUT_STRIDE + j] = silu_mul(acc[0], acc[1]);
    act[(t + 1u) * OUT_STRIDE + j] = silu_mul(acc[2], acc[3]);
  }
}

@compute @workgroup_size(256)
fn residual_prompt(ids: Ids) {
  let acc = tile_products(ids, false);
  let ra = pair_row(ids);
  let t = first_token(ids);
  for (var j = 0u; j < 2u; j++) {
    if (ra + j < ROWS) {
      resid[t * OUT_STRIDE + ra + j] += acc[j];
      resid[(t + 1u) * OUT_STRIDE + ra + j] += acc[2u + j];
    }
  }
}
