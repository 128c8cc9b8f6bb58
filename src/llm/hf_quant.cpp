#include "llm/hf_quant.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <nlohmann/json.hpp>

#include "gpu/ggml_blocks.h"
#include "llm/safetensors.h"
#include "util/error.h"
#include "util/half.h"

namespace wgfuse::llm {
namespace {

using nlohmann::json;

// AWQ's gemm packing puts output column 8w + order[k] at bits 4k of word w, order [0, 2, 4, 6,
// 1, 3, 5, 7]: column c is at slot kAwqSlot[c].
constexpr uint32_t kAwqSlot[8] = {0, 4, 1, 5, 2, 6, 3, 7};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// A quantized layer's integers and scales, read as the format defines them (hf_quant.h).
class LayerReader {
 public:
  LayerReader(const HfQuantConfig& q, const QuantizedLinear& t)
      : awq_(q.method == HfQuantConfig::Method::Awq),
        minus_one_(q.zero_minus_one),
        bits_(q.bits),
        per_word_(32 / q.bits),
        mask_((1u << q.bits) - 1),
        group_(q.group_size ? q.group_size : t.in),
        t_(t) {}

  uint64_t group_of(uint64_t i) const { return i / group_; }
  // The quant of weight (o, i).
  uint32_t quant(uint64_t o, uint64_t i) const {
    if (awq_) return word(*t_.qweight, i * (t_.out / 8) + o / 8) >> (4 * kAwqSlot[o % 8]) & 15;
    return word(*t_.qweight, (i / per_word_) * t_.out + o) >> (bits_ * (i % per_word_)) & mask_;
  }
  // The zero point of output o in group g.
  uint32_t zero(uint64_t g, uint64_t o) const {
    const uint32_t slot = awq_ ? kAwqSlot[o % 8] : uint32_t(o % per_word_);
    const uint32_t z = word(*t_.qzeros, g * (t_.out / per_word_) + o / per_word_) >> (bits_ * slot) & mask_;
    return minus_one_ ? (z + 1) & mask_ : z;
  }
  // The f16 bits of output o's scale in group g.
  uint16_t scale(uint64_t g, uint64_t o) const {
    uint16_t s;
    std::memcpy(&s, t_.scales->bytes.data() + 2 * (g * t_.out + o), 2);
    return s;
  }

 private:
  static uint32_t word(const TensorRef& r, uint64_t i) {
    uint32_t w;
    std::memcpy(&w, r.bytes.data() + 4 * i, 4);
    return w;
  }
  bool awq_, minus_one_;
  uint32_t bits_, per_word_, mask_;
  uint64_t group_;
  const QuantizedLinear& t_;
};

}  // namespace

std::optional<HfQuantConfig> parse_quantization_config(std::string_view config_json,
                                                       const std::string& file_name) {
  json j;
  try {
    j = json::parse(config_json.begin(), config_json.end());
  } catch (const json::exception& e) {
    throw Error(file_name + ": not valid JSON: " + e.what());
  }
  auto it = j.find("quantization_config");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_object())
    throw Error(file_name + ": \"quantization_config\" is " + it->dump() + ", expected an object");
  const json& q = *it;
  const std::string at = file_name + ": quantization_config.";
  // A field under one of `keys` (AutoAWQ's own names beside transformers'), or nullptr.
  auto field = [&](std::initializer_list<const char*> keys) -> std::pair<const char*, const json*> {
    for (const char* k : keys)
      if (auto f = q.find(k); f != q.end() && !f->is_null()) return {k, &*f};
    return {*keys.begin(), nullptr};
  };
  auto text = [&](std::initializer_list<const char*> keys, const char* fallback) {
    const auto [key, v] = field(keys);
    if (!v) return std::string(fallback);
    if (!v->is_string()) throw Error(at + key + " is " + v->dump() + ", expected a string");
    return lower(v->get<std::string>());
  };
  auto flag = [&](const char* key, bool fallback) {
    const auto [k, v] = field({key});
    if (!v) return fallback;
    if (!v->is_boolean()) throw Error(at + k + " is " + v->dump() + ", expected true or false");
    return v->get<bool>();
  };
  auto integer = [&](std::initializer_list<const char*> keys) {
    const auto [key, v] = field(keys);
    if (!v) throw Error(at + key + " is missing");
    if (!v->is_number_integer()) throw Error(at + key + " is " + v->dump() + ", expected an integer");
    return std::pair{key, v->get<int64_t>()};
  };

