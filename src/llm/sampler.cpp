#include "llm/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "gpu/context.h"
#include "gpu/recorder.h"
#include "util/error.h"

namespace wgfuse::llm {

namespace {

constexpr uint32_t kWorkgroup = 256;
constexpr uint32_t kMaxGroups = 256;  // partial sums the pick kernel scans in one pass
constexpr uint32_t kTargetGroups = 64;
// Scratch words before the bitmap: fixed words, 8 histograms of 3 x 256, 2 words per workgroup
// (BITMAP in the kernel).
constexpr uint32_t kBitmapWord = 32 + 8 * 768 + 2 * kMaxGroups;

std::string str(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

uint32_t mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

// The f32 logit after penalty and temperature, as the kernel (and HF on f32 logits) computes it.
float transformed(float logit, bool seen, float penalty, float temperature) {
  float x = logit;
  if (seen) x = logit < 0 ? logit * penalty : logit / penalty;
  x = x / temperature;
  return std::isnan(x) ? -std::numeric_limits<float>::infinity() : x;
}

}  // namespace

void validate(const SamplingParams& p, const std::string& file) {
  // The flag, or the file's key when the value came from it.
  auto name = [&](const char* flag, const char* key) {
    return file.empty() ? std::string(flag) : file + ": \"" + key + "\"";
  };
  if (!std::isfinite(p.temperature) || p.temperature < 0 || (p.temperature > 0 && p.temperature < 1e-6) ||
      p.temperature > 1e6)
    throw Error(name("--temp", "temperature") + " must be 0 (greedy) or between 1e-6 and 1e6, got " +
                str(p.temperature));
  if (p.top_k < 0)
    throw Error(name("--top-k", "top_k") + " must be 0 (off) or a positive count, got " +
                std::to_string(p.top_k));
  if (!(p.top_p > 0 && p.top_p <= 1))
    throw Error(name("--top-p", "top_p") + " must be in (0, 1] (1 = off), got " + str(p.top_p));
  if (!std::isfinite(p.repetition_penalty) || !(p.repetition_penalty > 0))
    throw Error(name("--repeat-penalty", "repetition_penalty") +
                " must be a positive number (1 = off), got " + str(p.repetition_penalty));
}

uint32_t sample_draw(uint64_t seed, uint32_t pos) {
  return mix32((mix32(mix32(pos ^ 0x9e3779b9u) + uint32_t(seed)) ^ uint32_t(seed >> 32)));
}

ReferenceSample sample_reference(std::span<const float> logits, std::span<const uint32_t> tokens,
                                 uint32_t pos, const SamplingParams& params, double boundary_eps) {
  validate(params);
  const size_t n = logits.size();
  if (n == 0) throw Error("sample_reference: empty logits");
  if (size_t(pos) >= tokens.size())
    throw Error("sample_reference: pos " + std::to_string(pos) + " is past the " +
                std::to_string(tokens.size()) + " tokens given");
  const bool greedy = params.temperature == 0;
  const float temperature = greedy ? 1.0f : float(params.temperature);
  const float penalty = float(params.repetition_penalty);
  const uint64_t top_k = greedy ? 1 : uint64_t(params.top_k);
  // The kernel's threshold is top_p in 2^-32 units, at least 1.
  const double top_p = greedy ? 1.0 : std::max(double(float(params.top_p)), 0x1p-32);

  std::vector<bool> seen(n, false);
  if (penalty != 1.0f)
    for (uint32_t j = 0; j <= pos; ++j)
      if (tokens[j] < n) seen[tokens[j]] = true;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = transformed(logits[i], seen[i], penalty, temperature);

  std::vector<bool> kept(n, true);
  if (top_k > 0 && top_k < n) {
    std::vector<float> sorted = x;
    std::nth_element(sorted.begin(), sorted.begin() + long(top_k - 1), sorted.end(), std::greater<>());
    const float kth = sorted[top_k - 1];
    for (size_t i = 0; i < n; ++i) kept[i] = x[i] >= kth;
  }
  const float max = *std::max_element(x.begin(), x.end());
  ReferenceSample out;
  if (max == -std::numeric_limits<float>::infinity()) {  // every logit NaN or -inf: none to draw
    out.id = kNoFiniteLogit;
    return out;
  }
  std::vector<double> w(n);
  for (size_t i = 0; i < n; ++i)
    w[i] = !kept[i] ? 0.0 : x[i] == max ? 1.0 : std::exp(double(x[i]) - double(max));

  if (top_p < 1) {
    double total = 0;
    for (double v : w) total += v;
    const double tau = top_p * total;
    std::vector<uint32_t> order;
    for (size_t i = 0; i < n; ++i)
      if (kept[i]) order.push_back(uint32_t(i));
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return x[a] > x[b]; });
    double above = 0;  // mass strictly above the current group of equal values
    for (size_t g = 0; g < order.size();) {
      size_t end = g;
      double group_mass = 0;
      while (end < order.size() && x[order[end]] == x[order[g]]) group_mass += w[order[end++]];
      if (std::abs(above - tau) < boundary_eps * total) out.near_boundary = true;
      if (!(above < tau))
        for (size_t j = g; j < end; ++j) w[order[j]] = 0, kept[order[j]] = false;
      above += group_mass;
      g = end;
    }
  }

