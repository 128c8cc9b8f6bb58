// util/half.h: exhaustive round trips, float -> half against an independent nearest-value search,
// bf16, packing, and WGSL's unpack2x16float / pack2x16float against the host conversion.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "gpu/recorder.h"
#include "support.h"
#include "util/error.h"
#include "util/half.h"

namespace wgfuse {
namespace {

bool is_nan_half(uint16_t h) {
  return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
}

// The 31,744 non-negative finite halves in increasing order of value (their bit patterns are
// already in that order), as doubles, plus 65536 standing for Inf: the value rounding goes to
// once past 65504, as if the exponent range went on.
struct HalfTable {
  std::vector<double> values;
  HalfTable() {
    for (uint32_t h = 0; h <= 0x7c00u; ++h) {
      // Each value straight from the definition: (-1)^s 2^(e-15) (1 + m/1024), subnormal 2^-14 m/1024.
      const uint32_t e = h >> 10, m = h & 0x3ffu;
      values.push_back(e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1.0 + m / 1024.0, int(e) - 15));
    }
  }
};
const HalfTable& table() {
  static const HalfTable t;
  return t;
}

// The half nearest to finite `f`, ties to the even bit pattern, found by search in the table: no
// shared code or bit tricks with the converter under test.
uint16_t nearest_half(float f) {
  const double a = std::abs(double(f));
  const uint16_t sign = std::signbit(f) ? 0x8000u : 0u;
  const auto& v = table().values;
  if (a >= v.back()) return sign | 0x7c00u;
  const size_t hi = size_t(std::lower_bound(v.begin(), v.end(), a) - v.begin());
  if (v[hi] == a) return uint16_t(sign | hi);
  const size_t lo = hi - 1;
  const double dlo = a - v[lo], dhi = v[hi] - a;
  const size_t pick = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
  return uint16_t(sign | pick);
}

// Test that every one of the 65,536 halves survives half -> float -> half, NaNs as NaNs of the
// same sign, and that the float has the value the definition gives.
TEST(Half, ExhaustiveRoundTrip) {
  const auto& v = table().values;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = half::to_float(uint16_t(h));
    const uint16_t back = half::from_float(f);
    if (is_nan_half(uint16_t(h))) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(is_nan_half(back)) << std::hex << h << " -> " << back;
      ASSERT_EQ(back & 0x8000u, h & 0x8000u) << std::hex << h;
      ASSERT_EQ(back & 0x1ffu, h & 0x1ffu) << "payload below the quiet bit kept, " << std::hex << h;
      continue;
    }
    ASSERT_EQ(back, h) << std::hex << h;
    const double want = (h & 0x8000u ? -1.0 : 1.0) * ((h & 0x7fffu) == 0x7c00u ? INFINITY : v[h & 0x7fffu]);
    ASSERT_EQ(double(f), want) << std::hex << h;
    ASSERT_EQ(std::signbit(f), bool(h & 0x8000u)) << std::hex << h;
  }
}

