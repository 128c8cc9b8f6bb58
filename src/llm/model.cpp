#include "llm/model.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "gpu/profiler.h"
#include "llm/architecture.h"
#include "llm/generated_tokens.h"
#include "llm/rope.h"
#include "llm/safetensors.h"
#include "llm/weight_loader.h"
#include "util/clock.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

using gpu::BufferUsage;

}  // namespace

Fusion parse_fusion(std::string_view s) {
  if (s == "none") return Fusion::None;
  if (s == "full") return Fusion::Full;
  throw Error("--fusion '" + std::string(s) + "': expected none or full");
}

Model::Model(gpu::Context& ctx, ModelConfig cfg, const WeightLookup& weights, ModelOptions options)
    : Decoder(ctx), cfg_(std::move(cfg)), opt_(std::move(options)), ctx_len_(opt_.ctx) {
  const auto& c = cfg_;
  check_config(c);
  if (ctx_len_ == 0) throw Error("--ctx must be at least 1");
  if (c.max_position_embeddings && ctx_len_ > c.max_position_embeddings)
    throw Error("--ctx " + std::to_string(ctx_len_) + " exceeds the model's max_position_embeddings (" +
                std::to_string(c.max_position_embeddings) + ")");

  const auto t0 = SteadyClock::now();
  upload_weights(weights);
  stats_.upload_ms = ms_since(t0);

  const uint32_t q_rows = c.num_heads * c.head_dim;
  x_ = scratch("llm.x", c.hidden_size);
  q_ = scratch("llm.q", q_rows);
  att_ = scratch("llm.attention", q_rows);
  act_ = scratch("llm.act", c.intermediate_size);
  att_partials_ =
      scratch("llm.attention_partials", DecodeKernels::attend_partials_words(c, ctx_len_, opt_.attention));
  if (opt_.fusion == Fusion::Full) {
    x_next_ = scratch("llm.x_next", c.hidden_size);
    o_parts_ = scratch("llm.o_parts", DecodeKernels::attend_o_parts_words(c));
  }
  logits_ = scratch("llm.logits", c.vocab_size);
  part_v_ = scratch("llm.argmax_v", ceil_div(c.vocab_size, DecodeKernels::kArgmaxChunk));
  part_i_ = scratch("llm.argmax_i", ceil_div(c.vocab_size, DecodeKernels::kArgmaxChunk));
  tokens_ = scratch("llm.tokens", uint64_t(ctx_len_) + 1);
  if (opt_.prefill_chunk) {
    // Rows for whole tiles of tokens: the last tile's rows past the chunk are computed too.
    constexpr uint32_t tile = DecodeKernels::kPromptTokenTile;
    const uint64_t rows = uint64_t(ceil_div(std::min(opt_.prefill_chunk, ctx_len_), tile)) * tile;
    x_rows_ = scratch("llm.prefill.x", rows * pad8(c.hidden_size));
    q_rows_ = scratch("llm.prefill.q", rows * q_rows);
    att_rows_ = scratch("llm.prefill.attention", rows * pad8(q_rows));
    act_rows_ = scratch("llm.prefill.act", rows * pad8(c.intermediate_size));
  }
  state_ = scratch("llm.state", 4);
  build_steps();
}

gpu::Buffer Model::scratch(std::string_view label, uint64_t words) {
  gpu::Buffer b = ctx_->buffer(4 * uint64_t(pad8(uint32_t(words))), BufferUsage::StorageIO, label);
  count_buffer(b);
  return b;
}

