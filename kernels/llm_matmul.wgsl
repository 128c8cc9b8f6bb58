// #include "llm_common.wgsl"

// Prefill: the same products for a prompt chunk of T tokens, C[T, ROWS] = A[T, COLS] W^T ====
// Register tiling: WG threads compute TILE_T tokens x TILE_R rows; each thread 4 adjacent
// tokens (or 2 such groups TILE_T / 2 apart: TOKEN_GROUPS) x 8 rows, in two groups of 4 adjacent
// rows TILE_R / 2 apart (a group holds two RoPE or gate/up pairs). Per k that is 32 FMAs from 3
// vec4 workgroup loads (1 of A, 2 of W), or with 2 token groups 64 FMAs from 4.
// K goes through workgroup memory KSTEP columns at a time, transposed ([k][token], [k][row]) so
// those loads are vec4s; weights are decoded (llm_weights.wgsl) once, when staged. The next
// step's global loads are issued before the current step's products (register prefetch).
// Split K (KSLICES > 1; the residual products and Q/K/V): workgroup z of the grid's third
// dimension takes steps z SLICE_STEPS .. + SLICE_STEPS - 1 and writes its tile's sums into slice z
// of a buffer (residual_parts_prompt, normed_parts_prompt); a second dispatch then adds the slices
// in order (deterministic) and finishes (residual_sum_prompt, qkv_sum_prompt). The products of a
// short prompt so keep every SM busy without falling back to a few long-running workgroups of
// small tiles.
// A has rows of COLS8 * 8 floats (COLS padded); the grid is ceil(ROWS / TILE_R) x
// ceil(T / TILE_T) x KSLICES, and a tile's tokens past T compute on stale rows of A whose results
// nobody reads: activation buffers hold whole tiles of tokens (DecodeKernels::kPromptTokenTile).
// The chunk's first position is state word 1, its length T word 2 (word 0 stays the decode
// position); only qkv_rope_prompt reads them, to write the caches at the chunk's positions only.
override OUT_STRIDE: u32 = 8u;  // floats per row of the output (act, resid): ROWS padded
override WG: u32 = 256u;        // threads of a tile
override KSLICES: u32 = 1u;     // workgroups along K (grid z)
override THREADS_R: u32 = 16u;  // a tile is THREADS_R threads along rows x WG / THREADS_R
// Groups of 4 adjacent tokens per thread: 1, or 2 TILE_T / 2 apart, so that a thread computes
// 8 x 8 outputs from 4 vec4 workgroup loads per k.
override TOKEN_GROUPS: u32 = 1u;
const KSTEP: u32 = 16u;
override THREADS_T: u32 = WG / THREADS_R;
override TILE_T: u32 = 4u * TOKEN_GROUPS * THREADS_T;
override TILE_R: u32 = 8u * THREADS_R;
// Global loads per thread and step (the host allows tiles where both are 1 or 2): vec4s of A,
// and groups of 8 weights (one row's KSTEP columns are 2 groups).
override A_LOADS: u32 = TILE_T * KSTEP / 4u / WG;
override W_LOADS: u32 = TILE_R * KSTEP / 8u / WG;
override K_END: u32 = (COLS8 + 1u) / 2u * KSTEP;  // the padded row length rounded up to KSTEP
override STEPS: u32 = K_END / KSTEP;
override SLICE_STEPS: u32 = (STEPS + KSLICES - 1u) / KSLICES;
override A_V4: u32 = TILE_T * KSTEP / 4u;  // the staging, in vec4s
override W_V4: u32 = TILE_R * KSTEP / 4u;

var<workgroup> a_tile: array<vec4<f32>, A_V4>;  // [k][token / 4]
var<workgroup> w_tile: array<vec4<f32>, W_V4>;  // [k][row / 4]
var<workgroup> ss_part: array<f32, TILE_T * 4u>;  // [token][quad]: sums of squares
var<workgroup> xs: array<vec4<f32>, XS_V4>;       // the RMSNorm weight

