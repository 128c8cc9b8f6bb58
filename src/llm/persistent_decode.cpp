#include "llm/persistent_decode.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "gpu/recorder.h"
#include "llm/architecture.h"
#include "llm/generated_tokens.h"
#include "llm/rope.h"
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

std::string persistent_unsupported(const ModelConfig& c) {
  if (architecture_of(c).qk_norm)
    return c.architecture +
           "'s per-head q/k norms are not implemented in the one-dispatch decoder (use --decode steps)";
  return "";
}

PersistentDecoder::PersistentDecoder(gpu::Context& ctx, ModelConfig cfg, const WeightLookup& weights,
                                     PersistentOptions options)
    : ctx_(&ctx), cfg_(std::move(cfg)), opt_(std::move(options)) {
  const auto& c = cfg_;
  const auto& lim = ctx.limits();
  check_config(c, "persistent decode");
  const std::string unsupported = persistent_unsupported(c);
  need(unsupported.empty(), unsupported);
  need(
      kStagesPerLayer * c.num_layers + 1 < kFailedBase,
      std::to_string(c.num_layers) + " layers: at most " + std::to_string(kFailedBase / kStagesPerLayer - 1));
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
  reset();
}

void PersistentDecoder::upload_weights(const WeightLookup& weights) {
  const auto& c = cfg_;
  const uint32_t hd = c.head_dim, q_rows = c.num_heads * hd, kv_rows = c.num_kv_heads * hd;
  const uint32_t qkv_rows = q_rows + 2 * kv_rows, H = c.hidden_size, I = c.intermediate_size;
  using enum TensorRole;
  const ModelTensors w(c, weights);  // every tensor found and shape-checked before anything is uploaded
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
  // The vectors: per layer the two norms and the Q/K/V bias (packed order), the final norm, the
  // RoPE table (llm/rope.h, as Model's).
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
    const uint64_t base = l * layer_v4, vbase = uint64_t(l) * (2 * H8 + B8);
    put(vbase, w(AttnNorm, l));
    put(vbase + H8, w(FfnNorm, l));
    const std::vector<float> bias = packed_qkv_bias(w, c, l);
    std::copy(bias.begin(), bias.end(), vecs.begin() + ptrdiff_t(vbase + 2 * H8));
    place(base, qkv_rows, H, packed_qkv_rows(w, c, l));
    place(base + qkv, H, q_rows, rows_of(w(O, l)));
    place(base + qkv + o, 2 * I, H, packed_gate_up_rows(w, c, l));
    place(base + qkv + o + gu, H, I, rows_of(w(Down, l)));
  }
  place(embed_v4, c.vocab_size, H, rows_of(w(Embedding)));
  if (const TensorRef* head = w.find(LmHead)) place(head_v4, c.vocab_size, H, rows_of(*head));
  const uint64_t final_at = uint64_t(2 * H8 + B8) * c.num_layers;
  put(final_at, w(FinalNorm));
  const std::vector<float> rope = rope_table(c, opt_.ctx);
  std::copy(rope.begin(), rope.end(), vecs.begin() + ptrdiff_t(final_at + H8));
  vectors_ = ctx_->upload<float>(vecs, BufferUsage::Storage, "llm.persistent.vectors");
  stats_.weight_bytes += vectors_.size();
}

uint32_t PersistentDecoder::barriers_per_token() const {
  return kStagesPerLayer * cfg_.num_layers + 1;
}

void PersistentDecoder::reset() {
  seq_.clear();
  fed_ = 0;
}

std::vector<uint32_t> PersistentDecoder::run(uint32_t count, uint32_t first, uint32_t picked,
                                             gpu::Recorder& rec) {
  for (uint32_t i = 0; i < count; ++i) {
    rec.copy(zero_, 0, control_, 0, 4);  // the barrier arrivals start at zero in every dispatch
    rec.dispatch(*kernel_, group_, opt_.workgroups);
  }
  const uint64_t bytes = 16 + 4ull * picked;
  if (staging_.size() < bytes)
    staging_ = ctx_->buffer(bytes, BufferUsage::MapRead | BufferUsage::CopyDst, "llm.persistent.staging");
  rec.copy(control_, 0, staging_, 0, 16);
  rec.copy(tokens_, 4ull * first, staging_, 16, 4ull * picked);
  rec.submit();
  const auto raw = ctx_->map_read(staging_, bytes);
  std::vector<uint32_t> words(bytes / 4);
  std::memcpy(words.data(), raw.data(), bytes);
  if (words[1] != 0) {
    broken_ = true;
    const uint32_t k = kFailedBase - words[1];
    throw Error("persistent decode: a grid barrier timed out (barrier " + std::to_string(k) + " of " +
                std::to_string(barriers_per_token()) + ", after " + barrier_name(k, cfg_.num_layers) +
                "): the " + std::to_string(opt_.workgroups) + " workgroups were not all resident within " +
                std::to_string(opt_.spin_limit) + " spins; use fewer workgroups or --decode steps");
  }
  return std::vector<uint32_t>(words.begin() + 4, words.end());
}

