#include "llm/persistent_decode.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "gpu/recorder.h"
#include "util/clock.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

using gpu::BufferUsage;

constexpr uint32_t kStagesPerLayer = 5;
constexpr uint32_t kFailedBase =
    0x10000;  // FAILED_BASE of the kernel: control word 1 = it - first failed barrier
constexpr const char* kStageNames[kStagesPerLayer] = {"Q/K/V", "attention", "o_proj", "gate/up", "down_proj"};

// What grid barrier k (0-based) ends, for the timeout message.
std::string barrier_name(uint32_t k, uint32_t layers) {
  if (k >= kStagesPerLayer * layers) return "the LM head";
  return "layer " + std::to_string(k / kStagesPerLayer) + " " + kStageNames[k % kStagesPerLayer];
}

void need(bool ok, const std::string& what) {
  if (!ok) throw Error("persistent decode: " + what);
}

}  // namespace

PersistentDecoder::PersistentDecoder(gpu::Context& ctx, ModelConfig cfg, const WeightLookup& weights,
                                     PersistentOptions options)
    : Decoder(ctx), cfg_(std::move(cfg)), opt_(std::move(options)) {
  const auto& c = cfg_;
  const auto& lim = ctx.limits();
  need(c.vocab_size && c.hidden_size && c.intermediate_size && c.num_layers && c.num_heads &&
           c.num_kv_heads && c.head_dim,
       "vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, "
       "num_key_value_heads and head_dim must all be positive");
  need(c.num_heads % c.num_kv_heads == 0, "num_attention_heads (" + std::to_string(c.num_heads) +
                                              ") must be a multiple of num_key_value_heads (" +
                                              std::to_string(c.num_kv_heads) + ")");
  need(
      kStagesPerLayer * c.num_layers + 1 < kFailedBase,
      std::to_string(c.num_layers) + " layers: at most " + std::to_string(kFailedBase / kStagesPerLayer - 1));
  need(c.head_dim % 2 == 0, "head_dim (" + std::to_string(c.head_dim) + ") must be even for RoPE");
  need(opt_.ctx >= 1 && (!c.max_position_embeddings || opt_.ctx <= c.max_position_embeddings),
       "--ctx " + std::to_string(opt_.ctx) + " must be 1 .. max_position_embeddings (" +
           std::to_string(c.max_position_embeddings) + ")");
  need(ctx.features().subgroups, "needs the WebGPU 'subgroups' feature, which adapter '" +
                                     ctx.adapter().description + "' does not offer");
  need(opt_.workgroups >= 1 && opt_.workgroups <= lim.max_compute_workgroups_per_dimension,
       "workgroups " + std::to_string(opt_.workgroups) +
           ", expected 1 .. maxComputeWorkgroupsPerDimension (" +
           std::to_string(lim.max_compute_workgroups_per_dimension) + ")");
  // A row's team covers whole subgroups (a subgroup sum never mixes rows).
  const uint32_t team =
      std::max<uint32_t>(32, std::bit_ceil(std::max<uint32_t>(1, ctx.adapter().subgroup_max_size)));
  const uint32_t wg = opt_.workgroup_size;
  need(std::has_single_bit(wg) && wg >= team && wg >= c.head_dim &&
           wg <= lim.max_compute_invocations_per_workgroup,
       "workgroup size " + std::to_string(wg) + " must be a power of two, >= " + std::to_string(team) +
           " (a row's team), >= head_dim (" + std::to_string(c.head_dim) +
           ") and <= maxComputeInvocationsPerWorkgroup (" +
           std::to_string(lim.max_compute_invocations_per_workgroup) + ")");
  const uint32_t q_rows = c.num_heads * c.head_dim;
  const uint32_t xs_len = pad8(std::max({c.hidden_size, q_rows, c.intermediate_size}));
  const uint64_t shared_bytes = 4ull * (xs_len + 2 * wg + wg + wg + c.head_dim + 1);
  need(shared_bytes <= lim.max_compute_workgroup_storage_size,
       "a workgroup stages vectors of " + std::to_string(xs_len) +
           " floats: " + std::to_string(shared_bytes) +
           " bytes of workgroup memory, above maxComputeWorkgroupStorageSize (" +
           std::to_string(lim.max_compute_workgroup_storage_size) + ")");

  const auto t0 = SteadyClock::now();
  upload_weights(weights);
  stats_.upload_ms = ms_since(t0);

  // The live words: residual, q, attention output, act, logits, per-workgroup best logits.
  uint64_t words = 0;
  auto region = [&](const char* name, uint64_t n) {
    layout_[name] = double(words);
    words += pad8(uint32_t(n));
  };
  region("X_W", c.hidden_size);
  region("Q_W", q_rows);
  region("ATT_W", q_rows);
  region("ACT_W", c.intermediate_size);
  logits_word_ = uint32_t(words);
  region("LOGITS_W", c.vocab_size);
  region("BEST_W", 2ull * opt_.workgroups);
  const uint64_t kv_words = 2ull * c.num_layers * c.num_kv_heads * opt_.ctx * c.head_dim;
  need(4 * kv_words <= lim.max_storage_buffer_binding_size,
       "the KV cache (" + std::to_string(4 * kv_words) + " bytes at --ctx " + std::to_string(opt_.ctx) +
           ") is one binding, above maxStorageBufferBindingSize (" +
           std::to_string(lim.max_storage_buffer_binding_size) + ")");
  live_ = ctx.buffer(4 * words, BufferUsage::StorageIO, "llm.persistent.live");
  kv_ = ctx.buffer(4 * kv_words, BufferUsage::StorageIO, "llm.persistent.kv");
  tokens_ = ctx.buffer(4ull * pad8(opt_.ctx + 1), BufferUsage::StorageIO, "llm.persistent.tokens");
  control_ = ctx.buffer(16, BufferUsage::StorageIO, "llm.persistent.control");
  const uint32_t zeros[4] = {0, 0, 0, 0};
  zero_ = ctx.upload<uint32_t>(zeros, BufferUsage::CopySrc, "llm.persistent.zero");
  stats_.kv_cache_bytes = kv_.size();
  stats_.gpu_memory_bytes = weights_.size() + vectors_.size() + live_.size() + kv_.size() + tokens_.size();
  stats_.dispatches_per_step = 1;

  auto& o = layout_;
  o["WEIGHT_F16"] = opt_.dtype == WeightDType::F16;
  o["WG"] = wg;
  o["TEAM"] = team;
  o["SPIN_LIMIT"] = opt_.spin_limit;
  o["HIDDEN"] = c.hidden_size;
  o["INTER"] = c.intermediate_size;
  o["LAYERS"] = c.num_layers;
  o["HEADS"] = c.num_heads;
  o["KV_HEADS"] = c.num_kv_heads;
  o["HEAD_DIM"] = c.head_dim;
  o["VOCAB"] = c.vocab_size;
  o["CTX"] = opt_.ctx;
  o["EPS"] = c.rms_norm_eps;
  o["SCALE"] = 1.0 / std::sqrt(double(c.head_dim));
  o["XS_LEN"] = xs_len;
  kernel_ = &ctx.kernel(gpu::embedded_kernel("llm_persistent_decode", "decode_token", layout_));
  group_ = ctx.bind(*kernel_, {weights_, vectors_, live_, kv_, tokens_, control_});
}

