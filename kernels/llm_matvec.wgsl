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
// RMSNorm is folded in: the dots are of W with x * norm_w, scaled by 1 / rms(x) once finished:
// (W (x * nw)) / rms(x) = W rmsnorm(x). Two ways to get x * norm_w (DIRECT_X):
// - direct: each lane reads its own columns of x and norm_w with its weight loads (from L1/L2),
//   and x's sum of squares is reduced with the dots: every team covers a whole row, so it sees all
//   of x. No barrier stands between a workgroup's start and its weight loads;
// - staged: x * norm_w and x's sum of squares are staged once per workgroup in workgroup memory,
//   behind a barrier that the weight loads wait for (x read once per workgroup, not per team).
// #include "llm_common.wgsl"

override TEAM: u32 = 32u;         // threads per row
override RPT: u32 = 1u;           // rows per team, at most MAX_RPT
override WG: u32 = 128u;          // threads per workgroup, a multiple of TEAM
override ROWS_PER_WG: u32 = 4u;   // WG / TEAM * RPT
override DIRECT_X: bool = false;  // NORM_X: x * norm_w read by each lane (else staged in xs)
override RED_STRIDE: u32 = 1u;    // partials per subgroup: RPT dots, + x's sum of squares if DIRECT_X
override RED_LEN: u32 = 128u;     // WG * RED_STRIDE: a slot per subgroup and partial, any subgroup size
override ITERS: u32 = 1u;         // ceil(COLS8 / TEAM)
override NORM_X: bool = false;    // x * norm_w is staged in workgroup memory, the dots scaled by 1 / rms(x)
override SPAN8: u32 = COLS8;      // column groups a row's dot covers (attend_o: its slice of W_o)
override ATTEND_X: bool = false;  // attend_o: x is the attention output staged in os
override OS_LEN: u32 = 1u;        // attend_o: HPW * HEAD_DIM

const MAX_RPT = 4u;

var<workgroup> xs: array<vec4<f32>, XS_V4>;
var<workgroup> red: array<f32, RED_LEN>;
var<workgroup> sum_sq: array<f32, WG>;  // x's sum of squares, a partial per subgroup
var<workgroup> os: array<f32, OS_LEN>;  // attend_o: its head group's attention output

// The 8 inputs of column group c8; zero where !valid and past COLS (padded weights are zero, but
// x's padding may hold anything). attend_o: the inputs are its head group's attention output,
// columns [col0, col0 + OS_LEN) of W_o's rows, zero elsewhere.
fn x8(c8: u32, valid: bool, col0: u32) -> array<vec4<f32>, 2> {
  if (ATTEND_X) {
    var v = array<f32, 8>();
    for (var j = 0u; j < 8u; j++) {
      let i = 8u * c8 + j - col0;  // wraps past OS_LEN below col0
      v[j] = select(0.0, os[min(i, OS_LEN - 1u)], valid && i < OS_LEN);
    }
    return array<vec4<f32>, 2>(vec4<f32>(v[0], v[1], v[2], v[3]), vec4<f32>(v[4], v[5], v[6], v[7]));
  }
  if (NORM_X && !DIRECT_X) {
    let z = vec4<f32>(0.0);
    return array<vec4<f32>, 2>(select(z, xs[2u * c8], valid), select(z, xs[2u * c8 + 1u], valid));
  }
  let i = vec4<u32>(0u, 1u, 2u, 3u) + 8u * c8;
  let v = vec4<bool>(valid);
  let a = select(vec4<f32>(0.0), xin[2u * c8], v & (i < vec4<u32>(COLS)));
  let b = select(vec4<f32>(0.0), xin[2u * c8 + 1u], v & (i + 4u < vec4<u32>(COLS)));
  return array<vec4<f32>, 2>(a, b);
}

// Stages vec4 i of the input v as xs[i] = v * norm_w (zero past COLS); returns its part of x's
// sum of squares.
fn stage_vec4(i: u32, v: vec4<f32>) -> f32 {
  let inside = vec4<u32>(0u, 1u, 2u, 3u) + 4u * i < vec4<u32>(COLS);
  let m = select(vec4<f32>(0.0), v, inside);
  xs[i] = select(vec4<f32>(0.0), m * norm_w[i], inside);
  return dot(m, m);
}

