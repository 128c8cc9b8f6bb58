#include "llm/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>

#include "gpu/profiler.h"
#include "llm/generated_tokens.h"
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
    : ctx_(&ctx),
      cfg_(std::move(cfg)),
      opt_(std::move(options)),
      ctx_len_(opt_.ctx),
      head_(ctx, "llm.lm_head"),
      argmax_(ctx, "llm.argmax"),
      advance_(ctx, "llm.advance") {
  const auto& c = cfg_;
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw Error("model config: " + what);
  };
  need(c.vocab_size && c.hidden_size && c.intermediate_size && c.num_layers && c.num_heads &&
           c.num_kv_heads && c.head_dim,
       "vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, "
       "num_key_value_heads and head_dim must all be positive");
  need(c.num_heads % c.num_kv_heads == 0, "num_attention_heads (" + std::to_string(c.num_heads) +
                                              ") must be a multiple of num_key_value_heads (" +
                                              std::to_string(c.num_kv_heads) + ")");
  need(c.head_dim % 2 == 0, "head_dim (" + std::to_string(c.head_dim) + ") must be even for RoPE");
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
  build_plans();
}

gpu::Buffer Model::scratch(std::string_view label, uint64_t words) {
  const std::string name(label.substr(label.starts_with("llm.") ? 4 : 0));
  return keep(ctx_->buffer(4 * uint64_t(pad8(uint32_t(words))), BufferUsage::StorageIO, label), name);
}

gpu::Buffer Model::keep(gpu::Buffer b, std::string name, BufferContents contents) {
  stats_.gpu_memory_bytes += b.size();
  named_.push_back({std::move(name), b, std::move(contents)});
  return b;
}

