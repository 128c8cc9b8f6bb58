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

@compute @workgroup_size(WG)
fn qkv_rope(ids: Ids) {
  stage_normed_x(ids);
  let row0 = dots_of_workgroup(ids);
  let lid = ids.lid;
  let ra = row0 + 2u * lid;  // this thread's pair: rows ra, ra + 1
  if (lid < ROWS_PER_WG / 2u && ra < ROWS) {
    let pos = state[0];
    let a = dots[2u * lid] + qkv_bias[ra];
    let b = dots[2u * lid + 1u] + qkv_bias[ra + 1u];
    let half_dim = HEAD_DIM / 2u;
    if (ra < Q_ROWS + KV_ROWS) {
      let r = select(ra - Q_ROWS, ra, ra < Q_ROWS);
      let head = r / HEAD_DIM;
      let i = (r % HEAD_DIM) / 2u;
      let cs = rope_cs[pos * half_dim + i];
      let ya = a * cs.x - b * cs.y;
      let yb = b * cs.x + a * cs.y;
      if (ra < Q_ROWS) {
        q_out[head * HEAD_DIM + i] = ya;
        q_out[head * HEAD_DIM + i + half_dim] = yb;
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
}

// ---- gate_up_silu: packed rows gate 0, up 0, gate 1, up 1, ... ----
@group(0) @binding(3) var<storage, read_write> act: array<f32>;  // [intermediate]

@compute @workgroup_size(WG)
fn gate_up_silu(ids: Ids) {
  stage_normed_x(ids);
  let row0 = dots_of_workgroup(ids);
  let lid = ids.lid;
  let ra = row0 + 2u * lid;
  if (lid < ROWS_PER_WG / 2u && ra < ROWS) {
    let g = dots[2u * lid];
    act[ra / 2u] = g / (1.0 + exp(-g)) * dots[2u * lid + 1u];
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
