#include "llm/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>

#include "gpu/profiler.h"
#include "llm/architecture.h"
#include "llm/generated_tokens.h"
#include "llm/rope.h"
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
    : ctx_(&ctx), cfg_(std::move(cfg)), opt_(std::move(options)), ctx_len_(opt_.ctx) {
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
  const uint32_t hd = c.head_dim, q_rows = c.num_heads * hd, kv_rows = c.num_kv_heads * hd;
  const WeightDType t = opt_.dtype;
  const ModelTensors w(c, weights);  // every tensor found and shape-checked before anything is uploaded
  const TensorRef* head = w.find(LmHead);

  const uint64_t per_layer = row_bytes(t, c.hidden_size) * (q_rows + 2 * kv_rows + 2 * c.intermediate_size) +
                             row_bytes(t, q_rows) * c.hidden_size +
                             row_bytes(t, c.intermediate_size) * c.hidden_size;
  total_upload_ = per_layer * c.num_layers + row_bytes(t, c.hidden_size) * c.vocab_size * (head ? 2 : 1);
  auto matrix = [&](std::string_view label, uint32_t rows, uint32_t cols, const RowSource& row) {
    const uint64_t before = done_upload_;
    gpu::Buffer b = upload_rows(*ctx_, t, label, rows, cols, row, [&](uint64_t bytes) {
      done_upload_ = before + bytes;
      if (opt_.progress) opt_.progress(done_upload_, total_upload_);
    });
    stats_.weight_bytes += b.size();
    count_buffer(b);
    return b;
  };
  auto vector = [&](std::string_view label, std::span<const float> v) {
    gpu::Buffer b = upload_padded(*ctx_, label, v);
    stats_.weight_bytes += b.size();
    count_buffer(b);
    return b;
  };
  auto norm_vector = [&](std::string_view label, const TensorRef& tr) {
    std::vector<float> v(tr.elements());
    tensor_row(tr, 0, v);
    return vector(label, v);
  };

  embedding_ = matrix("llm.embedding", c.vocab_size, c.hidden_size, rows_of(w(Embedding)));
  lm_head_ = head ? matrix("llm.lm_head", c.vocab_size, c.hidden_size, rows_of(*head)) : embedding_;
  final_norm_ = norm_vector("llm.final_norm", w(FinalNorm));
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    Layer l;
    l.qkv = matrix("llm.qkv", q_rows + 2 * kv_rows, c.hidden_size, packed_qkv_rows(w, c, i));
    l.qkv_bias = vector("llm.qkv_bias", packed_qkv_bias(w, c, i));
    if (w.architecture().qk_norm) {  // q_norm then k_norm, as qk_norm_rope reads them
      std::vector<float> norms(2 * hd);
      tensor_row(w(QNorm, i), 0, std::span(norms).first(hd));
      tensor_row(w(KNorm, i), 0, std::span(norms).last(hd));
      l.qk_norm = vector("llm.qk_norm", norms);
    }
    l.input_norm = norm_vector("llm.input_norm", w(AttnNorm, i));
    l.post_norm = norm_vector("llm.post_attention_norm", w(FfnNorm, i));
    l.o = matrix("llm.o_proj", c.hidden_size, q_rows, rows_of(w(O, i)));
    l.gate_up = matrix("llm.gate_up", 2 * c.intermediate_size, c.hidden_size, packed_gate_up_rows(w, c, i));
    l.down = matrix("llm.down_proj", c.hidden_size, c.intermediate_size, rows_of(w(Down, i)));
    const uint64_t cache = uint64_t(c.num_kv_heads) * ctx_len_ * hd;
    l.k_cache = scratch("llm.k_cache", cache);
    l.v_cache = scratch("llm.v_cache", cache);
    stats_.kv_cache_bytes += l.k_cache.size() + l.v_cache.size();
    layers_.push_back(std::move(l));
    ctx_->wait();  // each layer's queued writes drain before the next layer's are staged
  }
  rope_ = ctx_->upload<float>(rope_table(c, ctx_len_), BufferUsage::Storage, "llm.rope");
  count_buffer(rope_);
}

