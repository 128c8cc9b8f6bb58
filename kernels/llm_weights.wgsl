// The one decode of stored weights (src/gpu/weight_format.h), included by every kernel that reads
// them: weight_group() gives the 8 weights of a column group, whatever the format. A weight tensor
// is row-major, each row padded with zeros to whole blocks, bound at binding 0 as `weights` (a
// whole arena view, or a buffer of several matrices with their offsets in vec4s). WEIGHT_FORMAT
// (gpu::WeightFormat's number) picks the encoding:
//   0 f32:  8 elements in 2 vec4<u32> (bitcast)
//   1 f16:  8 elements in 1 vec4<u32>, two per word, element 0 in the low half (unpack2x16float)
//   2 bf16: the same packing; a bf16 is the high half of an f32, so the decode is a shift or mask
//           (exact)
//   3..10 q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K: ggml's formats repacked into planes of
//           u32 words per row (weight_format.h), a group's quants in one or two words; each
//           element decoded as ggml's dequantize_row_* computes it (bit for bit)
//   11 q4_zp: AWQ's and GPTQ's 4-bit groups in q4_1's planes, d (q - z) (bit for bit)
// Arithmetic is f32 in every format.

override WEIGHT_FORMAT: u32 = 1u;

@group(0) @binding(0) var<storage, read> weights: array<vec4<u32>>;

// vec4s of `weights` per group of 8 elements.
fn weight_v4_per_group() -> u32 {
  return select(1u, 2u, WEIGHT_FORMAT == 0u);
}

// Word w of `weights`.
fn weight_word(w: u32) -> u32 {
  return weights[w / 4u][w % 4u];
}

// A quantized format's block: 32 elements, 256 for the K formats (8, 9, 10).
fn quant_block() -> u32 {
  return select(32u, 256u, WEIGHT_FORMAT >= 8u && WEIGHT_FORMAT <= 10u);
}

// Word offsets of a quantized row's planes from its start, and its length (weight_format.h).
struct QuantPlanes {
  high: u32,
  sub: u32,
  scale: u32,
  words: u32,
}

fn quant_planes(c8n: u32) -> QuantPlanes {
  let f = WEIGHT_FORMAT;
  let blocks = (8u * c8n + quant_block() - 1u) / quant_block();
  let n = blocks * quant_block();
  let five = f == 6u || f == 7u || f == 9u;
  let k_pairs = f == 8u || f == 9u;
  var p: QuantPlanes;
  p.high = select(n / 8u, n / 4u, f == 3u);  // the low plane: 4 bits an element, q8_0 8
  p.sub = p.high + select(select(0u, n / 16u, f == 10u), n / 32u, five);
  p.scale = p.sub + select(0u, 4u * blocks, k_pairs || f == 10u);
  p.words = p.scale + select((blocks + 1u) / 2u, blocks, f == 5u || f == 7u || f == 11u || k_pairs);
  return p;
}

// The stored words of column group c8 of the quantized row starting at word `row`, one vec4 that
// decode_quant() turns into its 8 weights: x the group's quants (q8_0: x, y), y the word of its
// high bits (5-bit formats, q6_K), z the word of its sub-block scale (K formats), w the word of its
// block's scales (each 0 where the format has none).
fn quant_words(row: u32, c8n: u32, c8: u32) -> vec4<u32> {
  let f = WEIGHT_FORMAT;
  let p = quant_planes(c8n);
  let b = 8u * c8 / quant_block();
  let half_scales = f == 3u || f == 4u || f == 6u || f == 10u;  // one f16 a block, two a word
  let scale = weight_word(row + p.scale + select(b, b / 2u, half_scales));
  if (f == 3u) {
    return vec4<u32>(weight_word(row + 2u * c8), weight_word(row + 2u * c8 + 1u), 0u, scale);
  }
  var high = 0u;
  if (f == 6u || f == 7u || f == 9u) {
    high = weight_word(row + p.high + c8 / 4u);
  } else if (f == 10u) {
    high = weight_word(row + p.high + c8 / 2u);
  }
  var sub = 0u;
  if (f >= 8u && f <= 10u) {  // a byte (q6_K) or half-word (q4_K, q5_K) a sub-block: c8 / 8 either way
    sub = weight_word(row + p.sub + c8 / 8u);
  }
  return vec4<u32>(weight_word(row + c8), high, sub, scale);
}

