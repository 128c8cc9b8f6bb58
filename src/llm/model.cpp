#include "llm/model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "gpu/kernel.h"
#include "gpu/profiler.h"
#include "llm/architecture.h"
#include "llm/rope.h"
#include "llm/row_products.h"
#include "llm/safetensors.h"
#include "llm/weight_loader.h"
#include "util/clock.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

using gpu::BufferUsage;

// A short prefill pass's slot records (kernels/llm_batch.wgsl SLOT_WORDS each) and state words
// (a 256-byte binding offset apart).
constexpr uint32_t kPassRecordWords = Model::kShortPassTokens * RowProducts::kSlotWords;
constexpr uint32_t kPassStateWords = 64;

// Every buffer the model binds whole, sized in 64 bits and checked against the device before
// anything is allocated or uploaded: a size wrapped to 32 bits would make a smaller cache that
// runs and prints other tokens. `ctx_words` is the part that grows with --ctx (for the fix).
struct BufferSize {
  std::string_view label, what;
  uint64_t words, ctx_words;
};

// A prefill step that may take a second dispatch: a product split along K (Q/K/V, o, down) and the
// sum of its slices (NAME_sum), or the split attention and its combination (NAME_combine).
void dispatch_split(gpu::Plan& plan, std::vector<gpu::Dispatch> steps, const std::string& name,
                    const std::string& second = "_sum") {
  plan.dispatch(steps[0], {name});
  if (steps.size() > 1) plan.dispatch(steps[1], {name + second});
}

uint64_t binding_cap(const gpu::Limits& lim, uint64_t binding_limit) {
  const uint64_t device = std::min(lim.max_buffer_size, lim.max_storage_buffer_binding_size);
  return binding_limit ? std::min(device, binding_limit) : device;
}

void check_buffer_size(const gpu::Limits& lim, uint64_t binding_limit, const BufferSize& b,
                       uint32_t ctx_len) {
  const uint64_t cap = binding_cap(lim, binding_limit), bytes = 4 * pad8(b.words);
  if (bytes <= cap && b.words < (uint64_t(1) << 32)) return;  // the kernels index words in 32 bits
  std::string fix = "a model this size does not fit this device";
  if (b.ctx_words) {
    const uint64_t per_position = b.ctx_words / ctx_len, fixed = b.words - b.ctx_words + 8;
    const uint64_t room = std::min<uint64_t>(cap / 4, std::numeric_limits<uint32_t>::max());
    const uint64_t fits = room > fixed ? (room - fixed) / per_position : 0;
    fix = fits ? "lower --ctx to at most " + std::to_string(fits) : "no --ctx fits: " + fix;
  }
  if (binding_limit && binding_limit < std::min(lim.max_buffer_size, lim.max_storage_buffer_binding_size))
    throw Error("buffer '" + std::string(b.label) + "' (" + std::string(b.what) + ") needs " +
                std::to_string(bytes) + " bytes at --ctx " + std::to_string(ctx_len) +
                ", above the planned limit of " + std::to_string(binding_limit) +
                " bytes per buffer and binding (maxStorageBufferBindingSize and maxBufferSize of the "
                "device planned for): " +
                fix + ", or plan for a device granting more");
  throw Error("buffer '" + std::string(b.label) + "' (" + std::string(b.what) + ") needs " +
              std::to_string(bytes) + " bytes at --ctx " + std::to_string(ctx_len) +
              ", above what one binding may hold on this device (min of maxBufferSize = " +
              std::to_string(lim.max_buffer_size) + " and maxStorageBufferBindingSize = " +
              std::to_string(lim.max_storage_buffer_binding_size) + "): " + fix);
}

std::vector<BufferSize> model_buffers(const ModelConfig& c, const ModelOptions& o, uint32_t ctx_len) {
  const uint64_t q_rows = uint64_t(c.num_heads) * c.head_dim, ctx = ctx_len;
  const uint64_t kv = uint64_t(c.num_kv_heads) * c.head_dim * ctx;
  const uint64_t partials = DecodeKernels::attend_partials_words(c, ctx_len, o.attention);
  std::vector<BufferSize> b = {
      {"llm.k_cache", "one layer's keys: kv heads x head_dim x --ctx", kv, kv},
      {"llm.v_cache", "one layer's values: kv heads x head_dim x --ctx", kv, kv},
      {"llm.rope", "cos and sin per position: head_dim x --ctx", c.head_dim * ctx, c.head_dim * ctx},
      {"llm.attention_partials", "decode attention's partials per cache chunk", partials, partials},
      {"llm.tokens", "the sequence: --ctx + 1 ids", ctx + 1, ctx},
      {"llm.logits", "vocab_size", c.vocab_size, 0},
      {"llm.act", "intermediate_size", c.intermediate_size, 0},
      {"llm.q", "num_attention_heads x head_dim", q_rows, 0}};
  if (o.prefill_chunk) {
    const uint64_t rows =
        uint64_t(ceil_div(std::min(o.prefill_chunk, ctx_len), DecodeKernels::kPromptTokenTile)) *
        DecodeKernels::kPromptTokenTile;
    b.push_back({"llm.prefill.act", "prefill rows x intermediate_size", rows * pad8(c.intermediate_size), 0});
    b.push_back({"llm.prefill.attention", "prefill rows x heads x head_dim", rows * pad8(q_rows), 0});
  }
  return b;
}

}  // namespace