void Model::upload_weights(const WeightLookup& weights) {
  const auto& c = cfg_;
  const uint32_t hd = c.head_dim, q_rows = c.num_heads * hd, kv_rows = c.num_kv_heads * hd;
  // Every tensor is found and shape-checked before anything is uploaded.
  auto tensor = [&](const std::string& name, std::vector<uint64_t> shape) -> const TensorRef& {
    return require_tensor(weights, name, shape);
  };
  struct LayerRefs {
    const TensorRef *in_norm, *post_norm, *q, *k, *v, *qb = nullptr, *kb = nullptr, *vb = nullptr, *o, *gate,
                                                      *up, *down;
  };
  std::vector<LayerRefs> refs;
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerRefs r{};
    r.in_norm = &tensor(p + "input_layernorm.weight", {c.hidden_size});
    r.post_norm = &tensor(p + "post_attention_layernorm.weight", {c.hidden_size});
    r.q = &tensor(p + "self_attn.q_proj.weight", {q_rows, c.hidden_size});
    r.k = &tensor(p + "self_attn.k_proj.weight", {kv_rows, c.hidden_size});
    r.v = &tensor(p + "self_attn.v_proj.weight", {kv_rows, c.hidden_size});
    if (c.attention_bias) {
      r.qb = &tensor(p + "self_attn.q_proj.bias", {q_rows});
      r.kb = &tensor(p + "self_attn.k_proj.bias", {kv_rows});
      r.vb = &tensor(p + "self_attn.v_proj.bias", {kv_rows});
    }
    r.o = &tensor(p + "self_attn.o_proj.weight", {c.hidden_size, q_rows});
    r.gate = &tensor(p + "mlp.gate_proj.weight", {c.intermediate_size, c.hidden_size});
    r.up = &tensor(p + "mlp.up_proj.weight", {c.intermediate_size, c.hidden_size});
    r.down = &tensor(p + "mlp.down_proj.weight", {c.hidden_size, c.intermediate_size});
    refs.push_back(r);
  }
  const TensorRef& embed = tensor("model.embed_tokens.weight", {c.vocab_size, c.hidden_size});
  const TensorRef& norm = tensor("model.norm.weight", {c.hidden_size});
  const TensorRef* head =
      c.tie_word_embeddings ? nullptr : &tensor("lm_head.weight", {c.vocab_size, c.hidden_size});

  WeightLoader w(*ctx_, storage_format(opt_.dtype, embed.dtype), {.label = "llm.weights"});
  stats_.weight_format = w.format();
  // Each tensor's packing and sources, by TensorId, for a plan written down (WeightTensor).
  std::vector<std::pair<std::string, std::vector<std::string>>> packings;
  auto packed = [&](const char* packing, const std::vector<const TensorRef*>& sources) {
    std::vector<std::string> names;
    for (const TensorRef* tr : sources) names.push_back(tr->name);
    packings.emplace_back(packing, std::move(names));
  };
  auto matrix = [&](std::string name, const char* packing, std::vector<const TensorRef*> sources,
                    uint32_t rows, uint32_t cols, WeightLoader::RowSource source = {}) {
    packed(packing, sources);
    return w.matrix(std::move(name), std::move(sources), rows, cols, std::move(source));
  };
  auto vector = [&](std::string name, const TensorRef& tr) {
    packed("vector", {&tr});
    return w.vector(std::move(name), to_f32(tr));
  };
  const auto embed_id = matrix("embedding", "rows", {&embed}, c.vocab_size, c.hidden_size);
  const auto head_id = head ? matrix("lm_head", "rows", {head}, c.vocab_size, c.hidden_size) : embed_id;
  const auto norm_id = vector("final_norm", norm);
  struct LayerIds {
    WeightLoader::TensorId qkv, qkv_bias, input_norm, o, post_norm, gate_up, down;
  };
  std::vector<LayerIds> ids;
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const LayerRefs& r = refs[i];
    const std::string layer = "layers." + std::to_string(i) + ".";
    LayerIds l{};
    l.qkv = matrix(layer + "qkv", "qkv_rope_pairs", {r.q, r.k, r.v}, q_rows + 2 * kv_rows, c.hidden_size,
                   [&](uint32_t p) { return qkv_source_row(p, hd, q_rows, kv_rows); });
    std::vector<float> bias(q_rows + 2 * kv_rows, 0.0f);
    if (c.attention_bias) {
      const std::vector<float> b[3] = {to_f32(*r.qb), to_f32(*r.kb), to_f32(*r.vb)};
      for (uint32_t j = 0; j < bias.size(); ++j) {
        auto [which, row] = qkv_source_row(j, hd, q_rows, kv_rows);
        bias[j] = b[which][row];
      }
    }
    packed("qkv_bias", c.attention_bias ? std::vector{r.qb, r.kb, r.vb} : std::vector<const TensorRef*>{});
    l.qkv_bias = w.vector(layer + "qkv_bias", std::move(bias));
    l.input_norm = vector(layer + "input_norm", *r.in_norm);
    l.post_norm = vector(layer + "post_attention_norm", *r.post_norm);
    l.o = matrix(layer + "o_proj", "rows", {r.o}, c.hidden_size, q_rows);
    l.gate_up = matrix(layer + "gate_up", "gate_up_interleaved", {r.gate, r.up}, 2 * c.intermediate_size,
                       c.hidden_size, gate_up_source_row);
    l.down = matrix(layer + "down_proj", "rows", {r.down}, c.hidden_size, c.intermediate_size);
    ids.push_back(l);
  }
  w.load(opt_.progress);
  stats_.weight_bytes = w.arena().total_bytes();
  stats_.gpu_memory_bytes += stats_.weight_bytes;
  // The arena's buffers, named, each with the tensors placed in it (counted above).
  const gpu::WeightArena& arena = w.arena();
  for (size_t b = 0; b < arena.buffers(); ++b) {
    BufferContents what{.kind = BufferContents::Kind::Weights};
    for (WeightLoader::TensorId t = 0; t < arena.tensors(); ++t)
      if (arena.view(t).buffer.id() == arena.buffer(b).id())
        what.tensors.push_back({arena.view(t), packings.at(t).first, packings.at(t).second});
    named_.push_back({"weights." + std::to_string(b), arena.buffer(b), std::move(what)});
  }
  embedding_ = w.view(embed_id);
  lm_head_ = w.view(head_id);
  final_norm_ = w.view(norm_id);
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const LayerIds& t = ids[i];
    const std::string layer = "layers." + std::to_string(i) + ".";
    Layer l{.qkv = w.view(t.qkv),
            .qkv_bias = w.view(t.qkv_bias),
            .input_norm = w.view(t.input_norm),
            .o = w.view(t.o),
            .post_norm = w.view(t.post_norm),
            .gate_up = w.view(t.gate_up),
            .down = w.view(t.down)};
    const uint64_t cache = uint64_t(c.num_kv_heads) * ctx_len_ * hd;
    l.k_cache = scratch("llm." + layer + "k_cache", cache);
    l.v_cache = scratch("llm." + layer + "v_cache", cache);
    stats_.kv_cache_bytes += l.k_cache.size() + l.v_cache.size();
    layers_.push_back(std::move(l));
  }

  // RoPE angles in double, as the reference computes them: (cos, sin) of pos * theta^(-2i/hd).
  std::vector<float> rope(size_t(ctx_len_) * hd);
  for (uint32_t pos = 0; pos < ctx_len_; ++pos)
    for (uint32_t i = 0; i < hd / 2; ++i) {
      const double angle = double(pos) * std::pow(c.rope_theta, -2.0 * double(i) / double(hd));
      rope[(size_t(pos) * hd / 2 + i) * 2] = float(std::cos(angle));
      rope[(size_t(pos) * hd / 2 + i) * 2 + 1] = float(std::sin(angle));
    }
  rope_ = keep(ctx_->upload<float>(rope, BufferUsage::Storage, "llm.rope"), "rope",
               {.kind = BufferContents::Kind::Rope, .positions = ctx_len_, .head_dim = hd});
}