// The RMSNorm weight into xs (workgroup memory), for tile_products(normed = true): the residual
// entry has no norm weight to bind.
fn stage_norm_weight(lid: u32) {
  for (var i = lid; i < XS_V4; i += WG) {
    xs[i] = norm_w[i];
  }
}

// One step's global loads, held in registers until staged.
struct StepLoads {
  a: array<vec4<f32>, 2>,  // A_LOADS vec4s of A
  w: array<vec4<f32>, 4>,  // W_LOADS groups of 8 weights
}

// Thread lid's loads of columns k0 .. k0 + KSTEP (zeros past the row): A's vec4 e = lid + i WG is
// token e / 4, columns
// 4 (e % 4) .. + 3 of the step (a fixed token and quad for a thread across steps, so its sums of
// squares gather in ss[i]); W's group e is row e / 2, columns 8 (e % 2) .. + 7. When normed, A
// is multiplied by the norm weight here and by 1/rms at the end.
fn load_step(ids: Ids, k0: u32, normed: bool, ss: ptr<function, array<f32, 2>>) -> StepLoads {
  var s: StepLoads;
  let t0 = ids.wid.y * TILE_T;
  let lid = ids.lid;
  for (var i = 0u; i < A_LOADS; i++) {
    let e = lid + i * WG;
    let k = k0 + 4u * (e % 4u);
    var v = vec4<f32>(0.0);
    if (k < COLS8 * 8u) {
      // Columns past COLS are zeroed, whatever the padding holds.
      v = select(vec4<f32>(0.0), xin[(t0 + e / 4u) * COLS8 * 2u + k / 4u],
                 vec4<u32>(k) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(COLS));
      if (normed) {
        (*ss)[i] += dot(v, v);
        v *= xs[k / 4u];
      }
    }
    s.a[i] = v;
  }
  let r0 = ids.wid.x * TILE_R;
  for (var i = 0u; i < W_LOADS; i++) {
    let e = lid + i * WG;
    let c8 = k0 / 8u + e % 2u;
    var w2 = array<vec4<f32>, 2>(vec4<f32>(0.0), vec4<f32>(0.0));
    if (r0 + e / 2u < ROWS && c8 < COLS8) {
      w2 = w8(r0 + e / 2u, c8);
    }
    s.w[2u * i] = w2[0];
    s.w[2u * i + 1u] = w2[1];
  }
  return s;
}

// The loads into the workgroup tiles, transposed.
fn stage_step(lid: u32, s: StepLoads) {
  for (var i = 0u; i < A_LOADS; i++) {
    let e = lid + i * WG;
    let t = e / 4u;
    for (var c = 0u; c < 4u; c++) {
      a_tile[(4u * (e % 4u) + c) * (TILE_T / 4u) + t / 4u][t % 4u] = s.a[i][c];
    }
  }
  for (var i = 0u; i < W_LOADS; i++) {
    let e = lid + i * WG;
    let r = e / 2u;
    for (var c = 0u; c < 8u; c++) {
      w_tile[(8u * (e % 2u) + c) * (TILE_R / 4u) + r / 4u][r % 4u] = s.w[2u * i + c / 4u][c % 4u];
    }
  }
}

// acc[2i + g][j] += column k's products for token out_token(i), row 4 tx + j + g TILE_R / 2.
fn multiply_k(tx: u32, ty: u32, k: u32, acc: ptr<function, array<vec4<f32>, 16>>) {
  let w0 = w_tile[k * (TILE_R / 4u) + tx];
  let w1 = w_tile[k * (TILE_R / 4u) + tx + THREADS_R];
  for (var n = 0u; n < TOKEN_GROUPS; n++) {
    let a = a_tile[k * (TILE_T / 4u) + ty + n * THREADS_T];
    for (var i = 0u; i < 4u; i++) {
      (*acc)[8u * n + 2u * i] += a[i] * w0;
      (*acc)[8u * n + 2u * i + 1u] += a[i] * w1;
    }
  }
}