Fusion parse_fusion(std::string_view s) {
  if (s == "none") return Fusion::None;
  if (s == "full") return Fusion::Full;
  throw Error("--fusion '" + std::string(s) + "': expected none or full");
}

Model::Model(gpu::Context& ctx, ModelConfig cfg, const WeightLookup& weights, ModelOptions options)
    : Decoder(ctx),
      cfg_(std::move(cfg)),
      opt_(std::move(options)),
      ctx_len_(opt_.ctx),
      head_(ctx, "llm.lm_head"),
      argmax_(ctx, "llm.argmax"),
      advance_(ctx, "llm.advance") {
  const auto& c = cfg_;
  check_config(c);
  if (ctx_len_ == 0) throw Error("--ctx must be at least 1");
  if (opt_.prefill_short_max > DecodeKernels::kPromptTokenTile)
    throw Error("--prefill-short-max " + std::to_string(opt_.prefill_short_max) + ": at most " +
                std::to_string(DecodeKernels::kPromptTokenTile) + " (the prefill buffers' rows)");
  if (c.max_position_embeddings && ctx_len_ > c.max_position_embeddings)
    throw Error("--ctx " + std::to_string(ctx_len_) + " exceeds the model's max_position_embeddings (" +
                std::to_string(c.max_position_embeddings) + ")");

  for (const BufferSize& b : model_buffers(c, opt_, ctx_len_))
    check_buffer_size(ctx.limits(), opt_.binding_limit, b, ctx_len_);

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
  att_arrivals_ = scratch("llm.attention_arrivals", DecodeKernels::attend_arrivals_words(c, opt_.attention));
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
    // The K-split products' sums per slice (o, down; Q/K/V with a word more a row): as many rows
    // of hidden_size as the activations (the K split of a chunk of T tokens is at most rows / T);
    // the split prefill attention's partials at the rule's split of any chunk, as far as a binding
    // allows (the split takes fewer ways where they do not fit).
    prompt_rows_ = uint32_t(rows);
    uint64_t slice_words = rows * pad8(c.hidden_size);
    const uint64_t binding_words = binding_cap(ctx.limits(), opt_.binding_limit) / 4 / 8 * 8;
    if (const uint32_t tq = DecodeKernels(ctx).prompt_attention_queries(c.head_dim))
      for (uint32_t T = tq; T <= rows; T += tq)
        slice_words = std::max(
            slice_words, std::min(binding_words,
                                  DecodeKernels::prompt_attention_parts_words(
                                      c, T, tq, DecodeKernels::prompt_attention_splits(c.num_heads, T, tq))));
    k_slices_ = scratch("llm.prefill.k_slices", slice_words);
    if (opt_.prefill_short_max) {
      const uint32_t passes = ceil_div(opt_.prefill_short_max, kShortPassTokens);
      pass_records_ = scratch("llm.prefill.pass_records", passes * kPassRecordWords);
      pass_state_ = scratch("llm.prefill.pass_state", passes * kPassStateWords);
      if (architecture_of(c).qk_norm)
        pass_qkv_ =
            scratch("llm.prefill.pass_qkv", kShortPassTokens * (q_rows + 2ull * c.num_kv_heads * c.head_dim));
    }
  }
  state_ = scratch("llm.state", 4);
  build_plans();
}

gpu::Buffer Model::scratch(std::string_view label, uint64_t words) {
  check_buffer_size(ctx_->limits(), opt_.binding_limit, {label, "a scratch buffer", words, 0}, ctx_len_);
  const std::string name(label.substr(label.starts_with("llm.") ? 4 : 0));
  return keep(ctx_->buffer(4 * pad8(words), BufferUsage::StorageIO, label), name);
}

gpu::Buffer Model::keep(gpu::Buffer b, std::string name, BufferContents contents) {
  stats_.gpu_memory_bytes += b.size();
  named_.push_back({std::move(name), b, std::move(contents)});
  return b;
}