// Each subgroup's part of x's sum of squares into sum_sq, then a barrier that publishes xs too.
fn publish_sum_sq(ss: f32, ids: Ids) {
  let s = subgroupAdd(ss);
  if (ids.sg_lane == 0u) {
    sum_sq[ids.lid / ids.sg_size] = s;
  }
  workgroupBarrier();
}

// xs = x * norm_w (zero past COLS); each subgroup's part of x's sum of squares in sum_sq.
fn stage_x(ids: Ids) {
  var ss = 0.0;
  // Trip count uniform across the workgroup: subgroupAdd follows.
  for (var i0 = 0u; i0 < XS_V4; i0 += WG) {
    let i = i0 + ids.lid;
    if (i < XS_V4) {
      ss += stage_vec4(i, xin[i]);
    }
  }
  publish_sum_sq(ss, ids);
}

// 1 / rms(x) for the workgroup's row i (< ROWS_PER_WG), after row_dots: from its team's partials
// (DIRECT_X) or from stage_x's.
fn inv_rms(i: u32, sg_size: u32) -> f32 {
  var t = 0.0;
  if (DIRECT_X) {
    t = team_total(i / RPT, RPT, sg_size);
  } else {
    for (var j = 0u; j < WG / sg_size; j++) {
      t += sum_sq[j];
    }
  }
  return inverseSqrt(t / f32(COLS) + EPS);
}

// The workgroup's first row (workgroups beyond 65,535 spill into y).
fn first_row(ids: Ids) -> u32 {
  return (ids.wid.y * ids.groups.x + ids.wid.x) * ROWS_PER_WG;
}

// The workgroup's first row; each subgroup's partial dots of the workgroup's rows in red, after
// a barrier (rows past ROWS re-read the last row).
fn row_dots(ids: Ids) -> u32 {
  let row0 = first_row(ids);
  dots_from(ids, row0, 0u, 0u);
  return row0;
}

// row_dots of W with rmsnorm(x)'s numerator x * norm_w: staged (stage_x) or read by each lane
// (DIRECT_X, x's sum of squares reduced with the dots). norm_w is read here only, not in
// dots_from: entry points without RMSNorm bind something else at its binding.
fn norm_row_dots(ids: Ids) -> u32 {
  if (!DIRECT_X) {
    stage_x(ids);
    return row_dots(ids);
  }
  let row0 = first_row(ids);
  let first = row0 + ids.lid / TEAM * RPT;
  var acc = array<f32, MAX_RPT>();
  var ss = 0.0;
  for (var it = 0u; it < ITERS; it++) {
    let c = it * TEAM + ids.lid % TEAM;
    let c8 = min(c, COLS8 - 1u);
    var xv = x8(c8, c < COLS8, 0u);
    ss += dot(xv[0], xv[0]) + dot(xv[1], xv[1]);
    xv[0] *= norm_w[2u * c8];
    xv[1] *= norm_w[2u * c8 + 1u];
    acc = accumulate(acc, first, c8, xv);
  }
  publish_partials(ids, acc, ss);
  return row0;
}

// row_dots over SPAN8 column groups from c8_first (x8's col0: attend_o's slice of W_o).
fn dots_from(ids: Ids, row0: u32, c8_first: u32, col0: u32) {
  let first = row0 + ids.lid / TEAM * RPT;
  let lane = ids.lid % TEAM;
  var acc = array<f32, MAX_RPT>();
  for (var it = 0u; it < ITERS; it++) {
    let c = it * TEAM + lane;
    let c8 = min(c8_first + min(c, SPAN8 - 1u), COLS8 - 1u);
    acc = accumulate(acc, first, c8, x8(c8, c < SPAN8 && c8_first + c < COLS8, col0));
  }
  publish_partials(ids, acc, 0.0);
}

