#include "gpu/ggml_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "gpu/weight_format.h"
#include "util/error.h"
#include "util/half.h"

namespace wgfuse::gpu {
namespace {

uint16_t get16(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
void put16(std::byte* p, uint16_t v) {
  std::memcpy(p, &v, 2);
}
uint8_t byte_at(const std::byte* p, size_t i) {
  return uint8_t(p[i]);
}
double f16(uint16_t bits) {
  return half::to_float(bits);
}

// Offsets of a block's parts in ggml's structs.
struct Layout {
  uint32_t d, m, qh, qs, scales;
};
Layout layout(DType t) {
  switch (t) {
    case DType::Q8_0:
    case DType::Q4_0:
      return {0, 0, 0, 2, 0};
    case DType::Q4_1:
      return {0, 2, 0, 4, 0};
    case DType::Q5_0:
      return {0, 0, 2, 6, 0};
    case DType::Q5_1:
      return {0, 2, 4, 8, 0};
    case DType::Q4_ZP:
      return {0, 2, 0, 4, 0};  // m: the zero point's byte
    case DType::Q4_K:
      return {0, 2, 0, 16, 4};
    case DType::Q5_K:
      return {0, 2, 16, 48, 4};
    case DType::Q6_K:
      return {208, 0, 128, 0, 192};  // qs: ql at 0, qh at 128
    default:
      throw Error(std::string("ggml block: ") + to_string(t) + " is not a quantized type");
  }
}

// Q6_K: element i's low-nibble byte in ql, which nibble, and its high-bit byte in qh and shift.
struct Q6Place {
  uint32_t ql, nibble, qh, shift;
};
Q6Place q6_place(uint32_t i) {
  const uint32_t half = i / 128, l = i % 32, t = (i % 128) / 32;
  return {64 * half + l + 32 * (t % 2), t / 2, 32 * half + l, 2 * t};
}

// Q4_K/Q5_K: element i's byte in qs and nibble (each 64 elements: 32 bytes, low nibbles first).
uint32_t k_qs(uint32_t i) {
  return 32 * (i / 64) + i % 32;
}

int round_clamp(double v, int lo, int hi) {
  return std::clamp(int(std::lround(v)), lo, hi);
}

}  // namespace

QuantBlock decode_block(DType t, const std::byte* p) {
  const Layout L = layout(t);
  const uint32_t n = info(t).block_elements;
  QuantBlock b;
  b.d = get16(p + L.d);
  if (t == DType::Q4_1 || t == DType::Q5_1 || t == DType::Q4_K || t == DType::Q5_K) b.m = get16(p + L.m);
  if (t == DType::Q4_ZP) b.m = byte_at(p, L.m);
  switch (t) {
    case DType::Q8_0:
      for (uint32_t i = 0; i < n; ++i) b.q[i] = byte_at(p + L.qs, i);
      break;
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q4_ZP: {
      uint32_t qh = 0;
      if (t == DType::Q5_0 || t == DType::Q5_1) std::memcpy(&qh, p + L.qh, 4);
      for (uint32_t j = 0; j < 16; ++j) {
        const uint8_t qs = byte_at(p + L.qs, j);
        b.q[j] = uint8_t((qs & 0xf) | (((qh >> j) & 1) << 4));
        b.q[j + 16] = uint8_t((qs >> 4) | (((qh >> (j + 16)) & 1) << 4));
      }
      break;
    }
    case DType::Q4_K:
    case DType::Q5_K: {
      const std::byte* s = p + L.scales;
      for (uint32_t j = 0; j < 8; ++j) {  // get_scale_min_k4
        if (j < 4) {
          b.sc[j] = byte_at(s, j) & 63;
          b.mn[j] = byte_at(s, j + 4) & 63;
        } else {
          b.sc[j] = uint8_t((byte_at(s, j + 4) & 0xf) | ((byte_at(s, j - 4) >> 6) << 4));
          b.mn[j] = uint8_t((byte_at(s, j + 4) >> 4) | ((byte_at(s, j) >> 6) << 4));
        }
      }
      for (uint32_t i = 0; i < n; ++i) {
        const uint8_t qs = byte_at(p + L.qs, k_qs(i));
        uint8_t q = (i / 32) % 2 ? qs >> 4 : qs & 0xf;
        if (t == DType::Q5_K) q |= uint8_t(((byte_at(p + L.qh, i % 32) >> (i / 32)) & 1) << 4);
        b.q[i] = q;
      }
      break;
    }
    case DType::Q6_K:
      for (uint32_t i = 0; i < n; ++i) {
        const Q6Place w = q6_place(i);
        const uint8_t ql = byte_at(p, w.ql);
        b.q[i] = uint8_t((w.nibble ? ql >> 4 : ql & 0xf) | (((byte_at(p + L.qh, w.qh) >> w.shift) & 3) << 4));
      }
      for (uint32_t j = 0; j < 16; ++j) b.sc[j] = byte_at(p + L.scales, j);
      break;
    default:
      break;
  }
  return b;
}

void encode_block(DType t, const QuantBlock& b, std::byte* p) {
  const Layout L = layout(t);
  const uint32_t n = info(t).block_elements;
  std::memset(p, 0, info(t).block_bytes);
  put16(p + L.d, b.d);
  if (t == DType::Q4_1 || t == DType::Q5_1 || t == DType::Q4_K || t == DType::Q5_K) put16(p + L.m, b.m);
  if (t == DType::Q4_ZP) p[L.m] = std::byte(b.m);
  auto set = [&](uint32_t at, uint32_t bits) { p[at] |= std::byte(bits); };
  switch (t) {
    case DType::Q8_0:
      for (uint32_t i = 0; i < n; ++i) p[L.qs + i] = std::byte(b.q[i]);
      break;
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q4_ZP: {
      uint32_t qh = 0;
      for (uint32_t j = 0; j < 16; ++j) {
        set(L.qs + j, (b.q[j] & 0xf) | ((b.q[j + 16] & 0xf) << 4));
        qh |= uint32_t((b.q[j] >> 4) & 1) << j | uint32_t((b.q[j + 16] >> 4) & 1) << (j + 16);
      }
      if (t == DType::Q5_0 || t == DType::Q5_1) std::memcpy(p + L.qh, &qh, 4);
      break;
    }
    case DType::Q4_K:
    case DType::Q5_K:
      for (uint32_t j = 0; j < 8; ++j) {  // the inverse of get_scale_min_k4
        if (j < 4) {
          set(L.scales + j, b.sc[j] & 63);
          set(L.scales + j + 4, b.mn[j] & 63);
        } else {
          set(L.scales + j + 4, (b.sc[j] & 0xf) | ((b.mn[j] & 0xf) << 4));
          set(L.scales + j - 4, (b.sc[j] >> 4) << 6);
          set(L.scales + j, (b.mn[j] >> 4) << 6);
        }
      }
      for (uint32_t i = 0; i < n; ++i) {
        set(L.qs + k_qs(i), (b.q[i] & 0xf) << ((i / 32) % 2 ? 4 : 0));
        if (t == DType::Q5_K) set(L.qh + i % 32, ((b.q[i] >> 4) & 1) << (i / 32));
      }
      break;
    case DType::Q6_K:
      for (uint32_t i = 0; i < n; ++i) {
        const Q6Place w = q6_place(i);
        set(w.ql, (b.q[i] & 0xf) << (4 * w.nibble));
        set(L.qh + w.qh, ((b.q[i] >> 4) & 3) << w.shift);
      }
      for (uint32_t j = 0; j < 16; ++j) p[L.scales + j] = std::byte(b.sc[j]);
      break;
    default:
      break;
  }
}

double block_value(DType t, const QuantBlock& b, uint32_t i) {
  const double d = f16(b.d), q = b.q[i];
  switch (t) {
    case DType::Q8_0:
      return d * int8_t(b.q[i]);
    case DType::Q4_0:
      return d * (q - 8);
    case DType::Q5_0:
      return d * (q - 16);
    case DType::Q4_1:
    case DType::Q5_1:
      return d * q + f16(b.m);
    case DType::Q4_K:
    case DType::Q5_K:
      return d * b.sc[i / 32] * q - f16(b.m) * b.mn[i / 32];
    case DType::Q6_K:
      return d * int8_t(b.sc[i / 16]) * (q - 32);
    case DType::Q4_ZP:
      return d * (q - b.m);
    default:
      throw Error(std::string("ggml block: ") + to_string(t) + " is not a quantized type");
  }
}

namespace {

// The f16 nearest to v, and its value.
uint16_t half_bits(double v) {
  return half::from_float(float(v));
}

// Per (sub-)block of values: the value of largest magnitude (with its sign), min and max.
struct Range {
  double signed_max = 0, lo = 0, hi = 0;
};
Range range_of(std::span<const float> x) {
  Range r{0, x[0], x[0]};
  for (float v : x) {
    if (std::abs(v) > std::abs(r.signed_max)) r.signed_max = v;
    r.lo = std::min<double>(r.lo, v);
    r.hi = std::max<double>(r.hi, v);
  }
  return r;
}

// q4_K/q5_K: sub-blocks of 32 with x = d sc q - dmin m, q < levels.
void quantize_k_scale_min(std::span<const float> x, int levels, QuantBlock& b) {
  double scale[8], min[8], max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const Range r = range_of(x.subspan(32 * j, 32));
    min[j] = -std::min(0.0, r.lo);  // stored as a positive amount subtracted
    scale[j] = (r.hi + min[j]) / (levels - 1);
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, min[j]);
  }
  b.d = half_bits(max_scale / 63);
  b.m = half_bits(max_min / 63);
  const double d = f16(b.d), dmin = f16(b.m);
  for (int j = 0; j < 8; ++j) {
    b.sc[j] = uint8_t(d > 0 ? round_clamp(scale[j] / d, 0, 63) : 0);
    b.mn[j] = uint8_t(dmin > 0 ? round_clamp(min[j] / dmin, 0, 63) : 0);
    const double step = d * b.sc[j], offset = dmin * b.mn[j];
    for (int i = 32 * j; i < 32 * j + 32; ++i)
      b.q[i] = uint8_t(step > 0 ? round_clamp((x[i] + offset) / step, 0, levels - 1) : 0);
  }
}

}  // namespace