std::vector<uint32_t> PersistentDecoder::generate(std::span<const uint32_t> prompt, uint32_t n,
                                                  const std::function<bool(uint32_t)>& on_token,
                                                  const GenerateOptions& opt) {
  need(!broken_, "a grid barrier timed out earlier: this decoder's state is undefined");
  need(opt.picker.empty(), "greedy decoding only (no --temp, --top-k, --top-p, --repeat-penalty)");
  if (n == 0) throw Error("generate: the number of tokens to generate (-n) must be at least 1");
  for (uint32_t id : prompt)
    if (id >= cfg_.vocab_size)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (vocab_size " +
                  std::to_string(cfg_.vocab_size) + ")");
  const uint64_t length = seq_.size() + prompt.size();
  if (length == fed_) throw Error("generate: empty prompt");
  if (length + n - 1 > opt_.ctx)
    throw Error("generate: " + std::to_string(length) + " tokens + " + std::to_string(n) +
                " to generate exceed --ctx " + std::to_string(opt_.ctx));
  const uint32_t written = uint32_t(seq_.size());
  seq_.insert(seq_.end(), prompt.begin(), prompt.end());
  if (written < seq_.size())
    ctx_->write(tokens_, 4ull * written, std::as_bytes(std::span(seq_).subspan(written)));
  const uint32_t words[2] = {fed_, uint32_t(seq_.size())};  // pos, tokens known
  ctx_->write(control_, 8, std::as_bytes(std::span(words)));

  const uint32_t K = opt.on_logits ? 1 : std::max<uint32_t>(1, opt.steps_per_submit);
  stats_.prompt_tokens = seq_.size() - fed_;
  stats_.generated_tokens = stats_.decode_tokens = stats_.decode_steps = stats_.decode_dispatches =
      stats_.decode_submits = stats_.decode_readbacks = stats_.debug_readbacks = 0;
  GeneratedTokens out(cfg_.vocab_size, n, on_token, opt.eos_ids, seq_);
  auto take = [&](std::span<const uint32_t> ids) {
    for (uint32_t id : ids) {
      if (opt.on_logits && !out.stopped()) opt.on_logits(read_logits());
      out.take(id);
    }
  };

  // The prompt phase: every unfed position in one submit; the last picks the first token.
  auto t0 = SteadyClock::now();
  gpu::Recorder rec(*ctx_);
  const uint32_t first = uint32_t(seq_.size());
  take(run(first - fed_, first, 1, rec));
  stats_.prefill_ms = ms_since(t0);
  // The decode phase: K positions per submit, the tokens read back once per submit.
  t0 = SteadyClock::now();
  const uint64_t d0 = rec.dispatches(), s0 = rec.submits();
  while (!out.stopped()) {
    const uint32_t k = std::min<uint32_t>(K, n - uint32_t(out.ids().size()));
    take(run(k, uint32_t(seq_.size()), k, rec));
    ++stats_.decode_readbacks;
  }
  stats_.decode_ms = ms_since(t0);
  stats_.decode_dispatches = rec.dispatches() - d0;
  stats_.decode_submits = rec.submits() - s0;
  stats_.decode_tokens = out.ids().size() - 1;
  stats_.decode_steps = stats_.decode_dispatches;
  stats_.generated_tokens = out.ids().size();
  fed_ = uint32_t(seq_.size()) - 1;  // the last token is known but not fed
  return out.release();
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

std::string compare_with_steps(Model& steps, PersistentDecoder& persistent, std::span<const uint32_t> prompt,
                               uint32_t n, double tol) {
  struct Run {
    std::vector<uint32_t> tokens;
    std::vector<std::vector<float>> logits;
  };
  auto run = [&](auto& decoder) {
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