void PersistentDecoder::upload_weights(const WeightLookup& weights) {
  const auto& c = cfg_;
  const uint32_t hd = c.head_dim, q_rows = c.num_heads * hd, kv_rows = c.num_kv_heads * hd;
  const uint32_t qkv_rows = q_rows + 2 * kv_rows, H = c.hidden_size, I = c.intermediate_size;
  const WeightDType t = opt_.dtype;
  // Matrices, in vec4<u32> (16 bytes) from the start of the packed buffer.
  const uint64_t qkv = row_bytes(t, H) * qkv_rows / 16, o = row_bytes(t, q_rows) * H / 16,
                 gu = row_bytes(t, H) * 2 * I / 16, down = row_bytes(t, I) * H / 16;
  const uint64_t layer_v4 = qkv + o + gu + down, embed_v4 = layer_v4 * c.num_layers;
  const uint64_t table_v4 = row_bytes(t, H) * c.vocab_size / 16;
  const uint64_t head_v4 = c.tie_word_embeddings ? embed_v4 : embed_v4 + table_v4;
  const uint64_t total = 16 * (head_v4 + table_v4);
  const auto& lim = ctx_->limits();
  need(total <= lim.max_storage_buffer_binding_size && total <= lim.max_buffer_size,
       "the packed weights (" + std::to_string(total) +
           " bytes) are one binding, above maxStorageBufferBindingSize (" +
           std::to_string(lim.max_storage_buffer_binding_size) + ") or maxBufferSize (" +
           std::to_string(lim.max_buffer_size) + ")");
  layout_["LAYER_V4"] = double(layer_v4);
  layout_["QKV_V4"] = 0;
  layout_["O_V4"] = double(qkv);
  layout_["GU_V4"] = double(qkv + o);
  layout_["DOWN_V4"] = double(qkv + o + gu);
  layout_["EMBED_V4"] = double(embed_v4);
  layout_["HEAD_V4"] = double(head_v4);
  weights_ = ctx_->buffer(total, BufferUsage::StorageIO, "llm.persistent.weights");
  stats_.weight_bytes = total;

  // Each matrix goes through upload_rows (the layout of the step kernels) into a buffer of its
  // own, then is copied into place on the GPU; one at a time, so the extra memory is one matrix.
  uint64_t done = 0;
  auto place = [&](uint64_t at_v4, uint32_t rows, uint32_t cols,
                   const std::function<void(uint32_t, float*)>& row) {
    gpu::Buffer b = upload_rows(*ctx_, t, "llm.persistent.matrix", rows, cols, row, [&](uint64_t bytes) {
      if (opt_.progress) opt_.progress(done + bytes, total);
    });
    gpu::Recorder rec(*ctx_);
    rec.copy(b, 0, weights_, 16 * at_v4, b.size());
    rec.submit();
    ctx_->wait();
    done += b.size();
  };
  auto tensor = [&](const std::string& name, std::vector<uint64_t> shape) -> const TensorRef& {
    return require_tensor(weights, name, std::move(shape));
  };
  auto rows_of = [](const TensorRef& tr) {
    return [&tr](uint32_t r, float* out) { tensor_row(tr, r, std::span(out, tr.shape[1])); };
  };

  // The vectors: per layer the two norms and the Q/K/V bias (packed order), the final norm, the
  // RoPE table (as Model's: cos, sin of pos * theta^(-2i/hd) in double).
  const uint32_t H8 = pad8(H), B8 = pad8(qkv_rows);
  layout_["IN_NORM_F"] = 0;
  layout_["POST_NORM_F"] = H8;
  layout_["BIAS_F"] = 2 * H8;
  layout_["LAYER_F"] = 2 * H8 + B8;
  layout_["FINAL_NORM_F"] = double(uint64_t(2 * H8 + B8) * c.num_layers);
  layout_["ROPE_F"] = double(uint64_t(2 * H8 + B8) * c.num_layers + H8);
  std::vector<float> vecs(uint64_t(2 * H8 + B8) * c.num_layers + H8 + uint64_t(opt_.ctx) * hd, 0.0f);
  auto put = [&](uint64_t at, const TensorRef& tr) {
    tensor_row(tr, 0, std::span(vecs).subspan(at, tr.elements()));
  };

  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const uint64_t base = l * layer_v4, vbase = uint64_t(l) * (2 * H8 + B8);
    put(vbase, tensor(p + "input_layernorm.weight", {H}));
    put(vbase + H8, tensor(p + "post_attention_layernorm.weight", {H}));
    const TensorRef* qkv_w[3] = {&tensor(p + "self_attn.q_proj.weight", {q_rows, H}),
                                 &tensor(p + "self_attn.k_proj.weight", {kv_rows, H}),
                                 &tensor(p + "self_attn.v_proj.weight", {kv_rows, H})};
    if (c.attention_bias) {
      const std::vector<double> b[3] = {tensor_values(tensor(p + "self_attn.q_proj.bias", {q_rows})),
                                        tensor_values(tensor(p + "self_attn.k_proj.bias", {kv_rows})),
                                        tensor_values(tensor(p + "self_attn.v_proj.bias", {kv_rows}))};
      for (uint32_t r = 0; r < qkv_rows; ++r) {
        auto [which, row] = qkv_source_row(r, hd, q_rows, kv_rows);
        vecs[vbase + 2 * H8 + r] = float(b[which][row]);
      }
    }
    place(base, qkv_rows, H, [&](uint32_t r, float* out) {
      auto [which, row] = qkv_source_row(r, hd, q_rows, kv_rows);
      tensor_row(*qkv_w[which], row, std::span(out, H));
    });
    place(base + qkv, H, q_rows, rows_of(tensor(p + "self_attn.o_proj.weight", {H, q_rows})));
    const TensorRef* gu_w[2] = {&tensor(p + "mlp.gate_proj.weight", {I, H}),
                                &tensor(p + "mlp.up_proj.weight", {I, H})};
    place(base + qkv + o, 2 * I, H, [&](uint32_t r, float* out) {
      auto [which, row] = gate_up_source_row(r);
      tensor_row(*gu_w[which], row, std::span(out, H));
    });
    place(base + qkv + o + gu, H, I, rows_of(tensor(p + "mlp.down_proj.weight", {H, I})));
  }
  place(embed_v4, c.vocab_size, H, rows_of(tensor("model.embed_tokens.weight", {c.vocab_size, H})));
  if (!c.tie_word_embeddings)
    place(head_v4, c.vocab_size, H, rows_of(tensor("lm_head.weight", {c.vocab_size, H})));
  const uint64_t final_at = uint64_t(2 * H8 + B8) * c.num_layers;
  put(final_at, tensor("model.norm.weight", {H}));
  for (uint32_t pos = 0; pos < opt_.ctx; ++pos)
    for (uint32_t i = 0; i < hd / 2; ++i) {
      const double angle = double(pos) * std::pow(c.rope_theta, -2.0 * double(i) / double(hd));
      const uint64_t at = final_at + H8 + (uint64_t(pos) * hd / 2 + i) * 2;
      vecs[at] = float(std::cos(angle));
      vecs[at + 1] = float(std::sin(angle));
    }
  vectors_ = ctx_->upload<float>(vecs, BufferUsage::Storage, "llm.persistent.vectors");
  stats_.weight_bytes += vectors_.size();
}

