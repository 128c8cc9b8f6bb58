#include "llm/architecture.h"

#include <cmath>
#include <cstdio>

#include "util/error.h"

namespace wgfuse::llm {

// arch_*.cpp
const Architecture& qwen2_architecture();
const Architecture& qwen3_architecture();
const Architecture& llama_architecture();

namespace {

struct RoleNames {
  const char* hf;    // "%u": the layer
  const char* gguf;  // llama.cpp's LLM_TENSOR_NAMES
};

// The one place a tensor's name is spelled (GGUF: the converter's row order is
// Architecture::gguf_rope_pairs_adjacent).
constexpr RoleNames kNames[kTensorRoles] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.layers.%u.input_layernorm.weight", "blk.%u.attn_norm.weight"},
    {"model.layers.%u.self_attn.q_proj.weight", "blk.%u.attn_q.weight"},
    {"model.layers.%u.self_attn.k_proj.weight", "blk.%u.attn_k.weight"},
    {"model.layers.%u.self_attn.v_proj.weight", "blk.%u.attn_v.weight"},
    {"model.layers.%u.self_attn.q_proj.bias", "blk.%u.attn_q.bias"},
    {"model.layers.%u.self_attn.k_proj.bias", "blk.%u.attn_k.bias"},
    {"model.layers.%u.self_attn.v_proj.bias", "blk.%u.attn_v.bias"},
    {"model.layers.%u.self_attn.q_norm.weight", "blk.%u.attn_q_norm.weight"},
    {"model.layers.%u.self_attn.k_norm.weight", "blk.%u.attn_k_norm.weight"},
    {"model.layers.%u.self_attn.o_proj.weight", "blk.%u.attn_output.weight"},
    {"model.layers.%u.post_attention_layernorm.weight", "blk.%u.ffn_norm.weight"},
    {"model.layers.%u.mlp.gate_proj.weight", "blk.%u.ffn_gate.weight"},
    {"model.layers.%u.mlp.up_proj.weight", "blk.%u.ffn_up.weight"},
    {"model.layers.%u.mlp.down_proj.weight", "blk.%u.ffn_down.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

std::string format_name(const char* pattern, uint32_t layer) {
  char buf[128];
  std::snprintf(buf, sizeof buf, pattern, layer);
  return buf;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

bool per_layer(TensorRole r) {
  return r != TensorRole::Embedding && r != TensorRole::FinalNorm && r != TensorRole::LmHead;
}

bool is_norm(TensorRole r) {
  using enum TensorRole;
  return r == AttnNorm || r == FfnNorm || r == FinalNorm || r == QNorm || r == KNorm;
}

std::string hf_name(TensorRole r, uint32_t layer) {
  return format_name(kNames[size_t(r)].hf, layer);
}

std::string gguf_name(TensorRole r, uint32_t layer) {
  return format_name(kNames[size_t(r)].gguf, layer);
}

std::vector<uint64_t> tensor_shape(TensorRole r, const ModelConfig& c) {
  using enum TensorRole;
  const uint64_t hidden = c.hidden_size, inter = c.intermediate_size, q = uint64_t(c.num_heads) * c.head_dim,
                 kv = uint64_t(c.num_kv_heads) * c.head_dim;
  switch (r) {
    case Embedding:
    case LmHead:
      return {c.vocab_size, hidden};
    case AttnNorm:
    case FfnNorm:
    case FinalNorm:
      return {hidden};
    case Q:
      return {q, hidden};
    case K:
    case V:
      return {kv, hidden};
    case QBias:
      return {q};
    case KBias:
    case VBias:
      return {kv};
    case QNorm:
    case KNorm:
      return {c.head_dim};
    case O:
      return {hidden, q};
    case Gate:
    case Up:
      return {inter, hidden};
    case Down:
      return {hidden, inter};
  }
  throw Error("tensor_shape: unknown role");
}

std::span<const Architecture* const> architectures() {
  static const Architecture* const all[] = {&qwen2_architecture(), &qwen3_architecture(),
                                            &llama_architecture()};
  return all;
}

std::string supported_architectures() {
  std::string s;
  for (const Architecture* a : architectures())
    s += (s.empty() ? "" : ", ") + std::string(a->name) + " (" + std::string(a->checkpoints) + ")";
  return s;
}

const Architecture& find_architecture(std::string_view name, const std::string& source) {
  for (const Architecture* a : architectures())
    if (a->name == name) return *a;
  throw Error(source + ": unsupported architecture \"" + std::string(name) + "\"; wgfuse runs " +
              supported_architectures());
}

const Architecture& find_gguf_architecture(std::string_view gguf_name, const std::string& source) {
  std::string known;
  for (const Architecture* a : architectures()) {
    if (a->gguf_name == gguf_name) return *a;
    known += (known.empty() ? "" : ", ") + std::string(a->gguf_name);
  }
  throw Error(source + ": general.architecture \"" + std::string(gguf_name) +
              "\" is not supported; wgfuse runs " + known + " (" + supported_architectures() + ")");
}

const Architecture& architecture_of(const ModelConfig& c) {
  return find_architecture(c.architecture);
}

void check_config(const ModelConfig& c, const std::string& source) {
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) throw Error(source + ": " + what);
  };
  find_architecture(c.architecture, source);
  need(c.vocab_size && c.hidden_size && c.intermediate_size && c.num_layers && c.num_heads &&
           c.num_kv_heads && c.head_dim,
       "vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, "
       "num_key_value_heads and head_dim must all be positive");
  need(c.num_heads % c.num_kv_heads == 0, "num_attention_heads (" + std::to_string(c.num_heads) +
                                              ") must be a multiple of num_key_value_heads (" +
                                              std::to_string(c.num_kv_heads) + ")");
  // Rows and vector lengths are 32-bit in the kernels, the packed q/k/v and gate/up rows included.
  const uint64_t qkv_rows = (uint64_t(c.num_heads) + 2ull * c.num_kv_heads) * c.head_dim;
  need(qkv_rows < (1ull << 31) && 2ull * c.intermediate_size < (1ull << 31) && c.hidden_size < (1u << 31) &&
           c.vocab_size < (1u << 31),
       "(num_attention_heads + 2 x num_key_value_heads) x head_dim (" + std::to_string(qkv_rows) +
           "), 2 x intermediate_size, hidden_size and vocab_size must each be below 2^31 (the kernels "
           "count rows in 32 bits)");
  need(c.head_dim % 2 == 0, "head_dim (" + std::to_string(c.head_dim) + ") must be even for RoPE");
  need(c.rope_theta > 0, "rope_theta (" + number(c.rope_theta) + ") must be positive");
  need(c.rms_norm_eps > 0, "rms_norm_eps (" + number(c.rms_norm_eps) + ") must be positive");
  const RopeScaling& s = c.rope_scaling;
  using Type = RopeScaling::Type;
  if (s.type == Type::Default) return;
  if (s.type == Type::Factors) {
    need(s.freq_factors.size() == c.head_dim / 2,
         "RoPE frequency factors: " + std::to_string(s.freq_factors.size()) +
             " of them, expected head_dim / 2 = " + std::to_string(c.head_dim / 2));
    for (double f : s.freq_factors)
      need(f > 0 && std::isfinite(f), "RoPE frequency factor " + number(f) + " must be positive and finite");
    return;
  }
  need(s.factor >= 1, "rope_scaling.factor (" + number(s.factor) + ") must be at least 1");
  if (s.type == Type::Llama3) {
    need(s.original_max_position_embeddings > 0,
         "rope_scaling.original_max_position_embeddings must be positive (llama3)");
    need(s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor,
         "rope_scaling: low_freq_factor (" + number(s.low_freq_factor) + ") must be positive and below " +
             "high_freq_factor (" + number(s.high_freq_factor) + ") (llama3)");
  } else {
    need(s.beta_fast > 0 && s.beta_slow > 0, "rope_scaling: beta_fast (" + number(s.beta_fast) +
                                                 ") and beta_slow (" + number(s.beta_slow) +
                                                 ") must be positive (yarn)");
    need(s.attention_factor >= 0, "rope_scaling.attention_factor must not be negative (yarn)");
  }
}

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c) {
  const Architecture& a = architecture_of(c);
  std::vector<ExpectedTensor> out;
  auto add = [&](const TensorSpec& s, uint32_t layer) {
    if (s.untied_only && c.tie_word_embeddings) return;
    out.push_back({hf_name(s.role, layer), tensor_shape(s.role, c), s.role, layer});
  };
  // Table order: the tensors before the first per-layer one, every layer, then the rest.
  size_t first = 0;
  while (first < a.tensors.size() && !per_layer(a.tensors[first].role)) add(a.tensors[first++], 0);
  for (uint32_t l = 0; l < c.num_layers; ++l)
    for (size_t i = first; i < a.tensors.size() && per_layer(a.tensors[i].role); ++i) add(a.tensors[i], l);
  for (size_t i = first; i < a.tensors.size(); ++i)
    if (!per_layer(a.tensors[i].role)) add(a.tensors[i], 0);
  return out;
}

ModelTensors::ModelTensors(const ModelConfig& c, const WeightLookup& lookup) : arch_(&architecture_of(c)) {
  layers_.assign(c.num_layers + 1, {});
  for (const ExpectedTensor& e : expected_tensors(c))
    layers_[per_layer(e.role) ? e.layer : c.num_layers][size_t(e.role)] =
        &require_tensor(lookup, e.name, e.shape);
}

const TensorRef* ModelTensors::find(TensorRole r, uint32_t layer) const {
  const size_t at = per_layer(r) ? layer : layers_.size() - 1;
  return at < layers_.size() ? layers_[at][size_t(r)] : nullptr;
}

const TensorRef& ModelTensors::operator()(TensorRole r, uint32_t layer) const {
  if (const TensorRef* t = find(r, layer)) return *t;
  throw Error("model weights: " + std::string(arch_->name) + " has no tensor " + hf_name(r, layer));
}

std::pair<uint32_t, uint32_t> qkv_source_row(uint32_t packed, uint32_t head_dim, uint32_t q_rows,
                                             uint32_t kv_rows) {
  const uint32_t which = packed < q_rows ? 0 : packed < q_rows + kv_rows ? 1 : 2;
  const uint32_t r = packed - (which == 0 ? 0 : which == 1 ? q_rows : q_rows + kv_rows);
  if (which == 2) return {2, r};
  const uint32_t in_head = r % head_dim;
  return {which, r - in_head + in_head / 2 + (in_head % 2) * (head_dim / 2)};
}

std::pair<uint32_t, uint32_t> gate_up_source_row(uint32_t packed) {
  return {packed % 2, packed / 2};
}

PackedMatrix packed_qkv(const ModelTensors& t, const ModelConfig& c, uint32_t layer) {
  const uint32_t q_rows = c.num_heads * c.head_dim, kv_rows = c.num_kv_heads * c.head_dim;
  return {{&t(TensorRole::Q, layer), &t(TensorRole::K, layer), &t(TensorRole::V, layer)},
          q_rows + 2 * kv_rows,
          [hd = c.head_dim, q_rows, kv_rows](uint32_t p) { return qkv_source_row(p, hd, q_rows, kv_rows); }};
}

PackedMatrix packed_gate_up(const ModelTensors& t, const ModelConfig& c, uint32_t layer) {
  return {
      {&t(TensorRole::Gate, layer), &t(TensorRole::Up, layer)}, 2 * c.intermediate_size, gate_up_source_row};
}

std::vector<float> packed_qkv_bias(const ModelTensors& t, const ModelConfig& c, uint32_t layer) {
  const uint32_t q_rows = c.num_heads * c.head_dim, kv_rows = c.num_kv_heads * c.head_dim;
  std::vector<float> bias(q_rows + 2 * kv_rows, 0.0f);
  if (!t.architecture().qkv_bias) return bias;
  const std::vector<double> b[3] = {tensor_values(t(TensorRole::QBias, layer)),
                                    tensor_values(t(TensorRole::KBias, layer)),
                                    tensor_values(t(TensorRole::VBias, layer))};
  for (uint32_t p = 0; p < bias.size(); ++p) {
    auto [which, row] = qkv_source_row(p, c.head_dim, q_rows, kv_rows);
    bias[p] = float(b[which][row]);
  }
  return bias;
}

}  // namespace wgfuse::llm
