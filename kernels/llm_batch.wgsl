// The batched decode step (src/llm/batch_decoder.h): up to SLOTS sequences share each step, one
// row per slot in every activation buffer. The same products serve a short prompt chunk's passes
// (src/llm/model.h), where the slots are tokens of one sequence (prompt_pass, SHARED_CACHE).
// Slot b's record slots[b * SLOT_WORDS ..] holds its position (word 0: the position this step
// computes; the token picker advances it: the batched argmax of llm_step.wgsl for greedy slots, a
// sampler on the record's first 4 words for the others) and whether it decodes (word SLOT_ACTIVE).
// The matrix products read each weight row from memory once for all slots (block_totals and
// xreg_totals say how).
//   embed_rows     x[b] = embedding[tokens[b][pos_b]]
//   qkv_rope_rows  W_qkv rmsnorm(x[b]) + bias, rows packed as llm_common.wgsl says, RoPE'd at pos_b:
//                  q heads into q[b], k and v heads into slot b's caches (models without q/k norms)
//   qkv_rows       raw[b] = W_qkv rmsnorm(x[b]) + bias, then
//   rope_rows      per (head, b): q and k heads normalised (q/k norms) and rotated, q into q[b], k and
//                  v heads into slot b's caches at pos_b
//   attend_rows    per (head, b): softmax(q k^T / sqrt(hd)) v over positions 0..pos_b of slot b
//   gate_up_rows   act[b] = silu(W_gate xn) * (W_up xn), xn = rmsnorm(x[b]), rows interleaved
//   residual_rows  resid[b] += W x[b]
//   logits_rows    logits[b] = W rmsnorm(x[b])
enable subgroups;
// #include "llm_weights.wgsl"

const SLOT_WORDS: u32 = 64u;  // a slot's record: 256 bytes, so that a picker binds it as a range
const SLOT_ACTIVE: u32 = 8u;

override SLOTS: u32 = 1u;
override ROWS: u32 = 1u;         // rows of W
override COLS: u32 = 8u;         // logical length of x
override COLS8: u32 = 1u;        // ceil(COLS / 8)
override X_STRIDE: u32 = 8u;     // floats per row of x (COLS padded to 8)
override OUT_STRIDE: u32 = 1u;   // floats per row of the output
override EPS: f32 = 1e-6;
override TEAM: u32 = 32u;        // threads per weight row, a multiple of the subgroup size
override RPT: u32 = 1u;          // rows per team, at most MAX_RPT
override SLOT_GROUPS: u32 = 1u;  // teams of a row block, each for its own slots (block_totals)
override SPT: u32 = 1u;          // slots per team: ceil(SLOTS / SLOT_GROUPS); RPT x SPT <= MAX_SUMS
override ITERS: u32 = 1u;        // ceil(COLS8 / TEAM)
override WG: u32 = 256u;
override ROWS_PER_WG: u32 = 8u;  // WG / TEAM / SLOT_GROUPS * RPT
override RED_LEN: u32 = 256u;    // (WG / the smallest subgroup) * (RPT + 1) * SPT
override TOT_LEN: u32 = 8u;      // ROWS_PER_WG * SLOTS
override XREG: bool = false;     // xreg_totals, not block_totals (then ROWS_PER_WG * BSLOTS <= XREG_SUMS)
override BSLOTS: u32 = 1u;       // slots of a workgroup's blocks: SLOTS, or xreg_totals' slot group (grid y)
override BFLY: u32 = 32u;        // xreg_totals' butterfly lanes: a power of two, at most the smallest subgroup

const MAX_RPT: u32 = 8u;
const MAX_SPT: u32 = 16u;
const MAX_SUMS: u32 = 32u;

@group(0) @binding(1) var<storage, read> xin4: array<vec4<f32>>;    // [SLOTS][X_STRIDE]
@group(0) @binding(2) var<storage, read> norm4: array<vec4<f32>>;   // padded to 8 (unread: products without norm)
@group(0) @binding(3) var<storage, read> slots: array<u32>;         // [SLOTS][SLOT_WORDS]
@group(0) @binding(4) var<storage, read_write> out_rows: array<f32>;  // [SLOTS][OUT_STRIDE]
@group(0) @binding(5) var<storage, read> bias: array<f32>;          // qkv_rows

// Per subgroup: RPT * SLOTS dot partials, then SLOTS sums of squares of x (normed products);
// xreg_totals: per lane group, its XREG_SUMS sums.
var<workgroup> red: array<f32, RED_LEN>;
var<workgroup> tot: array<f32, TOT_LEN>;  // [ROWS_PER_WG][SLOTS]: the block's row totals