void Model::upload_weights(const WeightLookup& weights) {
  using enum TensorRole;
  const auto& c = cfg_;
  const uint32_t hd = c.head_dim, q_rows = c.num_heads * hd;
  const ModelTensors t(c, weights);  // every tensor found and shape-checked before anything is uploaded
  const TensorRef* head = t.find(LmHead);

  WeightLoader w(*ctx_, opt_.dtype, {.label = "llm.weights", .max_buffer_bytes = opt_.binding_limit});
  // Each tensor's packing and sources, by TensorId, for a plan written down (WeightTensor).
  std::vector<std::pair<std::string, std::vector<std::string>>> packings;
  auto note = [&](const char* packing, const std::vector<const TensorRef*>& sources) {
    std::vector<std::string> names;
    for (const TensorRef* tr : sources) names.push_back(tr->name);
    packings.emplace_back(packing, std::move(names));
  };
  auto matrix = [&](std::string name, const TensorRef& tr, uint32_t rows, uint32_t cols) {
    note("rows", {&tr});
    return w.matrix(std::move(name), {&tr}, rows, cols);
  };
  auto packed = [&](std::string name, const char* packing, const PackedMatrix& m) {
    note(packing, m.sources);
    return w.matrix(std::move(name), m.sources, m.rows, c.hidden_size, m.source_row);
  };
  auto vector = [&](std::string name, const char* packing, std::vector<const TensorRef*> sources,
                    std::vector<float> values) {
    note(packing, sources);
    return w.vector(std::move(name), std::move(values));
  };
  auto norm = [&](std::string name, const TensorRef& tr) {
    return vector(std::move(name), "vector", {&tr}, to_f32(tr));
  };
  const auto embed_id = matrix("embedding", t(Embedding), c.vocab_size, c.hidden_size);
  const auto head_id = head ? matrix("lm_head", *head, c.vocab_size, c.hidden_size) : embed_id;
  const auto norm_id = norm("final_norm", t(FinalNorm));
  struct LayerIds {
    WeightLoader::TensorId qkv, qkv_bias, input_norm, o, post_norm, gate_up, down;
    std::optional<WeightLoader::TensorId> qk_norm;
  };
  std::vector<LayerIds> ids;
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const std::string layer = "layers." + std::to_string(i) + ".";
    LayerIds l{};
    l.qkv = packed(layer + "qkv", "qkv_rope_pairs", packed_qkv(t, c, i));
    const TensorRef* qb = t.find(QBias, i);
    l.qkv_bias = vector(layer + "qkv_bias", "qkv_bias",
                        qb ? std::vector{qb, &t(KBias, i), &t(VBias, i)} : std::vector<const TensorRef*>{},
                        packed_qkv_bias(t, c, i));
    if (t.architecture().qk_norm) {  // q_norm then k_norm, as qk_norm_rope reads them
      std::vector<float> norms = to_f32(t(QNorm, i));
      const std::vector<float> k_norm = to_f32(t(KNorm, i));
      norms.insert(norms.end(), k_norm.begin(), k_norm.end());
      l.qk_norm = vector(layer + "qk_norm", "vectors", {&t(QNorm, i), &t(KNorm, i)}, std::move(norms));
    }
    l.input_norm = norm(layer + "input_norm", t(AttnNorm, i));
    l.post_norm = norm(layer + "post_attention_norm", t(FfnNorm, i));
    l.o = matrix(layer + "o_proj", t(O, i), c.hidden_size, q_rows);
    l.gate_up = packed(layer + "gate_up", "gate_up_interleaved", packed_gate_up(t, c, i));
    l.down = matrix(layer + "down_proj", t(Down, i), c.hidden_size, c.intermediate_size);
    ids.push_back(l);
  }
  w.load(opt_.progress);
  stats_.weight_formats = w.formats();
  stats_.weight_format = stats_.weight_formats.at(0).format;
  stats_.weight_bytes = w.arena().total_bytes();
  stats_.gpu_memory_bytes += stats_.weight_bytes;
  // The arena's buffers, named, each with the tensors placed in it (counted above).
  const gpu::WeightArena& arena = w.arena();
  for (size_t b = 0; b < arena.buffers(); ++b) {
    BufferContents what{.kind = BufferContents::Kind::Weights};
    for (WeightLoader::TensorId id = 0; id < arena.tensors(); ++id)
      if (arena.view(id).buffer.id() == arena.buffer(b).id())
        what.tensors.push_back({arena.view(id), packings.at(id).first, packings.at(id).second});
    named_.push_back({"weights." + std::to_string(b), arena.buffer(b), std::move(what)});
  }
  embedding_ = w.view(embed_id);
  lm_head_ = w.view(head_id);
  final_norm_ = w.view(norm_id);
  stats_.weight_bytes_per_token = lm_head_.bytes + embedding_.row_bytes;
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const LayerIds& id = ids[i];
    const std::string layer = "layers." + std::to_string(i) + ".";
    Layer l{.qkv = w.view(id.qkv),
            .qkv_bias = w.view(id.qkv_bias),
            .input_norm = w.view(id.input_norm),
            .o = w.view(id.o),
            .post_norm = w.view(id.post_norm),
            .gate_up = w.view(id.gate_up),
            .down = w.view(id.down)};
    if (id.qk_norm) l.qk_norm = w.view(*id.qk_norm);
    for (const gpu::TensorView* m : {&l.qkv, &l.o, &l.gate_up, &l.down})
      stats_.weight_bytes_per_token += m->bytes;
    const uint64_t cache = uint64_t(c.num_kv_heads) * ctx_len_ * hd;
    l.k_cache = scratch("llm." + layer + "k_cache", cache);
    l.v_cache = scratch("llm." + layer + "v_cache", cache);
    stats_.kv_cache_bytes += l.k_cache.size() + l.v_cache.size();
    layers_.push_back(std::move(l));
  }

  rope_ = keep(ctx_->upload<float>(rope_table(c, ctx_len_), BufferUsage::Storage, "llm.rope"), "rope",
               {.kind = BufferContents::Kind::Rope, .positions = ctx_len_, .head_dim = hd});
}