// ---- The decode step's recipe ----
//
// Each variant of a decode layer is a list of stages; a stage is one dispatch whose name and
// byte count (for --profile) are defined here once, whatever variant it appears in.
namespace {

enum class Stage {
  QkvRope,        // RMSNorm + Q/K/V + bias + RoPE + KV-cache append
  AttendChunks,   // attention split along the cache (partials)
  AttendCombine,  // the partials combined per head
  AttendShort,    // attention in one dispatch per head (short caches)
  OProj,          // x += W_o attention
  OProjCombine,   // x += W_o (the partials combined in its prologue)
  AttendO,        // attention times W_o, a partial per kv head
  GateUpSilu,     // act = silu(gate) * up of RMSNorm(x)
  GateUpSiluSum,  // x_next = x + the partials; act = silu(gate) * up of RMSNorm(x_next)
  Down,           // x += W_down act
  DownFromNext,   // x = x_next + W_down act
};

std::span<const Stage> stages(Model::LayerVariant v) {
  using enum Stage;
  static constexpr Stage split[] = {QkvRope, AttendChunks, AttendCombine, OProj, GateUpSilu, Down};
  static constexpr Stage short_[] = {QkvRope, AttendShort, OProj, GateUpSilu, Down};
  static constexpr Stage fused[] = {QkvRope, AttendO, GateUpSiluSum, DownFromNext};
  static constexpr Stage long_[] = {QkvRope, AttendChunks, OProjCombine, GateUpSilu, Down};
  switch (v) {
    case Model::LayerVariant::Split:
      return split;
    case Model::LayerVariant::Short:
      return short_;
    case Model::LayerVariant::Fused:
      return fused;
    case Model::LayerVariant::Long:
      return long_;
  }
  throw Error("unknown layer variant");
}

uint64_t vec(uint64_t floats) {
  return 4 * floats;
}

}  // namespace

gpu::Plan Model::layers_plan(LayerVariant v) {
  const auto& c = cfg_;
  DecodeKernels k(*ctx_);
  const uint32_t q_rows = c.num_heads * c.head_dim, qkv_rows = q_rows + 2 * c.num_kv_heads * c.head_dim;
  const uint64_t kv_per_position = vec(2 * c.num_kv_heads * c.head_dim);
  gpu::Plan plan(*ctx_, "llm.decode");
  plan.dispatch(k.embed(embedding_, tokens_, state_, x_, c.hidden_size),
                {"embed", embedding_.row_bytes + vec(c.hidden_size)});
  for (const Layer& l : layers_) {
    // Bytes each stage must move: its weights once, its vectors read and written.
    const uint64_t o_proj = l.o.bytes + vec(q_rows + 2 * c.hidden_size), combine = vec(q_rows),
                   parts = vec(DecodeKernels::attend_o_parts_words(c));
    for (Stage s : stages(v)) {
      switch (s) {
        case Stage::QkvRope:
          plan.dispatch(k.qkv_rope(l.qkv, x_, l.input_norm, l.qkv_bias, rope_, state_, q_, l.k_cache,
                                   l.v_cache, c, ctx_len_),
                        {"qkv_rope", l.qkv.bytes + vec(2 * c.hidden_size + 2 * qkv_rows + c.head_dim)});
          break;
        case Stage::AttendChunks:
          plan.dispatch(
              k.attend_chunks(q_, l.k_cache, l.v_cache, state_, att_partials_, c, ctx_len_, opt_.attention),
              {"attention", vec(q_rows), kv_per_position});
          break;
        case Stage::AttendCombine:
          plan.dispatch(k.attend_combine(att_partials_, state_, att_, c, ctx_len_, opt_.attention),
                        {"attention_combine", combine});
          break;
        case Stage::AttendShort:
          plan.dispatch(k.attend_short(q_, l.k_cache, l.v_cache, state_, att_, c, ctx_len_, short_max()),
                        {"attention_short", vec(2 * q_rows), kv_per_position});
          break;
        case Stage::OProj:
          plan.dispatch(k.matvec_residual(l.o, att_, x_, c.hidden_size, q_rows), {"o_proj+residual", o_proj});
          break;
        case Stage::OProjCombine:
          plan.dispatch(k.o_proj_combine(l.o, att_partials_, x_, state_, c, ctx_len_, opt_.attention),
                        {"o_proj_combine", o_proj + combine});
          break;
        case Stage::AttendO:
          plan.dispatch(k.attend_o(l.o, q_, l.k_cache, l.v_cache, state_, o_parts_, c, ctx_len_),
                        {"attend_o", l.o.bytes + vec(q_rows) + parts, kv_per_position});
          break;
        case Stage::GateUpSilu:
          plan.dispatch(k.gate_up_silu(l.gate_up, x_, l.post_norm, act_, c.intermediate_size, c.hidden_size,
                                       c.rms_norm_eps),
                        {"gate_up_silu", l.gate_up.bytes + vec(2 * c.hidden_size + c.intermediate_size)});
          break;
        case Stage::GateUpSiluSum:
          plan.dispatch(
              k.gate_up_silu_sum(l.gate_up, x_, o_parts_, l.post_norm, act_, x_next_, c),
              {"gate_up_silu_sum", l.gate_up.bytes + parts + vec(3 * c.hidden_size + c.intermediate_size)});
          break;
        case Stage::Down:
          plan.dispatch(k.matvec_residual(l.down, act_, x_, c.hidden_size, c.intermediate_size),
                        {"down+residual", l.down.bytes + vec(c.intermediate_size + 2 * c.hidden_size)});
          break;
        case Stage::DownFromNext:
          plan.dispatch(k.matvec_residual_to(l.down, act_, x_next_, x_, c.hidden_size, c.intermediate_size),
                        {"down+residual", l.down.bytes + vec(c.intermediate_size + 2 * c.hidden_size)});
          break;
      }
    }
  }
  plan.build();
  return plan;
}