// xreg_totals: a thread's 8 columns of each slot's x (times the norm's weights), and the slots'
// 1 / rms(x) (1 for products without norm).
const XREG_SLOTS: u32 = 8u;
const XREG_SUMS: u32 = 32u;
var<private> xr: array<array<vec4<f32>, 2>, XREG_SLOTS>;
var<workgroup> row_scale: array<f32, XREG_SLOTS>;

// A thread's own inputs (the workgroup's, uniform, are passed apart: the uniformity analysis
// treats a struct as a whole).
struct Ids {
  @builtin(local_invocation_index) lid: u32,
  @builtin(subgroup_invocation_id) sg_lane: u32,
  @builtin(subgroup_size) sg_size: u32,
}

fn is_active(mask: u32, b: u32) -> bool {
  return ((mask >> b) & 1u) != 0u;
}

// Bit b: slot b decodes this step. Each thread reads the records itself (cached loads, no
// barrier), so that the weight loads, which do not wait for it, go out first.
fn active_mask() -> u32 {
  var m = 0u;
  for (var b = 0u; b < SLOTS; b++) {
    if (slots[b * SLOT_WORDS + SLOT_ACTIVE] != 0u) {
      m |= 1u << b;
    }
  }
  return m;
}

// tot[r * SLOTS + b] = row r0 + r of W times x[b] (normed: times norm_w and 1 / rms(x[b])), for
// the block of ROWS_PER_WG rows from r0; ends with a barrier. The workgroup's WG / TEAM teams are
// SLOT_GROUPS x ROW_TEAMS: team t takes rows r0 + (t / SLOT_GROUPS) * RPT + k (k < RPT) for slots
// t % SLOT_GROUPS + j * SLOT_GROUPS (j < SPT), so a thread keeps RPT x SPT sums, and the teams of
// one row block read the same weights at the same time (from L1 after the first). A team covers
// whole rows, so with the dots it sums x's squares (rmsnorm needs no pass of its own):
// (W (x * nw)) / rms(x) = W rmsnorm(x).
fn block_totals(ids: Ids, r0: u32, normed: bool, mask: u32) {
  let team = ids.lid / TEAM;
  let row0 = r0 + team / SLOT_GROUPS * RPT;
  let slot0 = team % SLOT_GROUPS;
  var acc: array<f32, MAX_SUMS>;  // [k][j]
  var ss: array<f32, MAX_SPT>;
  // The weight loads do not wait for the slot records: an idle slot's FMAs are skipped, its team's
  // loads are L1 hits of the block's busy teams.
  if (row0 < ROWS) {
    // ITERS trips and no branch on the columns (past COLS8 a lane re-reads the last group, its
    // weights zeroed; a slot past SLOTS re-reads the last one, never stored): with the trip counts
    // pipeline constants the compiler can unroll the loops and issue every load before the first
    // FMA. RMSNorm's weights multiply the RPT weight groups once (W (x * nw) = (W * nw) x), so a
    // slot costs two x loads and 8 x RPT FMAs per column group.
    for (var it = 0u; it < ITERS; it++) {
      let c8_lane = ids.lid % TEAM + it * TEAM;
      let c8 = min(c8_lane, COLS8 - 1u);
      let live = select(0.0, 1.0, c8_lane < COLS8);
      var n0 = vec4<f32>(live);
      var n1 = n0;
      if (normed) {
        n0 *= norm4[2u * c8];
        n1 *= norm4[2u * c8 + 1u];
      }
      var w: array<array<vec4<f32>, 2>, MAX_RPT>;
      for (var k = 0u; k < RPT; k++) {
        let g = weight_group(0u, min(row0 + k, ROWS - 1u), COLS8, c8);
        w[k] = array<vec4<f32>, 2>(g[0] * n0, g[1] * n1);
      }
      for (var j = 0u; j < SPT; j++) {
        let b = min(slot0 + j * SLOT_GROUPS, SLOTS - 1u);
        if (!is_active(mask, b)) {
          continue;
        }
        let at = b * X_STRIDE / 4u + 2u * c8;
        let x0 = xin4[at];
        let x1 = xin4[at + 1u];
        if (normed) {
          ss[j] += live * (dot(x0, x0) + dot(x1, x1));
        }
        for (var k = 0u; k < RPT; k++) {
          acc[k * SPT + j] += dot(w[k][0], x0) + dot(w[k][1], x1);
        }
      }
    }
  }
  // Per subgroup: RPT x SPT dot partials, then SPT sums of squares.
  let per_sg = (RPT + 1u) * SPT;
  let sg = ids.lid / ids.sg_size;
  for (var i = 0u; i < RPT * SPT; i++) {
    let s = subgroupAdd(acc[i]);
    if (ids.sg_lane == 0u) {
      red[sg * per_sg + i] = s;
    }
  }
  if (normed) {
    for (var j = 0u; j < SPT; j++) {
      let q = subgroupAdd(ss[j]);
      if (ids.sg_lane == 0u) {
        red[sg * per_sg + RPT * SPT + j] = q;
      }
    }
  }
  workgroupBarrier();
  let sg_per_team = TEAM / ids.sg_size;
  for (var i = ids.lid; i < ROWS_PER_WG * SLOTS; i += WG) {
    let r = i / SLOTS;
    let b = i % SLOTS;
    let j = b / SLOT_GROUPS;
    let first_sg = (r / RPT * SLOT_GROUPS + b % SLOT_GROUPS) * sg_per_team;
    var t = 0.0;
    var q = 0.0;
    for (var g = first_sg; g < first_sg + sg_per_team; g++) {
      t += red[g * per_sg + (r % RPT) * SPT + j];
      q += red[g * per_sg + RPT * SPT + j];
    }
    if (normed) {
      t *= inverseSqrt(q / f32(COLS) + EPS);
    }
    tot[i] = t;
  }
  workgroupBarrier();
}