// acc[r] + (row first + r's weights in column group c8) . xv, for the team's RPT rows.
fn accumulate(acc: array<f32, MAX_RPT>, first: u32, c8: u32, xv: array<vec4<f32>, 2>) -> array<f32, MAX_RPT> {
  var sums = acc;
  for (var r = 0u; r < RPT; r++) {
    sums[r] += group_dot(0u, min(first + r, ROWS - 1u), COLS8, c8, xv[0], xv[1]);
  }
  return sums;
}

// Each subgroup's sums of acc (and, DIRECT_X, of x's squares ss) into red, then a barrier.
fn publish_partials(ids: Ids, acc: array<f32, MAX_RPT>, ss: f32) {
  let sg = ids.lid / ids.sg_size;
  for (var r = 0u; r < RPT; r++) {
    let s = subgroupAdd(acc[r]);
    if (ids.sg_lane == 0u) {
      red[sg * RED_STRIDE + r] = s;
    }
  }
  if (NORM_X && DIRECT_X) {
    let s = subgroupAdd(ss);
    if (ids.sg_lane == 0u) {
      red[sg * RED_STRIDE + RPT] = s;
    }
  }
  workgroupBarrier();
}

// The sum of partial `slot` over the subgroups of the workgroup's team `team`.
fn team_total(team: u32, slot: u32, sg_size: u32) -> f32 {
  let per_team = TEAM / sg_size;
  let first = team * per_team * RED_STRIDE + slot;
  var t = 0.0;
  for (var j = 0u; j < per_team; j++) {
    t += red[first + j * RED_STRIDE];
  }
  return t;
}

// The dot of the workgroup's row i (< ROWS_PER_WG).
fn row_total(i: u32, sg_size: u32) -> f32 {
  return team_total(i / RPT, i % RPT, sg_size);
}

// ---- qkv_rope ----
@compute @workgroup_size(WG)
fn qkv_rope(ids: Ids) {
  let row0 = norm_row_dots(ids);
  let lid = ids.lid;
  let ra = row0 + 2u * lid;  // this thread's pair: rows ra, ra + 1
  if (lid < ROWS_PER_WG / 2u && ra < ROWS) {
    let inv = inv_rms(2u * lid, ids.sg_size);
    store_qkv(ra, row_total(2u * lid, ids.sg_size) * inv, row_total(2u * lid + 1u, ids.sg_size) * inv,
              state[0], 0u);
  }
}

// ---- gate_up_silu: packed rows gate 0, up 0, gate 1, up 1, ... ----
// act = silu(gate) * up for the workgroup's pairs of rows, after stage_x* and row_dots.
fn store_silu_pairs(ids: Ids, row0: u32) {
  let lid = ids.lid;
  let ra = row0 + 2u * lid;
  if (lid < ROWS_PER_WG / 2u && ra < ROWS) {
    let inv = inv_rms(2u * lid, ids.sg_size);
    act[ra / 2u] = silu_mul(row_total(2u * lid, ids.sg_size) * inv, row_total(2u * lid + 1u, ids.sg_size) * inv);
  }
}

@compute @workgroup_size(WG)
fn gate_up_silu(ids: Ids) {
  store_silu_pairs(ids, norm_row_dots(ids));
}

// ---- matvec_norm: y = W rmsnorm(x) (the LM head) ----
@group(0) @binding(3) var<storage, read_write> y_out: array<f32>;

@compute @workgroup_size(WG)
fn matvec_norm(ids: Ids) {
  let row0 = norm_row_dots(ids);
  let lid = ids.lid;
  if (lid < ROWS_PER_WG && row0 + lid < ROWS) {
    y_out[row0 + lid] = row_total(lid, ids.sg_size) * inv_rms(lid, ids.sg_size);
  }
}

// ---- matvec_residual: resid += W x ----

// resid += the workgroup's rows, after row_dots.
fn add_rows_to_resid(ids: Ids, row0: u32) {
  let lid = ids.lid;
  if (lid < ROWS_PER_WG && row0 + lid < ROWS) {
    resid[row0 + lid] += row_total(lid, ids.sg_size);
  }
}