void Model::build_steps() {
  const auto& c = cfg_;
  DecodeKernels k(*ctx_, opt_.dtype);
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
      row_bytes(opt_.dtype, c.hidden_size) + vec(c.hidden_size));
  const uint64_t kv_per_position = vec(2 * c.num_kv_heads * c.head_dim);
  std::vector<size_t> qkv_at;  // each layer's qkv_rope in step_ (then attention .. down), shared
  // The projection's steps: qkv_rope, and qk_norm_rope for architectures with per-head q/k norms.
  const bool qk_norm = architecture_of(c).qk_norm;
  const size_t proj = qk_norm ? 2 : 1;
  const uint32_t kv_rows = c.num_kv_heads * c.head_dim;
  for (const Layer& l : layers_) {
    qkv_at.push_back(step_.size());
    add(k.qkv_rope(l.qkv, x_, l.input_norm, l.qkv_bias, rope_, state_, q_, l.k_cache, l.v_cache, c, ctx_len_),
        "qkv_rope", l.qkv.size() + vec(2 * c.hidden_size + 2 * qkv_rows + c.head_dim));
    if (qk_norm)
      add(k.qk_norm_rope(l.qk_norm, rope_, state_, q_, l.k_cache, c, ctx_len_), "qk_norm_rope",
          vec(2 * (q_rows + kv_rows) + 2 * c.head_dim + c.head_dim));
    auto attention =
        k.attend(q_, l.k_cache, l.v_cache, state_, att_partials_, att_, c, ctx_len_, opt_.attention);
    add(std::move(attention.at(0)), "attention", vec(q_rows), kv_per_position);
    for (size_t i = 1; i < attention.size(); ++i)
      add(std::move(attention[i]), "attention_combine", vec(q_rows));
    add(k.matvec_residual(l.o, att_, x_, c.hidden_size, q_rows), "o_proj+residual",
        l.o.size() + vec(q_rows + 2 * c.hidden_size));
    add(k.gate_up_silu(l.gate_up, x_, l.post_norm, act_, c.intermediate_size, c.hidden_size, c.rms_norm_eps),
        "gate_up_silu", l.gate_up.size() + vec(2 * c.hidden_size + c.intermediate_size));
    add(k.matvec_residual(l.down, act_, x_, c.hidden_size, c.intermediate_size), "down+residual",
        l.down.size() + vec(c.intermediate_size + 2 * c.hidden_size));
  }
  add(k.matvec_norm(lm_head_, x_, final_norm_, logits_, c.vocab_size, c.hidden_size, c.rms_norm_eps),
      "lm_head", lm_head_.size() + vec(2 * c.hidden_size + c.vocab_size));
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
      s.bytes = l.o.size() + vec(q_rows) + parts;
      s.bytes_per_position = kv_per_position;
      fused_step_.push_back(std::move(s));
      s = k.gate_up_silu_sum(l.gate_up, x_, o_parts_, l.post_norm, act_, x_next_, c);
      s.name = "gate_up_silu_sum";
      s.bytes = l.gate_up.size() + parts + vec(3 * c.hidden_size + c.intermediate_size);
      fused_step_.push_back(std::move(s));
      s = k.matvec_residual_to(l.down, act_, x_next_, x_, c.hidden_size, c.intermediate_size);
      s.name = "down+residual";
      s.bytes = l.down.size() + vec(c.intermediate_size + 2 * c.hidden_size);
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
  DecodeKernels k(*ctx_, opt_.dtype);
  const uint32_t q_rows = c.num_heads * c.head_dim;
  std::vector<Step> steps{k.embed(embedding_, tokens_, state_, x_rows_, c.hidden_size, T)};
  for (const Layer& l : layers_) {
    steps.push_back(k.qkv_rope_prompt(l.qkv, x_rows_, l.input_norm, l.qkv_bias, rope_, state_, q_rows_,
                                      l.k_cache, l.v_cache, c, ctx_len_, T));
    if (l.qk_norm)
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
  seq_.clear();
  fed_ = written_ = 0;
  logits_fresh_ = false;
}

