#include "llm/safetensors_writer.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "llm/architecture.h"
#include "llm/model_files.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

uint16_t float_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // NaN stays NaN
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);                  // ties to even
}

// float -> IEEE binary16, round to nearest even (local: the writer is test support, and the
// GPU packing in src/util/half.h is another module's).
uint16_t float_to_f16(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (half-way past 65504) -> inf
  if (a < 0x38800000u) {                        // below 2^-14: a subnormal half, m * 2^-24
    float v;
    std::memcpy(&v, &a, 4);
    return sign | uint16_t(std::nearbyint(v * 16777216.0f));  // exact product; RNE rounding
  }
  uint32_t h = (((a >> 23) - 112) << 10) | ((a >> 13) & 0x3ffu);
  const uint32_t rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry rolls into the exponent
  return sign | uint16_t(h);
}

float f16_to_float(uint16_t h) {
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  float v = e == 0    ? std::ldexp(float(m), -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : std::ldexp(float(m | 0x400u), int(e) - 25);
  return (h & 0x8000u) ? -v : v;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw Error(p.string() + ": cannot write");
}

}  // namespace

float round_to_dtype(float v, DType dtype) {
  switch (dtype) {
    case DType::F32:
      return v;
    case DType::F16:
      return f16_to_float(float_to_f16(v));
    case DType::BF16: {
      const uint32_t b = uint32_t(float_to_bf16(v)) << 16;
      float r;
      std::memcpy(&r, &b, 4);
      return r;
    }
    default:
      throw Error(std::string("round_to_dtype: ") + gpu::to_string(dtype) +
                  " is quantized: its values round by block");
  }
}

std::string encode_values(const std::vector<float>& values, DType dtype) {
  std::string data;
  data.reserve(values.size() * dtype_bytes(dtype));
  for (float v : values) {
    char bytes[4];
    if (dtype == DType::F32) {
      std::memcpy(bytes, &v, 4);
      data.append(bytes, 4);
    } else {
      const uint16_t h = dtype == DType::F16 ? float_to_f16(v) : float_to_bf16(v);
      bytes[0] = char(h & 0xff);
      bytes[1] = char(h >> 8);
      data.append(bytes, 2);
    }
  }
  return data;
}