// ---- The decode step's recipe ----
//
// Each variant of a decode layer is a list of stages; a stage is one dispatch whose name and
// byte count (for --profile) are defined here once, whatever variant it appears in.
namespace {

enum class Stage {
  QkvRope,        // RMSNorm + Q/K/V + bias + RoPE + KV-cache append (q, k raw with per-head norms)
  QkNormRope,     // per-head q/k norms then RoPE (architectures with qk_norm)
  Attend,         // attention split along the cache, the chunks combined by the last of each head
  AttendLong,     // the same in chunks twice as long
  AttendShort,    // attention in one dispatch per head (short caches)
  OProj,          // x += W_o attention
  AttendO,        // attention times W_o, a partial per kv head
  GateUpSilu,     // act = silu(gate) * up of RMSNorm(x)
  GateUpSiluSum,  // x_next = x + the partials; act = silu(gate) * up of RMSNorm(x_next)
  Down,           // x += W_down act
  DownFromNext,   // x = x_next + W_down act
};

// The projection's stages, then the rest of the layer.
std::vector<Stage> stages(Model::LayerVariant v, bool qk_norm) {
  using enum Stage;
  std::vector<Stage> out{QkvRope};
  if (qk_norm) out.push_back(QkNormRope);
  switch (v) {
    case Model::LayerVariant::Split:
      out.insert(out.end(), {Attend, OProj, GateUpSilu, Down});
      return out;
    case Model::LayerVariant::SplitLong:
      out.insert(out.end(), {AttendLong, OProj, GateUpSilu, Down});
      return out;
    case Model::LayerVariant::Short:
      out.insert(out.end(), {AttendShort, OProj, GateUpSilu, Down});
      return out;
    case Model::LayerVariant::Fused:
      out.insert(out.end(), {AttendO, GateUpSiluSum, DownFromNext});
      return out;
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
  const uint32_t q_rows = c.num_heads * c.head_dim, kv_rows = c.num_kv_heads * c.head_dim,
                 qkv_rows = q_rows + 2 * kv_rows;
  const uint64_t kv_per_position = vec(2 * kv_rows);
  const std::vector<Stage> layer_stages = stages(v, architecture_of(c).qk_norm);
  gpu::Plan plan(*ctx_, "llm.decode");
  plan.dispatch(k.embed(embedding_, tokens_, state_, x_, c.hidden_size),
                {"embed", embedding_.row_bytes + vec(c.hidden_size)});
  for (const Layer& l : layers_) {
    // Bytes each stage must move: its weights once, its vectors read and written.
    const uint64_t o_proj = l.o.bytes + vec(q_rows + 2 * c.hidden_size),
                   parts = vec(DecodeKernels::attend_o_parts_words(c));
    for (Stage s : layer_stages) {
      switch (s) {
        case Stage::QkvRope:
          plan.dispatch(k.qkv_rope(l.qkv, x_, l.input_norm, l.qkv_bias, rope_, state_, q_, l.k_cache,
                                   l.v_cache, c, ctx_len_),
                        {"qkv_rope", l.qkv.bytes + vec(2 * c.hidden_size + 2 * qkv_rows + c.head_dim)});
          break;
        case Stage::QkNormRope:
          plan.dispatch(k.qk_norm_rope(l.qk_norm, rope_, state_, q_, l.k_cache, c, ctx_len_),
                        {"qk_norm_rope", vec(2 * (q_rows + kv_rows) + 2 * c.head_dim + c.head_dim)});
          break;
        case Stage::Attend:
        case Stage::AttendLong:
          plan.dispatch(
              k.attend(q_, l.k_cache, l.v_cache, state_, att_partials_, att_arrivals_, att_, c, ctx_len_,
                       s == Stage::Attend ? opt_.attention : long_attention(opt_.attention)),
              {"attention", vec(2 * q_rows), kv_per_position});
          break;
        case Stage::AttendShort:
          plan.dispatch(k.attend_short(q_, l.k_cache, l.v_cache, state_, att_, c, ctx_len_, short_max()),
                        {"attention_short", vec(2 * q_rows), kv_per_position});
          break;
        case Stage::OProj:
          plan.dispatch(k.matvec_residual(l.o, att_, x_, c.hidden_size, q_rows), {"o_proj+residual", o_proj});
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
    from = {{LayerVariant::Fused, 0}, {LayerVariant::Split, opt_.attn_fuse_max}};
  else if (short_max() > 0)
    from = {{LayerVariant::Short, 0}, {LayerVariant::Split, short_max()}};
  else
    from = {{LayerVariant::Split, 0}};
  // Long chunks from attn_long_from, or wherever the split begins if that is later.
  if (opt_.attn_long_from && opt_.attn_long_from < ctx_len_) {
    if (opt_.attn_long_from > from.back().second)
      from.push_back({LayerVariant::SplitLong, opt_.attn_long_from});
    else if (from.back().first == LayerVariant::Split)
      from.back().first = LayerVariant::SplitLong;
  }
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
  // The long list: where the layer's dispatches change (split_long has split's).
  const DecodeVariant& changed = variants_.size() > 1 ? variants_[1] : variants_[0];
  stats_.dispatches_per_step_long = uint32_t(changed.body.dispatches() + per_token);
  stats_.long_from = changed.from;
  // The prefill pipelines of a whole chunk and of the short passes are compiled now, not inside
  // the first (timed) prompt.
  if (opt_.prefill_chunk) prompt_chunk(std::min(opt_.prefill_chunk, ctx_len_));
  if (opt_.prefill_chunk && opt_.prefill_short_max)
    prompt_chunk(std::min({opt_.prefill_short_max, opt_.prefill_chunk, ctx_len_}));
}

gpu::Plan& Model::decode_body(uint32_t pos) {
  auto it = variants_.end();
  while (it != variants_.begin() && (it - 1)->from > pos) --it;
  return (it - 1)->body;
}

uint32_t Model::short_max() const {
  if (opt_.fusion != Fusion::None) return 0;
  return std::min({opt_.attn_short_max, ctx_len_, kAttendShortSpan / cfg_.head_dim});
}

gpu::Plan& Model::prompt_chunk(uint32_t T) {
  if (auto it = prompt_.find(T); it != prompt_.end()) return it->second.plan;
  // A pass binds 16 rows of q from a 256-byte offset: heads x head_dim a multiple of 4.
  if (T <= opt_.prefill_short_max && cfg_.num_heads * cfg_.head_dim % 4 == 0)
    return prompt_.emplace(T, PromptPlan{short_prompt_chunk(T), {}}).first->second.plan;
  const auto& c = cfg_;
  DecodeKernels k(*ctx_);
  const uint32_t q_rows = c.num_heads * c.head_dim;
  const bool qk_norm = architecture_of(c).qk_norm;
  if (opt_.prefill_tile.tokens) k.force_prompt_tile(opt_.prefill_tile);
  gpu::Plan plan(*ctx_, "llm.prefill");
  std::vector<size_t> layer_ends;
  plan.dispatch(k.embed(embedding_, tokens_, state_, x_rows_, c.hidden_size, T), {"embed"});
  for (const Layer& l : layers_) {
    dispatch_split(
        plan,
        k.qkv_rope_prompt(l.qkv, x_rows_, l.input_norm, l.qkv_bias, rope_, state_, q_rows_, l.k_cache,
                          l.v_cache, k_slices_, uint64_t(prompt_rows_) * pad8(c.hidden_size), c, ctx_len_, T),
        "qkv_rope");
    if (qk_norm)
      plan.dispatch(k.qk_norm_rope(l.qk_norm, rope_, state_, q_rows_, l.k_cache, c, ctx_len_, T),
                    {"qk_norm_rope"});
    dispatch_split(
        plan,
        k.attend_prompt(q_rows_, l.k_cache, l.v_cache, state_, att_rows_, k_slices_, k_slices_.size() / 4, c,
                        ctx_len_, T, opt_.prefill_attention, 0, opt_.prefill_attention_splits),
        "attention", "_combine");
    dispatch_split(
        plan, k.residual_prompt(l.o, att_rows_, x_rows_, k_slices_, prompt_rows_, c.hidden_size, q_rows, T),
        "o_proj+residual");
    plan.dispatch(k.gate_up_silu_prompt(l.gate_up, x_rows_, l.post_norm, act_rows_, c.intermediate_size,
                                        c.hidden_size, c.rms_norm_eps, T),
                  {"gate_up_silu"});
    dispatch_split(plan,
                   k.residual_prompt(l.down, act_rows_, x_rows_, k_slices_, prompt_rows_, c.hidden_size,
                                     c.intermediate_size, T),
                   "down+residual");
    layer_ends.push_back(plan.steps());
  }
  plan.build();
  return prompt_.emplace(T, PromptPlan{std::move(plan), std::move(layer_ends)}).first->second.plan;
}

gpu::Plan Model::short_prompt_chunk(uint32_t T) {
  const auto& c = cfg_;
  DecodeKernels k(*ctx_);
  const RowProducts rows(*ctx_, kShortPassTokens, c.rms_norm_eps);
  const uint32_t q_rows = c.num_heads * c.head_dim, kv_rows = c.num_kv_heads * c.head_dim;
  const uint32_t x_stride = uint32_t(pad8(c.hidden_size)), att_stride = uint32_t(pad8(q_rows));
  const uint32_t act_stride = uint32_t(pad8(c.intermediate_size));
  const bool qk_norm = architecture_of(c).qk_norm;
  // Pass p's rows of a [chunk][stride] buffer (16 rows of a multiple of 4 floats: 256-byte offsets).
  auto rows_of = [](const gpu::Buffer& b, uint64_t stride, uint32_t p) -> gpu::Binding {
    const uint64_t bytes = 4ull * stride * kShortPassTokens;
    return gpu::BufferBinding{b, bytes * p, bytes};
  };
  // Q/K/V: q into the pass's rows of q_rows_, k and v into the one cache.
  const RowProducts::QkvLayout qkv_at{ctx_len_, q_rows, /*shared_cache=*/true};
  const gpu::Kernel* rope = qk_norm ? &rows.rope_rows(c, qkv_at) : nullptr;
  const auto rope_epilogue = RowProducts::rope_epilogue(c, qkv_at);
  const auto out_stride = RowProducts::out_stride;
  gpu::Plan plan(*ctx_, "llm.prefill");
  plan.dispatch(k.embed(embedding_, tokens_, state_, x_rows_, c.hidden_size, T), {"embed"});
  for (uint32_t p = 0; p * kShortPassTokens < T; ++p) {
    const gpu::Binding records{
        gpu::BufferBinding{pass_records_, 4ull * kPassRecordWords * p, 4ull * kPassRecordWords}},
        pass_state{gpu::BufferBinding{pass_state_, 4ull * kPassStateWords * p, 4ull * kPassStateWords}};
    const gpu::Kernel& pass = ctx_->kernel(gpu::embedded_kernel(
        "llm_batch", "prompt_pass", {{"SLOTS", kShortPassTokens}, {"PASS_FIRST", p * kShortPassTokens}}));
    plan.dispatch(pass, {state_, records, pass_state}, {1}, {"pass"});
    const gpu::Binding x = rows_of(x_rows_, x_stride, p), q = rows_of(q_rows_, q_rows, p),
                       att = rows_of(att_rows_, att_stride, p), act = rows_of(act_rows_, act_stride, p);
    for (const Layer& l : layers_) {
      if (rope) {
        plan.dispatch(rows.product("qkv_rows", l.qkv, x, x_stride, l.input_norm, records,
                                   {pass_qkv_, l.qkv_bias}, out_stride(q_rows + 2 * kv_rows)),
                      {"qkv_rope"});
        plan.dispatch(*rope, {pass_qkv_, l.qk_norm, rope_, records, q, l.k_cache, l.v_cache},
                      {c.num_heads + 2 * c.num_kv_heads, kShortPassTokens}, {"qk_norm_rope"});
      } else {
        plan.dispatch(rows.product("qkv_rope_rows", l.qkv, x, x_stride, l.input_norm, records,
                                   {q, l.k_cache, l.v_cache, rope_, l.qkv_bias}, rope_epilogue),
                      {"qkv_rope"});
      }
      dispatch_split(plan,
                     k.attend_prompt(q, l.k_cache, l.v_cache, pass_state, att, k_slices_,
                                     k_slices_.size() / 4, c, ctx_len_, kShortPassTokens,
                                     opt_.prefill_attention, 0, opt_.prefill_attention_splits),
                     "attention", "_combine");
      plan.dispatch(
          rows.product("residual_rows", l.o, att, att_stride, att, records, {x}, out_stride(x_stride)),
          {"o_proj+residual"});
      plan.dispatch(rows.product("gate_up_rows", l.gate_up, x, x_stride, l.post_norm, records, {act},
                                 out_stride(act_stride)),
                    {"gate_up_silu"});
      plan.dispatch(
          rows.product("residual_rows", l.down, act, act_stride, act, records, {x}, out_stride(x_stride)),
          {"down+residual"});
    }
  }
  plan.build();
  return plan;
}

Model::Matrices Model::matrices() const {
  Matrices m{.embedding = embedding_, .lm_head = lm_head_};
  for (const Layer& l : layers_) m.layers.push_back({l.qkv, l.o, l.gate_up, l.down});
  return m;
}

void Model::reset() {
  Decoder::reset();
  logits_fresh_ = false;
}

void Model::set_position() {
  ctx_->write_value<uint32_t>(state_, 0, fed_);
  logits_fresh_ = false;
}

void Model::record_prompt(gpu::Recorder& rec, bool head) {
  const uint32_t last = uint32_t(seq_.size()) - 1;
  if (opt_.prefill_chunk == 0) {  // one decode step per position; state word 0 = fed_
    for (uint32_t p = fed_; p <= last; ++p) {
      decode_body(p).encode(rec);
      if (p < last || !head) advance_.encode(rec);
    }
    if (head) head_.encode(rec);
    return;
  }
  for (uint32_t p0 = fed_; p0 <= last; p0 += opt_.prefill_chunk) {
    const uint32_t T = std::min(opt_.prefill_chunk, last + 1 - p0);
    // The picker's position; the chunk's first position and length.
    const uint32_t words[3] = {last, p0, T};
    ctx_->write(state_, 0, std::as_bytes(std::span(words)));
    encode_prompt_chunk(rec, head ? T : feed_plan_tokens(p0, T));
    if (p0 + T <= last) {
      rec.submit();  // the next chunk's state write must follow this chunk
    } else if (head) {
      const uint64_t row = residual_row_bytes();
      rec.copy(x_rows_, row * (T - 1), x_, 0, row);  // the last token's residual stream
      head_.encode(rec);
    }
  }
}

void Model::encode_prompt_chunk(gpu::Recorder& rec, uint32_t T) {
  gpu::Plan& plan = prompt_chunk(T);
  const std::vector<size_t>& ends = prompt_.at(T).layer_ends;
  size_t done = 0;
  for (size_t layers = 1; layers <= ends.size() / 2; layers *= 2) {
    const size_t end = ends[layers - 1];
    plan.encode(rec, done, end - done);
    rec.submit();
    done = end;
  }
  plan.encode(rec, done, plan.steps() - done);
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

void Model::feed(std::span<const uint32_t> ids) {
  push_sequence(ids);
  if (fed_ == seq_.size()) throw Error("feed: nothing to feed (empty prompt)");
  gpu::Recorder rec(*ctx_);
  record_prompt(rec, /*head=*/false);
  rec.submit();
  fed_ = uint32_t(seq_.size());
  logits_fresh_ = false;
}

// The rows past T read tokens and write activations nobody reads, within the tokens buffer
// (capacity + 1 words) and the prefill buffers (whole tiles of a full chunk).
uint32_t Model::feed_plan_tokens(uint32_t first, uint32_t T) const {
  const uint32_t most = std::min(opt_.prefill_chunk, ctx_len_ + 1 - first);
  return std::max(T, std::min(ceil_div(T, kFeedTokenStep) * kFeedTokenStep, most));
}

void Model::prepare_feed(uint32_t tokens) {
  const uint32_t most = std::min({tokens, opt_.prefill_chunk, ctx_len_});
  for (uint32_t T = kFeedTokenStep; T < most + kFeedTokenStep; T += kFeedTokenStep)
    prompt_chunk(feed_plan_tokens(0, std::min(T, most)));
}

DecodeProfile profile_plans(gpu::Context& ctx, std::span<gpu::Plan* const> plans, uint32_t reps,
                            uint32_t position, const std::function<void()>& restore) {
  std::vector<std::pair<gpu::Plan*, size_t>> all;  // every dispatch as (plan, index)
  for (gpu::Plan* p : plans)
    for (size_t i = 0; i < p->steps(); ++i) all.push_back({p, i});
  gpu::Profiler prof(ctx, uint32_t(all.size()) + 1);
  if (!prof.enabled())
    throw Error("--profile needs GPU timestamps (the 'timestamp-query' feature), which adapter '" +
                ctx.adapter().description + "' does not offer");
  DecodeProfile out;
  out.position = position;
  for (auto [p, i] : all) {
    const auto& info = p->step(i).info;
    out.steps.push_back({std::string(p->step_name(i)), info.bytes, info.bytes_per_position, {}});
  }
  for (uint32_t r = 0; r < reps; ++r) {
    restore();
    gpu::Recorder rec(ctx);
    for (auto [p, i] : all) {
      rec.time_next_pass(prof);
      p->encode(rec, i, 1);
      rec.end_pass();
    }
    prof.resolve(rec);
    rec.submit();
    const auto ns = prof.read_ns();
    for (size_t i = 0; i < all.size(); ++i) out.steps[i].us.push_back(ns.at(i) / 1e3);
    restore();
    gpu::Recorder whole(ctx);
    whole.time_next_pass(prof);
    for (gpu::Plan* p : plans) p->encode(whole);
    whole.end_pass();
    prof.resolve(whole);
    whole.submit();
    out.whole_step_us.push_back(prof.read_ns().at(0) / 1e3);
  }
  restore();
  ctx.wait();
  return out;
}

DecodeProfile Model::profile_decode(gpu::Plan* picker, uint32_t reps) {
  if (seq_.empty() || fed_ + 1 != seq_.size())
    throw Error("profile: generate tokens first (the profile decodes the last generated token again)");
  gpu::Plan* plans[] = {&decode_body(fed_), &head_, picker ? picker : &argmax_};
  // Every repetition decodes the same position: the picker advanced it, so it is set back.
  return profile_plans(*ctx_, plans, reps, fed_, [&] { ctx_->write_value<uint32_t>(state_, 0, fed_); });
}

PrefillProfile Model::profile_prefill(uint32_t reps) {
  const auto& c = cfg_;
  const uint32_t prompt = uint32_t(stats_.prompt_tokens);
  if (opt_.prefill_chunk == 0 || prompt == 0 || prompt > seq_.size())
    throw Error(
        "prefill profile: generate from a prompt first, with a prefill chunk (not --prefill-chunk 0)");
  PrefillProfile out;
  out.first = (prompt - 1) / opt_.prefill_chunk * opt_.prefill_chunk;
  out.tokens = prompt - out.first;
  gpu::Plan& plan = prompt_chunk(out.tokens);
  gpu::Profiler prof(*ctx_, uint32_t(plan.steps()) + 1);
  if (!prof.enabled())
    throw Error("prefill profile needs GPU timestamps (the 'timestamp-query' feature), which adapter '" +
                ctx_->adapter().description + "' does not offer");
  // Multiply-adds of each dispatch: products T x rows x cols; attention q.k and p.v over each
  // query's keys 0 ..= its position. T and the first position are the chunk's, or from a short
  // pass's step on that pass's.
  const uint64_t q_rows = c.num_heads * c.head_dim, kv_rows = c.num_kv_heads * c.head_dim;
  uint64_t T = out.tokens, first = out.first, passes = 0;
  for (size_t i = 0; i < plan.steps(); ++i) {
    const std::string_view name = plan.step_name(i);
    if (name == "pass") {
      const uint64_t skip = kShortPassTokens * passes++;
      first = out.first + skip;
      T = std::min<uint64_t>(kShortPassTokens, out.tokens - skip);
    }
    const uint64_t keys = T * first + T * (T + 1) / 2;
    const std::map<std::string_view, uint64_t> macs{
        {"qkv_rope", T * (q_rows + 2 * kv_rows) * c.hidden_size},
        {"attention", 2 * keys * q_rows},
        {"o_proj+residual", T * c.hidden_size * q_rows},
        {"gate_up_silu", T * 2 * c.intermediate_size * c.hidden_size},
        {"down+residual", T * c.hidden_size * c.intermediate_size}};
    const auto it = macs.find(name);
    out.steps.push_back({std::string(name), it == macs.end() ? 0 : 2 * it->second, {}});
  }
  const uint32_t words[3] = {fed_, out.first, out.tokens};
  for (uint32_t r = 0; r < reps; ++r) {
    ctx_->write(state_, 0, std::as_bytes(std::span(words)));
    gpu::Recorder rec(*ctx_);
    for (size_t i = 0; i < plan.steps(); ++i) {
      rec.time_next_pass(prof);
      plan.encode(rec, i, 1);
      rec.end_pass();
    }
    prof.resolve(rec);
    rec.submit();
    const auto ns = prof.read_ns();
    for (size_t i = 0; i < plan.steps(); ++i) out.steps[i].us.push_back(ns.at(i) / 1e3);
    gpu::Recorder whole(*ctx_);
    whole.time_next_pass(prof);
    plan.encode(whole);
    whole.end_pass();
    prof.resolve(whole);
    whole.submit();
    out.whole_chunk_us.push_back(prof.read_ns().at(0) / 1e3);
  }
  ctx_->write_value<uint32_t>(state_, 0, fed_);
  ctx_->wait();
  return out;
}

std::vector<float> Model::read_logits() {
  ++stats_.debug_readbacks;
  return ctx_->read<float>(logits_, 0, cfg_.vocab_size);
}

gpu::Plan& Model::picker(const GenerateOptions& opt) {
  return opt.picker ? *opt.picker : argmax_;
}

void Model::record_prompt_phase(gpu::Recorder& rec, const GenerateOptions& opt) {
  if (!logits_ready()) record_prompt(rec);
  logits_fresh_ = false;
  picker(opt).encode(rec);
}

void Model::record_steps(gpu::Recorder& rec, uint32_t pos, uint32_t k, const GenerateOptions& opt) {
  for (uint32_t i = 0; i < k; ++i) {
    decode_body(pos + i).encode(rec);
    head_.encode(rec);
    picker(opt).encode(rec);
  }
}

}  // namespace wgfuse::llm
