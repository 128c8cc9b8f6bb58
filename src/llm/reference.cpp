#include "llm/reference.h"

#include <cmath>
#include <random>

#include "llm/architecture.h"
#include "util/error.h"

namespace wgfuse::llm {
HostWeights HostWeights::random(const ModelConfig& c, uint32_t seed, double scale) {
  HostWeights h;
  std::mt19937 rng(seed);
  for (const ExpectedTensor& e : expected_tensors(c)) {
    std::uniform_real_distribution<double> dist(is_norm(e.role)                   ? 0.5
                                                : e.role == TensorRole::Embedding ? -1.0
                                                                                  : -scale,
                                                is_norm(e.role)                   ? 1.5
                                                : e.role == TensorRole::Embedding ? 1.0
                                                                                  : scale);
    uint64_t n = 1;
    for (auto d : e.shape) n *= d;
    std::vector<float> v(n);
    for (auto& x : v) x = float(dist(rng));
    h.set(e.name, e.shape, std::move(v));
  }
  return h;
}

HostWeights::HostWeights(const HostWeights& o) : values_(o.values_), refs_(o.refs_) {
  for (auto& [name, ref] : refs_)
    ref.bytes = std::as_bytes(std::span<const float>(values_.find(name)->second));
}

HostWeights& HostWeights::operator=(HostWeights o) {
  values_.swap(o.values_);  // map nodes move whole, so the views stay valid
  refs_.swap(o.refs_);
  return *this;
}

void HostWeights::set(const std::string& name, std::vector<uint64_t> shape, std::vector<float> values) {
  auto& v = values_[name] = std::move(values);
  refs_[name] = TensorRef{name, DType::F32, std::move(shape), std::as_bytes(std::span<const float>(v))};
}

void HostWeights::transform(const std::function<float(float)>& f) {
  for (auto& [name, v] : values_)
    for (auto& x : v) x = f(x);
}

void HostWeights::transform_matrix_rows(const std::function<void(std::span<float>)>& f) {
  for (auto& [name, v] : values_) {
    const auto& shape = refs_.at(name).shape;
    if (shape.size() != 2) continue;
    for (uint64_t r = 0; r < shape[0]; ++r) f(std::span(v).subspan(r * shape[1], shape[1]));
  }
}

WeightLookup HostWeights::lookup() const {
  return [this](std::string_view name) -> const TensorRef* {
    auto it = refs_.find(name);
    return it == refs_.end() ? nullptr : &it->second;
  };
}

namespace ref {

Vec rmsnorm(std::span<const double> x, std::span<const double> w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / double(x.size()) + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w[i];
  return y;
}

Vec linear(const Linear& l, std::span<const double> x) {
  Vec y(l.rows);
  for (uint32_t r = 0; r < l.rows; ++r) {
    double s = l.b.empty() ? 0.0 : l.b[r];
    for (uint32_t c = 0; c < l.cols; ++c) s += l.w[size_t(r) * l.cols + c] * x[c];
    y[r] = s;
  }
  return y;
}

double silu(double v) {
  return v / (1.0 + std::exp(-v));
}

Vec swiglu(std::span<const double> gate, std::span<const double> up) {
  Vec y(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) y[i] = silu(gate[i]) * up[i];
  return y;
}

Vec attention(std::span<const double> q, std::span<const double> k_cache, std::span<const double> v_cache,
              uint32_t heads, uint32_t kv_heads, uint32_t hd, uint32_t capacity, uint32_t len) {
  Vec out(size_t(heads) * hd, 0.0);
  const uint32_t group = heads / kv_heads;
  const double scale = 1.0 / std::sqrt(double(hd));
  for (uint32_t h = 0; h < heads; ++h) {
    const size_t kv_base = size_t(h / group) * capacity * hd;
    Vec scores(len);
    double max_score = -INFINITY;
    for (uint32_t t = 0; t < len; ++t) {
      double s = 0;
      for (uint32_t d = 0; d < hd; ++d) s += q[size_t(h) * hd + d] * k_cache[kv_base + size_t(t) * hd + d];
      scores[t] = s * scale;
      max_score = std::max(max_score, scores[t]);
    }
    double sum = 0;
    for (auto& s : scores) sum += (s = std::exp(s - max_score));
    for (uint32_t t = 0; t < len; ++t)
      for (uint32_t d = 0; d < hd; ++d)
        out[size_t(h) * hd + d] += scores[t] / sum * v_cache[kv_base + size_t(t) * hd + d];
  }
  return out;
}

uint32_t argmax(std::span<const double> v) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

Weights Weights::load(const ModelConfig& c, const WeightLookup& lookup) {
  using enum TensorRole;
  const ModelTensors t(c, lookup);
  auto values = [&](TensorRole r, uint32_t layer) {
    const TensorRef* ref = t.find(r, layer);
    return ref ? tensor_values(*ref) : Vec{};
  };
  auto linear_of = [&](TensorRole w, TensorRole b, uint32_t layer) {
    const TensorRef& ref = t(w, layer);
    return Linear{tensor_values(ref), t.architecture().qkv_bias ? values(b, layer) : Vec{},
                  uint32_t(ref.shape[0]), uint32_t(ref.shape[1])};
  };
  Weights w;
  w.embedding = values(Embedding, 0);
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    LayerWeights l;
    l.input_norm = values(AttnNorm, i);
    l.post_attention_norm = values(FfnNorm, i);
    l.q = linear_of(Q, QBias, i);
    l.k = linear_of(K, KBias, i);
    l.v = linear_of(V, VBias, i);
    l.q_norm = values(QNorm, i);
    l.k_norm = values(KNorm, i);
    l.o = Linear{values(O, i), {}, c.hidden_size, c.num_heads * c.head_dim};
    l.gate = Linear{values(Gate, i), {}, c.intermediate_size, c.hidden_size};
    l.up = Linear{values(Up, i), {}, c.intermediate_size, c.hidden_size};
    l.down = Linear{values(Down, i), {}, c.hidden_size, c.intermediate_size};
    w.layers.push_back(std::move(l));
  }
  w.final_norm = values(FinalNorm, 0);
  w.lm_head =
      Linear{c.tie_word_embeddings ? w.embedding : values(LmHead, 0), {}, c.vocab_size, c.hidden_size};
  return w;
}

Decoder::Decoder(ModelConfig cfg, Weights weights, uint32_t capacity)
    : cfg_(std::move(cfg)), w_(std::move(weights)), capacity_(capacity), rope_(rope_frequencies(cfg_)) {
  check_config(cfg_, "reference decoder");
  const size_t per_layer = size_t(cfg_.num_kv_heads) * capacity_ * cfg_.head_dim;
  k_cache_.assign(cfg_.num_layers, Vec(per_layer));
  v_cache_.assign(cfg_.num_layers, Vec(per_layer));
}

Vec Decoder::forward(uint32_t token) {
  const auto& c = cfg_;
  if (len_ >= capacity_)
    throw Error("reference decoder: context of " + std::to_string(capacity_) + " is full");
  if (token >= c.vocab_size)
    throw Error("reference decoder: token id " + std::to_string(token) + " >= vocab_size");
  const uint32_t hd = c.head_dim, pos = len_;
  Vec x(w_.embedding.begin() + size_t(token) * c.hidden_size,
        w_.embedding.begin() + size_t(token + 1) * c.hidden_size);
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const LayerWeights& l = w_.layers[i];
    const Vec xn = rmsnorm(x, l.input_norm, c.rms_norm_eps);
    Vec q = linear(l.q, xn), k = linear(l.k, xn), v = linear(l.v, xn);
    // Qwen3: each head RMS-normalised before RoPE (norm weights empty otherwise).
    auto head_norm = [&](Vec& x, const Vec& w, uint32_t heads) {
      for (uint32_t h = 0; h < heads && !w.empty(); ++h) {
        const auto head = std::span(x).subspan(size_t(h) * hd, hd);
        const Vec y = rmsnorm(head, w, c.rms_norm_eps);
        std::copy(y.begin(), y.end(), head.begin());
      }
    };
    head_norm(q, l.q_norm, c.num_heads);
    head_norm(k, l.k_norm, c.num_kv_heads);
    for (uint32_t h = 0; h < c.num_heads; ++h)
      rope_rotate(std::span(q).subspan(size_t(h) * hd, hd), pos, rope_);
    for (uint32_t h = 0; h < c.num_kv_heads; ++h) {
      rope_rotate(std::span(k).subspan(size_t(h) * hd, hd), pos, rope_);
      const size_t at = (size_t(h) * capacity_ + pos) * hd;
      std::copy_n(k.begin() + size_t(h) * hd, hd, k_cache_[i].begin() + at);
      std::copy_n(v.begin() + size_t(h) * hd, hd, v_cache_[i].begin() + at);
    }
    const Vec att =
        attention(q, k_cache_[i], v_cache_[i], c.num_heads, c.num_kv_heads, hd, capacity_, pos + 1);
    const Vec o = linear(l.o, att);
    for (size_t j = 0; j < x.size(); ++j) x[j] += o[j];
    const Vec xn2 = rmsnorm(x, l.post_attention_norm, c.rms_norm_eps);
    const Vec down = linear(l.down, swiglu(linear(l.gate, xn2), linear(l.up, xn2)));
    for (size_t j = 0; j < x.size(); ++j) x[j] += down[j];
  }
  ++len_;
  return linear(w_.lm_head, rmsnorm(x, w_.final_norm, c.rms_norm_eps));
}

Vec Decoder::prefill(std::span<const uint32_t> ids) {
  Vec logits;
  for (uint32_t id : ids) logits = forward(id);
  return logits;
}

std::vector<uint32_t> Decoder::greedy(std::span<const uint32_t> prompt, uint32_t n,
                                      std::vector<Vec>* logits) {
  std::vector<uint32_t> out;
  Vec l = prefill(prompt);
  for (uint32_t i = 0; i < n; ++i) {
    out.push_back(argmax(l));
    if (logits) logits->push_back(l);
    if (i + 1 < n) l = forward(out.back());
  }
  return out;
}

}  // namespace ref
}  // namespace wgfuse::llm