// The step's KSTEP columns, in a loop that the driver unrolls as it sees fit, or (UNROLL_K)
// written out: faster for the residual products' 64 x 64 tiles, slower in the others, where the
// written-out columns take more registers and so fewer workgroups fit an SM (docs/RESULTS.md,
// session 18).
override UNROLL_K: bool = false;
const_assert KSTEP == 16u;  // UNROLL_K writes out 16 columns
fn multiply_step(lid: u32, acc: ptr<function, array<vec4<f32>, 16>>) {
  let tx = lid % THREADS_R;
  let ty = lid / THREADS_R;
  if (UNROLL_K) {
    multiply_k(tx, ty, 0u, acc);
    multiply_k(tx, ty, 1u, acc);
    multiply_k(tx, ty, 2u, acc);
    multiply_k(tx, ty, 3u, acc);
    multiply_k(tx, ty, 4u, acc);
    multiply_k(tx, ty, 5u, acc);
    multiply_k(tx, ty, 6u, acc);
    multiply_k(tx, ty, 7u, acc);
    multiply_k(tx, ty, 8u, acc);
    multiply_k(tx, ty, 9u, acc);
    multiply_k(tx, ty, 10u, acc);
    multiply_k(tx, ty, 11u, acc);
    multiply_k(tx, ty, 12u, acc);
    multiply_k(tx, ty, 13u, acc);
    multiply_k(tx, ty, 14u, acc);
    multiply_k(tx, ty, 15u, acc);
  } else {
    for (var k = 0u; k < KSTEP; k++) {
      multiply_k(tx, ty, k, acc);
    }
  }
}

// This thread's sums acc[2i + g][j] (token out_token(i), row out_row(g) + j) over the workgroup's
// K slice (all of K unless KSLICES > 1), not scaled. When normed, A's columns are multiplied by
// the norm weight staged in xs, and *ss gathers the thread's sums of squares of A.
fn tile_sums(ids: Ids, normed: bool, ss: ptr<function, array<f32, 2>>) -> array<vec4<f32>, 16> {
  var acc: array<vec4<f32>, 16>;
  if (normed) {
    workgroupBarrier();  // xs staged
  }
  // SLICE_STEPS steps for every slice (a trip count the uniformity analysis accepts: wid comes in
  // a struct with non-uniform members); steps past K load zeros.
  let first = select(0u, ids.wid.z * SLICE_STEPS, KSLICES > 1u);  // a constant 0 when unsplit
  var next = load_step(ids, first * KSTEP, normed, ss);
  for (var s = 0u; s < SLICE_STEPS; s++) {
    stage_step(ids.lid, next);
    workgroupBarrier();
    if (s + 1u < SLICE_STEPS) {
      next = load_step(ids, (first + s + 1u) * KSTEP, normed, ss);
    }
    multiply_step(ids.lid, &acc);
    workgroupBarrier();
  }
  return acc;
}

// Token out_token(i)'s sum of squares over the workgroup's K slice, for i < 4 TOKEN_GROUPS: the
// threads' sums (tile_sums) gathered through workgroup memory.
fn token_sums_of_squares(ids: Ids, ss: array<f32, 2>) -> array<f32, 8> {
  for (var i = 0u; i < A_LOADS; i++) {
    ss_part[ids.lid + i * WG] = ss[i];
  }
  workgroupBarrier();
  var sums: array<f32, 8>;
  for (var i = 0u; i < 4u * TOKEN_GROUPS; i++) {
    let at = 4u * (4u * (ids.lid / THREADS_R + (i / 4u) * THREADS_T) + i % 4u);
    sums[i] = ss_part[at] + ss_part[at + 1u] + ss_part[at + 2u] + ss_part[at + 3u];
  }
  return sums;
}

