// The one decode of stored weights (src/gpu/weight_format.h), included by every kernel that reads
// them. A weight tensor is row-major, each row padded with zeros to whole groups of 8 elements,
// bound at binding 0 as `weights` (a whole arena view, or a buffer of several matrices with their
// offsets in vec4s). WEIGHT_FORMAT (gpu::WeightFormat's number) picks the encoding:
//   0 f32:  8 elements in 2 vec4<u32> (bitcast)
//   1 f16:  8 elements in 1 vec4<u32>, two per word, element 0 in the low half (unpack2x16float)
//   2 bf16: the same packing; a bf16 is the high half of an f32, so the decode is a shift or mask
//           (exact)
// Arithmetic is f32 in every format.

override WEIGHT_FORMAT: u32 = 1u;

@group(0) @binding(0) var<storage, read> weights: array<vec4<u32>>;

// vec4s of `weights` per group of 8 elements.
fn weight_v4_per_group() -> u32 {
  return select(1u, 2u, WEIGHT_FORMAT == 0u);
}

// The 8 weights of column group c8 of row `row` in the matrix starting at vec4 `base` whose rows
// are c8n groups long.
fn weight_group(base: u32, row: u32, c8n: u32, c8: u32) -> array<vec4<f32>, 2> {
  let at = base + (row * c8n + c8) * weight_v4_per_group();
  let q = weights[at];
  if (WEIGHT_FORMAT == 0u) {
    return array<vec4<f32>, 2>(bitcast<vec4<f32>>(q), bitcast<vec4<f32>>(weights[at + 1u]));
  }
  if (WEIGHT_FORMAT == 2u) {
    let lo = bitcast<vec4<f32>>(q << vec4<u32>(16u));     // elements 0, 2, 4, 6
    let hi = bitcast<vec4<f32>>(q & vec4<u32>(0xffff0000u));  // elements 1, 3, 5, 7
    return array<vec4<f32>, 2>(vec4<f32>(lo.x, hi.x, lo.y, hi.y), vec4<f32>(lo.z, hi.z, lo.w, hi.w));
  }
  return array<vec4<f32>, 2>(vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y)),
                             vec4<f32>(unpack2x16float(q.z), unpack2x16float(q.w)));
}