// Test float -> half against the nearest-value search on random floats over the whole float range
// and densely around the half range, and on the edge values by name.
TEST(Half, FromFloatMatchesNearestValue) {
  std::mt19937 rng(2026);
  size_t checked = 0;
  auto check = [&](float f) {
    if (std::isnan(f)) return;
    ASSERT_EQ(half::from_float(f), nearest_half(f))
        << "f = " << f << " bits " << std::hex << std::bit_cast<uint32_t>(f);
    ++checked;
  };
  for (int i = 0; i < 200'000; ++i) check(std::bit_cast<float>(uint32_t(rng())));  // any float
  std::uniform_int_distribution<uint32_t> near_halves(0x32000000u, 0x47900000u);   // 2^-27 .. 73728
  for (int i = 0; i < 400'000; ++i)
    check(std::bit_cast<float>(uint32_t(near_halves(rng) | (rng() & 0x80000000u))));
  // Every tie and its neighbours one float ulp away: halfway points between consecutive halves.
  const auto& v = table().values;
  for (size_t h = 0; h + 1 < v.size(); ++h) {
    const float mid = float((v[h] + v[h + 1]) / 2);  // exact: halves have 11 significant bits
    ASSERT_EQ(double(mid), (v[h] + v[h + 1]) / 2);
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) check(f), check(-f);
  }
  EXPECT_GT(checked, 690'000u);

  EXPECT_EQ(half::from_float(65504.0f), 0x7bffu);    // the largest half
  EXPECT_EQ(half::from_float(65519.996f), 0x7bffu);  // just below the tie
  EXPECT_EQ(half::from_float(65520.0f), 0x7c00u);    // the tie goes to Inf (even)
  EXPECT_EQ(half::from_float(-1e9f), 0xfc00u);       // overflow
  EXPECT_EQ(half::from_float(INFINITY), 0x7c00u);
  EXPECT_EQ(half::from_float(-INFINITY), 0xfc00u);
  EXPECT_EQ(half::from_float(std::ldexp(1.0f, -24)), 0x0001u);  // smallest subnormal
  EXPECT_EQ(half::from_float(std::ldexp(1.0f, -25)), 0x0000u);  // its half: tie to even 0
  EXPECT_EQ(half::from_float(std::ldexp(1.5f, -25)), 0x0001u);
  EXPECT_EQ(half::from_float(std::ldexp(3.0f, -25)), 0x0002u);             // 1.5 units: tie to even 2
  EXPECT_EQ(half::from_float(std::ldexp(1.0f, -14)), 0x0400u);             // smallest normal
  EXPECT_EQ(half::from_float(std::ldexp(1023.5f, -24)), 0x0400u);          // rounds up out of subnormals
  EXPECT_EQ(half::from_float(1.0f + std::ldexp(1.0f, -11)), 0x3c00u);      // tie, even is 1.0
  EXPECT_EQ(half::from_float(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02u);  // tie, even is up
  EXPECT_EQ(half::from_float(-0.0f), 0x8000u);
  EXPECT_EQ(half::from_float(std::numeric_limits<float>::denorm_min()), 0x0000u);
  EXPECT_EQ(half::from_float(-std::numeric_limits<float>::denorm_min()), 0x8000u);
  const uint16_t qnan = half::from_float(-std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(is_nan_half(qnan) && (qnan & 0x8000u) && (qnan & 0x200u)) << std::hex << qnan;
  const uint16_t snan = half::from_float(std::bit_cast<float>(0x7f800001u));  // payload only in low bits
  EXPECT_TRUE(is_nan_half(snan) && (snan & 0x200u))
      << "a signalling NaN stays NaN, made quiet: " << std::hex << snan;
}

// Test bf16 -> f32 (exact), f32 -> bf16 (nearest, ties to even) and bf16 -> f16 (one rounding).
TEST(Half, Bf16) {
  EXPECT_EQ(half::bf16_to_float(0x3f80u), 1.0f);
  EXPECT_EQ(half::bf16_to_float(0xc040u), -3.0f);
  EXPECT_EQ(half::bf16_from_float(1.0f + std::ldexp(1.0f, -8)), 0x3f80u);      // tie, even down
  EXPECT_EQ(half::bf16_from_float(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82u);  // tie, even up
  EXPECT_EQ(half::bf16_from_float(1.0f + std::ldexp(1.5f, -8)), 0x3f81u);
  EXPECT_TRUE(std::isnan(half::bf16_to_float(half::bf16_from_float(std::bit_cast<float>(0xff800001u)))));
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = half::bf16_to_float(uint16_t(b));
    if (std::isnan(f)) {
      ASSERT_TRUE(is_nan_half(half::from_bf16(uint16_t(b))));
      continue;
    }
    ASSERT_EQ(half::bf16_from_float(f), b) << std::hex << b;
    ASSERT_EQ(half::from_bf16(uint16_t(b)), nearest_half(f)) << std::hex << b;
  }
}

// Test packing: element 0 in the low bits, an odd count padded with a zero half, sizes checked.
TEST(Half, PackSpans) {
  const std::vector<float> in = {1.0f, -2.0f, 0.5f, 65504.0f, 3.0f};
  const auto words = half::pack(in);
  ASSERT_EQ(words.size(), 3u);
  EXPECT_EQ(words[0], 0xc0003c00u);
  EXPECT_EQ(words[1], 0x7bff3800u);
  EXPECT_EQ(words[2], 0x00004200u);
  EXPECT_EQ(half::unpack(words, in.size()), in);
  const std::vector<uint16_t> bf = {0x3f80u, 0xc000u, 0x3f00u};
  std::vector<uint32_t> out(2);
  half::pack_bf16(bf, out);
  EXPECT_EQ(out[0], 0xc0003c00u);
  EXPECT_EQ(out[1], 0x00003800u);
  std::vector<uint32_t> too_small(2);
  try {
    half::pack(in, too_small);
    FAIL() << "a short output was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("5 halves need 3 u32 words"), std::string::npos) << e.what();
  }
  EXPECT_THROW(half::unpack(words, 7), Error);
}

// ---- On the GPU ----

// Elementwise: out[i] = unpack2x16float(words[i]) as two floats; packed[i] = pack2x16float of
// floats 2i, 2i+1.
const char* kHalfWgsl = R"(
@group(0) @binding(0) var<storage, read> words: array<u32>;
@group(0) @binding(1) var<storage, read_write> unpacked: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> floats: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> packed: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.y * groups.x * 64u + gid.x;
  if (i < arrayLength(&words)) {
    unpacked[i] = unpack2x16float(words[i]);
  }
  if (i < arrayLength(&floats)) {
    packed[i] = pack2x16float(floats[i]);
  }
}
)";

struct GpuHalves {
  std::vector<float> unpacked;   // two per input word
  std::vector<uint32_t> packed;  // one per input float pair
};

GpuHalves run_on_gpu(const std::vector<uint32_t>& words, const std::vector<float>& floats) {
  auto& ctx = test::context();
  using gpu::BufferUsage;
  auto& k = ctx.kernel({"test.half", kHalfWgsl});
  auto w = ctx.upload<uint32_t>(words, BufferUsage::StorageIO, "words");
  auto u = ctx.buffer(words.size() * 8, BufferUsage::StorageIO, "unpacked");
  auto f = ctx.upload<float>(floats, BufferUsage::StorageIO, "floats");
  auto p = ctx.buffer(floats.size() * 2, BufferUsage::StorageIO, "packed");
  gpu::Recorder rec(ctx);
  const uint32_t groups = uint32_t((std::max(words.size(), floats.size() / 2) + 63) / 64);
  rec.dispatch(k, ctx.bind(k, {w, u, f, p}), std::min(groups, 1024u), (groups + 1023) / 1024);
  rec.submit();
  return {ctx.read<float>(u, 0, words.size() * 2), ctx.read<uint32_t>(p, 0, floats.size() / 2)};
}

// Test that WGSL's unpack2x16float reads every one of the 65,536 halves as the host does, element 0
// from the low bits. Required: normals, zeros and infinities exact. Allowed (WGSL lets a device
// flush subnormals and need not keep NaN payloads): a subnormal read as the exact value or as zero
// of either sign; a NaN read as anything. Both are counted and printed.
TEST(HalfGpu, Unpack2x16FloatMatchesHost) {
  std::vector<uint32_t> words(0x8000u);
  for (uint32_t i = 0; i < words.size(); ++i) words[i] = half::pack2(uint16_t(2 * i), uint16_t(2 * i + 1));
  std::reverse(words.begin(), words.end());  // the element order does not follow the word order by luck
  const auto got = run_on_gpu(words, {1.0f, 2.0f}).unpacked;
  size_t subnormal_exact = 0, subnormal_flushed = 0, nan_kept = 0, nans = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const uint16_t h = half::element(words[i / 2], unsigned(i % 2));
    const float want = half::to_float(h), g = got[i];
    if (is_nan_half(h)) {
      ++nans;
      nan_kept += std::isnan(g);
      continue;
    }
    if ((h & 0x7c00u) == 0 && (h & 0x3ffu) != 0) {
      const bool exact = std::bit_cast<uint32_t>(g) == std::bit_cast<uint32_t>(want);
      ASSERT_TRUE(exact || g == 0.0f) << "half " << std::hex << h << " read as " << g;
      (exact ? subnormal_exact : subnormal_flushed)++;
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(g), std::bit_cast<uint32_t>(want))
        << "half " << std::hex << h << ": gpu " << g << ", host " << want;
  }
  std::printf("unpack2x16float on %s: subnormals %zu exact, %zu flushed; NaNs %zu of %zu still NaN\n",
              test::context().adapter().device.c_str(), subnormal_exact, subnormal_flushed, nan_kept, nans);
  EXPECT_EQ(subnormal_exact + subnormal_flushed, 2u * 1023u);
}

// Test that pack2x16float agrees with the host conversion. Required: every finite half value
// (as a float) packs to itself (subnormals may flush to a zero of the same sign); random floats in
// the normal half range pack to the host's nearest half or its neighbour, as WGSL allows either
// rounding direction; the fraction that round to nearest is printed. Out-of-range floats are
// indeterminate in WGSL and not sent.
TEST(HalfGpu, Pack2x16FloatMatchesHost) {
  std::vector<float> floats;
  for (uint32_t h = 0; h < 0x10000u; ++h)
    if ((h & 0x7c00u) != 0x7c00u) floats.push_back(half::to_float(uint16_t(h)));
  const size_t exact_count = floats.size();
  std::mt19937 rng(77);
  std::uniform_int_distribution<uint32_t> normal_range(0x38800000u, 0x477fe000u);  // 2^-14 .. 65504
  while (floats.size() < exact_count + 100'000)
    floats.push_back(std::bit_cast<float>(uint32_t(normal_range(rng) | (rng() & 0x80000000u))));
  std::shuffle(floats.begin() + 1, floats.end(), rng);
  const auto got = run_on_gpu({1u}, floats).packed;
  size_t nearest = 0, inexact = 0, flushed = 0;
  for (size_t i = 0; i < floats.size(); ++i) {
    const float f = floats[i];
    const uint16_t g = half::element(got[i / 2], unsigned(i % 2)), want = half::from_float(f);
    if (half::to_float(want) == f) {
      const bool subnormal = (want & 0x7c00u) == 0 && (want & 0x3ffu) != 0;
      if (subnormal && g == (want & 0x8000u)) {
        ++flushed;
        continue;
      }
      ASSERT_EQ(g, want) << "float " << f << " is a half; gpu gave " << std::hex << g;
      continue;
    }
    ++inexact;
    ASSERT_EQ(g & 0x8000u, want & 0x8000u) << f;
    ASSERT_LE(std::abs(int(g & 0x7fffu) - int(want & 0x7fffu)), 1)
        << "float " << f << ": gpu " << std::hex << g << ", nearest " << want;
    nearest += g == want;
  }
  std::printf("pack2x16float on %s: %zu of %zu inexact floats rounded to nearest; %zu subnormals flushed\n",
              test::context().adapter().device.c_str(), nearest, inexact, flushed);
  EXPECT_GT(inexact, 90'000u);
}

}  // namespace
}  // namespace wgfuse