// A quantized group as its 8 quants (less the format's bias) and the affine map that makes them
// weights: weight i = q[i] * scale + offset (offset 0 where the format has none).
struct QuantGroup {
  lo: vec4<f32>,
  hi: vec4<f32>,
  scale: f32,
  offset: f32,
}

// Column group c8 of a quantized row from its quant_words().
fn quant_group(w: vec4<u32>, c8: u32) -> QuantGroup {
  let f = WEIGHT_FORMAT;
  let b = 8u * c8 / quant_block();
  let d = unpack2x16float(w.w)[b % 2u];  // formats with one f16 a block
  if (f == 3u) {  // q8_0: int8 quants, sign-extended
    let up = vec4<u32>(24u, 16u, 8u, 0u);
    let qa = bitcast<vec4<i32>>(vec4<u32>(w.x) << up) >> vec4<u32>(24u);
    let qb = bitcast<vec4<i32>>(vec4<u32>(w.y) << up) >> vec4<u32>(24u);
    return QuantGroup(vec4<f32>(qa), vec4<f32>(qb), d, 0.0);
  }
  var qa = (vec4<u32>(w.x) >> vec4<u32>(0u, 4u, 8u, 12u)) & vec4<u32>(15u);
  var qb = (vec4<u32>(w.x) >> vec4<u32>(16u, 20u, 24u, 28u)) & vec4<u32>(15u);
  if (f == 6u || f == 7u || f == 9u) {  // the 5th bits: byte c8 % 4 of the high word
    let h = vec4<u32>(w.y >> (8u * (c8 % 4u)));
    qa |= ((h >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u)) << vec4<u32>(4u);
    qb |= ((h >> vec4<u32>(4u, 5u, 6u, 7u)) & vec4<u32>(1u)) << vec4<u32>(4u);
  }
  if (f == 10u) {  // q6_K's 2 high bits: half-word c8 % 2 of the high word
    let h = vec4<u32>(w.y >> (16u * (c8 % 2u)));
    qa |= ((h >> vec4<u32>(0u, 2u, 4u, 6u)) & vec4<u32>(3u)) << vec4<u32>(4u);
    qb |= ((h >> vec4<u32>(8u, 10u, 12u, 14u)) & vec4<u32>(3u)) << vec4<u32>(4u);
  }
  let xa = vec4<f32>(qa);
  let xb = vec4<f32>(qb);
  if (f == 4u || f == 6u) {  // q4_0, q5_0: d (q - 8 or 16)
    let bias = select(8.0, 16.0, f == 6u);
    return QuantGroup(xa - bias, xb - bias, d, 0.0);
  }
  if (f == 10u) {  // q6_K: (d sc) (q - 32), sc the int8 of sub-block c8 / 2 (byte c8 / 2 % 4 of the word)
    let sc = bitcast<i32>(w.z << (24u - 8u * (c8 / 2u % 4u))) >> 24u;
    return QuantGroup(xa - 32.0, xb - 32.0, d * f32(sc), 0.0);
  }
  let dm = unpack2x16float(w.w);  // formats with a pair of f16 a block
  if (f == 5u || f == 7u) {  // q4_1, q5_1: d q + m
    return QuantGroup(xa, xb, dm.x, dm.y);
  }
  if (f == 11u) {  // q4_zp: d (q - z)
    return QuantGroup(xa - dm.y, xb - dm.y, dm.x, 0.0);
  }
  // q4_K, q5_K: (d sc) q - (dmin m), sc and m those of sub-block c8 / 4 (half-word c8 / 4 % 2)
  let scm = w.z >> (16u * (c8 / 4u % 2u));
  let mn = dm.y * f32((scm >> 8u) & 0xffu);
  return QuantGroup(xa, xb, dm.x * f32(scm & 0xffu), -mn);
}

// True for the formats whose weights have an offset (QuantGroup.offset).
fn quant_has_offset() -> bool {
  let f = WEIGHT_FORMAT;
  return f == 5u || f == 7u || f == 8u || f == 9u;
}