  HfQuantConfig c;
  const std::string method = text({"quant_method"}, "");
  if (method == "awq") {
    const std::string version = text({"version"}, "gemm");
    if (version != "gemm")
      throw Error(
          at + "version \"" + version +
          "\" is not supported (wgfuse reads AutoAWQ's \"gemm\" packing, qweight [in, out/8]; the gemv, "
          "marlin and exllama layouts differ)");
    if (!flag("zero_point", true))
      throw Error(at + "zero_point false is not supported (wgfuse reads AWQ checkpoints with zero points)");
  } else if (method == "gptq") {
    c.method = HfQuantConfig::Method::Gptq;
    const std::string format = text({"checkpoint_format", "format"}, "gptq");
    if (format != "gptq" && format != "gptq_v2")
      throw Error(at + "checkpoint_format \"" + format +
                  "\" is not supported (wgfuse reads GPTQ's \"gptq\" and \"gptq_v2\" formats)");
    c.zero_minus_one = format == "gptq";
    c.sym = flag("sym", true);
    c.desc_act = flag("desc_act", false);
  } else {
    throw Error(
        at + "quant_method " + (method.empty() ? "is missing" : "\"" + method + "\" is not supported") +
        " (wgfuse reads 4-bit \"awq\" (version gemm) and 4- or 8-bit \"gptq\" folders, and GGUF files)");
  }
  const auto [bits_key, bits] = integer({"bits", "w_bit"});
  if (bits != 4 && !(bits == 8 && c.method == HfQuantConfig::Method::Gptq))
    throw Error(at + bits_key + " " + std::to_string(bits) +
                " is not supported (wgfuse reads 4-bit AWQ and 4- or 8-bit GPTQ checkpoints)");
  c.bits = uint32_t(bits);
  const auto [group_key, group] = integer({"group_size", "q_group_size"});
  const bool whole_row = group == -1 && c.method == HfQuantConfig::Method::Gptq;
  if (!whole_row && (group <= 0 || group % 32 != 0 || group > (int64_t(1) << 30)))
    throw Error(at + group_key + " " + std::to_string(group) +
                " is not supported (wgfuse reads groups of a multiple of 32 elements" +
                (c.method == HfQuantConfig::Method::Gptq ? ", or -1: one group per row)" : ")"));
  c.group_size = whole_row ? 0 : uint32_t(group);
  return c;
}

std::string quantization_config_json(const HfQuantConfig& q) {
  const int64_t group = q.group_size ? int64_t(q.group_size) : -1;
  if (q.method == HfQuantConfig::Method::Awq)
    return "{\"bits\": 4, \"group_size\": " + std::to_string(group) +
           ", \"modules_to_not_convert\": null, \"quant_method\": \"awq\", \"version\": \"gemm\", "
           "\"zero_point\": true}";
  return "{\"bits\": " + std::to_string(q.bits) + ", \"checkpoint_format\": \"" +
         std::string(q.zero_minus_one ? "gptq" : "gptq_v2") +
         "\", \"desc_act\": " + (q.desc_act ? "true" : "false") +
         ", \"group_size\": " + std::to_string(group) +
         ", \"quant_method\": \"gptq\", \"sym\": " + (q.sym ? "true" : "false") + "}";
}