uint32_t PersistentDecoder::barriers_per_token() const {
  return kStagesPerLayer * cfg_.num_layers + 1;
}

void PersistentDecoder::check(const GenerateOptions& opt) const {
  need(!broken_, "a grid barrier timed out earlier: this decoder's state is undefined");
  need(opt.picker.empty(), "greedy decoding only (no --temp, --top-k, --top-p, --repeat-penalty)");
}

void PersistentDecoder::set_position() {
  const uint32_t words[2] = {fed_, uint32_t(seq_.size())};  // pos, tokens known
  ctx_->write(control_, 8, std::as_bytes(std::span(words)));
}

void PersistentDecoder::record_dispatches(gpu::Recorder& rec, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    rec.copy(zero_, 0, control_, 0, 4);  // the barrier arrivals start at zero in every dispatch
    rec.dispatch(*kernel_, group_, opt_.workgroups);
  }
}

void PersistentDecoder::record_prompt_phase(gpu::Recorder& rec, const GenerateOptions&) {
  record_dispatches(rec, uint32_t(seq_.size()) - fed_);  // the last position picks the first token
}

void PersistentDecoder::record_steps(gpu::Recorder& rec, uint32_t, uint32_t k, const GenerateOptions&) {
  record_dispatches(rec, k);
}