void Model::upload_weights(const WeightLookup& weights) {
  using enum TensorRole;
  const auto& c = cfg_;
  const uint32_t hd = c.head_dim, q_rows = c.num_heads * hd;
  const ModelTensors t(c, weights);  // every tensor found and shape-checked before anything is uploaded
  const TensorRef* head = t.find(LmHead);

  WeightLoader w(*ctx_, storage_format(opt_.dtype, t(Embedding).dtype), {.label = "llm.weights"});
  stats_.weight_format = w.format();
  auto vector = [&](std::string name, const TensorRef& tr) { return w.vector(std::move(name), to_f32(tr)); };
  auto packed = [&](std::string name, const PackedMatrix& m) {
    return w.matrix(std::move(name), m.sources, m.rows, c.hidden_size, m.source_row);
  };
  const auto embed_id = w.matrix("embedding", {&t(Embedding)}, c.vocab_size, c.hidden_size);
  const auto head_id = head ? w.matrix("lm_head", {head}, c.vocab_size, c.hidden_size) : embed_id;
  const auto norm_id = vector("final_norm", t(FinalNorm));
  struct LayerIds {
    WeightLoader::TensorId qkv, qkv_bias, input_norm, o, post_norm, gate_up, down;
    std::optional<WeightLoader::TensorId> qk_norm;
  };
  std::vector<LayerIds> ids;
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "layer" + std::to_string(i) + ".";
    LayerIds l{};
    l.qkv = packed(p + "qkv", packed_qkv(t, c, i));
    l.qkv_bias = w.vector(p + "qkv_bias", packed_qkv_bias(t, c, i));
    if (t.architecture().qk_norm) {  // q_norm then k_norm, as qk_norm_rope reads them
      std::vector<float> norms = to_f32(t(QNorm, i));
      const std::vector<float> k_norm = to_f32(t(KNorm, i));
      norms.insert(norms.end(), k_norm.begin(), k_norm.end());
      l.qk_norm = w.vector(p + "qk_norm", std::move(norms));
    }
    l.input_norm = vector(p + "input_norm", t(AttnNorm, i));
    l.post_norm = vector(p + "post_attention_norm", t(FfnNorm, i));
    l.o = w.matrix(p + "o_proj", {&t(O, i)}, c.hidden_size, q_rows);
    l.gate_up = packed(p + "gate_up", packed_gate_up(t, c, i));
    l.down = w.matrix(p + "down_proj", {&t(Down, i)}, c.hidden_size, c.intermediate_size);
    ids.push_back(l);
  }
  w.load(opt_.progress);
  stats_.weight_bytes = w.arena().total_bytes();
  stats_.gpu_memory_bytes += stats_.weight_bytes;
  embedding_ = w.view(embed_id);
  lm_head_ = w.view(head_id);
  final_norm_ = w.view(norm_id);
  for (const LayerIds& i : ids) {
    Layer l{.qkv = w.view(i.qkv),
            .qkv_bias = w.view(i.qkv_bias),
            .input_norm = w.view(i.input_norm),
            .o = w.view(i.o),
            .post_norm = w.view(i.post_norm),
            .gate_up = w.view(i.gate_up),
            .down = w.view(i.down)};
    if (i.qk_norm) l.qk_norm = w.view(*i.qk_norm);
    const uint64_t cache = uint64_t(c.num_kv_heads) * ctx_len_ * hd;
    l.k_cache = scratch("llm.k_cache", cache);
    l.v_cache = scratch("llm.v_cache", cache);
    stats_.kv_cache_bytes += l.k_cache.size() + l.v_cache.size();
    layers_.push_back(std::move(l));
  }
  rope_ = ctx_->upload<float>(rope_table(c, ctx_len_), BufferUsage::Storage, "llm.rope");
  count_buffer(rope_);
}