// The other shape of the products, for COLS8 <= WG: the slots in groups of up to XREG_SLOTS
// (BSLOTS, from `base`; grid y = the group), thread t keeps column group t of its group's x rows in
// registers (xreg_load, once per workgroup), and the workgroup streams row blocks through them: a
// thread reads its 8 weights of each of the block's rows (one coalesced load per row; a second
// slot group's from L2) and keeps ROWS_PER_WG x BSLOTS sums, reduced over each BFLY
// lanes by a transposing butterfly (lane l ends with sum l of its lanes: XREG_SUMS - 1 shuffles
// for XREG_SUMS sums, not 5 per sum) and over the lane groups in total(). block_totals instead
// reloads x for every block (from L1), which at 8 slots bounds the LM head by L1 loads.
fn xreg_load(ids: Ids, base: u32, normed: bool) {
  let c8 = min(ids.lid, COLS8 - 1u);
  var n0 = vec4<f32>(select(0.0, 1.0, ids.lid < COLS8));
  var n1 = n0;
  if (normed) {
    n0 *= norm4[2u * c8];
    n1 *= norm4[2u * c8 + 1u];
  }
  let sg = ids.lid / ids.sg_size;
  for (var b = 0u; b < BSLOTS; b++) {
    let at = min(base + b, SLOTS - 1u) * X_STRIDE / 4u + 2u * c8;
    let x0 = xin4[at];
    let x1 = xin4[at + 1u];
    xr[b] = array<vec4<f32>, 2>(x0 * n0, x1 * n1);
    let q = subgroupAdd(select(0.0, dot(x0, x0) + dot(x1, x1), ids.lid < COLS8));
    if (ids.sg_lane == 0u) {
      red[sg * BSLOTS + b] = q;
    }
  }
  workgroupBarrier();
  if (ids.lid < BSLOTS) {
    var q = 0.0;
    for (var g = 0u; g < WG / ids.sg_size; g++) {
      q += red[g * BSLOTS + ids.lid];
    }
    row_scale[ids.lid] = select(1.0, inverseSqrt(q / f32(COLS) + EPS), normed);
  }
  workgroupBarrier();
}