void PersistentDecoder::record_status(gpu::Recorder& rec, const gpu::Buffer& staging) {
  rec.copy(control_, 0, staging, 0, 16);
}

void PersistentDecoder::check_status(std::span<const uint32_t, 4> words) {
  if (words[1] == 0) return;
  broken_ = true;
  const uint32_t k = kFailedBase - words[1];
  throw Error("persistent decode: a grid barrier timed out (barrier " + std::to_string(k) + " of " +
              std::to_string(barriers_per_token()) + ", after " + barrier_name(k, cfg_.num_layers) +
              "): the " + std::to_string(opt_.workgroups) + " workgroups were not all resident within " +
              std::to_string(opt_.spin_limit) + " spins; use fewer workgroups or --decode steps");
}

std::vector<float> PersistentDecoder::read_logits() {
  ++stats_.debug_readbacks;
  return ctx_->read<float>(live_, logits_word_, cfg_.vocab_size);
}

GridChoice choose_grid(gpu::Context& ctx, uint32_t requested, uint32_t workgroup_size, uint32_t spin_limit,
                       uint32_t most) {
  GridChoice out;
  for (uint32_t g = requested ? requested : std::bit_floor(std::max<uint32_t>(1, most)); g >= 1; g /= 2) {
    const GridSyncCheck r = check_grid_sync(ctx, g, workgroup_size, 4, spin_limit);
    if (r.ok()) return {g, ""};
    out.reason = std::to_string(g) + " workgroups: " + r.message;
    if (requested) break;
  }
  return out;
}