QuantizedLinear quantized_linear(const HfQuantConfig& q, const WeightLookup& lookup,
                                 const std::string& prefix, uint64_t out, uint64_t in,
                                 const std::string& where) {
  const bool awq = q.method == HfQuantConfig::Method::Awq;
  const char* method = awq ? "AWQ" : "GPTQ";
  const uint64_t group = q.group_size ? q.group_size : in;
  const std::string layer = where + ": layer \"" + prefix + "\" [" + std::to_string(out) + ", " +
                            std::to_string(in) + "] (" + method + ")";
  const uint64_t per_word = awq ? 8 : 32 / q.bits;
  if (out % per_word || in % group)
    throw Error(layer + ": " +
                (out % per_word
                     ? std::to_string(out) + " outputs are not a whole number of packed words of " +
                           std::to_string(per_word)
                     : "group_size " + std::to_string(group) + " does not divide its " + std::to_string(in) +
                           " inputs"));
  auto tensor = [&](const char* suffix, DType dtype, std::vector<uint64_t> shape, bool required) {
    const std::string name = prefix + "." + suffix;
    const TensorRef* t = lookup(name);
    if (!t) {
      if (!required) return t;
      throw Error(layer + ": tensor \"" + name + "\" (" + dtype_name(dtype) + " " + shape_text(shape) +
                  ") is missing");
    }
    if (t->dtype != dtype || t->shape != shape)
      throw Error(layer + ": tensor \"" + name + "\" is " + dtype_name(t->dtype) + " " +
                  shape_text(t->shape) + ", expected " + dtype_name(dtype) + " " + shape_text(shape));
    return t;
  };
  QuantizedLinear t;
  t.out = out, t.in = in;
  t.layer = layer;
  const uint64_t groups = in / group;
  t.qweight =
      tensor("qweight", DType::I32, awq ? std::vector{in, out / 8} : std::vector{in / per_word, out}, true);
  t.qzeros = tensor("qzeros", DType::I32, {groups, out / per_word}, true);
  t.scales = tensor("scales", DType::F16, {groups, out}, true);
  if (!awq) t.g_idx = tensor("g_idx", DType::I32, {in}, false);
  if (t.g_idx)
    for (uint64_t i = 0; i < in; ++i) {
      int32_t g;
      std::memcpy(&g, t.g_idx->bytes.data() + 4 * i, 4);
      if (uint64_t(int64_t(g)) != i / group)
        throw Error(layer + ": tensor \"" + prefix + ".g_idx\"[" + std::to_string(i) + "] is " +
                    std::to_string(g) + ", not " + std::to_string(i / group) +
                    " (row / group_size): act-order checkpoints" + (q.desc_act ? " (desc_act true)" : "") +
                    " whose groups are not in row order are not supported; quantize with desc_act false");
    }
  return t;
}

std::vector<float> dequantize_linear(const HfQuantConfig& q, const QuantizedLinear& t) {
  const LayerReader r(q, t);
  std::vector<float> w(t.out * t.in);
  for (uint64_t o = 0; o < t.out; ++o)
    for (uint64_t i = 0; i < t.in; ++i) {
      const uint64_t g = r.group_of(i);
      const double s = half::to_float(r.scale(g, o));
      w[o * t.in + i] = float((double(r.quant(o, i)) - double(r.zero(g, o))) * s);
    }
  return w;
}

QuantizedRows quantized_linear_to_rows(const HfQuantConfig& q, const QuantizedLinear& t) {
  const LayerReader r(q, t);
  const bool eight = q.bits == 8;
  const DType type = eight ? DType::Q8_0 : DType::Q4_ZP;
  const uint32_t bb = gpu::info(type).block_bytes;
  const uint64_t blocks = t.in / 32;
  QuantizedRows out{type, std::vector<std::byte>(t.out * blocks * bb)};
  // Block k of every row in turn: the words of 32 input rows are near each other in both packings.
  for (uint64_t k = 0; k < blocks; ++k)
    for (uint64_t o = 0; o < t.out; ++o) {
      const uint64_t g = r.group_of(32 * k);  // a group is whole blocks (a multiple of 32)
      const uint32_t z = r.zero(g, o);
      gpu::QuantBlock b;
      b.d = r.scale(g, o);
      if (eight) {  // q8_0 holds q - z as int8: the symmetric zero point 128 only
        if (z != 128)
          throw Error(t.layer + ": 8-bit GPTQ zero point " + std::to_string(z) + " (group " +
                      std::to_string(g) + ", output " + std::to_string(o) +
                      "): wgfuse reads 8-bit GPTQ with sym true (zero point 128) only, as q8_0");
        for (uint32_t j = 0; j < 32; ++j) b.q[j] = uint8_t(int32_t(r.quant(o, 32 * k + j)) - 128);
      } else {
        b.m = uint16_t(z);
        for (uint32_t j = 0; j < 32; ++j) b.q[j] = uint8_t(r.quant(o, 32 * k + j));
      }
      gpu::encode_block(type, b, &out.bytes[(o * blocks + k) * bb]);
    }
  return out;
}

}  // namespace wgfuse::llm