fn xreg_weights(ids: Ids, r0: u32) -> array<array<vec4<f32>, 2>, MAX_RPT> {
  let c8 = min(ids.lid, COLS8 - 1u);
  var w: array<array<vec4<f32>, 2>, MAX_RPT>;
  for (var k = 0u; k < ROWS_PER_WG; k++) {
    w[k] = weight_group(0u, min(r0 + k, ROWS - 1u), COLS8, c8);
  }
  return w;
}
// The next block's weights, loaded before this block's sums: their loads are in flight through
// the butterfly and the barriers.
var<private> w_next: array<array<vec4<f32>, 2>, MAX_RPT>;
// red[g * XREG_SUMS + r * BSLOTS + b] = lane group g's part of row r0 + r times x[base + b]; ends
// with a barrier.
fn xreg_totals(ids: Ids, next: u32) {
  let w = w_next;
  w_next = xreg_weights(ids, next);
  var acc: array<f32, XREG_SUMS>;
  for (var k = 0u; k < ROWS_PER_WG; k++) {
    for (var b = 0u; b < BSLOTS; b++) {
      acc[k * BSLOTS + b] = dot(w[k][0], xr[b][0]) + dot(w[k][1], xr[b][1]);
    }
  }
  // Step o (BFLY / 2, BFLY / 4, .. 1): the lanes with bit o keep the upper half of their 2n sums
  // and send the lower half to the lane o apart, which keeps the lower; after the step with o = 1,
  // lane l holds sums (l % BFLY) * n .. + n - 1 of its BFLY lanes. Five steps written out with
  // literal trip counts: as one loop over o the compiler kept acc in memory (docs/RESULTS.md
  // "Session 13", run 1).
  if (BFLY >= 2u) {
    let o = BFLY / 2u;
    let up = (ids.sg_lane & o) != 0u;
    for (var i = 0u; i < 16u; i++) {
      let sent = subgroupShuffleXor(select(acc[i + 16u], acc[i], up), o);
      acc[i] = select(acc[i], acc[i + 16u], up) + sent;
    }
  }
  if (BFLY >= 4u) {
    let o = BFLY / 4u;
    let up = (ids.sg_lane & o) != 0u;
    for (var i = 0u; i < 8u; i++) {
      let sent = subgroupShuffleXor(select(acc[i + 8u], acc[i], up), o);
      acc[i] = select(acc[i], acc[i + 8u], up) + sent;
    }
  }
  if (BFLY >= 8u) {
    let o = BFLY / 8u;
    let up = (ids.sg_lane & o) != 0u;
    for (var i = 0u; i < 4u; i++) {
      let sent = subgroupShuffleXor(select(acc[i + 4u], acc[i], up), o);
      acc[i] = select(acc[i], acc[i + 4u], up) + sent;
    }
  }
  if (BFLY >= 16u) {
    let o = BFLY / 16u;
    let up = (ids.sg_lane & o) != 0u;
    for (var i = 0u; i < 2u; i++) {
      let sent = subgroupShuffleXor(select(acc[i + 2u], acc[i], up), o);
      acc[i] = select(acc[i], acc[i + 2u], up) + sent;
    }
  }
  if (BFLY >= 32u) {
    let up = (ids.sg_lane & 1u) != 0u;
    let sent = subgroupShuffleXor(select(acc[1], acc[0], up), 1u);
    acc[0] = select(acc[0], acc[1], up) + sent;
  }
  let n = XREG_SUMS / BFLY;
  let at = ids.lid / BFLY * XREG_SUMS + ids.lid % BFLY * n;
  for (var i = 0u; i < n; i++) {
    red[at + i] = acc[i];
  }
  workgroupBarrier();
}

// Block entry i (row i / BSLOTS, slot i % BSLOTS of the group) after block_totals or xreg_totals.
fn total(i: u32) -> f32 {
  if (!XREG) {
    return tot[i];
  }
  var t = 0.0;
  for (var g = 0u; g < WG / BFLY; g++) {
    t += red[g * XREG_SUMS + i];
  }
  return t * row_scale[i % BSLOTS];
}

// The entries' blocks: one of the two shapes.
fn prepare(ids: Ids, r0: u32, base: u32, normed: bool) {
  if (XREG) {
    w_next = xreg_weights(ids, r0);
    xreg_load(ids, base, normed);
  }
}
fn block(ids: Ids, r0: u32, next: u32, normed: bool, mask: u32) {
  if (XREG) {
    xreg_totals(ids, next);
  } else {
    block_totals(ids, r0, normed, mask);
  }
}

// The row and slot of block entry i from r0, the block's first slot `base`; valid: inside W, a
// slot, active.
struct Out {
  row: u32,
  b: u32,
  valid: bool,
}
fn out_of(i: u32, r0: u32, base: u32, mask: u32) -> Out {
  let row = r0 + i / BSLOTS;
  let b = base + i % BSLOTS;
  return Out(row, b, row < ROWS && b < SLOTS && is_active(mask, b));
}

@compute @workgroup_size(WG)
fn qkv_rows(ids: Ids, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let mask = active_mask();
  let base = wid.y * BSLOTS;
  prepare(ids, wid.x * ROWS_PER_WG, base, true);
  for (var r0 = wid.x * ROWS_PER_WG; r0 < ROWS; r0 += groups.x * ROWS_PER_WG) {
    block(ids, r0, r0 + groups.x * ROWS_PER_WG, true, mask);
    for (var i = ids.lid; i < ROWS_PER_WG * BSLOTS; i += WG) {
      let o = out_of(i, r0, base, mask);
      if (o.valid) {
        out_rows[o.b * OUT_STRIDE + o.row] = total(i) + bias[o.row];
      }
    }
    workgroupBarrier();
  }
}

@compute @workgroup_size(WG)
fn logits_rows(ids: Ids, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let mask = active_mask();
  let base = wid.y * BSLOTS;
  prepare(ids, wid.x * ROWS_PER_WG, base, true);
  for (var r0 = wid.x * ROWS_PER_WG; r0 < ROWS; r0 += groups.x * ROWS_PER_WG) {
    block(ids, r0, r0 + groups.x * ROWS_PER_WG, true, mask);
    for (var i = ids.lid; i < ROWS_PER_WG * BSLOTS; i += WG) {
      let o = out_of(i, r0, base, mask);
      if (o.valid) {
        out_rows[o.b * OUT_STRIDE + o.row] = total(i);
      }
    }
    workgroupBarrier();
  }
}