std::string compare_with_steps(Decoder& steps, Decoder& persistent, std::span<const uint32_t> prompt,
                               uint32_t n, double tol) {
  struct Run {
    std::vector<uint32_t> tokens;
    std::vector<std::vector<float>> logits;
  };
  auto run = [&](Decoder& decoder) {
    Run r;
    GenerateOptions opt;
    opt.on_logits = [&](std::span<const float> l) { r.logits.emplace_back(l.begin(), l.end()); };
    decoder.reset();
    r.tokens = decoder.generate(prompt, n, {}, opt);
    decoder.reset();
    return r;
  };
  const Run want = run(steps), got = run(persistent);
  for (size_t i = 0; i < std::min(want.tokens.size(), got.tokens.size()); ++i) {
    double scale = 0, err = 0;
    for (size_t j = 0; j < want.logits[i].size(); ++j) {
      scale = std::max(scale, std::abs(double(want.logits[i][j])));
      const double e = std::abs(double(got.logits[i][j]) - double(want.logits[i][j]));
      if (!(e <= err)) err = e;  // NaN wins
    }
    if (!(err <= tol * scale))
      return "step " + std::to_string(i) + ": logits differ from the step decoder's by " +
             std::to_string(scale > 0 ? err / scale : err) + " of their largest magnitude (tolerance " +
             std::to_string(tol) + ")";
    if (got.tokens[i] != want.tokens[i])
      return "step " + std::to_string(i) + ": token " + std::to_string(got.tokens[i]) +
             ", the step decoder picked " + std::to_string(want.tokens[i]);
  }
  if (got.tokens.size() != want.tokens.size())
    return std::to_string(got.tokens.size()) + " tokens, the step decoder gave " +
           std::to_string(want.tokens.size());
  return "";
}

}  // namespace wgfuse::llm
