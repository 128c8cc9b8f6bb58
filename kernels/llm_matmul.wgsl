// #include "llm_common.wgsl"

// Prefill: the same products for a prompt chunk of T tokens, C[T, ROWS] = A[T, COLS] W^T ====
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
var<workgroup> xs: array<vec4<f32>, XS_V4>;        // the RMSNorm weight

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