// This thread's outputs, acc[2i + g][j]: tile_sums, and when normed (never split) A's rows
// RMS-normalised.
fn tile_products(ids: Ids, normed: bool) -> array<vec4<f32>, 16> {
  var ss = array<f32, 2>(0.0, 0.0);
  var acc = tile_sums(ids, normed, &ss);
  if (normed) {
    let sums = token_sums_of_squares(ids, ss);
    for (var i = 0u; i < 4u * TOKEN_GROUPS; i++) {
      let scale = inverseSqrt(sums[i] / f32(COLS) + EPS);
      acc[2u * i] *= scale;
      acc[2u * i + 1u] *= scale;
    }
  }
  return acc;
}

fn out_token(ids: Ids, i: u32) -> u32 {
  return ids.wid.y * TILE_T + 4u * (ids.lid / THREADS_R + (i / 4u) * THREADS_T) + i % 4u;
}
fn out_row(ids: Ids, g: u32) -> u32 {
  return ids.wid.x * TILE_R + 4u * (ids.lid % THREADS_R) + g * (TILE_R / 2u);
}

@compute @workgroup_size(WG)
fn qkv_rope_prompt(ids: Ids) {
  stage_norm_weight(ids.lid);
  let acc = tile_products(ids, true);
  for (var i = 0u; i < 4u * TOKEN_GROUPS; i++) {
    let t = out_token(ids, i);
    let pos = state[1] + t;
    if (t < state[2] && pos < CTX) {
      for (var g = 0u; g < 2u; g++) {
        let r = out_row(ids, g);
        let v = acc[2u * i + g];
        if (r < ROWS) {  // ROWS is even: the pair r, r + 1 is whole
          store_qkv(r, v.x, v.y, pos, t * Q_ROWS);
        }
        if (r + 2u < ROWS) {
          store_qkv(r + 2u, v.z, v.w, pos, t * Q_ROWS);
        }
      }
    }
  }
}

@compute @workgroup_size(WG)
fn gate_up_silu_prompt(ids: Ids) {
  stage_norm_weight(ids.lid);
  let acc = tile_products(ids, true);
  for (var i = 0u; i < 4u * TOKEN_GROUPS; i++) {
    let at = out_token(ids, i) * OUT_STRIDE;
    for (var g = 0u; g < 2u; g++) {
      let r = out_row(ids, g);  // gate/up pairs r, r + 1 and r + 2, r + 3
      let v = acc[2u * i + g];
      if (r < ROWS) {
        act[at + r / 2u] = silu_mul(v.x, v.y);
      }
      if (r + 2u < ROWS) {
        act[at + r / 2u + 1u] = silu_mul(v.z, v.w);
      }
    }
  }
}

@compute @workgroup_size(WG)
fn residual_prompt(ids: Ids) {
  let acc = tile_products(ids, false);
  for (var i = 0u; i < 4u * TOKEN_GROUPS; i++) {
    let at = out_token(ids, i) * OUT_STRIDE;
    for (var g = 0u; g < 2u; g++) {
      let r = out_row(ids, g);
      for (var j = 0u; j < 4u; j++) {
        if (r + j < ROWS) {
          resid[at + r + j] += acc[2u * i + g][j];
        }
      }
    }
  }
}

// Split K: slice z's sums of every tile, [KSLICES][PART_TOKENS][OUT_STRIDE] (PART_TOKENS at least
// the chunk's tokens in whole tiles; rows past ROWS are not written).
override PART_TOKENS: u32 = 1u;
@group(0) @binding(2) var<storage, read_write> parts: array<f32>;

@compute @workgroup_size(WG)
fn residual_parts_prompt(ids: Ids) {
  let acc = tile_products(ids, false);
  let slice = ids.wid.z * PART_TOKENS;
  for (var i = 0u; i < 4u * TOKEN_GROUPS; i++) {
    let at = (slice + out_token(ids, i)) * OUT_STRIDE;
    for (var g = 0u; g < 2u; g++) {
      let r = out_row(ids, g);
      for (var j = 0u; j < 4u; j++) {
        if (r + j < ROWS) {
          parts[at + r + j] = acc[2u * i + g][j];
        }
      }
    }
  }
}

