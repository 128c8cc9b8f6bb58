// WeightFormat: how a weight tensor is stored on the GPU; every tensor of a WeightArena has one.
// The kernels' contract (kernels/llm_weights.wgsl decodes it): a tensor is rows of `cols`
// elements, row-major; each row is a whole number of blocks, padded with zero elements; a block is
// `block_elements` elements in `block_bytes` bytes. The unquantized formats have blocks of 8
// elements (the kernels read a row in groups of 8): f32 32 bytes, f16 and bf16 16 bytes (two
// elements per u32 word, element 0 in the low half). A format is one enum value (its number is
// the WGSL constant WEIGHT_FORMAT), one row of info(), one case of pack_row() and one case of the
// WGSL decode; the tuning rule reads its load width from info().
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace wgfuse::gpu {

// What a source tensor's elements are (a file's dtype), the input of a packer.
enum class DType : uint8_t { F32, F16, BF16 };
const char* to_string(DType t);
uint32_t dtype_bytes(DType t);

// The numbers are kernels/llm_weights.wgsl's WEIGHT_FORMAT values.
enum class WeightFormat : uint8_t { F32 = 0, F16 = 1, BF16 = 2 };

struct WeightFormatInfo {
  const char* name;            // "f32", "f16", "bf16" (the --dtype values)
  uint32_t block_elements;     // the unit a row is padded to
  uint32_t block_bytes;        // a block's stored bytes (elements and any scales)
  uint32_t elements_per_load;  // elements one 16-byte load brings (the kernels' load width)
};
const WeightFormatInfo& info(WeightFormat f);
inline const char* to_string(WeightFormat f) {
  return info(f).name;
}
// "f32" | "f16" | "bf16"; throws Error naming `what` (e.g. "--dtype") and the choices otherwise.
WeightFormat parse_weight_format(std::string_view s, std::string_view what);

// Bytes of one stored row of `cols` elements: whole blocks.
uint64_t stored_row_bytes(WeightFormat f, uint64_t cols);
// True when a row of `cols` source elements of `src` is stored byte for byte (same element
// encoding, no padding): a tensor in that layout can go to the GPU straight from its file.
bool stored_as_is(WeightFormat f, DType src, uint64_t cols);

// The packer: one row of `cols` source elements (`src`, cols * dtype_bytes(src_dtype) bytes) into
// its stored form `out` (stored_row_bytes(f, cols) bytes): a byte copy where the encodings
// agree, else each value converted (through f32, rounding to nearest even), zeros past cols.
void pack_row(WeightFormat f, DType src_dtype, std::span<const std::byte> src, uint64_t cols,
              std::span<std::byte> out);

// The override constant that selects the decode in kernels/llm_weights.wgsl.
inline constexpr const char* kWeightFormatConstant = "WEIGHT_FORMAT";

}  // namespace wgfuse::gpu
