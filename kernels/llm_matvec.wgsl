// Matrix-vector products of the decode step, y = W x, each with its epilogue fused:
//   qkv_rope        RMSNorm(x) -> Q/K/V rows + bias -> RoPE -> q, and K/V appended to the cache
//   gate_up_silu    RMSNorm(x) -> gate/up rows -> act = silu(gate) * up
//   matvec_norm     RMSNorm(x) -> rows (the LM head: logits)
//   matvec_residual rows added into the residual stream (o_proj, down_proj)
// The weight layout, bindings and epilogues are llm_common.wgsl's (shared with the prefill).
//
// Decode reads every weight once per token, so these kernels are bound by memory bandwidth; the
// shape of the work is tuned per matrix (DecodeKernels::matvec_tuning):
// - a team of TEAM threads (a power of two, at least the adapter's largest subgroup, so no
//   subgroup spans two teams) shares each row: lane l reads column groups l, l + TEAM, ...
//   (consecutive lanes, consecutive 16-byte words);
// - a team computes RPT rows at once: RPT independent loads per column group, one x read for all;
// - a workgroup of WG threads holds WG / TEAM teams, ROWS_PER_WG = WG / TEAM * RPT rows;
// - the column loop has ITERS = ceil(COLS8 / TEAM) iterations and no branch (past COLS8 a lane
//   re-reads its row's last word and multiplies it by x = 0), so with the trip count a pipeline
//   constant the compiler can unroll it and issue every load before the first FMA.
// RMSNorm is folded in: x * norm_w is staged once per workgroup, together with x's sum of squares,
// and the finished dots are scaled by 1 / rms(x): (W (x * nw)) / rms(x) = W rmsnorm(x).
// #include "llm_common.wgsl"

override TEAM: u32 = 32u;         // threads per row
override RPT: u32 = 1u;           // rows per team, at most MAX_RPT
override WG: u32 = 128u;          // threads per workgroup, a multiple of TEAM
override ROWS_PER_WG: u32 = 4u;   // WG / TEAM * RPT
override RED_LEN: u32 = 128u;     // WG * RPT: a partial per subgroup and row, for any subgroup size
override ITERS: u32 = 1u;         // ceil(COLS8 / TEAM)
override NORM_X: bool = false;    // x * norm_w is staged in workgroup memory, the dots scaled by 1 / rms(x)

const MAX_RPT = 4u;

var<workgroup> xs: array<vec4<f32>, XS_V4>;
var<workgroup> red: array<f32, RED_LEN>;
var<workgroup> sum_sq: array<f32, WG>;  // x's sum of squares, a partial per subgroup

// The 8 inputs of column group c8; zero where !valid and past COLS (padded weights are zero, but
// x's padding may hold anything).
fn x8(c8: u32, valid: bool) -> array<vec4<f32>, 2> {
  if (NORM_X) {
    let z = vec4<f32>(0.0);
    return array<vec4<f32>, 2>(select(z, xs[2u * c8], valid), select(z, xs[2u * c8 + 1u], valid));
  }
  let i = vec4<u32>(0u, 1u, 2u, 3u) + 8u * c8;
  let v = vec4<bool>(valid);
  let a = select(vec4<f32>(0.0), xin[2u * c8], v & (i < vec4<u32>(COLS)));
  let b = select(vec4<f32>(0.0), xin[2u * c8 + 1u], v & (i + 4u < vec4<u32>(COLS)));
  return array<vec4<f32>, 2>(a, b);
}

// xs = x * norm_w (zero past COLS); each subgroup's part of x's sum of squares in sum_sq.
fn stage_x(ids: Ids) {
  var ss = 0.0;
  // Trip count uniform across the workgroup: subgroupAdd follows.
  for (var i0 = 0u; i0 < XS_V4; i0 += WG) {
    let i = i0 + ids.lid;
    if (i < XS_V4) {
      let inside = vec4<u32>(0u, 1u, 2u, 3u) + 4u * i < vec4<u32>(COLS);
      let m = select(vec4<f32>(0.0), xin[i], inside);
      ss += dot(m, m);
      xs[i] = select(vec4<f32>(0.0), m * norm_w[i], inside);
    }
  }
  let s = subgroupAdd(ss);
  if (ids.sg_lane == 0u) {
    sum_sq[ids.lid / ids.sg_size] = s;
  }
  workgroupBarrier();
}