@compute @workgroup_size(WG)
fn matvec_residual(ids: Ids) {
  add_rows_to_resid(ids, row_dots(ids));
}

// ==== The fused layer of the short-context decode step (DecodeKernels::attend_o) ====
// Per layer: qkv_rope; attend_o; gate_up_silu_sum; matvec_residual_to: 4 dispatches, where the
// split path takes 5 (attention, o_proj + residual, gate_up_silu, down + residual). Each dispatch
// boundary costs a GPU 4-13 us (launch, ramp, drain) whatever its bytes.

// ---- matvec_residual_to: out = base + W x (down_proj: the next layer's residual stream) ----
// base and out are different buffers: a workgroup writes rows that others never read.
@group(0) @binding(2) var<storage, read> resid_base: array<f32>;

@compute @workgroup_size(WG)
fn matvec_residual_to(ids: Ids) {
  let row0 = row_dots(ids);
  let lid = ids.lid;
  if (lid < ROWS_PER_WG && row0 + lid < ROWS) {
    y_out[row0 + lid] = resid_base[row0 + lid] + row_total(lid, ids.sg_size);
  }
}

// ---- gate_up_silu_sum: x' = x + sum of attend_o's PARTS partial outputs; then gate_up_silu ----
// Every workgroup sums the partials itself (PARTS * hidden floats, from L2) instead of waiting
// for a dispatch that would; workgroup 0 also stores x' for down_proj's residual.
override PARTS: u32 = 1u;
@group(0) @binding(4) var<storage, read> o_parts4: array<vec4<f32>>;  // [PARTS][XS_V4]
@group(0) @binding(5) var<storage, read_write> x_next: array<vec4<f32>>;

fn stage_x_sum(ids: Ids) {
  let store = ids.wid.x == 0u && ids.wid.y == 0u;
  var ss = 0.0;
  for (var i0 = 0u; i0 < XS_V4; i0 += WG) {
    let i = i0 + ids.lid;
    if (i < XS_V4) {
      var v = xin[i];
      for (var p = 0u; p < PARTS; p++) {
        v += o_parts4[p * XS_V4 + i];
      }
      if (store) {
        x_next[i] = select(vec4<f32>(0.0), v, vec4<u32>(0u, 1u, 2u, 3u) + 4u * i < vec4<u32>(COLS));
      }
      ss += stage_vec4(i, v);
    }
  }
  publish_sum_sq(ss, ids);
}

@compute @workgroup_size(WG)
fn gate_up_silu_sum(ids: Ids) {
  stage_x_sum(ids);
  store_silu_pairs(ids, row_dots(ids));
}

// ---- attend_o: attention of one query head group over the cache, times its slice of W_o ----
// Workgroup (row block b, head group g): the HPW query heads of kv head g (a whole GQA group, so
// K and V are read once for all of them), attention over positions 0..pos with an online softmax
// in tiles of TILE positions, then rows [b * ROWS_PER_WG, ...) of W_o over the group's HPW *
// HEAD_DIM columns: o_parts[g][row], a partial o_proj output that gate_up_silu_sum adds up.
// Every row block recomputes its group's attention: at short contexts that is a few microseconds
// of L2 reads (pos * HEAD_DIM * 8 bytes per block), cheaper than the two dispatches it replaces;
// past --attn-fuse-max positions the model switches to the split path.
override GROUP: u32 = 1u;  // query heads per kv head
override HPW: u32 = 1u;    // query heads per workgroup: GROUP
override TILE: u32 = 32u;  // cache positions scored at once
override SCALE: f32 = 1.0;
override D4: u32 = HEAD_DIM / 4u;
override SLOTS: u32 = HPW * D4;  // output vec4s of the group; SLOTS <= WG (checked by the host)
override SLICES: u32 = WG / SLOTS;  // threads sharing one output vec4, over the positions
override PART_STRIDE: u32 = 8u;     // floats per o_parts row: ROWS padded to 8