void Model::build_steps() {
  const auto& c = cfg_;
  DecodeKernels k(*ctx_);
  // Bytes each step must move (for --profile): its weights once, its vectors read and written.
  const uint32_t q_rows = c.num_heads * c.head_dim, qkv_rows = q_rows + 2 * c.num_kv_heads * c.head_dim;
  auto add = [&](Step s, std::string_view name, uint64_t bytes, uint64_t per_position = 0) {
    s.name = name;
    s.bytes = bytes;
    s.bytes_per_position = per_position;
    step_.push_back(std::move(s));
  };
  auto vec = [](uint64_t floats) { return 4 * floats; };
  add(k.embed(embedding_, tokens_, state_, x_, c.hidden_size), "embed",
      embedding_.row_bytes + vec(c.hidden_size));
  const uint64_t kv_per_position = vec(2 * c.num_kv_heads * c.head_dim);
  std::vector<size_t> qkv_at;  // each layer's qkv_rope in step_ (then attention .. down), shared
  // The projection's steps: qkv_rope, and qk_norm_rope for architectures with per-head q/k norms.
  const bool qk_norm = architecture_of(c).qk_norm;
  const size_t proj = qk_norm ? 2 : 1;
  const uint32_t kv_rows = c.num_kv_heads * c.head_dim;
  for (const Layer& l : layers_) {
    qkv_at.push_back(step_.size());
    add(k.qkv_rope(l.qkv, x_, l.input_norm, l.qkv_bias, rope_, state_, q_, l.k_cache, l.v_cache, c, ctx_len_),
        "qkv_rope", l.qkv.bytes + vec(2 * c.hidden_size + 2 * qkv_rows + c.head_dim));
    if (qk_norm)
      add(k.qk_norm_rope(l.qk_norm, rope_, state_, q_, l.k_cache, c, ctx_len_), "qk_norm_rope",
          vec(2 * (q_rows + kv_rows) + 2 * c.head_dim + c.head_dim));
    auto attention =
        k.attend(q_, l.k_cache, l.v_cache, state_, att_partials_, att_, c, ctx_len_, opt_.attention);
    add(std::move(attention.at(0)), "attention", vec(q_rows), kv_per_position);
    for (size_t i = 1; i < attention.size(); ++i)
      add(std::move(attention[i]), "attention_combine", vec(q_rows));
    add(k.matvec_residual(l.o, att_, x_, c.hidden_size, q_rows), "o_proj+residual",
        l.o.bytes + vec(q_rows + 2 * c.hidden_size));
    add(k.gate_up_silu(l.gate_up, x_, l.post_norm, act_, c.intermediate_size, c.hidden_size, c.rms_norm_eps),
        "gate_up_silu", l.gate_up.bytes + vec(2 * c.hidden_size + c.intermediate_size));
    add(k.matvec_residual(l.down, act_, x_, c.hidden_size, c.intermediate_size), "down+residual",
        l.down.bytes + vec(c.intermediate_size + 2 * c.hidden_size));
  }
  add(k.matvec_norm(lm_head_, x_, final_norm_, logits_, c.vocab_size, c.hidden_size, c.rms_norm_eps),
      "lm_head", lm_head_.bytes + vec(2 * c.hidden_size + c.vocab_size));
  if (short_max() > 0) {
    // Short caches: the split step with each layer's attention in one dispatch (attend_short)
    // in place of the chunks and their combination; from the last layer so `qkv_at` holds.
    short_step_ = step_;
    for (size_t i = layers_.size(); i-- > 0;) {
      const size_t at = qkv_at[i] + proj;  // attention (chunks), then attention_combine
      Step s =
          k.attend_short(q_, layers_[i].k_cache, layers_[i].v_cache, state_, att_, c, ctx_len_, short_max());
      s.name = "attention_short";
      s.bytes = vec(2 * q_rows);
      s.bytes_per_position = kv_per_position;
      short_step_[at] = std::move(s);
      short_step_.erase(short_step_.begin() + ptrdiff_t(at) + 1);
    }
  }
  if (opt_.fusion == Fusion::Full) {
    // The same step with fused layers: embed, qkv_rope and the LM head are the split step's.
    const uint64_t parts = vec(DecodeKernels::attend_o_parts_words(c));
    fused_step_.push_back(step_.front());  // embed
    for (size_t i = 0; i < layers_.size(); ++i) {
      const Layer& l = layers_[i];
      for (size_t p = 0; p < proj; ++p) fused_step_.push_back(step_[qkv_at[i] + p]);
      Step s = k.attend_o(l.o, q_, l.k_cache, l.v_cache, state_, o_parts_, c, ctx_len_);
      s.name = "attend_o";
      s.bytes = l.o.bytes + vec(q_rows) + parts;
      s.bytes_per_position = kv_per_position;
      fused_step_.push_back(std::move(s));
      s = k.gate_up_silu_sum(l.gate_up, x_, o_parts_, l.post_norm, act_, x_next_, c);
      s.name = "gate_up_silu_sum";
      s.bytes = l.gate_up.bytes + parts + vec(3 * c.hidden_size + c.intermediate_size);
      fused_step_.push_back(std::move(s));
      s = k.matvec_residual_to(l.down, act_, x_next_, x_, c.hidden_size, c.intermediate_size);
      s.name = "down+residual";
      s.bytes = l.down.bytes + vec(c.intermediate_size + 2 * c.hidden_size);
      fused_step_.push_back(std::move(s));
    }
    fused_step_.push_back(step_.back());  // LM head
    // Long contexts: the split layer, attend_combine folded into o_proj.
    long_step_.push_back(step_.front());
    for (size_t i = 0; i < layers_.size(); ++i) {
      for (size_t p = 0; p < proj; ++p)
        long_step_.push_back(step_[qkv_at[i] + p]);  // qkv_rope (qk_norm_rope)
      const size_t at = qkv_at[i] + proj - 1;
      long_step_.push_back(step_[at + 1]);  // attention (chunks)
      Step s = k.o_proj_combine(layers_[i].o, att_partials_, x_, state_, c, ctx_len_, opt_.attention);
      s.name = "o_proj_combine";
      s.bytes = step_[at + 3].bytes + step_[at + 2].bytes;
      long_step_.push_back(std::move(s));
      long_step_.push_back(step_[at + 4]);  // gate_up_silu
      long_step_.push_back(step_[at + 5]);  // down + residual
    }
    long_step_.push_back(step_.back());
  }
  argmax_ = k.argmax(logits_, part_v_, part_i_, tokens_, state_, c.vocab_size, DecodeKernels::kArgmaxChunk);
  argmax_[0].name = "argmax_partial";
  argmax_[0].bytes = vec(c.vocab_size);
  argmax_[1].name = "argmax_final";
  advance_ = k.advance(state_);
  stats_.dispatches_per_step_long =
      uint32_t((opt_.fusion == Fusion::Full ? long_step_ : step_).size() + argmax_.size());
  stats_.dispatches_per_step = uint32_t(decode_step(0).size() + argmax_.size());
  // The prefill pipelines of a whole chunk are compiled now, not inside the first (timed) prompt.
  if (opt_.prefill_chunk) prompt_steps(std::min(opt_.prefill_chunk, ctx_len_));
}