  double total = 0;
  for (double v : w) total += v;
  const double target = greedy ? 0.0 : sample_draw(params.seed, pos) / 4294967296.0 * total;
  double cumulative = 0;
  for (size_t i = 0; i < n; ++i) {
    if (w[i] == 0) continue;
    if (target < cumulative + w[i]) {
      out.id = uint32_t(i);
      if (!greedy && std::min(target - cumulative, cumulative + w[i] - target) < boundary_eps * total)
        out.near_boundary = true;
      return out;
    }
    cumulative += w[i];
  }
  throw Error("sample_reference: no token kept (internal error)");
}

// ---- Sampler ----

Sampler::Sampler(gpu::Context& ctx, uint32_t vocab_size) : ctx_(&ctx) {
  if (vocab_size == 0 || vocab_size > kMaxVocab)
    throw Error("Sampler: vocab_size " + std::to_string(vocab_size) + " is outside 1 .. " +
                std::to_string(kMaxVocab) + " (the kernel's 64-bit mass sums allow 2^19 tokens)");
  // Chunks of a multiple of 256 ids, at least 4 per invocation and at most 64 chunks (151,936 ids:
  // 60 of 2,560). The work is a few hundred KB, so more workgroups would add little on a GPU, and
  // each one repeats the previous pass's 256-bucket selection (what a CPU device pays for most).
  const uint32_t runs =
      std::max<uint32_t>(4, (vocab_size + kWorkgroup * kTargetGroups - 1) / (kWorkgroup * kTargetGroups));
  const uint32_t per_group = kWorkgroup * runs;
  gpu_params_.vocab = vocab_size;
  gpu_params_.chunk = per_group;
  gpu_params_.groups = (vocab_size + per_group - 1) / per_group;
  using gpu::BufferUsage;
  uniform_ = ctx.buffer(sizeof(SamplerParams), BufferUsage::Uniform | BufferUsage::CopyDst, "sampler.params");
  keys_ = ctx.buffer(uint64_t(vocab_size) * 4, BufferUsage::StorageIO, "sampler.keys");
  scratch_ = ctx.buffer(uint64_t(kBitmapWord + (vocab_size + 31) / 32) * 4, BufferUsage::StorageIO,
                        "sampler.scratch");
  set_params({});
}

void Sampler::set_params(const SamplingParams& p) {
  validate(p);
  params_ = p;
  const bool greedy = p.temperature == 0;
  gpu_params_.greedy = greedy ? 1 : 0;
  gpu_params_.temperature = greedy ? 1.0f : float(p.temperature);
  const uint64_t k = greedy ? 1 : uint64_t(p.top_k);
  gpu_params_.top_k = k < gpu_params_.vocab ? uint32_t(k) : 0;  // k >= vocab keeps all: off
  gpu_params_.top_p = greedy ? 1.0f : float(p.top_p);
  gpu_params_.penalty = float(p.repetition_penalty);
  gpu_params_.seed_lo = uint32_t(p.seed);
  gpu_params_.seed_hi = uint32_t(p.seed >> 32);
  ctx_->write_value(uniform_, 0, gpu_params_);
}

uint32_t Sampler::dispatches() const {
  return 4 + (top_k_on() ? 3 : 0) + (top_p_on() ? 4 : 0);
}

gpu::Plan Sampler::plan(const gpu::Binding& logits, const gpu::Binding& tokens, const gpu::Binding& state) {
  const uint32_t vocab = gpu_params_.vocab;
  if (logits.size() < uint64_t(vocab) * 4)
    throw Error("Sampler: the logits buffer holds " + std::to_string(logits.size() / 4) +
                " floats, the vocabulary " + std::to_string(vocab));
  if (tokens.size() < 8) throw Error("Sampler: the tokens buffer needs room for at least 2 ids");
  if (state.size() < 4) throw Error("Sampler: the state buffer needs at least 1 word (pos)");
  gpu::Plan out(*ctx_, "sampler");
  auto add = [&](const char* entry, std::map<std::string, double> overrides, uint32_t groups) {
    auto& k = ctx_->kernel(gpu::embedded_kernel("llm_sample", entry, std::move(overrides)));
    out.dispatch(k, {logits, tokens, state, uniform_, keys_, scratch_}, {groups});
  };
  const uint32_t groups = gpu_params_.groups;
  add("prepare", {}, 1);
  add("transform", {}, groups);
  if (top_k_on())
    for (int pass = 1; pass <= 3; ++pass) add("histogram", {{"PASS", pass}}, groups);
  if (top_p_on())
    for (int pass = 4; pass <= 7; ++pass) add("histogram", {{"PASS", pass}}, groups);
  add("partials", {}, groups);
  add("pick", {}, 1);
  return out;
}

}  // namespace wgfuse::llm
