// WeightFormat: how a weight tensor is stored on the GPU; every tensor of a WeightArena has one.
// The kernels' contract (kernels/llm_weights.wgsl decodes it): a tensor is rows of `cols`
// elements, row-major; each row is a whole number of blocks (`block_elements` elements; padded
// with zero elements), stored in stored_row_bytes(cols) bytes, a multiple of 4 (16 for the
// unquantized formats). The kernels read a row in groups of 8 elements (weight_group()).
// A format is one enum value (its number is the WGSL constant WEIGHT_FORMAT), one row of info(),
// its row layout here and in the WGSL decode; the tuning rule reads its load width from info().
//
// Unquantized: blocks of 8 elements, f32 32 bytes, f16 and bf16 16 bytes (two elements per u32
// word, element 0 in the low half).
//
// Quantized (ggml's formats, gpu/ggml_blocks.h; block B = 32, or 256 for the K formats): a GGUF
// block is 18 to 210 bytes, not 4-byte aligned, so each row is repacked at load into planes of
// u32 words, one after the other, every plane in element order so that column group c8
// (elements 8 c8 .. 8 c8 + 7) is one or two whole words that consecutive lanes of a team read
// consecutively:
//   low    the low bits of each element's quant: 4 bits (element 8w + k in bits 4k of word w);
//          q8_0 the int8 quants, 4 per word
//   high   q5_*: each element's 5th bit (group c8 = byte c8); q6_K the 2 high bits (group c8 =
//          the 16 bits of half-word c8, element k at bits 2k)
//   sub    q4_K/q5_K: per sub-block of 32, a half-word (6-bit scale in the low byte, 6-bit min
//          in the high); q6_K: per sub-block of 16, an int8 scale
//   scale  q8_0/q4_0/q5_0/q6_K: per block an f16 d, two per word (block 2i in the low half);
//          q4_1/q5_1/q4_K/q5_K: per block a word of two f16, d low and m (dmin) high; q4_zp:
//          d low and the zero point z (an integer, as an f16) high
// then zeros to a whole word. Bytes per block: q8_0 34, q4_0 18, q4_1 20, q5_0 22, q5_1 24, q4_K
// 148, q5_K 180, q6_K 210, q4_zp 20 (GGUF: 34/18/20/22/24/144/176/210; the K formats' 6-bit
// scales are unpacked to bytes).
// q4_zp is not a ggml type: it holds the 4-bit groups of AWQ and GPTQ checkpoints
// (llm/hf_quant.h), x = d (q - z) with an f16 scale d and an integer zero point z per group, each
// group of 32 to 128 (or a whole row) cut into blocks of 32 that repeat its d and z. ggml's q4_1
// (x = d q + m with an f16 m) cannot hold them exactly: -d z is not an f16 in general. The decode of a group
// is a few word loads, shifts and one multiply-add per element in ggml's order of operations: bit for bit
// gpu/ggml_blocks.h's dequantization.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace wgfuse::gpu {

// What a source tensor's elements are (a file's dtype, ggml's block bytes for the quantized
// ones), the input of a packer.
// I32 is no weight: the packed integers of an AWQ or GPTQ checkpoint (llm/hf_quant.h), which
// become q4_zp rows before any loader sees them; no format stores it and no packer reads it.
enum class DType : uint8_t { F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q4_ZP, I32 };
struct DTypeInfo {
  const char* name;         // "f32", ..., "q8_0", ..., "q6_K" (ggml's names), "q4_zp"
  uint32_t block_elements;  // 1, or the quantization block (32, 256)
  uint32_t block_bytes;     // a block's bytes in the file
};
const DTypeInfo& info(DType t);
inline const char* to_string(DType t) {
  return info(t).name;
}
inline bool is_quantized(DType t) {
  return info(t).block_elements > 1;
}
// Bytes per element of an unquantized type; throws Error for a quantized one.
uint32_t dtype_bytes(DType t);
// Bytes of a source row of `cols` elements of `t`; throws Error when cols is not a whole number
// of t's blocks.
uint64_t source_row_bytes(DType t, uint64_t cols);

// The numbers are kernels/llm_weights.wgsl's WEIGHT_FORMAT values.
enum class WeightFormat : uint8_t {
  F32 = 0,
  F16 = 1,
  BF16 = 2,
  Q8_0 = 3,
  Q4_0 = 4,
  Q4_1 = 5,
  Q5_0 = 6,
  Q5_1 = 7,
  Q4_K = 8,
  Q5_K = 9,
  Q6_K = 10,
  Q4_ZP = 11,
};
inline constexpr WeightFormat kWeightFormats[] = {
    WeightFormat::F32,  WeightFormat::F16,  WeightFormat::BF16, WeightFormat::Q8_0,
    WeightFormat::Q4_0, WeightFormat::Q4_1, WeightFormat::Q5_0, WeightFormat::Q5_1,
    WeightFormat::Q4_K, WeightFormat::Q5_K, WeightFormat::Q6_K, WeightFormat::Q4_ZP};

struct WeightFormatInfo {
  const char* name;            // "f32", "f16", "bf16", "q8_0", ... "q6_k" (the --dtype values)
  uint32_t block_elements;     // the unit a row is padded to
  uint32_t block_bytes;        // a block's stored bytes (elements and scales; rows add padding)
  uint32_t elements_per_load;  // elements a lane reads per load (the kernels' load width): a
                               // 16-byte load of f16/bf16 8, of f32 4; quantized: a group of 8
  DType encoding;              // the source type stored without conversion (repacked)
};
const WeightFormatInfo& info(WeightFormat f);
inline const char* to_string(WeightFormat f) {
  return info(f).name;
}
inline bool is_quantized(WeightFormat f) {
  return is_quantized(info(f).encoding);
}
// A WeightFormat's name (case-insensitive); throws Error naming `what` (e.g. "--dtype") and the
// choices otherwise.
WeightFormat parse_weight_format(std::string_view s, std::string_view what);

// Bytes of one stored row of `cols` elements: whole blocks, in the layout above.
uint64_t stored_row_bytes(WeightFormat f, uint64_t cols);
// True when a row of `cols` source elements of `src` is stored byte for byte (same element
// encoding, no padding): a tensor in that layout can go to the GPU straight from its file.
bool stored_as_is(WeightFormat f, DType src, uint64_t cols);

// The packer: one row of `cols` source elements (`src`, source_row_bytes(src_dtype, cols) bytes)
// into its stored form `out` (stored_row_bytes(f, cols) bytes): a byte copy where the encodings
// agree, a lossless repack into planes where the quantized encodings agree, else each value
// converted through f32 (rounding to nearest even; quantized formats: gpu/ggml_blocks.h's
// quantizer, a quantized source dequantized first), zeros past cols. q4_0 and q5_0 blocks become
// q8_0 blocks exactly (same scale, the quants unbiased).
void pack_row(WeightFormat f, DType src_dtype, std::span<const std::byte> src, uint64_t cols,
              std::span<std::byte> out);

// What a row of f32 values reads back as once stored in f (pack_row from f32, then the kernels'
// decode): rounded to f16 or bf16, or quantized and dequantized (to f32: exact). For references.
void stored_values(WeightFormat f, std::span<float> row);

// The override constant that selects the decode in kernels/llm_weights.wgsl.
inline constexpr const char* kWeightFormatConstant = "WEIGHT_FORMAT";

}  // namespace wgfuse::gpu
