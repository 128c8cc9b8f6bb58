#include "llm/gguf_writer.h"

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "gpu/ggml_blocks.h"
#include "llm/architecture.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

// GGUF value types (ggml's gguf.h).
constexpr uint32_t kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9;

// ggml's type id of each source encoding (gpu::DType order), written here from ggml.h rather than
// taken from the reader's table, so that a test of one checks the other.
uint32_t ggml_id(DType t) {
  constexpr uint32_t kIds[] = {0 /* F32 */,
                               1 /* F16 */,
                               30 /* BF16 */,
                               8 /* Q8_0 */,
                               2 /* Q4_0 */,
                               3 /* Q4_1 */,
                               6 /* Q5_0 */,
                               7 /* Q5_1 */,
                               12 /* Q4_K */,
                               13 /* Q5_K */,
                               14 /* Q6_K */};
  return kIds[size_t(t)];
}

// Row-major values as stored in `t`: converted, or quantized row by row (the test quantizer).
std::string encode_tensor(const TensorData& tensor, DType t) {
  if (!gpu::is_quantized(t)) return encode_values(tensor.values, t);
  const uint64_t cols = tensor.shape.back(), rows = tensor.values.size() / cols;
  const uint64_t row_bytes = gpu::source_row_bytes(t, cols);
  std::string out(rows * row_bytes, '\0');
  for (uint64_t r = 0; r < rows; ++r)
    gpu::quantize_row(t, std::span(tensor.values).subspan(r * cols, cols),
                      std::as_writable_bytes(std::span(out.data() + r * row_bytes, row_bytes)));
  return out;
}

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian host (the reader asserts the same)
  out.append(b, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

std::string pad_to(std::string s, uint32_t alignment) {
  s.append((alignment - s.size() % alignment) % alignment, '\0');
  return s;
}

}  // namespace

void GgufWriter::key(const std::string& k, uint32_t type) {
  put_string(kv_, k);
  put<uint32_t>(kv_, type);
  ++kv_count_;
}

void GgufWriter::add_u32(const std::string& k, uint32_t v) {
  key(k, kU32);
  put(kv_, v);
}

void GgufWriter::add_f32(const std::string& k, float v) {
  key(k, kF32);
  put(kv_, v);
}

void GgufWriter::add_bool(const std::string& k, bool v) {
  key(k, kBool);
  put<uint8_t>(kv_, v ? 1 : 0);
}

void GgufWriter::add_string(const std::string& k, const std::string& v) {
  key(k, kString);
  put_string(kv_, v);
}

void GgufWriter::add_strings(const std::string& k, const std::vector<std::string>& v) {
  key(k, kArray);
  put<uint32_t>(kv_, kString);
  put<uint64_t>(kv_, v.size());
  for (const std::string& s : v) put_string(kv_, s);
}

void GgufWriter::add_i32s(const std::string& k, const std::vector<int32_t>& v) {
  key(k, kArray);
  put<uint32_t>(kv_, kI32);
  put<uint64_t>(kv_, v.size());
  for (int32_t x : v) put(kv_, x);
}

void GgufWriter::add_tensor(const std::string& name, const std::vector<uint64_t>& shape, uint32_t ggml_type,
                            std::string data) {
  tensors_.push_back({name, shape, ggml_type, std::move(data)});
}

std::string GgufWriter::bytes(uint32_t alignment) const {
  std::string out = "GGUF";
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kv_count_ + (alignment != 32 ? 1 : 0));
  out += kv_;
  if (alignment != 32) {
    put_string(out, "general.alignment");
    put<uint32_t>(out, kU32);
    put<uint32_t>(out, alignment);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, uint32_t(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) put<uint64_t>(out, *d);
    put<uint32_t>(out, t.type);
    put<uint64_t>(out, offset);
    offset += (t.data.size() + alignment - 1) / alignment * alignment;
  }
  out = pad_to(std::move(out), alignment);
  for (const Tensor& t : tensors_) out += pad_to(t.data, alignment);
  return out;
}

void GgufWriter::write(const std::filesystem::path& file, uint32_t alignment) const {
  const std::string b = bytes(alignment);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(b.data(), std::streamsize(b.size()));
  if (!out) throw Error(file.string() + ": cannot write");
}

GgufWriter gguf_model_writer(const ModelConfig& c, const std::vector<TensorData>& tensors, DType dtype) {
  return gguf_model_writer(
      c, tensors, [dtype](const ExpectedTensor& e) { return e.shape.size() == 2 ? dtype : DType::F32; });
}