void Model::build_plans() {
  const auto& c = cfg_;
  DecodeKernels k(*ctx_);
  // Which layer variant decodes which positions.
  std::vector<std::pair<LayerVariant, uint32_t>> from;
  if (opt_.fusion == Fusion::Full)
    from = {{LayerVariant::Fused, 0}, {LayerVariant::Long, opt_.attn_fuse_max}};
  else if (short_max() > 0)
    from = {{LayerVariant::Short, 0}, {LayerVariant::Split, short_max()}};
  else
    from = {{LayerVariant::Split, 0}};
  for (auto [v, pos] : from) variants_.push_back({v, pos, layers_plan(v)});
  head_.dispatch(
      k.matvec_norm(lm_head_, x_, final_norm_, logits_, c.vocab_size, c.hidden_size, c.rms_norm_eps),
      {"lm_head", lm_head_.bytes + vec(2 * c.hidden_size + c.vocab_size)});
  head_.build();
  const auto picker =
      k.argmax(logits_, part_v_, part_i_, tokens_, state_, c.vocab_size, DecodeKernels::kArgmaxChunk);
  argmax_.dispatch(picker[0], {"argmax_partial", vec(c.vocab_size)});
  argmax_.dispatch(picker[1], {"argmax_final"});
  argmax_.build();
  advance_.dispatch(k.advance(state_));
  advance_.build();
  const size_t per_token = head_.dispatches() + argmax_.dispatches();
  stats_.dispatches_per_step = uint32_t(decode_body(0).dispatches() + per_token);
  stats_.dispatches_per_step_long = uint32_t(variants_.back().body.dispatches() + per_token);
  // The prefill pipelines of a whole chunk are compiled now, not inside the first (timed) prompt.
  if (opt_.prefill_chunk) prompt_chunk(std::min(opt_.prefill_chunk, ctx_len_));
}

gpu::Plan& Model::decode_body(uint32_t pos) {
  auto it = variants_.end();
  while (it != variants_.begin() && (it - 1)->from > pos) --it;
  return (it - 1)->body;
}

uint32_t Model::short_max() const {
  return opt_.fusion == Fusion::None ? std::min(opt_.attn_short_max, ctx_len_) : 0;
}