@compute @workgroup_size(WG)
fn residual_rows(ids: Ids, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let mask = active_mask();
  let base = wid.y * BSLOTS;
  prepare(ids, wid.x * ROWS_PER_WG, base, false);
  for (var r0 = wid.x * ROWS_PER_WG; r0 < ROWS; r0 += groups.x * ROWS_PER_WG) {
    block(ids, r0, r0 + groups.x * ROWS_PER_WG, false, mask);
    for (var i = ids.lid; i < ROWS_PER_WG * BSLOTS; i += WG) {
      let o = out_of(i, r0, base, mask);
      if (o.valid) {
        out_rows[o.b * OUT_STRIDE + o.row] += total(i);
      }
    }
    workgroupBarrier();
  }
}

// Block pair j's rows (2j: gate or a packed Q/K/V row a; 2j + 1: up or its partner) for slot b,
// from block entry i of the pairs (ROWS_PER_WG is even, so a pair is in one block); valid: inside W
// and active.
struct Pair {
  row: u32,
  b: u32,
  first: f32,
  second: f32,
  valid: bool,
}
fn pair_of(i: u32, r0: u32, base: u32, mask: u32) -> Pair {
  let j = i / BSLOTS;
  let k = i % BSLOTS;
  let row = r0 + 2u * j;
  let b = base + k;
  return Pair(row, b, total(2u * j * BSLOTS + k), total((2u * j + 1u) * BSLOTS + k),
              row + 1u < ROWS && b < SLOTS && is_active(mask, b));
}

// act[j] = silu(gate j) * up j.
@compute @workgroup_size(WG)
fn gate_up_rows(ids: Ids, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let mask = active_mask();
  let base = wid.y * BSLOTS;
  prepare(ids, wid.x * ROWS_PER_WG, base, true);
  for (var r0 = wid.x * ROWS_PER_WG; r0 < ROWS; r0 += groups.x * ROWS_PER_WG) {
    block(ids, r0, r0 + groups.x * ROWS_PER_WG, true, mask);
    for (var i = ids.lid; i < ROWS_PER_WG / 2u * BSLOTS; i += WG) {
      let p = pair_of(i, r0, base, mask);
      if (p.valid) {
        out_rows[p.b * OUT_STRIDE + p.row / 2u] = p.first / (1.0 + exp(-p.first)) * p.second;
      }
    }
    workgroupBarrier();
  }
}

// ---- embedding: a thread per group of 8 elements, grid y = the slot. Bindings: the embedding,
// x, tokens, slots.
override TOKENS_STRIDE: u32 = 1u;  // words per slot of `tokens` (a sequence of the cache's length + 1)
@group(0) @binding(1) var<storage, read_write> x_out: array<f32>;  // [SLOTS][OUT_STRIDE]
@group(0) @binding(2) var<storage, read> tokens: array<u32>;

@compute @workgroup_size(WG)
fn embed_rows(@builtin(global_invocation_id) gid: vec3<u32>) {
  let b = gid.y;
  if (gid.x >= COLS8 || slots[b * SLOT_WORDS + SLOT_ACTIVE] == 0u) {
    return;
  }
  let token = tokens[b * TOKENS_STRIDE + slots[b * SLOT_WORDS]];
  let v = weight_group(0u, token, COLS8, gid.x);
  for (var j = 0u; j < 8u; j++) {
    let i = 8u * gid.x + j;
    if (i < COLS) {
      x_out[b * OUT_STRIDE + i] = v[j / 4u][j % 4u];
    }
  }
}

// ---- a short prompt chunk's pass (src/llm/model.h): the chunk's tokens PASS_FIRST ..
// PASS_FIRST + SLOTS - 1 as slots. Writes their records (the position; active while inside the
// chunk) and the pass's state words as the prompt kernels read a chunk's (0: the chunk's, 1: the
// pass's first position, 2: its length), from the chunk's state words (1: its first position, 2:
// its length). Bindings: the chunk's state, the records, the pass's state.
override PASS_FIRST: u32 = 0u;
@group(0) @binding(0) var<storage, read> chunk_state: array<u32>;
@group(0) @binding(1) var<storage, read_write> pass_records: array<u32>;
@group(0) @binding(2) var<storage, read_write> pass_state: array<u32>;