GgufWriter gguf_model_writer(const ModelConfig& c, const std::vector<TensorData>& tensors,
                             const std::function<DType(const ExpectedTensor&)>& type_of) {
  const Architecture& a = architecture_of(c);
  const std::string p = std::string(a.gguf_name) + ".";
  GgufWriter w;
  w.add_string("general.architecture", std::string(a.gguf_name));
  w.add_u32(p + "context_length", c.max_position_embeddings);
  w.add_u32(p + "embedding_length", c.hidden_size);
  w.add_u32(p + "block_count", c.num_layers);
  w.add_u32(p + "feed_forward_length", c.intermediate_size);
  w.add_u32(p + "attention.head_count", c.num_heads);
  w.add_u32(p + "attention.head_count_kv", c.num_kv_heads);
  w.add_u32(p + "attention.key_length", c.head_dim);
  w.add_u32(p + "attention.value_length", c.head_dim);
  w.add_f32(p + "rope.freq_base", float(c.rope_theta));
  w.add_f32(p + "attention.layer_norm_rms_epsilon", float(c.rms_norm_eps));
  if (c.rope_scaling.type == RopeScaling::Type::Yarn) {
    const RopeScaling& s = c.rope_scaling;
    w.add_string(p + "rope.scaling.type", "yarn");
    w.add_f32(p + "rope.scaling.factor", float(s.factor));
    if (s.original_max_position_embeddings)
      w.add_u32(p + "rope.scaling.original_context_length", s.original_max_position_embeddings);
    w.add_f32(p + "rope.scaling.yarn_beta_fast", float(s.beta_fast));
    w.add_f32(p + "rope.scaling.yarn_beta_slow", float(s.beta_slow));
  }
  const auto expected = expected_tensors(c);
  for (const TensorData& t : tensors) {
    const ExpectedTensor* e = nullptr;
    for (const ExpectedTensor& x : expected)
      if (x.name == t.name) e = &x;
    if (!e) throw Error("gguf_model_writer: " + t.name + " is not a tensor of " + std::string(a.name));
    const DType stored = type_of(*e);
    std::string data = encode_tensor(t, stored);
    using enum TensorRole;
    if (a.gguf_rope_pairs_adjacent &&
        (e->role == Q || e->role == K || e->role == QBias || e->role == KBias)) {
      // convert_hf_to_gguf's LlamaModel.permute: within each head, row t * hd/2 + j goes to 2j + t.
      const uint64_t rows = t.shape[0], row_bytes = data.size() / rows, half = c.head_dim / 2;
      std::string permuted(data.size(), '\0');
      for (uint64_t h = 0; h < rows; ++h) {
        const uint64_t in_head = h % c.head_dim, g = h - in_head + 2 * (in_head % half) + in_head / half;
        std::memcpy(permuted.data() + g * row_bytes, data.data() + h * row_bytes, row_bytes);
      }
      data = std::move(permuted);
    }
    w.add_tensor(gguf_name(e->role, e->layer), t.shape, ggml_id(stored), std::move(data));
  }
  return w;
}

void add_hf_tokenizer(GgufWriter& w, const std::filesystem::path& dir, uint32_t model_vocab,
                      const std::string& pre, bool add_bos) {
  using nlohmann::json;
  const auto read = [&](const char* name) {
    std::ifstream in(dir / name);
    if (!in) throw Error("cannot read " + (dir / name).string() + " (the tokenizer to write)");
    try {
      return json::parse(in);
    } catch (const json::exception& e) {
      throw Error((dir / name).string() + ": " + e.what());
    }
  };
  const json tok = read("tokenizer.json"), cfg = read("tokenizer_config.json");
  const std::string where = (dir / "tokenizer.json").string();
  try {
    if (tok.at("model").value("type", "") != "BPE")
      throw Error(where + ": model.type is not BPE (only BPE is written)");
    std::vector<std::string> tokens(model_vocab);
    std::vector<int32_t> types(model_vocab, 5);
    for (uint32_t i = 0; i < model_vocab; ++i) tokens[i] = "[PAD" + std::to_string(i) + "]";
    const auto put = [&](size_t id, const std::string& text, int32_t type) {
      if (id >= model_vocab)
        throw Error(where + ": token " + text + " has id " + std::to_string(id) +
                    ", past the model's vocabulary of " + std::to_string(model_vocab));
      tokens[id] = text;
      types[id] = type;
    };
    for (const auto& [text, id] : tok.at("model").at("vocab").items()) put(id.get<size_t>(), text, 1);
    std::map<std::string, int32_t> ids;
    for (const json& a : tok.at("added_tokens")) {
      const std::string text = a.at("content");
      const bool looks_special = text.starts_with("<|") && text.ends_with("|>");
      put(a.at("id").get<size_t>(), text, a.value("special", false) || looks_special ? 3 : 4);
      ids[text] = a.at("id").get<int32_t>();
    }
    std::vector<std::string> merges;
    for (const json& m : tok.at("model").at("merges"))
      merges.push_back(m.is_string() ? m.get<std::string>()
                                     : m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", pre);
    w.add_strings("tokenizer.ggml.tokens", tokens);
    w.add_i32s("tokenizer.ggml.token_type", types);
    w.add_strings("tokenizer.ggml.merges", merges);
    const auto special = [&](const char* key) {
      const std::string text = cfg.at(key);
      if (!ids.contains(text))
        throw Error((dir / "tokenizer_config.json").string() + ": " + key + " " + text +
                    " is not an added token");
      return uint32_t(ids.at(text));
    };
    w.add_u32("tokenizer.ggml.eos_token_id", special("eos_token"));
    if (cfg.contains("pad_token") && cfg["pad_token"].is_string())
      w.add_u32("tokenizer.ggml.padding_token_id", special("pad_token"));
    w.add_bool("tokenizer.ggml.add_bos_token", add_bos || cfg.value("add_bos_token", false));
    if (cfg.contains("chat_template") && cfg["chat_template"].is_string())
      w.add_string("tokenizer.chat_template", cfg["chat_template"].get<std::string>());
  } catch (const json::exception& e) {
    throw Error(where + " or tokenizer_config.json: " + e.what());
  }
}

}  // namespace wgfuse::llm
