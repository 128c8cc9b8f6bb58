#include "llm/reference.h"

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "util/error.h"
#include "util/half.h"

namespace wgfuse::llm {
namespace {

std::string shape_text(std::span<const uint64_t> shape) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << "]";
  return s.str();
}

// One 16-bit float of a tensor (IEEE half, or bfloat16 when t is BF16).
double half16_value(uint16_t bits, DType t) {
  return t == DType::BF16 ? half::bf16_to_float(bits) : half::to_float(bits);
}

double element(const TensorRef& t, uint64_t i) {
  const std::byte* p = t.bytes.data();
  if (t.dtype == DType::F32) {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, p + 2 * i, 2);
  return half16_value(bits, t.dtype);
}

}  // namespace

const TensorRef& require_tensor(const WeightLookup& lookup, const std::string& name,
                                const std::vector<uint64_t>& shape) {
  const TensorRef* t = lookup(name);
  if (!t)
    throw Error("model weights: missing tensor '" + name + "' (expected shape " + shape_text(shape) + ")");
  if (t->shape != shape)
    throw Error("model weights: tensor '" + name + "' has shape " + shape_text(t->shape) +
                " but config.json implies " + shape_text(shape));
  if (t->bytes.size() != t->elements() * dtype_bytes(t->dtype))
    throw Error("model weights: tensor '" + name + "' holds " + std::to_string(t->bytes.size()) +
                " bytes, its shape and dtype need " + std::to_string(t->elements() * dtype_bytes(t->dtype)));
  return *t;
}

std::vector<double> tensor_values(const TensorRef& t) {
  std::vector<double> out(t.elements());
  for (size_t i = 0; i < out.size(); ++i) out[i] = element(t, i);
  return out;
}

void tensor_row(const TensorRef& t, uint64_t row, std::span<float> out) {
  const uint64_t cols = t.shape.empty() ? 1 : t.shape.back();
  if (out.size() > cols || (row + 1) * cols > t.elements())
    throw Error("tensor '" + t.name + "': row " + std::to_string(row) + " of " + std::to_string(out.size()) +
                " values is outside its shape " + shape_text(t.shape));
  for (size_t c = 0; c < out.size(); ++c) out[c] = float(element(t, row * cols + c));
}

HostWeights HostWeights::random(const ModelConfig& c, uint32_t seed, double scale) {
  HostWeights h;
  std::mt19937 rng(seed);
  auto fill = [&](const std::string& name, std::vector<uint64_t> shape, double lo, double hi) {
    uint64_t n = 1;
    for (auto d : shape) n *= d;
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = float(dist(rng));
    h.set(name, std::move(shape), std::move(v));
  };
  const uint64_t hd = c.head_dim, q_rows = uint64_t(c.num_heads) * hd,
                 kv_rows = uint64_t(c.num_kv_heads) * hd;
  fill("model.embed_tokens.weight", {c.vocab_size, c.hidden_size}, -1.0, 1.0);
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    fill(p + "input_layernorm.weight", {c.hidden_size}, 0.5, 1.5);
    fill(p + "post_attention_layernorm.weight", {c.hidden_size}, 0.5, 1.5);
    fill(p + "self_attn.q_proj.weight", {q_rows, c.hidden_size}, -scale, scale);
    fill(p + "self_attn.k_proj.weight", {kv_rows, c.hidden_size}, -scale, scale);
    fill(p + "self_attn.v_proj.weight", {kv_rows, c.hidden_size}, -scale, scale);
    if (c.attention_bias) {
      fill(p + "self_attn.q_proj.bias", {q_rows}, -scale, scale);
      fill(p + "self_attn.k_proj.bias", {kv_rows}, -scale, scale);
      fill(p + "self_attn.v_proj.bias", {kv_rows}, -scale, scale);
    }
    fill(p + "self_attn.o_proj.weight", {c.hidden_size, q_rows}, -scale, scale);
    fill(p + "mlp.gate_proj.weight", {c.intermediate_size, c.hidden_size}, -scale, scale);
    fill(p + "mlp.up_proj.weight", {c.intermediate_size, c.hidden_size}, -scale, scale);
    fill(p + "mlp.down_proj.weight", {c.hidden_size, c.intermediate_size}, -scale, scale);
  }
  fill("model.norm.weight", {c.hidden_size}, 0.5, 1.5);
  if (!c.tie_word_embeddings) fill("lm_head.weight", {c.vocab_size, c.hidden_size}, -scale, scale);
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

void rope(std::span<double> head, uint32_t pos, double theta) {
  const size_t half = head.size() / 2;
  for (size_t i = 0; i < half; ++i) {
    const double angle = double(pos) * std::pow(theta, -2.0 * double(i) / double(head.size()));
    const double c = std::cos(angle), s = std::sin(angle);
    const double a = head[i], b = head[i + half];
    head[i] = a * c - b * s;  // x * cos + rotate_half(x) * sin, rotate_half(x) = (-x2, x1)
    head[i + half] = b * c + a * s;
  }
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
  auto values = [&](const std::string& name, std::vector<uint64_t> shape) {
    return tensor_values(require_tensor(lookup, name, shape));
  };
  auto linear_of = [&](const std::string& name, uint32_t rows, uint32_t cols, bool bias) {
    Linear l{values(name + ".weight", {rows, cols}), {}, rows, cols};
    if (bias) l.b = values(name + ".bias", {rows});
    return l;
  };
  const uint32_t q_rows = c.num_heads * c.head_dim, kv_rows = c.num_kv_heads * c.head_dim;
  Weights w;
  w.embedding = values("model.embed_tokens.weight", {c.vocab_size, c.hidden_size});
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights l;
    l.input_norm = values(p + "input_layernorm.weight", {c.hidden_size});
    l.post_attention_norm = values(p + "post_attention_layernorm.weight", {c.hidden_size});
    l.q = linear_of(p + "self_attn.q_proj", q_rows, c.hidden_size, c.attention_bias);
    l.k = linear_of(p + "self_attn.k_proj", kv_rows, c.hidden_size, c.attention_bias);
    l.v = linear_of(p + "self_attn.v_proj", kv_rows, c.hidden_size, c.attention_bias);
    l.o = linear_of(p + "self_attn.o_proj", c.hidden_size, q_rows, false);
    l.gate = linear_of(p + "mlp.gate_proj", c.intermediate_size, c.hidden_size, false);
    l.up = linear_of(p + "mlp.up_proj", c.intermediate_size, c.hidden_size, false);
    l.down = linear_of(p + "mlp.down_proj", c.hidden_size, c.intermediate_size, false);
    w.layers.push_back(std::move(l));
  }
  w.final_norm = values("model.norm.weight", {c.hidden_size});
  w.lm_head = c.tie_word_embeddings ? Linear{w.embedding, {}, c.vocab_size, c.hidden_size}
                                    : linear_of("lm_head", c.vocab_size, c.hidden_size, false);
  return w;
}

Decoder::Decoder(ModelConfig cfg, Weights weights, uint32_t capacity)
    : cfg_(std::move(cfg)), w_(std::move(weights)), capacity_(capacity) {
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
    for (uint32_t h = 0; h < c.num_heads; ++h)
      rope(std::span(q).subspan(size_t(h) * hd, hd), pos, c.rope_theta);
    for (uint32_t h = 0; h < c.num_kv_heads; ++h) {
      rope(std::span(k).subspan(size_t(h) * hd, hd), pos, c.rope_theta);
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