QuantBlock quantize_block(DType t, std::span<const float> x) {
  const uint32_t n = info(t).block_elements;
  if (!is_quantized(t) || x.size() != n)
    throw Error(std::string("quantize_block: ") + to_string(t) + " takes blocks of " + std::to_string(n) +
                " values, given " + std::to_string(x.size()));
  QuantBlock b;
  // Symmetric formats: x = d (q - bias), the largest magnitude at q = 0 (as ggml: d = max / -bias).
  auto symmetric = [&](double d_exact, int bias, int levels) {
    b.d = half_bits(d_exact);
    const double d = f16(b.d);
    for (uint32_t i = 0; i < n; ++i)
      b.q[i] = uint8_t(d != 0 ? round_clamp(x[i] / d + bias, 0, levels - 1) : bias);
  };
  // Asymmetric: x = d q + m over [min, max].
  auto asymmetric = [&](int levels) {
    const Range r = range_of(x);
    b.d = half_bits((r.hi - r.lo) / (levels - 1));
    b.m = half_bits(r.lo);
    const double d = f16(b.d), m = f16(b.m);
    for (uint32_t i = 0; i < n; ++i) b.q[i] = uint8_t(d > 0 ? round_clamp((x[i] - m) / d, 0, levels - 1) : 0);
  };
  switch (t) {
    case DType::Q8_0: {
      const Range r = range_of(x);
      b.d = half_bits(std::abs(r.signed_max) / 127);
      const double d = f16(b.d);
      for (uint32_t i = 0; i < n; ++i) b.q[i] = uint8_t(int8_t(d > 0 ? round_clamp(x[i] / d, -127, 127) : 0));
      break;
    }
    case DType::Q4_0:
      symmetric(range_of(x).signed_max / -8, 8, 16);
      break;
    case DType::Q5_0:
      symmetric(range_of(x).signed_max / -16, 16, 32);
      break;
    case DType::Q4_1:
      asymmetric(16);
      break;
    case DType::Q5_1:
      asymmetric(32);
      break;
    case DType::Q4_ZP: {  // x = d (q - z) over [min, max] (with 0 in it: z a level)
      const Range r = range_of(x);
      b.d = half_bits((r.hi - r.lo) / 15);
      const double d = f16(b.d);
      b.m = uint16_t(d > 0 ? round_clamp(-r.lo / d, 0, 15) : 0);
      for (uint32_t i = 0; i < n; ++i) b.q[i] = uint8_t(d > 0 ? round_clamp(x[i] / d + b.m, 0, 15) : b.m);
      break;
    }
    case DType::Q4_K:
      quantize_k_scale_min(x, 16, b);
      break;
    case DType::Q5_K:
      quantize_k_scale_min(x, 32, b);
      break;
    case DType::Q6_K: {
      double scale[16], max_abs = 0;
      for (int j = 0; j < 16; ++j) {
        scale[j] = range_of(x.subspan(16 * j, 16)).signed_max / -32;
        max_abs = std::max(max_abs, std::abs(scale[j]));
      }
      b.d = half_bits(max_abs / 127);
      const double d = f16(b.d);
      for (int j = 0; j < 16; ++j) {
        const int sc = d > 0 ? round_clamp(scale[j] / d, -127, 127) : 0;
        b.sc[j] = uint8_t(int8_t(sc));
        const double step = d * sc;
        for (int i = 16 * j; i < 16 * j + 16; ++i)
          b.q[i] = uint8_t(step != 0 ? round_clamp(x[i] / step + 32, 0, 63) : 32);
      }
      break;
    }
    default:
      break;
  }
  return b;
}

