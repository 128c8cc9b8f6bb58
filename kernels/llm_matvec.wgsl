// Matrix-vector products of the decode step, y = W x, each with its epilogue fused:
//   qkv_rope        RMSNorm(x) -> Q/K/V rows + bias -> RoPE -> q, and K/V appended to the cache
//   gate_up_silu    RMSNorm(x) -> gate/up rows -> act = silu(gate) * up
//   matvec_norm     RMSNorm(x) -> rows (the LM head: logits)
//   matvec_residual rows added into the residual stream (o_proj, down_proj)
// The weight layout, bindings and epilogues are llm_common.wgsl's (shared with the prefill).
// A workgroup computes ROWS_PER_WG rows, TEAM threads per row: consecutive lanes read consecutive
// 16-byte words of a row (coalesced), then a subgroup sum and a sum over the team's subgroups.
// TEAM >= the adapter's largest subgroup, so no subgroup spans two rows.
// #include "llm_common.wgsl"

override TEAM: u32 = 32u;        // threads per row
override ROWS_PER_WG: u32 = 4u;
override WG: u32 = 128u;         // TEAM * ROWS_PER_WG
override ITERS: u32 = 1u;        // ceil(COLS8 / TEAM): uniform trip count of the row loop
override NORM_X: bool = false;   // x is RMS-normalised into workgroup memory first

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

// The workgroup's first row (workgroups beyond 65,535 spill into y), after computing its dots.
fn dots_of_workgroup(ids: Ids) -> u32 {
  let row0 = (ids.wid.y * ids.groups.x + ids.wid.x) * ROWS_PER_WG;
  row_dots(row0, ids.lid, ids.sg_lane, ids.sg_size);
  return row0;
}

// ---- RMSNorm folded in: xs = x / rms(x) * norm_w ----

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

@compute @workgroup_size(WG)
fn matvec_residual(ids: Ids) {
  let row0 = dots_of_workgroup(ids);
  let lid = ids.lid;
  if (lid < ROWS_PER_WG && row0 + lid < ROWS) {
    resid[row0 + lid] += dots[lid];
  }
}