@group(0) @binding(2) var<storage, read> k4_cache: array<vec4<f32>>;  // [kv_heads][CTX][HEAD_DIM / 4]
@group(0) @binding(3) var<storage, read> v4_cache: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> att_state: array<u32>;  // word 0: pos
@group(0) @binding(5) var<storage, read_write> o_parts: array<f32>;  // [kv_heads][PART_STRIDE]

var<workgroup> q_group: array<vec4<f32>, SLOTS>;  // the group's queries, times SCALE
var<workgroup> tile_p: array<f32, HPW * TILE>;    // scores, then exp(score - running max)
var<workgroup> run_max: array<f32, HPW>;
var<workgroup> rescale: array<f32, HPW>;  // exp(old max - new max): what earlier tiles' sums scale by
var<workgroup> acc_red: array<vec4<f32>, WG>;
var<workgroup> l_red: array<f32, WG>;

@compute @workgroup_size(WG)
fn attend_o(ids: Ids) {
  let lid = ids.lid;
  let g = ids.wid.y;
  let h0 = g * HPW;
  let len = att_state[0] + 1u;
  let kv = (h0 / GROUP) * CTX * D4;  // the kv head's position 0, in vec4s
  for (var i = lid; i < SLOTS; i += WG) {
    q_group[i] = xin[h0 * D4 + i] * SCALE;
  }
  if (lid < HPW) {
    run_max[lid] = -3.4e38;
  }
  // Thread (slot, slice): output vec4 d4 of head a, over the tile positions t = slice mod SLICES.
  let slot = lid % SLOTS;
  let slice = lid / SLOTS;
  let a = slot / D4;
  let d4 = slot % D4;
  var acc = vec4<f32>(0.0);
  var l = 0.0;
  for (var t0 = 0u; t0 < len; t0 += TILE) {
    workgroupBarrier();  // q_group, run_max written; the previous tile's tile_p read
    let n = min(TILE, len - t0);
    for (var i = lid; i < HPW * TILE; i += WG) {
      let t = i % TILE;
      var s = vec4<f32>(0.0);
      if (t < n) {
        let k = kv + (t0 + t) * D4;
        let qa = i / TILE * D4;
        for (var d = 0u; d < D4; d++) {
          s += q_group[qa + d] * k4_cache[k + d];
        }
      }
      tile_p[i] = s.x + s.y + s.z + s.w;
    }
    workgroupBarrier();
    if (lid < HPW) {
      var m = run_max[lid];
      for (var t = 0u; t < n; t++) {
        m = max(m, tile_p[lid * TILE + t]);
      }
      rescale[lid] = exp(run_max[lid] - m);
      run_max[lid] = m;
    }
    workgroupBarrier();
    for (var i = lid; i < HPW * TILE; i += WG) {
      tile_p[i] = select(0.0, exp(tile_p[i] - run_max[i / TILE]), i % TILE < n);
    }
    workgroupBarrier();
    if (slice < SLICES) {
      acc *= rescale[a];
      l *= rescale[a];
      for (var t = slice; t < n; t += SLICES) {
        let p = tile_p[a * TILE + t];
        l += p;
        acc += p * v4_cache[kv + (t0 + t) * D4 + d4];
      }
    }
  }
  acc_red[lid] = acc;
  l_red[lid] = l;
  workgroupBarrier();
  if (lid < SLOTS) {
    var sum = vec4<f32>(0.0);
    var l_sum = 0.0;
    for (var s = 0u; s < SLICES; s++) {
      sum += acc_red[s * SLOTS + lid];
      l_sum += l_red[s * SLOTS + lid];
    }
    let o = sum / l_sum;
    os[4u * lid] = o.x;
    os[4u * lid + 1u] = o.y;
    os[4u * lid + 2u] = o.z;
    os[4u * lid + 3u] = o.w;
  }
  workgroupBarrier();
  let row0 = ids.wid.x * ROWS_PER_WG;
  let col0 = h0 * HEAD_DIM;
  dots_from(ids, row0, col0 / 8u, col0);
  if (lid < ROWS_PER_WG && row0 + lid < ROWS) {
    o_parts[g * PART_STRIDE + row0 + lid] = row_total(lid, ids.sg_size);
  }
}
