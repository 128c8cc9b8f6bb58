// The quantized weight formats (gpu/ggml_blocks.h, gpu/weight_format.h): ggml's block bytes read
// as its definitions say (hand-made blocks, one per format), the quantizer's error within a step,
// the row sizes and errors, and the GPU decode (kernels/llm_weights.wgsl, through the embedding
// gather, which writes the decoded weights out) bit for bit equal to the CPU dequantizer on odd
// shapes and random blocks.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/ggml_blocks.h"
#include "gpu/plan.h"
#include "gpu/recorder.h"
#include "gpu/weight_format.h"
#include "llm/decode_kernels.h"
#include "llm_support.h"
#include "support.h"
#include "util/error.h"
#include "util/half.h"

namespace wgfuse {
namespace {

using gpu::DType;
using gpu::WeightFormat;
using test::context;

const std::vector<WeightFormat> kQuantized = test::quantized_formats();

// A block of `t` from explicit bytes (the rest zero).
std::vector<std::byte> block(DType t, std::initializer_list<std::pair<uint32_t, uint8_t>> bytes) {
  std::vector<std::byte> b(gpu::info(t).block_bytes);
  for (auto [at, v] : bytes) b.at(at) = std::byte(v);
  return b;
}

std::vector<double> values(DType t, const std::vector<std::byte>& b) {
  return gpu::dequantize_row(t, b, gpu::info(t).block_elements);
}

// Test each format's byte layout on a hand-made block, values worked out from ggml's
// dequantize_row_* (f16: 0x3c00 = 1, 0x3800 = 0.5, 0x4000 = 2, 0xbc00 = -1).
TEST(GgmlBlocks, HandMadeBlocksDecodeAsGgmlDefinesThem) {
  {  // q8_0: d, qs[32] int8
    auto v = values(DType::Q8_0, block(DType::Q8_0, {{0, 0x00}, {1, 0x38}, {2, 0x81}, {33, 0x05}}));
    EXPECT_EQ(v[0], -63.5);
    EXPECT_EQ(v[31], 2.5);
  }
  {  // q4_0: element j the low nibble of qs[j], j + 16 the high; d (q - 8)
    auto v = values(DType::Q4_0, block(DType::Q4_0, {{1, 0x40}, {2, 0x1f}}));
    EXPECT_EQ(v[0], 14);
    EXPECT_EQ(v[16], -14);
    EXPECT_EQ(v[1], -16);
  }
  {  // q4_1: d, m, qs; d q + m
    auto v = values(DType::Q4_1, block(DType::Q4_1, {{1, 0x3c}, {3, 0xbc}, {4 + 3, 0xa5}}));
    EXPECT_EQ(v[3], 4);
    EXPECT_EQ(v[19], 9);
    EXPECT_EQ(v[0], -1);
  }
  {  // q5_0: d, qh (bit i: element i's 5th bit), qs; d (q - 16)
    auto v = values(DType::Q5_0, block(DType::Q5_0, {{1, 0x3c}, {2, 0x01}, {4, 0x02}, {6 + 1, 0x30}}));
    EXPECT_EQ(v[0], 0);
    EXPECT_EQ(v[16], -16);
    EXPECT_EQ(v[1], -16);
    EXPECT_EQ(v[17], 3);
  }
  {  // q5_1: d, m, qh, qs; d q + m
    auto v = values(DType::Q5_1, block(DType::Q5_1, {{1, 0x3c}, {7, 0x80}, {8 + 15, 0x70}}));
    EXPECT_EQ(v[31], 23);
    EXPECT_EQ(v[15], 0);
  }
  // q4_K: d = 1, dmin = 0.5; sub-block 0: sc 3, m 2; sub-block 5: sc 42 = 0b10'1010, m 21 =
  // 0b01'0101 (low 4 bits in scales[9], high 2 bits in the top of scales[1] and scales[5]).
  const std::initializer_list<std::pair<uint32_t, uint8_t>> k_scales = {
      {1, 0x3c}, {3, 0x38}, {4 + 0, 3}, {4 + 4, 2}, {4 + 9, 0x5a}, {4 + 1, 0x80}, {4 + 5, 0x40}};
  {
    auto b = block(DType::Q4_K, k_scales);
    b[16 + 0] = std::byte{0x07};   // element 0: low nibble of qs[0]
    b[16 + 64] = std::byte{0x90};  // element 160: 32 (160 / 64) + 0 = qs[64], high nibble
    auto v = values(DType::Q4_K, b);
    EXPECT_EQ(v[0], 3 * 7 - 0.5 * 2);
    EXPECT_EQ(v[160], 42 * 9 - 0.5 * 21);
    EXPECT_EQ(v[32], 0);  // sub-block 1: sc and m are the low 6 bits of scales[1], scales[5]: 0
  }
  {  // q5_K: as q4_K, qh at 16 (element i: bit i / 32 of qh[i % 32]), qs at 48
    auto b = block(DType::Q5_K, k_scales);
    b[16 + 0] = std::byte{0x01};
    b[48 + 0] = std::byte{0x07};
    auto v = values(DType::Q5_K, b);
    EXPECT_EQ(v[0], 3 * 23 - 0.5 * 2);
    EXPECT_EQ(v[160], 42 * 0 - 0.5 * 21);
  }
  {  // q6_K: ql[128], qh[64], scales[16] int8 at 192, d at 208; d sc (q - 32)
    auto v = values(DType::Q6_K, block(DType::Q6_K, {{209, 0x3c},
                                                     {192, 2},
                                                     {201, 0xfd},  // scales[9] = -3
                                                     {207, 1},
                                                     {0, 0x05},
                                                     {128, 0x02},  // element 0: 5 | 2 << 4
                                                     {86, 0x0f},
                                                     {128 + 54, 0x01},  // element 150
                                                     {127, 0xc0},
                                                     {128 + 63, 0xc0}}));  // element 255
    EXPECT_EQ(v[0], 2 * (37 - 32));
    EXPECT_EQ(v[150], -3 * (31 - 32));
    EXPECT_EQ(v[255], 1 * (60 - 32));
    EXPECT_EQ(v[1], 2 * (0 - 32));
  }
  {  // q4_zp (wgfuse's, for AWQ and GPTQ): d, the zero point's byte, a zero byte, qs as q4_0;
     // d (q - z)
    auto v = values(DType::Q4_ZP, block(DType::Q4_ZP, {{1, 0x38}, {2, 3}, {4 + 0, 0xa5}, {4 + 15, 0x0e}}));
    EXPECT_EQ(v[0], 0.5 * (5 - 3));
    EXPECT_EQ(v[16], 0.5 * (10 - 3));
    EXPECT_EQ(v[15], 0.5 * (14 - 3));
    EXPECT_EQ(v[1], 0.5 * (0 - 3));
  }
}

// Random block bytes with scales of either sign, magnitudes 2^-10 .. 2 (normal halves): every
// quant bit pattern, ggml's layout.
std::vector<std::byte> random_blocks(DType t, uint64_t blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> exponent(-10.0f, 1.0f);
  auto scale = [&](std::mt19937& r) { return (r() % 2 ? -1.0f : 1.0f) * std::exp2(exponent(r)); };
  const uint32_t bb = gpu::info(t).block_bytes;
  std::vector<std::byte> bytes(blocks * bb);
  for (auto& b : bytes) b = std::byte(rng());
  for (uint64_t k = 0; k < blocks; ++k) {
    gpu::QuantBlock q = gpu::decode_block(t, &bytes[k * bb]);
    q.d = half::from_float(scale(rng));
    q.m = half::from_float(scale(rng));
    gpu::encode_block(t, q, &bytes[k * bb]);
  }
  return bytes;
}

// Test that encode_block inverts decode_block byte for byte on random blocks of every format.
TEST(GgmlBlocks, EncodeInvertsDecode) {
  for (WeightFormat f : kQuantized) {
    const DType t = gpu::info(f).encoding;
    const auto bytes = random_blocks(t, 5, 1);
    const uint32_t bb = gpu::info(t).block_bytes;
    std::vector<std::byte> again(bytes.size());
    for (uint32_t k = 0; k < 5; ++k)
      gpu::encode_block(t, gpu::decode_block(t, &bytes[k * bb]), &again[k * bb]);
    EXPECT_EQ(again, bytes) << gpu::to_string(t);
  }
}

// Test the quantizer: each value within 1.5 steps of its block's range / levels (half a step of
// rounding; a step more where a value past the scale's extreme is clamped or a K format's 6-bit
// sub-block scale is rounded), on random rows whose blocks differ in magnitude.
TEST(GgmlBlocks, QuantizerRoundsToNearest) {
  for (WeightFormat f : kQuantized) {
    const DType t = gpu::info(f).encoding;
    const uint32_t n = gpu::info(t).block_elements, cols = 2 * 256;
    auto x = test::random_floats(cols, 3, -1.0f, 1.0f);
    for (uint32_t i = 0; i < cols; ++i) x[i] *= float(1 + (i / n) * 3);
    std::vector<std::byte> bytes(gpu::source_row_bytes(t, cols));
    gpu::quantize_row(t, x, bytes);
    const auto y = gpu::dequantize_row(t, bytes, cols);
    double levels = 31;  // q5_*
    if (t == DType::Q8_0) levels = 254;
    if (t == DType::Q4_0 || t == DType::Q4_1 || t == DType::Q4_K || t == DType::Q4_ZP) levels = 15;
    if (t == DType::Q6_K) levels = 63;
    for (uint32_t k = 0; k < cols / n; ++k) {
      double lo = 0, hi = 0;
      for (uint32_t i = k * n; i < (k + 1) * n; ++i)
        lo = std::min<double>(lo, x[i]), hi = std::max<double>(hi, x[i]);
      const double tol = 1.5 * (hi - lo) / levels;
      for (uint32_t i = k * n; i < (k + 1) * n; ++i)
        ASSERT_LE(std::abs(y[i] - x[i]), tol) << gpu::to_string(t) << " element " << i;
    }
  }
}

// Test the row sizes: GGUF's bytes per block, the stored planes' bytes (a whole number of words,
// per block as weight_format.h says), and the error for a row that is not whole blocks.
TEST(WeightFormats, RowBytes) {
  // In kWeightFormats' order: q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K, q4_zp.
  const uint32_t gguf[] = {34, 18, 20, 22, 24, 144, 176, 210, 20},
                 stored[] = {34, 18, 20, 22, 24, 148, 180, 210, 20};
  for (size_t i = 0; i < std::size(kQuantized); ++i) {
    const WeightFormat f = kQuantized[i];
    const DType t = gpu::info(f).encoding;
    EXPECT_EQ(gpu::source_row_bytes(t, 1024), 1024 / gpu::info(t).block_elements * gguf[i])
        << gpu::to_string(t);
    EXPECT_EQ(gpu::stored_row_bytes(f, 1024), 1024 / gpu::info(f).block_elements * stored[i])
        << gpu::to_string(f);
    EXPECT_EQ(gpu::stored_row_bytes(f, 1) % 4, 0u);
    EXPECT_EQ(gpu::parse_weight_format(gpu::to_string(f), "--dtype"), f);
  }
  EXPECT_EQ(gpu::parse_weight_format("Q4_K", "--dtype"), WeightFormat::Q4_K);
  try {
    gpu::source_row_bytes(DType::Q4_K, 896);
    FAIL() << "a row of 896 q4_K elements was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 256"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gpu::parse_weight_format("q3_k", "--dtype"), Error);
}

// Test the GPU decode of every quantized format bit for bit against the CPU dequantizer: 37 rows
// of random blocks (cols a whole number of blocks, not of 1024), repacked from ggml's bytes as a
// GGUF tensor is, gathered by the embedding kernel (which writes the decoded row out).
TEST(WeightFormats, GpuDecodeEqualsTheDequantizerBitForBit) {
  const uint32_t rows = 37;
  for (WeightFormat f : kQuantized) {
    SCOPED_TRACE(gpu::to_string(f));
    const DType t = gpu::info(f).encoding;
    const uint32_t cols = gpu::info(t).block_elements == 32 ? 11 * 32 : 3 * 256;
    const uint64_t sb = gpu::source_row_bytes(t, cols);
    const auto bytes = random_blocks(t, rows * cols / gpu::info(t).block_elements, 7);
    gpu::WeightArena arena(context(), {.label = "test.quantized"});
    const auto id = arena.add("w", rows, cols, f);
    arena.allocate();
    arena.upload([&](gpu::WeightArena::TensorId, uint64_t first, uint64_t count, std::span<std::byte> out) {
      const uint64_t rb = arena.view(id).row_bytes;
      for (uint64_t r = first; r < first + count; ++r)
        gpu::pack_row(f, t, std::span(bytes).subspan(r * sb, sb), cols, out.subspan((r - first) * rb, rb));
    });
    std::vector<uint32_t> ids(rows);
    for (uint32_t r = 0; r < rows; ++r) ids[r] = r;
    const uint32_t state[4] = {0, 0, rows, 0};
    const std::vector<float> nan(size_t(rows) * cols, std::numeric_limits<float>::quiet_NaN());
    auto x = context().upload<float>(nan, gpu::BufferUsage::StorageIO, "x");
    llm::DecodeKernels k(context());
    gpu::Plan plan(context(), "test.decode");
    plan.dispatch(
        k.embed(arena.view(id), context().upload<uint32_t>(ids, gpu::BufferUsage::Storage, "tokens"),
                context().upload<uint32_t>(state, gpu::BufferUsage::Storage, "state"), x, cols, rows));
    gpu::Recorder rec(context());
    plan.encode(rec);
    rec.submit();
    const auto got = context().read_all<float>(x);
    uint32_t wrong = 0;
    for (uint32_t r = 0; r < rows; ++r) {
      const auto want = gpu::dequantize_row(t, std::span(bytes).subspan(r * sb, sb), cols);
      for (uint32_t c = 0; c < cols; ++c) {
        const float g = got[size_t(r) * cols + c], w = float(want[c]);
        if (std::bit_cast<uint32_t>(g) != std::bit_cast<uint32_t>(w) && wrong++ < 5)
          ADD_FAILURE() << "row " << r << " col " << c << ": gpu " << g << ", cpu " << w;
      }
    }
    EXPECT_EQ(wrong, 0u);
  }
}

// Test the other packer paths: a quantized row to f32 (dequantized), and a float row of cols not
// a whole block to a quantized format: the quantizer's blocks of the row padded with zeros.
TEST(WeightFormats, PackerConvertsAndPads) {
  const uint32_t cols = 64;
  const auto q = random_blocks(DType::Q5_1, 2, 9);
  std::vector<std::byte> out(gpu::stored_row_bytes(WeightFormat::F32, cols));
  gpu::pack_row(WeightFormat::F32, DType::Q5_1, q, cols, out);
  const auto want = gpu::dequantize_row(DType::Q5_1, q, cols);
  for (uint32_t c = 0; c < cols; ++c) {
    float v;
    std::memcpy(&v, &out[4 * c], 4);
    EXPECT_EQ(v, float(want[c]));
  }
  const auto x = test::random_floats(50, 10, -1, 1);
  std::vector<std::byte> packed(gpu::stored_row_bytes(WeightFormat::Q8_0, 50));
  gpu::pack_row(WeightFormat::Q8_0, DType::F32, std::as_bytes(std::span(x)), 50, packed);
  EXPECT_EQ(packed.size(), 68u);  // 2 blocks: 16 words of quants, 1 of two f16 scales
  std::vector<float> padded = x;
  padded.resize(64, 0.0f);
  std::vector<std::byte> ggml(gpu::source_row_bytes(DType::Q8_0, 64)), repacked(packed.size());
  gpu::quantize_row(DType::Q8_0, padded, ggml);
  gpu::pack_row(WeightFormat::Q8_0, DType::Q8_0, ggml, 64, repacked);
  EXPECT_EQ(packed, repacked);
  EXPECT_THROW(gpu::pack_row(WeightFormat::Q4_K, DType::Q4_K, q, 896, out), Error);
}

// Test that q4_0 and q5_0 rows stored as q8_0 (a fused matrix of q5_0 and q8_0 sources, as
// llama-quantize's Qwen2.5-0.5B Q4_K_M has) keep their values exactly: the same scale, the quants
// unbiased, bytes equal to packing the equivalent q8_0 blocks.
TEST(WeightFormats, Q4_0AndQ5_0WidenToQ8_0Exactly) {
  const uint32_t cols = 96;
  for (DType src : {DType::Q4_0, DType::Q5_0}) {
    SCOPED_TRACE(gpu::to_string(src));
    const auto x = test::random_floats(cols, 11, -1, 1);
    std::vector<std::byte> row(gpu::source_row_bytes(src, cols)),
        q8(gpu::source_row_bytes(DType::Q8_0, cols));
    gpu::quantize_row(src, x, row);
    const int bias = src == DType::Q4_0 ? 8 : 16;
    for (uint32_t k = 0; k < cols / 32; ++k) {
      gpu::QuantBlock b = gpu::decode_block(src, &row[k * gpu::info(src).block_bytes]);
      for (uint32_t j = 0; j < 32; ++j) b.q[j] = uint8_t(int8_t(int(b.q[j]) - bias));
      gpu::encode_block(DType::Q8_0, b, &q8[k * 34]);
    }
    EXPECT_EQ(gpu::dequantize_row(DType::Q8_0, q8, cols), gpu::dequantize_row(src, row, cols));
    std::vector<std::byte> widened(gpu::stored_row_bytes(WeightFormat::Q8_0, cols)), want(widened.size());
    gpu::pack_row(WeightFormat::Q8_0, src, row, cols, widened);
    gpu::pack_row(WeightFormat::Q8_0, DType::Q8_0, q8, cols, want);
    EXPECT_EQ(widened, want);
  }
}

}  // namespace
}  // namespace wgfuse
