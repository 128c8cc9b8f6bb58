// ggml's quantized block formats (the tensor types of GGUF files), byte for byte as ggml-common.h
// lays them out, and their meaning as ggml-quants.c's dequantize_row_* defines it:
//   q8_0  32 elements, 34 bytes:  d (f16), qs[32] int8                    x = d q
//   q4_0  32 elements, 18 bytes:  d, qs[16] (element j low nibble of qs[j], j + 16 the high)
//                                                                          x = d (q - 8)
//   q4_1  32 elements, 20 bytes:  d, m (f16), qs[16] as q4_0               x = d q + m
//   q5_0  32 elements, 22 bytes:  d, qh[4] (bit i: element i's 5th bit), qs[16] as q4_0
//                                                                          x = d (q - 16)
//   q5_1  32 elements, 24 bytes:  d, m, qh[4], qs[16]                      x = d q + m
//   q4_K  256 elements, 144 bytes: d, dmin (f16), scales[12] (8 pairs of 6-bit sub-block scale
//         sc and min m, get_scale_min_k4's packing), qs[128] (each 64 elements: 32 bytes, low
//         nibbles the first 32, high the next)         x = d sc[i / 32] q - dmin m[i / 32]
//   q5_K  256 elements, 176 bytes: d, dmin, scales[12], qh[32] (element i: bit i / 32 of
//         qh[i % 32]), qs[128] as q4_K                  as q4_K with 5-bit q
//   q6_K  256 elements, 210 bytes: ql[128], qh[64], scales[16] int8, d (f16); per 128
//         elements (l < 32, quarter t < 4): low nibble of ql[l + 32 (t % 2)] (high nibble when
//         t >= 2), 2 high bits at bits 2t of qh[l]        x = d sc[i / 16] (q - 32)
//   q4_zp 32 elements, 20 bytes: d (f16), z (u8), a zero byte, qs[16] as q4_0
//                                                                          x = d (q - z)
//         (wgfuse's own, not ggml's: AWQ's and GPTQ's groups, weight_format.h)
// Every product of a format's definition is exact in double (and in f32 up to the last
// operation), so the dequantized value rounded to f32 is what any f32 decode that follows the
// definition's order of operations gets, bit for bit.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace wgfuse::gpu {

enum class DType : uint8_t;

// One block's parts, unpacked: the per-element integer quants (as stored: unsigned, biased; q8_0
// holds the int8's bits) and the scales.
struct QuantBlock {
  std::array<uint8_t, 256> q{};
  uint16_t d = 0, m = 0;         // f16 bits: the scale, and the min (q4_1, q5_1) or dmin (q4_K, q5_K);
                                 // q4_zp: m is the zero point (an integer below 256)
  std::array<uint8_t, 16> sc{};  // sub-block scales: q4_K/q5_K 8 of 6 bits, q6_K 16 int8 (bits)
  std::array<uint8_t, 8> mn{};   // q4_K/q5_K sub-block mins (6 bits)
};

// ggml block bytes of type `t` <-> parts (t quantized).
QuantBlock decode_block(DType t, const std::byte* block);
void encode_block(DType t, const QuantBlock& b, std::byte* block);
// Element i of a block, by the format's definition, in double.
double block_value(DType t, const QuantBlock& b, uint32_t i);

// The quantizer (tests, test files and --dtype q8_0 etc. at load): one block of values
// (block_elements of t) rounded to nearest with per-block (and per-sub-block) scales from the
// values' range; no scale search.
QuantBlock quantize_block(DType t, std::span<const float> x);

// A row of `cols` elements (a multiple of t's block) as ggml bytes, and back in double.
void quantize_row(DType t, std::span<const float> x, std::span<std::byte> out);
std::vector<double> dequantize_row(DType t, std::span<const std::byte> row, uint64_t cols);

}  // namespace wgfuse::gpu
