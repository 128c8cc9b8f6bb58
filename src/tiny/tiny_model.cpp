#include "tiny/tiny_model.h"

#include <initializer_list>

#include "llm/architecture.h"
#include "llm/model_files.h"
#include "llm/rope.h"
#include "llm/safetensors_writer.h"
#include "util/error.h"

namespace wgfuse::tiny {
namespace {

void require_range(const std::string& source, const char* field, uint64_t v, uint64_t lo, uint64_t hi) {
  if (v < lo || v > hi)
    throw Error(source + ": " + field + " = " + std::to_string(v) + " is outside [" + std::to_string(lo) +
                ", " + std::to_string(hi) + "]");
}

void append(std::vector<float>& out, const std::vector<double>& v) {
  for (double x : v) out.push_back(float(x));
}

// Zeros up to a multiple of 4 floats: every part of the packing starts 16-byte aligned.
void pad4(std::vector<float>& out) {
  out.resize((out.size() + 3) / 4 * 4, 0.0f);
}

// Matrices stacked by rows (each [rows_i][cols], cols a multiple of 4) in blocks of 4 columns,
// [cols/4][sum of rows_i][4]: a thread of the products reads 4 weights of its row at once, and
// threads of consecutive rows read consecutive 16 bytes. `norm` (the RMSNorm weights of the
// matrices' input, or empty) scales column j, W[r][j] * norm[j] rounded once from double: the
// kernels then normalise x by its inverse RMS alone.
void append_blocked(std::vector<float>& out, std::initializer_list<const llm::ref::Linear*> parts,
                    const std::vector<double>& norm = {}) {
  const uint32_t cols = (*parts.begin())->cols;
  for (uint32_t j = 0; j < cols; j += 4)
    for (const auto* p : parts)
      for (uint32_t r = 0; r < p->rows; ++r)
        for (uint32_t q = 0; q < 4; ++q)
          out.push_back(float(p->w[uint64_t(r) * cols + j + q] * (norm.empty() ? 1.0 : norm[j + q])));
}

}  // namespace

void validate_config(const llm::ModelConfig& c, const std::string& source) {
  if (c.vocab_size != kVocab)
    throw Error(source + ": vocab_size = " + std::to_string(c.vocab_size) +
                ", the tiny transformer's vocabulary is " + std::to_string(kVocab) + " bytes");
  require_range(source, "hidden_size", c.hidden_size, 8, kMaxWidth);
  require_range(source, "num_hidden_layers", c.num_layers, 1, 16);
  require_range(source, "num_attention_heads", c.num_heads, 1, 64);
  require_range(source, "num_key_value_heads", c.num_kv_heads, 1, c.num_heads);
  require_range(source, "intermediate_size", c.intermediate_size, 1, 4 * kMaxWidth);
  require_range(source, "head_dim", c.head_dim, 2, 256);
  // the products read 4 columns at a time
  for (auto [field, v] : {std::pair{"hidden_size", c.hidden_size},
                          {"intermediate_size", c.intermediate_size},
                          {"num_attention_heads x head_dim", c.num_heads * c.head_dim}})
    if (v % 4) throw Error(source + ": " + field + " = " + std::to_string(v) + " must be a multiple of 4");
  llm::check_config(c, source);
  if (llm::architecture_of(c).qk_norm)
    throw Error(source + ": " + c.architecture +
                "'s per-head q/k norms are not implemented in the tiny transformer's kernels");
}

llm::ModelConfig tiny_config(const Shape& s) {
  const std::string src = "tiny model";
  require_range(src, "--d", s.d, 8, kMaxWidth);
  require_range(src, "--heads", s.heads, 1, 64);
  if (s.d % s.heads)
    throw Error(src + ": --d " + std::to_string(s.d) + " is not a multiple of --heads " +
                std::to_string(s.heads));
  llm::ModelConfig c;
  c.vocab_size = kVocab;
  c.hidden_size = s.d;
  c.intermediate_size = 4 * s.d;
  c.num_layers = s.layers;
  c.num_heads = s.heads;
  c.num_kv_heads = s.kv_heads ? s.kv_heads : s.heads;
  c.head_dim = s.d / s.heads;
  c.max_position_embeddings = kMaxPrompt + kMaxTokens;
  c.tie_word_embeddings = false;
  validate_config(c, src);
  return c;
}

TinyModel random_model(const llm::ModelConfig& c, uint32_t seed) {
  const auto host = llm::HostWeights::random(c, seed);
  return {c, llm::ref::Weights::load(c, host.lookup()), "random (seed " + std::to_string(seed) + ")"};
}

TinyModel load_model(const std::filesystem::path& dir) {
  llm::ModelFiles files(dir);
  validate_config(files.config(), (dir / "config.json").string());
  auto lookup = [&](std::string_view name) { return files.find(name); };
  return {files.config(), llm::ref::Weights::load(files.config(), lookup), dir.string()};
}

void write_model(const std::filesystem::path& dir, const llm::ModelConfig& c, uint32_t seed) {
  const auto host = llm::HostWeights::random(c, seed);
  const auto lookup = host.lookup();
  std::vector<llm::TensorData> tensors;
  for (const auto& e : llm::expected_tensors(c)) {
    const auto values = llm::tensor_values(*lookup(e.name));
    tensors.push_back({e.name, e.shape, std::vector<float>(values.begin(), values.end())});
  }
  std::filesystem::create_directories(dir);
  llm::write_model_folder(dir, llm::model_config_json(c), tensors, llm::DType::F32);
}

uint64_t activation_floats(const llm::ModelConfig& c, uint32_t capacity) {
  const uint64_t qd = uint64_t(c.num_heads) * c.head_dim, kvd = uint64_t(c.num_kv_heads) * c.head_dim;
  return 2ull * c.hidden_size + (qd + 2 * kvd) + qd + uint64_t(c.num_heads) * capacity +
         2ull * c.intermediate_size + c.hidden_size + kVocab + 2 * kArgmaxParts;
}

uint64_t kv_floats(const llm::ModelConfig& c, uint32_t capacity) {
  return uint64_t(c.num_layers) * 2 * c.num_kv_heads * c.head_dim * capacity;
}

std::vector<float> pack_weights(const llm::ModelConfig& c, const llm::ref::Weights& w, uint32_t capacity) {
  std::vector<float> out;
  append(out, w.embedding);
  append_blocked(out, {&w.lm_head}, w.final_norm);
  const std::vector<float> rope = llm::rope_table(c, capacity);
  out.insert(out.end(), rope.begin(), rope.end());
  pad4(out);
  for (const auto& l : w.layers) {
    append_blocked(out, {&l.q, &l.k, &l.v}, l.input_norm);
    for (const auto* lin : {&l.q, &l.k, &l.v}) {
      if (lin->b.empty())
        out.insert(out.end(), lin->rows, 0.0f);  // no bias: adding zero is the same sum
      else
        append(out, lin->b);
    }
    pad4(out);
    append_blocked(out, {&l.o});
    append_blocked(out, {&l.gate, &l.up}, l.post_attention_norm);
    append_blocked(out, {&l.down});
  }
  return out;
}

std::vector<uint32_t> sequence_prompt(std::string_view prompt, uint32_t i) {
  std::vector<uint32_t> ids;
  for (unsigned char b : prompt) ids.push_back((b + i) % kVocab);
  return ids;
}

Generation reference_generation(const TinyModel& m, std::span<const uint32_t> prompt, uint32_t tokens) {
  llm::ref::Decoder dec(m.config, m.weights, uint32_t(prompt.size()) + tokens);
  Generation g;
  g.tokens = dec.greedy(prompt, tokens, &g.logits);
  return g;
}

}  // namespace wgfuse::tiny