void quantize_row(DType t, std::span<const float> x, std::span<std::byte> out) {
  const uint64_t bytes = source_row_bytes(t, x.size());
  if (!is_quantized(t) || out.size() != bytes)
    throw Error(std::string("quantize_row: a row of ") + std::to_string(x.size()) + " values as " +
                to_string(t) + " takes " + std::to_string(bytes) + " bytes, given " +
                std::to_string(out.size()));
  const uint32_t n = info(t).block_elements, bb = info(t).block_bytes;
  for (uint64_t k = 0; k < x.size() / n; ++k)
    encode_block(t, quantize_block(t, x.subspan(k * n, n)), &out[k * bb]);
}

std::vector<double> dequantize_row(DType t, std::span<const std::byte> row, uint64_t cols) {
  const uint64_t bytes = source_row_bytes(t, cols);
  if (!is_quantized(t) || row.size() != bytes)
    throw Error(std::string("dequantize_row: a row of ") + std::to_string(cols) + " " + to_string(t) +
                " elements takes " + std::to_string(bytes) + " bytes, given " + std::to_string(row.size()));
  const uint32_t n = info(t).block_elements, bb = info(t).block_bytes;
  std::vector<double> y(cols);
  for (uint64_t k = 0; k < cols / n; ++k) {
    const QuantBlock b = decode_block(t, &row[k * bb]);
    for (uint32_t i = 0; i < n; ++i) y[k * n + i] = block_value(t, b, i);
  }
  return y;
}

}  // namespace wgfuse::gpu