gpu::Plan& Model::prompt_chunk(uint32_t T) {
  if (auto it = prompt_.find(T); it != prompt_.end()) return it->second;
  const auto& c = cfg_;
  DecodeKernels k(*ctx_);
  const uint32_t q_rows = c.num_heads * c.head_dim;
  gpu::Plan plan(*ctx_, "llm.prefill");
  plan.dispatch(k.embed(embedding_, tokens_, state_, x_rows_, c.hidden_size, T), {"embed"});
  for (const Layer& l : layers_) {
    plan.dispatch(k.qkv_rope_prompt(l.qkv, x_rows_, l.input_norm, l.qkv_bias, rope_, state_, q_rows_,
                                    l.k_cache, l.v_cache, c, ctx_len_, T),
                  {"qkv_rope"});
    plan.dispatch(k.attend_prompt(q_rows_, l.k_cache, l.v_cache, state_, att_rows_, c, ctx_len_, T),
                  {"attention"});
    plan.dispatch(k.residual_prompt(l.o, att_rows_, x_rows_, c.hidden_size, q_rows, T), {"o_proj+residual"});
    plan.dispatch(k.gate_up_silu_prompt(l.gate_up, x_rows_, l.post_norm, act_rows_, c.intermediate_size,
                                        c.hidden_size, c.rms_norm_eps, T),
                  {"gate_up_silu"});
    plan.dispatch(k.residual_prompt(l.down, act_rows_, x_rows_, c.hidden_size, c.intermediate_size, T),
                  {"down+residual"});
  }
  plan.build();
  return prompt_.emplace(T, std::move(plan)).first->second;
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
  const uint32_t last = uint32_t(seq_.size()) - 1;
  if (opt_.prefill_chunk == 0) {  // one decode step per position; state word 0 = fed_
    for (uint32_t p = fed_; p < last; ++p) {
      decode_body(p).encode(rec);
      advance_.encode(rec);
    }
    decode_body(last).encode(rec);
    head_.encode(rec);
    return;
  }
  for (uint32_t p0 = fed_; p0 <= last; p0 += opt_.prefill_chunk) {
    const uint32_t T = std::min(opt_.prefill_chunk, last + 1 - p0);
    // The picker's position; the chunk's first position and length.
    const uint32_t words[3] = {last, p0, T};
    ctx_->write(state_, 0, std::as_bytes(std::span(words)));
    prompt_chunk(T).encode(rec);
    if (p0 + T <= last) {
      rec.submit();  // the next chunk's state write must follow this chunk
    } else {
      const uint64_t row = residual_row_bytes();
      rec.copy(x_rows_, row * (T - 1), x_, 0, row);  // the last token's residual stream
      head_.encode(rec);
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

DecodeProfile Model::profile_decode(gpu::Plan* picker, uint32_t reps) {
  if (seq_.empty() || fed_ + 1 != seq_.size())
    throw Error("profile: generate tokens first (the profile decodes the last generated token again)");
  // The step's plans in order, and every dispatch as (plan, index).
  gpu::Plan* plans[] = {&decode_body(fed_), &head_, picker ? picker : &argmax_};
  std::vector<std::pair<gpu::Plan*, size_t>> all;
  for (gpu::Plan* p : plans)
    for (size_t i = 0; i < p->steps(); ++i) all.push_back({p, i});
  gpu::Profiler prof(*ctx_, uint32_t(all.size()) + 1);
  if (!prof.enabled())
    throw Error("--profile needs GPU timestamps (the 'timestamp-query' feature), which adapter '" +
                ctx_->adapter().description + "' does not offer");
  DecodeProfile out;
  out.position = fed_;
  for (auto [p, i] : all) {
    const auto& info = p->step(i).info;
    out.steps.push_back({std::string(p->step_name(i)), info.bytes, info.bytes_per_position, {}});
  }
  for (uint32_t r = 0; r < reps; ++r) {
    // Every repetition decodes the same position: the picker advanced it, so it is set back.
    ctx_->write_value<uint32_t>(state_, 0, fed_);
    gpu::Recorder rec(*ctx_);
    for (auto [p, i] : all) {
      rec.time_next_pass(prof);
      p->encode(rec, i, 1);
      rec.end_pass();
    }
    prof.resolve(rec);
    rec.submit();
    const auto ns = prof.read_ns();
    for (size_t i = 0; i < all.size(); ++i) out.steps[i].us.push_back(ns.at(i) / 1e3);
    ctx_->write_value<uint32_t>(state_, 0, fed_);
    gpu::Recorder whole(*ctx_);
    whole.time_next_pass(prof);
    for (gpu::Plan* p : plans) p->encode(whole);
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
  gpu::Plan& picker = opt.picker ? *opt.picker : argmax_;
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
  picker.encode(rec);
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
        decode_body(first + scheduled + i - 1).encode(rec);  // feeds token first + scheduled + i - 1
        head_.encode(rec);
        picker.encode(rec);
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