// 1 / rms(x), from stage_x's partials.
fn inv_rms(sg_size: u32) -> f32 {
  var t = 0.0;
  for (var i = 0u; i < WG / sg_size; i++) {
    t += sum_sq[i];
  }
  return inverseSqrt(t / f32(COLS) + EPS);
}

// The workgroup's first row (workgroups beyond 65,535 spill into y); each subgroup's partial dots
// of the workgroup's rows in red, after a barrier (rows past ROWS re-read the last row).
fn row_dots(ids: Ids) -> u32 {
  let row0 = (ids.wid.y * ids.groups.x + ids.wid.x) * ROWS_PER_WG;
  let first = row0 + ids.lid / TEAM * RPT;
  let lane = ids.lid % TEAM;
  var acc = array<f32, MAX_RPT>();
  for (var it = 0u; it < ITERS; it++) {
    let c = it * TEAM + lane;
    let c8 = min(c, COLS8 - 1u);
    let xv = x8(c8, c < COLS8);
    for (var r = 0u; r < RPT; r++) {
      let wv = w8(min(first + r, ROWS - 1u), c8);
      acc[r] += dot(wv[0], xv[0]) + dot(wv[1], xv[1]);
    }
  }
  let sg = ids.lid / ids.sg_size;
  for (var r = 0u; r < RPT; r++) {
    let s = subgroupAdd(acc[r]);
    if (ids.sg_lane == 0u) {
      red[sg * RPT + r] = s;
    }
  }
  workgroupBarrier();
  return row0;
}

// The dot of the workgroup's row i (< ROWS_PER_WG): the sum of its team's subgroup partials.
fn row_total(i: u32, sg_size: u32) -> f32 {
  let per_team = TEAM / sg_size;
  let first = i / RPT * per_team * RPT + i % RPT;
  var t = 0.0;
  for (var j = 0u; j < per_team; j++) {
    t += red[first + j * RPT];
  }
  return t;
}

// ---- qkv_rope ----
@compute @workgroup_size(WG)
fn qkv_rope(ids: Ids) {
  stage_x(ids);
  let row0 = row_dots(ids);
  let lid = ids.lid;
  let ra = row0 + 2u * lid;  // this thread's pair: rows ra, ra + 1
  if (lid < ROWS_PER_WG / 2u && ra < ROWS) {
    let inv = inv_rms(ids.sg_size);
    store_qkv(ra, row_total(2u * lid, ids.sg_size) * inv, row_total(2u * lid + 1u, ids.sg_size) * inv,
              state[0], 0u);
  }
}

// ---- gate_up_silu: packed rows gate 0, up 0, gate 1, up 1, ... ----
@compute @workgroup_size(WG)
fn gate_up_silu(ids: Ids) {
  stage_x(ids);
  let row0 = row_dots(ids);
  let lid = ids.lid;
  let ra = row0 + 2u * lid;
  if (lid < ROWS_PER_WG / 2u && ra < ROWS) {
    let inv = inv_rms(ids.sg_size);
    act[ra / 2u] = silu_mul(row_total(2u * lid, ids.sg_size) * inv, row_total(2u * lid + 1u, ids.sg_size) * inv);
  }
}

// ---- matvec_norm: y = W rmsnorm(x) (the LM head) ----
@group(0) @binding(3) var<storage, read_write> y_out: array<f32>;

@compute @workgroup_size(WG)
fn matvec_norm(ids: Ids) {
  stage_x(ids);
  let row0 = row_dots(ids);
  let lid = ids.lid;
  if (lid < ROWS_PER_WG && row0 + lid < ROWS) {
    y_out[row0 + lid] = row_total(lid, ids.sg_size) * inv_rms(ids.sg_size);
  }
}

// ---- matvec_residual: resid += W x ----

@compute @workgroup_size(WG)
fn matvec_residual(ids: Ids) {
  let row0 = row_dots(ids);
  let lid = ids.lid;
  if (lid < ROWS_PER_WG && row0 + lid < ROWS) {
    resid[row0 + lid] += row_total(lid, ids.sg_size);
  }
}