// resid += the slices' sums, added in slice order: a thread per output of the chunk's tokens (grid
// ceil(ROWS / SUM_WG) x the chunk's tokens: no constant depends on the prompt's length).
const SUM_WG: u32 = 128u;
@group(0) @binding(0) var<storage, read> slice_sums: array<f32>;  // the *_parts_prompt slices
@group(0) @binding(1) var<storage, read_write> resid_rows: array<f32>;

@compute @workgroup_size(SUM_WG)
fn residual_sum_prompt(@builtin(global_invocation_id) gid: vec3<u32>) {
  let r = gid.x;
  let t = gid.y;
  if (r >= ROWS) {
    return;
  }
  var sum = slice_sums[t * OUT_STRIDE + r];
  for (var z = 1u; z < KSLICES; z++) {
    sum += slice_sums[(z * PART_TOKENS + t) * OUT_STRIDE + r];
  }
  resid_rows[t * OUT_STRIDE + r] += sum;
}

// Split K of Q/K/V (KSLICES > 1): slice z's sums of every tile, not yet scaled by 1/rms, into
// normed_parts[z] ([KSLICES][PART_TOKENS][OUT_STRIDE]), and each token's sum of squares over the
// slice's columns in word ROWS of its row (OUT_STRIDE > ROWS). qkv_sum_prompt then adds the
// slices in order and finishes as qkv_rope_prompt does: short prompts' Q/K/V get as many
// workgroups as the residual products instead of a few long-running ones.
@group(0) @binding(3) var<storage, read_write> normed_parts: array<f32>;

@compute @workgroup_size(WG)
fn normed_parts_prompt(ids: Ids) {
  stage_norm_weight(ids.lid);
  var ss = array<f32, 2>(0.0, 0.0);
  let acc = tile_sums(ids, true, &ss);
  let sums = token_sums_of_squares(ids, ss);
  let slice = ids.wid.z * PART_TOKENS;
  for (var i = 0u; i < 4u * TOKEN_GROUPS; i++) {
    let at = (slice + out_token(ids, i)) * OUT_STRIDE;
    if (ids.wid.x == 0u && ids.lid % THREADS_R == 0u) {  // one thread of the tokens' first row tile
      normed_parts[at + ROWS] = sums[i];
    }
    for (var g = 0u; g < 2u; g++) {
      let r = out_row(ids, g);
      for (var j = 0u; j < 4u; j++) {
        if (r + j < ROWS) {
          normed_parts[at + r + j] = acc[2u * i + g][j];
        }
      }
    }
  }
}

// Q/K/V of the chunk's tokens from normed_parts_prompt's slices: a thread per pair of rows (a
// RoPE pair), grid ceil(ROWS / 2 / SUM_WG) x the chunk's tokens.
@compute @workgroup_size(SUM_WG)
fn qkv_sum_prompt(@builtin(global_invocation_id) gid: vec3<u32>) {
  let ra = 2u * gid.x;
  let t = gid.y;
  let pos = state[1] + t;
  if (ra >= ROWS || t >= state[2] || pos >= CTX) {
    return;
  }
  var a = 0.0;
  var b = 0.0;
  var ss = 0.0;
  for (var z = 0u; z < KSLICES; z++) {
    let at = (z * PART_TOKENS + t) * OUT_STRIDE;
    a += slice_sums[at + ra];
    b += slice_sums[at + ra + 1u];
    ss += slice_sums[at + ROWS];
  }
  let scale = inverseSqrt(ss / f32(COLS) + EPS);
  store_qkv(ra, a * scale, b * scale, pos, t * Q_ROWS);
}
