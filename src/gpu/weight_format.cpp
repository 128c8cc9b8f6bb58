#include "gpu/weight_format.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/ggml_blocks.h"
#include "util/error.h"
#include "util/half.h"

namespace wgfuse::gpu {

const DTypeInfo& info(DType t) {
  static constexpr DTypeInfo kInfo[] = {
      {"f32", 1, 4},      {"f16", 1, 2},     {"bf16", 1, 2},   {"q8_0", 32, 34},   {"q4_0", 32, 18},
      {"q4_1", 32, 20},   {"q5_0", 32, 22},  {"q5_1", 32, 24}, {"q4_K", 256, 144}, {"q5_K", 256, 176},
      {"q6_K", 256, 210}, {"q4_zp", 32, 20}, {"i32", 1, 4},
  };
  return kInfo[size_t(t)];
}

uint32_t dtype_bytes(DType t) {
  if (is_quantized(t))
    throw Error(std::string("dtype_bytes: ") + to_string(t) + " is quantized: its rows are blocks of " +
                std::to_string(info(t).block_elements) + " elements (source_row_bytes)");
  return info(t).block_bytes;
}

uint64_t source_row_bytes(DType t, uint64_t cols) {
  const DTypeInfo& i = info(t);
  if (cols % i.block_elements != 0)
    throw Error("a row of " + std::to_string(cols) + " " + i.name + " elements: " + i.name +
                " stores blocks of " + std::to_string(i.block_elements) +
                " elements, so a row's length must be " + "a multiple of " +
                std::to_string(i.block_elements));
  return cols / i.block_elements * i.block_bytes;
}

const WeightFormatInfo& info(WeightFormat f) {
  static constexpr WeightFormatInfo kInfo[] = {
      {"f32", 8, 32, 4, DType::F32},      {"f16", 8, 16, 8, DType::F16},
      {"bf16", 8, 16, 8, DType::BF16},    {"q8_0", 32, 34, 8, DType::Q8_0},
      {"q4_0", 32, 18, 8, DType::Q4_0},   {"q4_1", 32, 20, 8, DType::Q4_1},
      {"q5_0", 32, 22, 8, DType::Q5_0},   {"q5_1", 32, 24, 8, DType::Q5_1},
      {"q4_k", 256, 148, 8, DType::Q4_K}, {"q5_k", 256, 180, 8, DType::Q5_K},
      {"q6_k", 256, 210, 8, DType::Q6_K}, {"q4_zp", 32, 20, 8, DType::Q4_ZP},
  };
  return kInfo[size_t(f)];
}

WeightFormat parse_weight_format(std::string_view s, std::string_view what) {
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  std::string names;
  for (WeightFormat f : kWeightFormats) {
    if (lower == info(f).name) return f;
    names += std::string(names.empty() ? "" : ", ") + info(f).name;
  }
  throw Error(std::string(what) + " '" + std::string(s) + "': expected one of " + names);
}

namespace {

// A quantized row's planes (weight_format.h), in u32 words, for `blocks` blocks.
struct Planes {
  uint64_t low = 0, high = 0, sub = 0, scale = 0;  // word offsets
  uint64_t words = 0;                              // the row, padded to a whole word
};
Planes planes(WeightFormat f, uint64_t blocks) {
  const uint64_t n = blocks * info(f).block_elements;
  Planes p;
  p.high = f == WeightFormat::Q8_0 ? n / 4 : n / 8;
  const bool five = f == WeightFormat::Q5_0 || f == WeightFormat::Q5_1 || f == WeightFormat::Q5_K;
  p.sub = p.high + (five ? n / 32 : f == WeightFormat::Q6_K ? n / 16 : 0);
  const bool k_pairs = f == WeightFormat::Q4_K || f == WeightFormat::Q5_K;
  p.scale = p.sub + (k_pairs ? 4 * blocks : f == WeightFormat::Q6_K ? 4 * blocks : 0);
  const bool pairs =
      f == WeightFormat::Q4_1 || f == WeightFormat::Q5_1 || f == WeightFormat::Q4_ZP || k_pairs;
  p.words = p.scale + (pairs ? blocks : (blocks + 1) / 2);
  return p;
}

uint64_t blocks_of(WeightFormat f, uint64_t cols) {
  return (cols + info(f).block_elements - 1) / info(f).block_elements;
}

// Writes the parts of block k of a row into its planes (`w`: the row's words, zeroed).
void pack_block(WeightFormat f, const QuantBlock& b, uint64_t k, const Planes& p, std::span<uint32_t> w) {
  const uint32_t n = info(f).block_elements;
  for (uint32_t j = 0; j < n; ++j) {
    const uint64_t i = k * n + j;  // element of the row
    if (f == WeightFormat::Q8_0) {
      w[p.low + i / 4] |= uint32_t(b.q[j]) << (8 * (i % 4));
      continue;
    }
    w[p.low + i / 8] |= uint32_t(b.q[j] & 0xf) << (4 * (i % 8));
    if (f == WeightFormat::Q6_K)
      w[p.high + i / 16] |= uint32_t(b.q[j] >> 4) << (2 * (i % 16));
    else if (p.sub > p.high)  // q5_*
      w[p.high + i / 32] |= uint32_t(b.q[j] >> 4) << (i % 32);
  }
  switch (f) {
    case WeightFormat::Q4_K:
    case WeightFormat::Q5_K:
      for (uint64_t s = 0; s < 8; ++s) {
        const uint64_t h = 8 * k + s;  // half-word of the sub plane
        w[p.sub + h / 2] |= (uint32_t(b.sc[s]) | uint32_t(b.mn[s]) << 8) << (16 * (h % 2));
      }
      w[p.scale + k] = uint32_t(b.d) | uint32_t(b.m) << 16;
      break;
    case WeightFormat::Q4_1:
    case WeightFormat::Q5_1:
      w[p.scale + k] = uint32_t(b.d) | uint32_t(b.m) << 16;
      break;
    case WeightFormat::Q4_ZP:  // the zero point as an f16 (exact: an integer below 256)
      w[p.scale + k] = uint32_t(b.d) | uint32_t(half::from_float(float(b.m))) << 16;
      break;
    default:  // q8_0, q4_0, q5_0, q6_K: f16 d per block
      if (f == WeightFormat::Q6_K)
        for (uint64_t s = 0; s < 16; ++s) w[p.sub + (16 * k + s) / 4] |= uint32_t(b.sc[s]) << (8 * (s % 4));
      w[p.scale + k / 2] |= uint32_t(b.d) << (16 * (k % 2));
      break;
  }
}

// An unquantized source element as f32 (exact).
float source_value(DType t, const std::byte* p) {
  if (t == DType::F32) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return t == DType::F16 ? half::to_float(bits) : half::bf16_to_float(bits);
}

// The row's values as f32: converted, or a quantized source dequantized (one rounding).
std::vector<float> source_values(DType t, std::span<const std::byte> src, uint64_t cols) {
  std::vector<float> v(cols);
  if (is_quantized(t)) {
    const std::vector<double> d = dequantize_row(t, src, cols);
    std::copy(d.begin(), d.end(), v.begin());
  } else {
    for (uint64_t c = 0; c < cols; ++c) v[c] = source_value(t, src.data() + c * dtype_bytes(t));
  }
  return v;
}

// q4_0 and q5_0 blocks are d (q - 8) and d (q - 16): q8_0 blocks d q' with the same d and q'
// = q - 8 (- 16) hold them exactly.
bool widens_to_q8_0(DType src, DType enc) {
  return enc == DType::Q8_0 && (src == DType::Q4_0 || src == DType::Q5_0);
}
QuantBlock as_q8_0(DType src, QuantBlock b) {
  const int bias = src == DType::Q4_0 ? 8 : 16;
  for (uint32_t j = 0; j < 32; ++j) b.q[j] = uint8_t(int8_t(int(b.q[j]) - bias));
  return b;
}

}  // namespace

uint64_t stored_row_bytes(WeightFormat f, uint64_t cols) {
  if (is_quantized(f)) return 4 * planes(f, blocks_of(f, cols)).words;
  const auto& i = info(f);
  return (cols + i.block_elements - 1) / i.block_elements * i.block_bytes;
}

bool stored_as_is(WeightFormat f, DType src, uint64_t cols) {
  return !is_quantized(f) && info(f).encoding == src && cols % info(f).block_elements == 0;
}

void pack_row(WeightFormat f, DType src_dtype, std::span<const std::byte> src, uint64_t cols,
              std::span<std::byte> out) {
  const uint64_t in_bytes = source_row_bytes(src_dtype, cols), out_bytes = stored_row_bytes(f, cols);
  if (src.size() != in_bytes || out.size() != out_bytes)
    throw Error("pack_row: a row of " + std::to_string(cols) + " " + to_string(src_dtype) + " elements as " +
                to_string(f) + " takes " + std::to_string(in_bytes) + " -> " + std::to_string(out_bytes) +
                " bytes, given " + std::to_string(src.size()) + " -> " + std::to_string(out.size()));
  if (src_dtype == DType::I32)
    throw Error("pack_row: i32 elements are packed integers (an AWQ or GPTQ tensor), not weights");
  const DType enc = info(f).encoding;
  if (is_quantized(f)) {
    const uint32_t n = info(f).block_elements, bb = info(enc).block_bytes;
    const uint64_t blocks = blocks_of(f, cols);
    const Planes p = planes(f, blocks);
    std::vector<uint32_t> words(p.words, 0);
    const bool blockwise = src_dtype == enc || widens_to_q8_0(src_dtype, enc);
    std::vector<float> values;  // a source of another encoding, padded to whole blocks with zeros
    if (!blockwise) {
      values = source_values(src_dtype, src, cols);
      values.resize(blocks * n, 0.0f);
    }
    for (uint64_t k = 0; k < blocks; ++k) {
      QuantBlock b;
      if (src_dtype == enc)
        b = decode_block(enc, &src[k * bb]);
      else if (blockwise)
        b = as_q8_0(src_dtype, decode_block(src_dtype, &src[k * info(src_dtype).block_bytes]));
      else
        b = quantize_block(enc, std::span(values).subspan(k * n, n));
      pack_block(f, b, k, p, words);
    }
    std::memcpy(out.data(), words.data(), out_bytes);  // little-endian words
    return;
  }
  const uint64_t used = cols * dtype_bytes(enc);
  std::fill(out.begin() + ptrdiff_t(used), out.end(), std::byte{0});
  if (enc == src_dtype) {
    std::memcpy(out.data(), src.data(), in_bytes);
    return;
  }
  std::vector<float> dequantized;
  if (is_quantized(src_dtype)) dequantized = source_values(src_dtype, src, cols);
  std::byte* dst = out.data();
  for (uint64_t c = 0; c < cols; ++c) {
    const float v =
        is_quantized(src_dtype) ? dequantized[c] : source_value(src_dtype, &src[c * dtype_bytes(src_dtype)]);
    if (f == WeightFormat::F32) {
      std::memcpy(dst + 4 * c, &v, 4);
    } else {
      const uint16_t h = f == WeightFormat::F16 ? half::from_float(v) : half::bf16_from_float(v);
      std::memcpy(dst + 2 * c, &h, 2);  // little-endian: element 2i in the low half of word i
    }
  }
}

void stored_values(WeightFormat f, std::span<float> row) {
  if (is_quantized(f)) {
    const DType q = info(f).encoding;
    std::vector<float> padded(row.begin(), row.end());
    padded.resize(blocks_of(f, row.size()) * info(f).block_elements, 0.0f);
    std::vector<std::byte> bytes(source_row_bytes(q, padded.size()));
    quantize_row(q, padded, bytes);
    const std::vector<double> v = dequantize_row(q, bytes, padded.size());
    std::copy_n(v.begin(), row.size(), row.begin());
  } else if (f == WeightFormat::F16) {
    for (float& v : row) v = half::to_float(half::from_float(v));
  } else if (f == WeightFormat::BF16) {
    for (float& v : row) v = half::bf16_to_float(half::bf16_from_float(v));
  }
}

}  // namespace wgfuse::gpu