@compute @workgroup_size(64)
fn prompt_pass(@builtin(local_invocation_index) t: u32) {
  let chunk_length = chunk_state[2];
  let length = min(SLOTS, chunk_length - min(chunk_length, PASS_FIRST));
  let first = chunk_state[1] + PASS_FIRST;
  if (t < SLOTS) {
    pass_records[t * SLOT_WORDS] = first + t;
    pass_records[t * SLOT_WORDS + SLOT_ACTIVE] = select(0u, 1u, t < length);
  }
  if (t == 0u) {
    pass_state[0] = chunk_state[0];
    pass_state[1] = first;
    pass_state[2] = length;
  }
}

// ---- Q/K/V heads of models with q/k norms: a workgroup per (head of q, k or v, slot).
override HEAD_DIM: u32 = 2u;
override HEADS: u32 = 1u;
override KV_HEADS: u32 = 1u;
override CTX: u32 = 1u;        // cache positions per slot
override RAW_STRIDE: u32 = 1u; // floats per slot of qkv_rows' output
override Q_STRIDE: u32 = 1u;   // floats per slot of q and of the attention output
override HWG: u32 = 64u;       // threads of rope_rows and attend_rows
// rope_rows and qkv_rope_rows: every slot writes cache 0 (the slots are one prompt's tokens, not
// sequences: src/llm/model.h, short prefill passes).
override SHARED_CACHE: bool = false;

fn cache_of(b: u32) -> u32 {
  return select(b, 0u, SHARED_CACHE);
}

// Bindings of rope_rows: raw, qk_norm, rope_cs, slots, q_rows, k_cache, v_cache.
@group(0) @binding(0) var<storage, read> raw: array<f32>;          // [SLOTS][RAW_STRIDE]
@group(0) @binding(1) var<storage, read> qk_norm: array<f32>;      // q_norm then k_norm
@group(0) @binding(2) var<storage, read> rope_cs: array<vec2<f32>>;  // [CTX][hd / 2] (cos, sin)
@group(0) @binding(4) var<storage, read_write> q_rows: array<f32>;   // [SLOTS][Q_STRIDE]
@group(0) @binding(5) var<storage, read_write> k_cache: array<f32>;  // [SLOTS][KV_HEADS][CTX][hd]
@group(0) @binding(6) var<storage, read_write> v_cache: array<f32>;

var<workgroup> hred: array<f32, HWG>;
var<workgroup> pos_wg: u32;

// Slot b's position, or CTX when it is idle (the same value in every thread).
fn slot_position(lid: u32, b: u32) -> u32 {
  if (lid == 0u) {
    pos_wg = select(CTX, slots[b * SLOT_WORDS], slots[b * SLOT_WORDS + SLOT_ACTIVE] != 0u);
  }
  return workgroupUniformLoad(&pos_wg);
}

