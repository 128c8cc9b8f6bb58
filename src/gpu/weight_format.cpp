#include "gpu/weight_format.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "util/error.h"
#include "util/half.h"

namespace wgfuse::gpu {

const char* to_string(DType t) {
  switch (t) {
    case DType::F32:
      return "f32";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
  }
  return "?";
}

uint32_t dtype_bytes(DType t) {
  return t == DType::F32 ? 4 : 2;
}

const WeightFormatInfo& info(WeightFormat f) {
  static constexpr WeightFormatInfo kInfo[] = {
      {"f32", 8, 32, 4},
      {"f16", 8, 16, 8},
      {"bf16", 8, 16, 8},
  };
  return kInfo[size_t(f)];
}

WeightFormat parse_weight_format(std::string_view s, std::string_view what) {
  for (WeightFormat f : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16})
    if (s == info(f).name) return f;
  throw Error(std::string(what) + " '" + std::string(s) + "': expected f32, f16 or bf16");
}

uint64_t stored_row_bytes(WeightFormat f, uint64_t cols) {
  const auto& i = info(f);
  return (cols + i.block_elements - 1) / i.block_elements * i.block_bytes;
}

namespace {

// The format whose element encoding is `t`'s.
WeightFormat same_encoding(DType t) {
  return t == DType::F32 ? WeightFormat::F32 : t == DType::F16 ? WeightFormat::F16 : WeightFormat::BF16;
}

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

}  // namespace

bool stored_as_is(WeightFormat f, DType src, uint64_t cols) {
  return same_encoding(src) == f && cols % info(f).block_elements == 0;
}

void pack_row(WeightFormat f, DType src_dtype, std::span<const std::byte> src, uint64_t cols,
              std::span<std::byte> out) {
  const uint64_t in_bytes = cols * dtype_bytes(src_dtype), out_bytes = stored_row_bytes(f, cols);
  if (src.size() != in_bytes || out.size() != out_bytes)
    throw Error("pack_row: a row of " + std::to_string(cols) + " " + to_string(src_dtype) + " elements as " +
                to_string(f) + " takes " + std::to_string(in_bytes) + " -> " + std::to_string(out_bytes) +
                " bytes, given " + std::to_string(src.size()) + " -> " + std::to_string(out.size()));
  if (same_encoding(src_dtype) == f) {
    std::memcpy(out.data(), src.data(), in_bytes);
    std::fill(out.begin() + ptrdiff_t(in_bytes), out.end(), std::byte{0});
    return;
  }
  const uint32_t sb = dtype_bytes(src_dtype);
  std::byte* dst = out.data();
  for (uint64_t c = 0; c < cols; ++c) {
    const float v = source_value(src_dtype, src.data() + c * sb);
    switch (f) {
      case WeightFormat::F32:
        std::memcpy(dst + 4 * c, &v, 4);
        break;
      case WeightFormat::F16:
      case WeightFormat::BF16: {
        const uint16_t h = f == WeightFormat::F16 ? half::from_float(v) : half::bf16_from_float(v);
        std::memcpy(dst + 2 * c, &h, 2);  // little-endian: element 2i in the low half of word i
        break;
      }
    }
  }
  const uint64_t used = cols * (info(f).block_bytes / info(f).block_elements);  // unquantized
  std::fill(out.begin() + ptrdiff_t(used), out.end(), std::byte{0});
}

}  // namespace wgfuse::gpu