std::span<const Step> Model::decode_step(uint32_t pos) const {
  if (opt_.fusion == Fusion::None) return pos < short_max() ? short_step_ : step_;
  return pos < opt_.attn_fuse_max ? fused_step_ : long_step_;
}

uint32_t Model::short_max() const {
  return opt_.fusion == Fusion::None ? std::min(opt_.attn_short_max, ctx_len_) : 0;
}

std::vector<Step> Model::prompt_steps(uint32_t T) {
  const auto& c = cfg_;
  DecodeKernels k(*ctx_);
  const uint32_t q_rows = c.num_heads * c.head_dim;
  const bool qk_norm = architecture_of(c).qk_norm;
  std::vector<Step> steps{k.embed(embedding_, tokens_, state_, x_rows_, c.hidden_size, T)};
  for (const Layer& l : layers_) {
    steps.push_back(k.qkv_rope_prompt(l.qkv, x_rows_, l.input_norm, l.qkv_bias, rope_, state_, q_rows_,
                                      l.k_cache, l.v_cache, c, ctx_len_, T));
    if (qk_norm)
      steps.push_back(k.qk_norm_rope(l.qk_norm, rope_, state_, q_rows_, l.k_cache, c, ctx_len_, T));
    steps.push_back(k.attend_prompt(q_rows_, l.k_cache, l.v_cache, state_, att_rows_, c, ctx_len_, T));
    steps.push_back(k.residual_prompt(l.o, att_rows_, x_rows_, c.hidden_size, q_rows, T));
    steps.push_back(k.gate_up_silu_prompt(l.gate_up, x_rows_, l.post_norm, act_rows_, c.intermediate_size,
                                          c.hidden_size, c.rms_norm_eps, T));
    steps.push_back(k.residual_prompt(l.down, act_rows_, x_rows_, c.hidden_size, c.intermediate_size, T));
  }
  return steps;
}

void Model::reset() {
  Decoder::reset();
  logits_fresh_ = false;
}

void Model::set_position() {
  ctx_->write_value<uint32_t>(state_, 0, fed_);
  logits_fresh_ = false;
}

