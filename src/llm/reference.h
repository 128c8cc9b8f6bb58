// The CPU reference of the decoders of llm/architecture.h, in double precision: the ground truth
// for the GPU model (src/llm/model.h) and for the tiny transformer. Written plainly from the
// equations, one function per op, no fusion, no cleverness:
//   RMSNorm   y = x / sqrt(mean(x^2) + eps) * w
//   q/k norm  (Qwen3) RMSNorm of each head of q and k, weights [head_dim], before RoPE
//   RoPE      Hugging Face "rotate_half": pairs (i, i + hd/2), angle pos * inv_freq[i] (llm/rope.h)
//   attention causal softmax(q.k / sqrt(hd)) v over the KV cache; head h reads kv head
//             h / (heads / kv_heads) (grouped-query attention)
//   MLP       down(silu(gate x) * up x)
//   logits    lm_head(final_norm(x)), lm_head = embedding when tie_word_embeddings
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llm/config.h"
#include "llm/rope.h"
#include "llm/tensor.h"

namespace wgfuse::llm {

// Owning host storage of a model's tensors (F32), for tests and the tiny transformer.
class HostWeights {
 public:
  HostWeights() = default;
  HostWeights(const HostWeights& o);  // the copy's tensors view the copy's values
  HostWeights& operator=(HostWeights o);
  HostWeights(HostWeights&&) = default;
  // Every tensor `cfg` needs (its architecture's table, in table order), uniform in [-scale, scale) from
  // `seed`; norm weights in [0.5, 1.5).
  static HostWeights random(const ModelConfig& cfg, uint32_t seed, double scale = 0.15);
  void set(const std::string& name, std::vector<uint64_t> shape, std::vector<float> values);
  // Replaces every value v by f(v) (e.g. rounding to the storage dtype).
  void transform(const std::function<float(float)>& f);
  // Replaces each row of every matrix (2-D tensor) by f(row) (e.g. quantizing it as stored).
  void transform_matrix_rows(const std::function<void(std::span<float>)>& f);
  WeightLookup lookup() const;

 private:
  std::map<std::string, std::vector<float>, std::less<>> values_;
  std::map<std::string, TensorRef, std::less<>> refs_;
};

namespace ref {

using Vec = std::vector<double>;

// y = W x (+ b): W row-major [rows, cols].
struct Linear {
  Vec w, b;  // b empty when the layer has no bias
  uint32_t rows = 0, cols = 0;
};

Vec rmsnorm(std::span<const double> x, std::span<const double> w, double eps);
Vec linear(const Linear& l, std::span<const double> x);
double silu(double v);
Vec swiglu(std::span<const double> gate, std::span<const double> up);  // silu(gate) * up
// Attention of every query head over positions 0..len-1 of the cache. q: [heads * hd];
// k_cache, v_cache: [kv_heads][capacity][hd]. Returns [heads * hd].
Vec attention(std::span<const double> q, std::span<const double> k_cache, std::span<const double> v_cache,
              uint32_t heads, uint32_t kv_heads, uint32_t head_dim, uint32_t capacity, uint32_t len);
// The index of the largest value, the lowest such index on ties (as torch.argmax).
uint32_t argmax(std::span<const double> v);

struct LayerWeights {
  Vec input_norm, post_attention_norm;
  Linear q, k, v, o, gate, up, down;
  Vec q_norm, k_norm;  // per-head norms of q and k (Qwen3), else empty
};
struct Weights {
  Vec embedding;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  Vec final_norm;
  Linear lm_head;  // a copy of the embedding when tied
  // Reads and shape-checks every tensor of `cfg`'s architecture from `lookup`.
  static Weights load(const ModelConfig& cfg, const WeightLookup& lookup);
};

// The whole decoder with its KV cache, one token at a time.
class Decoder {
 public:
  Decoder(ModelConfig cfg, Weights weights, uint32_t capacity);
  // Feeds `token` at position length() and returns the logits for the next position.
  Vec forward(uint32_t token);
  // Feeds every id; returns the logits after the last.
  Vec prefill(std::span<const uint32_t> ids);
  // Feeds the prompt, then n greedy tokens (each fed back but the last). `logits`, when given,
  // receives the logits each generated token was chosen from.
  std::vector<uint32_t> greedy(std::span<const uint32_t> prompt, uint32_t n,
                               std::vector<Vec>* logits = nullptr);
  uint32_t length() const { return len_; }
  void reset() { len_ = 0; }
  const ModelConfig& config() const { return cfg_; }

 private:
  ModelConfig cfg_;
  Weights w_;
  uint32_t capacity_;
  uint32_t len_ = 0;
  RopeFrequencies rope_;
  std::vector<Vec> k_cache_, v_cache_;  // per layer: [kv_heads][capacity][hd]
};

}  // namespace ref
}  // namespace wgfuse::llm
