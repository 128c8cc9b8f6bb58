// IEEE 754 binary16 ("half") and bfloat16 on the host, for f16 storage without shader-f16: the
// pinned Dawn offers no `enable f16;`, so f16 tensors live on the GPU as u32 words of two halves
// and kernels convert with WGSL's unpack2x16float / pack2x16float (f32 arithmetic).
//
// Conversions round to nearest, ties to even; overflow gives Inf; subnormals are produced and read
// both ways; NaN stays NaN with its sign and top payload bits, made quiet. bf16 -> f32 is exact,
// so bf16 -> f16 rounds once.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "util/error.h"

namespace wgfuse::half {

// The bits of the half nearest to `f`.
constexpr uint16_t from_float(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN, quiet
  // 65520 = 0x477ff000 is halfway between 65504 (the largest half, odd mantissa) and 65536: ties
  // to even, i.e. to Inf; everything above too.
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);
  if (abs >= 0x38800000u) {  // a normal half (>= 2^-14): drop 13 mantissa bits, ties to even
    const uint32_t odd = (abs >> 13) & 1u;
    const uint32_t rounded = abs + 0xfffu + odd - ((127u - 15u) << 23);  // a carry moves the exponent up
    return uint16_t(sign | (rounded >> 13));
  }
  // A subnormal half counts units of 2^-24; a float with biased exponent e and 24-bit significand
  // m is m * 2^(e - 150) = (m >> (126 - e)) units. Below 2^-25 (e < 102) even rounding up is 0.
  const uint32_t e = abs >> 23;
  if (e < 102u) return uint16_t(sign);
  const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14 .. 24
  uint32_t units = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (units & 1u))) ++units;  // may reach 0x400: 2^-14, fine
  return uint16_t(sign | units);
}

// The float equal to half `h` (always exact).
constexpr float to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // Inf, NaN
  if (exp != 0u) return std::bit_cast<float>(sign | ((exp + 127u - 15u) << 23) | (mant << 13));
  if (mant == 0u) return std::bit_cast<float>(sign);
  // Subnormal: mant * 2^-24; normalise so the leading 1 sits at bit 10.
  uint32_t e = 127u - 15u + 1u;
  while (!(mant & 0x400u)) {
    mant <<= 1;
    --e;
  }
  return std::bit_cast<float>(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

// bfloat16: the top 16 bits of a float.
constexpr float bf16_to_float(uint16_t b) {
  return std::bit_cast<float>(uint32_t(b) << 16);
}

constexpr uint16_t bf16_from_float(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // NaN, quiet
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);                  // ties to even
}

constexpr uint16_t from_bf16(uint16_t b) {
  return from_float(bf16_to_float(b));
}

// Two halves in one u32 as WGSL's unpack2x16float reads them: element 0 in the low 16 bits.
constexpr uint32_t pack2(uint16_t element0, uint16_t element1) {
  return uint32_t(element0) | (uint32_t(element1) << 16);
}
constexpr uint16_t element(uint32_t word, unsigned index) {
  return uint16_t(word >> (16 * (index & 1)));
}

// Words needed for `count` halves (an odd count is padded with a zero half).
constexpr size_t words_for(size_t count) {
  return (count + 1) / 2;
}

namespace detail {
inline void check_words(size_t count, size_t words, const char* what) {
  if (words != words_for(count))
    throw Error(std::string(what) + ": " + std::to_string(count) + " halves need " +
                std::to_string(words_for(count)) + " u32 words, the output has " + std::to_string(words));
}
template <typename T, typename Convert>
void pack_with(std::span<const T> in, std::span<uint32_t> out, Convert convert, const char* what) {
  check_words(in.size(), out.size(), what);
  const size_t pairs = in.size() / 2;
  for (size_t i = 0; i < pairs; ++i) out[i] = pack2(convert(in[2 * i]), convert(in[2 * i + 1]));
  if (in.size() % 2) out[pairs] = pack2(convert(in.back()), 0);
}
}  // namespace detail

// Floats -> packed halves, rounding each; `out` must hold words_for(in.size()) words.
inline void pack(std::span<const float> in, std::span<uint32_t> out) {
  detail::pack_with(in, out, from_float, "half::pack");
}
inline std::vector<uint32_t> pack(std::span<const float> in) {
  std::vector<uint32_t> out(words_for(in.size()));
  pack(in, out);
  return out;
}
// bf16 bits -> packed halves (one rounding).
inline void pack_bf16(std::span<const uint16_t> in, std::span<uint32_t> out) {
  detail::pack_with(in, out, from_bf16, "half::pack_bf16");
}
// Packed halves -> `count` floats (exact).
inline std::vector<float> unpack(std::span<const uint32_t> words, size_t count) {
  if (words_for(count) > words.size())
    throw Error("half::unpack: " + std::to_string(count) + " halves need " +
                std::to_string(words_for(count)) + " u32 words, the input has " +
                std::to_string(words.size()));
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = to_float(element(words[i / 2], unsigned(i % 2)));
  return out;
}

}  // namespace wgfuse::half