void Model::record_prompt(gpu::Recorder& rec) {
  const auto& c = cfg_;
  const uint32_t last = uint32_t(seq_.size()) - 1;
  if (opt_.prefill_chunk == 0) {  // one decode step per position; state word 0 = fed_
    for (uint32_t p = fed_; p < last; ++p) {
      const auto step = decode_step(p);
      record(rec, step.first(step.size() - 1));  // embedding .. last layer
      record(rec, std::span(&advance_, 1));
    }
    record(rec, decode_step(last));
    return;
  }
  for (uint32_t p0 = fed_; p0 <= last; p0 += opt_.prefill_chunk) {
    const uint32_t T = std::min(opt_.prefill_chunk, last + 1 - p0);
    // The picker's position; the chunk's first position and length.
    const uint32_t words[3] = {last, p0, T};
    ctx_->write(state_, 0, std::as_bytes(std::span(words)));
    record(rec, prompt_steps(T));
    if (p0 + T <= last) {
      rec.submit();  // the next chunk's state write must follow this chunk
    } else {
      const uint64_t row = 4ull * pad8(c.hidden_size);
      rec.copy(x_rows_, row * (T - 1), x_, 0, row);  // the last token's residual stream
      record(rec, std::span(step_).last(1));         // LM head
    }
  }
}

void Model::prefill(std::span<const uint32_t> ids) {
  push_sequence(ids);
  if (fed_ == seq_.size()) throw Error("prefill: nothing to feed (empty prompt)");
  gpu::Recorder rec(*ctx_);
  record_prompt(rec);
  rec.submit();
  ctx_->wait();
  fed_ = uint32_t(seq_.size());
  logits_fresh_ = true;
}

DecodeProfile Model::profile_decode(std::span<const Step> picker, uint32_t reps) {
  if (seq_.empty() || fed_ + 1 != seq_.size())
    throw Error("profile: generate tokens first (the profile decodes the last generated token again)");
  if (picker.empty()) picker = argmax_;
  std::vector<const Step*> all;
  for (const Step& s : decode_step(fed_)) all.push_back(&s);
  for (const Step& s : picker) all.push_back(&s);
  gpu::Profiler prof(*ctx_, uint32_t(all.size()) + 1);
  if (!prof.enabled())
    throw Error("--profile needs GPU timestamps (the 'timestamp-query' feature), which adapter '" +
                ctx_->adapter().description + "' does not offer");
  DecodeProfile out;
  out.position = fed_;
  for (const Step* s : all) out.steps.push_back({s, {}});
  for (uint32_t r = 0; r < reps; ++r) {
    // Every repetition decodes the same position: the picker advanced it, so it is set back.
    ctx_->write_value<uint32_t>(state_, 0, fed_);
    gpu::Recorder rec(*ctx_);
    for (const Step* s : all) {
      rec.time_next_pass(prof);
      record(rec, std::span(s, 1));
      rec.end_pass();
    }
    prof.resolve(rec);
    rec.submit();
    const auto ns = prof.read_ns();
    for (size_t i = 0; i < all.size(); ++i) out.steps[i].us.push_back(ns.at(i) / 1e3);
    ctx_->write_value<uint32_t>(state_, 0, fed_);
    gpu::Recorder whole(*ctx_);
    whole.time_next_pass(prof);
    for (const Step* s : all) record(whole, std::span(s, 1));
    whole.end_pass();
    prof.resolve(whole);
    whole.submit();
    out.whole_step_us.push_back(prof.read_ns().at(0) / 1e3);
  }
  ctx_->write_value<uint32_t>(state_, 0, fed_);
  ctx_->wait();
  return out;
}

std::vector<float> Model::read_logits() {
  ++stats_.debug_readbacks;
  return ctx_->read<float>(logits_, 0, cfg_.vocab_size);
}

std::span<const Step> Model::picker(const GenerateOptions& opt) const {
  return opt.picker.empty() ? std::span<const Step>(argmax_) : opt.picker;
}

void Model::record_prompt_phase(gpu::Recorder& rec, const GenerateOptions& opt) {
  if (!logits_ready()) record_prompt(rec);
  logits_fresh_ = false;
  record(rec, picker(opt));
}

void Model::record_steps(gpu::Recorder& rec, uint32_t pos, uint32_t k, const GenerateOptions& opt) {
  for (uint32_t i = 0; i < k; ++i) {
    record(rec, decode_step(pos + i));
    record(rec, picker(opt));
  }
}

}  // namespace wgfuse::llm