void Model::push_sequence(std::span<const uint32_t> ids) {
  for (uint32_t id : ids)
    if (id >= cfg_.vocab_size)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (vocab_size " +
                  std::to_string(cfg_.vocab_size) + ")");
  if (seq_.size() + ids.size() > ctx_len_)
    throw Error("the sequence (" + std::to_string(seq_.size() + ids.size()) +
                " tokens) is longer than --ctx " + std::to_string(ctx_len_));
  seq_.insert(seq_.end(), ids.begin(), ids.end());
  if (written_ < seq_.size()) {
    ctx_->write(tokens_, 4ull * written_, std::as_bytes(std::span(seq_).subspan(written_)));
    written_ = uint32_t(seq_.size());
  }
  if (fed_ < seq_.size()) {
    ctx_->write_value<uint32_t>(state_, 0, fed_);
    logits_fresh_ = false;
  }
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

std::vector<uint32_t> Model::generate(std::span<const uint32_t> prompt, uint32_t n,
                                      const std::function<bool(uint32_t)>& on_token,
                                      const GenerateOptions& opt) {
  if (n == 0) throw Error("generate: the number of tokens to generate (-n) must be at least 1");
  const bool continue_from_prefill = prompt.empty() && logits_fresh_ && fed_ == seq_.size();
  // The last token generated is never fed, so positions up to length + n - 2 are used.
  const uint64_t length = seq_.size() + prompt.size();
  if (length + n - 1 > ctx_len_)
    throw Error("generate: " + std::to_string(length) + " tokens + " + std::to_string(n) +
                " to generate exceed --ctx " + std::to_string(ctx_len_));
  if (!continue_from_prefill) {
    if (fed_ == length) throw Error("generate: empty prompt");
    push_sequence(prompt);
  }
  const std::span<const Step> picker = opt.picker.empty() ? std::span<const Step>(argmax_) : opt.picker;
  const uint32_t K = opt.on_logits ? 1 : std::max<uint32_t>(1, opt.steps_per_submit);
  const uint32_t first = uint32_t(seq_.size());  // index of the first generated token
  stats_.prompt_tokens = seq_.size() - fed_;
  stats_.generated_tokens = stats_.decode_dispatches = stats_.decode_submits = stats_.decode_readbacks =
      stats_.decode_tokens = stats_.decode_steps = 0;
  stats_.prefill_ms = stats_.decode_ms = 0;

  GeneratedTokens out(cfg_.vocab_size, n, on_token, opt.eos_ids, seq_);
  // Reports the next generated tokens, `ids`, as far as they are wanted.
  auto take = [&](const std::vector<uint32_t>& ids) {
    if (opt.on_logits) {
      ++stats_.debug_readbacks;
      opt.on_logits(ctx_->read<float>(logits_, 0, cfg_.vocab_size));
    }
    for (uint32_t id : ids) out.take(id);
  };

  // The prompt phase: every unfed prompt position, then the first generated token.
  auto t0 = SteadyClock::now();
  gpu::Recorder rec(*ctx_);
  if (!continue_from_prefill) record_prompt(rec);
  record(rec, picker);
  rec.submit();
  take(ctx_->read<uint32_t>(tokens_, first, 1));
  stats_.prefill_ms = ms_since(t0);

  // The decode phase: K steps per command buffer, each ending with a copy of its K tokens into a
  // staging buffer of its own. Up to `depth` command buffers are in flight: the next is recorded
  // and submitted before the previous one's tokens are read, so that the host's recording,
  // submission and read-back overlap the GPU's work. A buffer whose tokens are no longer wanted
  // (EOS, on_token said stop) still runs and is discarded. The logits callback reads the logits
  // buffer, which the next step overwrites: then one at a time.
  const uint32_t depth = opt.on_logits ? 1 : 2;
  for (auto& b : token_staging_)
    if (b.size() < 4ull * K)
      b = ctx_->buffer(4ull * K, BufferUsage::MapRead | BufferUsage::CopyDst, "llm.tokens_out");
  struct Batch {
    uint32_t count, slot;
  };
  std::deque<Batch> in_flight;
  uint32_t scheduled = uint32_t(out.ids().size()), next_slot = 0;
  t0 = SteadyClock::now();
  const uint64_t d0 = rec.dispatches(), s0 = rec.submits();
  while (!out.stopped()) {
    while (in_flight.size() < depth && scheduled < n) {
      const uint32_t k = std::min<uint32_t>(K, n - scheduled);
      for (uint32_t i = 0; i < k; ++i) {
        record(rec, decode_step(first + scheduled + i - 1));  // feeds token first + scheduled + i - 1
        record(rec, picker);
      }
      rec.copy(tokens_, 4ull * (first + scheduled), token_staging_[next_slot], 0, 4ull * k);
      rec.submit();
      in_flight.push_back({k, next_slot});
      scheduled += k;
      stats_.decode_steps += k;
      next_slot = (next_slot + 1) % depth;
    }
    const Batch b = in_flight.front();
    in_flight.pop_front();
    const auto bytes = ctx_->map_read(token_staging_[b.slot], 4ull * b.count);
    std::vector<uint32_t> ids(b.count);
    std::memcpy(ids.data(), bytes.data(), bytes.size());
    ++stats_.decode_readbacks;
    take(ids);
  }
  stats_.decode_ms = ms_since(t0);
  stats_.decode_tokens = out.ids().size() - 1;
  stats_.decode_dispatches = rec.dispatches() - d0;
  stats_.decode_submits = rec.submits() - s0;
  stats_.generated_tokens = out.ids().size();
  fed_ = uint32_t(seq_.size()) - 1;  // the last token is known but not fed
  written_ = uint32_t(seq_.size());
  logits_fresh_ = false;
  return out.release();
}

}  // namespace wgfuse::llm