void write_safetensors(const std::filesystem::path& file, const std::vector<TensorData>& tensors,
                       DType dtype) {
  const char* dtype_text = dtype == DType::F32 ? "F32" : dtype == DType::F16 ? "F16" : "BF16";
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  std::string data;
  for (const TensorData& t : tensors) {
    uint64_t n = 1;
    std::string shape;
    for (uint64_t d : t.shape) {
      n *= d;
      if (!shape.empty()) shape += ',';
      shape += std::to_string(d);
    }
    if (t.raw_dtype.empty() && n != t.values.size())
      throw Error("write_safetensors: " + t.name + " has " + std::to_string(t.values.size()) +
                  " values for " + std::to_string(n) + " elements");
    const size_t begin = data.size();
    data += t.raw_dtype.empty() ? encode_values(t.values, dtype) : t.raw;
    header += ',';
    header += json_string(t.name) + ":{\"dtype\":\"" + (t.raw_dtype.empty() ? dtype_text : t.raw_dtype) +
              "\",\"shape\":[" + shape + "],\"data_offsets\":[" + std::to_string(begin) + "," +
              std::to_string(data.size()) + "]}";
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string file_bytes(8, '\0');
  for (int i = 0; i < 8; ++i) file_bytes[i] = char((uint64_t(header.size()) >> (8 * i)) & 0xff);
  write_file(file, file_bytes + header + data);
}

std::string model_config_json(const ModelConfig& c) {
  const std::string arch = c.architecture;
  const std::string model_type = arch == "Qwen3ForCausalLM"   ? "qwen3"
                                 : arch == "LlamaForCausalLM" ? "llama"
                                                              : "qwen2";
  const RopeScaling& r = c.rope_scaling;
  std::string rope = "null";
  if (r.type == RopeScaling::Type::Llama3)
    rope = "{\"rope_type\": \"llama3\", \"factor\": " + number(r.factor) +
           ", \"low_freq_factor\": " + number(r.low_freq_factor) +
           ", \"high_freq_factor\": " + number(r.high_freq_factor) +
           ", \"original_max_position_embeddings\": " + std::to_string(r.original_max_position_embeddings) +
           "}";
  if (r.type == RopeScaling::Type::Yarn)
    rope = "{\"rope_type\": \"yarn\", \"factor\": " + number(r.factor) +
           ", \"beta_fast\": " + number(r.beta_fast) + ", \"beta_slow\": " + number(r.beta_slow) +
           (r.attention_factor > 0 ? ", \"attention_factor\": " + number(r.attention_factor) : "") + "}";
  return std::string("{\n") + "  \"architectures\": [\"" + arch + "\"],\n" +
         "  \"attention_dropout\": 0.0,\n" + "  \"head_dim\": " + std::to_string(c.head_dim) + ",\n" +
         "  \"hidden_act\": \"silu\",\n" + "  \"hidden_size\": " + std::to_string(c.hidden_size) + ",\n" +
         "  \"intermediate_size\": " + std::to_string(c.intermediate_size) + ",\n" +
         "  \"max_position_embeddings\": " + std::to_string(c.max_position_embeddings) + ",\n" +
         "  \"model_type\": \"" + model_type + "\",\n" +
         "  \"num_attention_heads\": " + std::to_string(c.num_heads) + ",\n" +
         "  \"num_hidden_layers\": " + std::to_string(c.num_layers) + ",\n" +
         "  \"num_key_value_heads\": " + std::to_string(c.num_kv_heads) + ",\n" +
         "  \"rms_norm_eps\": " + number(c.rms_norm_eps) + ",\n" + "  \"rope_scaling\": " + rope + ",\n" +
         "  \"rope_theta\": " + number(c.rope_theta) + ",\n" +
         "  \"tie_word_embeddings\": " + (c.tie_word_embeddings ? "true" : "false") + ",\n" +
         "  \"use_sliding_window\": false,\n" + "  \"vocab_size\": " + std::to_string(c.vocab_size) + "\n}\n";
}

void write_model_folder(const std::filesystem::path& dir, const std::string& config_json,
                        const std::vector<TensorData>& tensors, DType dtype, int shards,
                        const std::string& generation_config_json) {
  std::filesystem::create_directories(dir);
  write_file(dir / "config.json", config_json);
  if (!generation_config_json.empty()) write_file(dir / "generation_config.json", generation_config_json);
  if (shards <= 1) {
    write_safetensors(dir / "model.safetensors", tensors, dtype);
    return;
  }
  std::string weight_map;
  uint64_t total = 0;
  const size_t per_shard = (tensors.size() + size_t(shards) - 1) / size_t(shards);
  for (int s = 0; s < shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, shards);
    const size_t lo = std::min(tensors.size(), size_t(s) * per_shard);
    const size_t hi = std::min(tensors.size(), lo + per_shard);
    const std::vector<TensorData> part(tensors.begin() + long(lo), tensors.begin() + long(hi));
    write_safetensors(dir / name, part, dtype);
    for (const TensorData& t : part) {
      weight_map += weight_map.empty() ? "\n    " : ",\n    ";
      weight_map += json_string(t.name) + ": " + json_string(name);
      total += t.raw_dtype.empty() ? t.values.size() * dtype_bytes(dtype) : t.raw.size();
    }
  }
  write_file(dir / "model.safetensors.index.json",
             "{\n  \"metadata\": {\"total_size\": " + std::to_string(total) + "},\n  \"weight_map\": {" +
                 weight_map + "\n  }\n}\n");
}

std::vector<TensorData> write_random_model(const std::filesystem::path& dir, const ModelConfig& c,
                                           DType dtype, uint32_t seed, int shards) {
  std::mt19937 rng(seed);
  std::vector<TensorData> tensors;
  for (const ExpectedTensor& e : expected_tensors(c)) {
    TensorData t{e.name, e.shape, {}};
    uint64_t n = 1;
    for (uint64_t d : e.shape) n *= d;
    const bool bias =
                   e.role == TensorRole::QBias || e.role == TensorRole::KBias || e.role == TensorRole::VBias,
               norm = is_norm(e.role), embed = e.role == TensorRole::Embedding;
    const float scale = bias    ? 0.1f
                        : embed ? 1.0f
                        : norm  ? 0.5f
                                : float(1.0 / std::sqrt(double(e.shape.back())));
    std::uniform_real_distribution<float> u(-scale, scale);
    t.values.resize(n);
    for (float& v : t.values) {
      do v = (norm ? 1.0f : 0.0f) + u(rng);
      while (round_to_dtype(v, dtype) == 0.0f);
      v = round_to_dtype(v, dtype);
    }
    tensors.push_back(std::move(t));
  }
  write_model_folder(dir, model_config_json(c), tensors, dtype, shards);
  return tensors;
}

}  // namespace wgfuse::llm