// The sum of every thread's v (in every thread).
fn head_sum(lid: u32, v: f32) -> f32 {
  hred[lid] = v;
  workgroupBarrier();
  for (var s = HWG / 2u; s > 0u; s /= 2u) {
    if (lid < s) {
      hred[lid] += hred[lid + s];
    }
    workgroupBarrier();
  }
  let total = hred[0];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(HWG)
fn rope_rows(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let b = wid.y;
  let h = wid.x;
  let pos = slot_position(lid, b);
  if (pos >= CTX) {
    return;
  }
  let half_dim = HEAD_DIM / 2u;
  let q_rows_n = HEADS * HEAD_DIM;
  let kv_rows_n = KV_HEADS * HEAD_DIM;
  if (h >= HEADS + KV_HEADS) {
    let kvh = h - HEADS - KV_HEADS;
    for (var e = lid; e < HEAD_DIM; e += HWG) {
      v_cache[((cache_of(b) * KV_HEADS + kvh) * CTX + pos) * HEAD_DIM + e] =
          raw[b * RAW_STRIDE + q_rows_n + kv_rows_n + kvh * HEAD_DIM + e];
    }
    return;
  }
  let is_k = h >= HEADS;
  let base = b * RAW_STRIDE + select(h * HEAD_DIM, q_rows_n + (h - HEADS) * HEAD_DIM, is_k);
  var ss = 0.0;
  for (var e = lid; e < HEAD_DIM; e += HWG) {
    ss += raw[base + e] * raw[base + e];
  }
  let scale = inverseSqrt(head_sum(lid, ss) / f32(HEAD_DIM) + EPS);
  // Packed rows 2i, 2i + 1 are the head's elements i and i + hd/2.
  for (var i = lid; i < half_dim; i += HWG) {
    let nb = select(0u, HEAD_DIM, is_k);
    let a = raw[base + 2u * i] * scale * qk_norm[nb + i];
    let c = raw[base + 2u * i + 1u] * scale * qk_norm[nb + i + half_dim];
    let cs = rope_cs[pos * half_dim + i];
    let ya = a * cs.x - c * cs.y;
    let yc = c * cs.x + a * cs.y;
    if (is_k) {
      let at = ((cache_of(b) * KV_HEADS + h - HEADS) * CTX + pos) * HEAD_DIM + i;
      k_cache[at] = ya;
      k_cache[at + half_dim] = yc;
    } else {
      q_rows[b * Q_STRIDE + h * HEAD_DIM + i] = ya;
      q_rows[b * Q_STRIDE + h * HEAD_DIM + i + half_dim] = yc;
    }
  }
}

// ---- Q/K/V with RoPE in the epilogue (no q/k norms): the products' block of rows, then each
// packed pair (2j, 2j + 1: a head's elements i and i + hd/2, or two V elements) of each active slot
// rotated at the slot's position and stored. Bindings: weights, x, norm, slots, q_rows, k_cache,
// v_cache, rope_table, qkv_bias (ROWS_PER_WG even: a pair is in one block).
@group(0) @binding(7) var<storage, read> rope_table: array<vec2<f32>>;  // [CTX][hd / 2] (cos, sin)
@group(0) @binding(8) var<storage, read> qkv_bias: array<f32>;

fn store_rotated(ra: u32, b: u32, a_dot: f32, c_dot: f32) {
  let pos = slots[b * SLOT_WORDS];
  let a = a_dot + qkv_bias[ra];
  let c = c_dot + qkv_bias[ra + 1u];
  let half_dim = HEAD_DIM / 2u;
  let q_rows_n = HEADS * HEAD_DIM;
  let kv_rows_n = KV_HEADS * HEAD_DIM;
  if (ra >= q_rows_n + kv_rows_n) {
    let r = ra - q_rows_n - kv_rows_n;
    let at = ((cache_of(b) * KV_HEADS + r / HEAD_DIM) * CTX + pos) * HEAD_DIM + r % HEAD_DIM;
    v_cache[at] = a;
    v_cache[at + 1u] = c;
    return;
  }
  let is_k = ra >= q_rows_n;
  let r = select(ra, ra - q_rows_n, is_k);
  let head = r / HEAD_DIM;
  let i = (r % HEAD_DIM) / 2u;
  let cs = rope_table[pos * half_dim + i];
  let ya = a * cs.x - c * cs.y;
  let yc = c * cs.x + a * cs.y;
  if (is_k) {
    let at = ((cache_of(b) * KV_HEADS + head) * CTX + pos) * HEAD_DIM + i;
    k_cache[at] = ya;
    k_cache[at + half_dim] = yc;
  } else {
    q_rows[b * Q_STRIDE + head * HEAD_DIM + i] = ya;
    q_rows[b * Q_STRIDE + head * HEAD_DIM + i + half_dim] = yc;
  }
}

@compute @workgroup_size(WG)
fn qkv_rope_rows(ids: Ids, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let mask = active_mask();
  let base = wid.y * BSLOTS;
  prepare(ids, wid.x * ROWS_PER_WG, base, true);
  for (var r0 = wid.x * ROWS_PER_WG; r0 < ROWS; r0 += groups.x * ROWS_PER_WG) {
    block(ids, r0, r0 + groups.x * ROWS_PER_WG, true, mask);
    for (var i = ids.lid; i < ROWS_PER_WG / 2u * BSLOTS; i += WG) {
      let p = pair_of(i, r0, base, mask);
      if (p.valid) {
        store_rotated(p.row, p.b, p.first, p.second);
      }
    }
    workgroupBarrier();
  }
}

// ---- attention: a workgroup per (query head, slot), positions 0..pos_b of slot b in rounds of
// ROUND with an online softmax; the output rows (Q_STRIDE floats per slot) hold the heads in
// order. In a round a thread scores positions lid, lid + HWG, ... (its key rows read as vec4s, the
// loads independent), the round's max and sum go through subgroup reductions and one partial per
// subgroup, and thread (d4, slice) sums p v over positions slice, slice + SLICES, ... for vec4 d4
// of the output; the slices' sums are added once, after the last round (each was rescaled alike).
// A thread's V rows of a round are loaded V_BATCH at a time, all in flight, and the first batch is
// requested before the round's softmax, which it does not need: a round costs the trip of its K
// and V loads, not one per four positions (as attend_chunk in llm_attention.wgsl).
const ROUND: u32 = 256u;  // positions per round, a multiple of HWG
const V_BATCH: u32 = 16u;
override SCALE: f32 = 1.0;  // 1 / sqrt(HEAD_DIM)
override GROUP: u32 = 1u;   // HEADS / KV_HEADS
override HEAD_V4: u32 = 1u;  // HEAD_DIM / 4, at most HWG
override SLICES: u32 = 1u;   // HWG / HEAD_V4: threads that share the positions of an output vec4
override SG_PARTS: u32 = 64u;  // HWG / the smallest subgroup

// Bindings of attend_rows: q, k_cache, v_cache, slots, the output (out_rows).
@group(0) @binding(0) var<storage, read> q_att: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> k_att: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> v_att: array<vec4<f32>>;

var<workgroup> probs: array<f32, ROUND>;
var<workgroup> part_max: array<f32, SG_PARTS>;
var<workgroup> part_sum: array<f32, SG_PARTS>;
var<workgroup> slice_sums: array<vec4<f32>, HWG>;

// Thread (d4, slice)'s V vec4s of round positions t = t0 + slice + j SLICES (j < V_BATCH) below n,
// zero elsewhere; v_row is the round's first position's vec4 d4.
fn round_v(v_row: u32, t0: u32, n: u32, slice: u32) -> array<vec4<f32>, V_BATCH> {
  var v: array<vec4<f32>, V_BATCH>;
  for (var j = 0u; j < V_BATCH; j++) {
    let t = t0 + slice + j * SLICES;
    if (slice < SLICES && t < n) {
      v[j] = v_att[v_row + t * HEAD_V4];
    }
  }
  return v;
}

@compute @workgroup_size(HWG)
fn attend_rows(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(subgroup_invocation_id) sg_lane: u32, @builtin(subgroup_size) sg_size: u32) {
  let b = wid.y;
  let h = wid.x;
  let pos = slot_position(lid, b);
  if (pos >= CTX) {
    return;
  }
  let q0 = (b * Q_STRIDE + h * HEAD_DIM) / 4u;
  let cache = (b * KV_HEADS + h / GROUP) * CTX * HEAD_V4;  // in vec4s
  let sg = lid / sg_size;
  let parts = HWG / sg_size;
  let d4 = lid % HEAD_V4;
  let slice = lid / HEAD_V4;  // >= SLICES: idle in the p v sums (HWG not a multiple of HEAD_V4)
  var m = -3.0e38;
  var l = 0.0;
  var acc = vec4<f32>(0.0);
  for (var p0 = 0u; p0 <= pos; p0 += ROUND) {
    let n = min(ROUND, pos + 1u - p0);
    var s_max = -3.0e38;
    for (var t = lid; t < n; t += HWG) {
      var d = vec4<f32>(0.0);
      for (var e = 0u; e < HEAD_V4; e++) {
        d += q_att[q0 + e] * k_att[cache + (p0 + t) * HEAD_V4 + e];
      }
      let s = (d.x + d.y + d.z + d.w) * SCALE;
      probs[t] = s;
      s_max = max(s_max, s);
    }
    let v_row = cache + p0 * HEAD_V4 + d4;
    var v = round_v(v_row, 0u, n, slice);
    let sg_max = subgroupMax(s_max);
    if (sg_lane == 0u) {
      part_max[sg] = sg_max;
    }
    workgroupBarrier();
    var round_max = part_max[0];
    for (var g = 1u; g < parts; g++) {
      round_max = max(round_max, part_max[g]);
    }
    let m_new = max(m, round_max);
    var e_sum = 0.0;
    for (var t = lid; t < n; t += HWG) {  // the thread's own scores: no barrier needed
      let e = exp(probs[t] - m_new);
      probs[t] = e;
      e_sum += e;
    }
    let sg_sum = subgroupAdd(e_sum);
    if (sg_lane == 0u) {
      part_sum[sg] = sg_sum;
    }
    workgroupBarrier();  // publishes probs and the sums
    var round_sum = 0.0;
    for (var g = 0u; g < parts; g++) {
      round_sum += part_sum[g];
    }
    let rescale = exp(m - m_new);
    l = l * rescale + round_sum;
    var pv = vec4<f32>(0.0);
    for (var t0 = 0u; t0 < n; t0 += V_BATCH * SLICES) {
      if (t0 > 0u) {
        v = round_v(v_row, t0, n, slice);
      }
      for (var j = 0u; j < V_BATCH; j++) {
        let t = t0 + slice + j * SLICES;
        if (slice < SLICES && t < n) {
          pv += probs[t] * v[j];
        }
      }
    }
    acc = acc * rescale + pv;
    m = m_new;
    workgroupBarrier();  // probs and the partials are rewritten by the next round
  }
  slice_sums[lid] = acc;
  workgroupBarrier();
  if (lid < HEAD_V4) {
    var sum = vec4<f32>(0.0);
    for (var sl = 0u; sl < SLICES; sl++) {
      sum += slice_sums[sl * HEAD_V4 + lid];
    }
    let o = (b * Q_STRIDE + h * HEAD_DIM) / 4u + lid;
    let r = sum / l;
    out_rows[4u * o] = r.x;
    out_rows[4u * o + 1u] = r.y;
    out_rows[4u * o + 2u] = r.z;
    out_rows[4u * o + 3u] = r.w;
  }
}