// The 8 weights of column group c8 of a quantized row from its quant_words().
fn decode_quant(w: vec4<u32>, c8: u32) -> array<vec4<f32>, 2> {
  let g = quant_group(w, c8);
  if (quant_has_offset()) {
    return array<vec4<f32>, 2>(g.lo * g.scale + g.offset, g.hi * g.scale + g.offset);
  }
  return array<vec4<f32>, 2>(g.lo * g.scale, g.hi * g.scale);
}

// The dot of column group c8's weights, stored as the words w (group_words(): every format but
// f32), with x (elements 0-3 xa, 4-7 xb).
// A quantized group's scale and offset are applied once to its sums (scale . (q . x) + offset . sum
// of x) rather than to each weight: not bit for bit decode_group()'s weights dotted with x, equal
// within f32 rounding.
fn words_dot(w: vec4<u32>, c8: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
  if (WEIGHT_FORMAT < 3u) {
    let g = unpack_group16(w);
    return dot(g[0], xa) + dot(g[1], xb);
  }
  let g = quant_group(w, c8);
  let qx = g.scale * (dot(g.lo, xa) + dot(g.hi, xb));
  if (quant_has_offset()) {
    return qx + g.offset * dot(xa + xb, vec4<f32>(1.0));
  }
  return qx;
}

// The first vec4 of column group c8 of row `row` of an unquantized matrix (WEIGHT_FORMAT 0..2)
// starting at vec4 `base`, whose rows are c8n groups long.
fn weight_v4_at(base: u32, row: u32, c8n: u32, c8: u32) -> u32 {
  return base + (row * c8n + c8) * weight_v4_per_group();
}

// The stored words of column group c8 of row `row` in the matrix starting at vec4 `base` whose rows
// are c8n groups long, as one vec4 (every format but f32, whose group is two): decode_group() gives
// its 8 weights. Split so that a kernel can load groups ahead of their decode.
fn group_words(base: u32, row: u32, c8n: u32, c8: u32) -> vec4<u32> {
  if (WEIGHT_FORMAT >= 3u) {
    return quant_words(4u * base + row * quant_planes(c8n).words, c8n, c8);
  }
  return weights[weight_v4_at(base, row, c8n, c8)];
}

fn decode_group(w: vec4<u32>, c8: u32) -> array<vec4<f32>, 2> {
  if (WEIGHT_FORMAT >= 3u) {
    return decode_quant(w, c8);
  }
  return unpack_group16(w);
}

// The 8 weights of column group c8 of row `row` in the matrix starting at vec4 `base` whose rows
// are c8n groups long.
fn weight_group(base: u32, row: u32, c8n: u32, c8: u32) -> array<vec4<f32>, 2> {
  if (WEIGHT_FORMAT == 0u) {
    let at = weight_v4_at(base, row, c8n, c8);
    return array<vec4<f32>, 2>(bitcast<vec4<f32>>(weights[at]), bitcast<vec4<f32>>(weights[at + 1u]));
  }
  return decode_group(group_words(base, row, c8n, c8), c8);
}

// The dot of column group c8 of row `row` (the matrix at vec4 `base`, rows c8n groups long) with x
// (elements 0-3 xa, 4-7 xb), as words_dot() computes it.
fn group_dot(base: u32, row: u32, c8n: u32, c8: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
  if (WEIGHT_FORMAT == 0u) {
    let g = weight_group(base, row, c8n, c8);
    return dot(g[0], xa) + dot(g[1], xb);
  }
  return words_dot(group_words(base, row, c8n, c8), c8, xa, xb);
}

// The 8 weights of a 16-bit format's group (WEIGHT_FORMAT 1 or 2), from its vec4.
fn unpack_group16(q: vec4<u32>) -> array<vec4<f32>, 2> {
  if (WEIGHT_FORMAT == 2u) {
    let lo = bitcast<vec4<f32>>(q << vec4<u32>(16u));     // elements 0, 2, 4, 6
    let hi = bitcast<vec4<f32>>(q & vec4<u32>(0xffff0000u));  // elements 1, 3, 5, 7
    return array<vec4<f32>, 2>(vec4<f32>(lo.x, hi.x, lo.y, hi.y), vec4<f32>(lo.z, hi.z, lo.w, hi.w));
  }
  return array<vec4<f32>, 2>(vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y)),
                             vec4<f32>(unpack2x16float(q.z), unpack2x16float(q.w)));
}
