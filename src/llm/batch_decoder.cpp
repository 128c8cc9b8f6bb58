#include "llm/batch_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>

#include "gpu/kernel.h"
#include "gpu/recorder.h"
#include "gpu/weight_format.h"
#include "util/clock.h"
#include "util/error.h"

namespace wgfuse::llm {

namespace {

constexpr uint32_t kSlotWords = RowProducts::kSlotWords;
constexpr uint32_t kSlotActive = RowProducts::kSlotActive;
constexpr uint32_t kSlotArgmax = 9;  // the batched argmax picks the slot's token (active, greedy)
constexpr uint32_t kWorkgroup = RowProducts::kWorkgroup;
constexpr uint32_t kHeadWorkgroup = RowProducts::kHeadWorkgroup;
constexpr uint32_t kMaxHeadDim = 4 * kHeadWorkgroup;
// attend_rows' threads: a position each in a round of 256 (ROUND), so a short context's scores take
// one trip and the p v sums 16 slices (64 threads: a quarter of the slices, four times the trips;
// docs/RESULTS.md "Session 13").
constexpr uint32_t kAttendWorkgroup = 256;

uint64_t pad64(uint64_t n) {
  return (n + 63) / 64 * 64;
}

uint32_t checked_slots(uint32_t slots) {
  if (slots < 1 || slots > BatchDecoder::kMaxSlots)
    throw Error("batched decoding: " + std::to_string(slots) + " sequences asked, 1 to " +
                std::to_string(BatchDecoder::kMaxSlots) + " supported (--parallel)");
  return slots;
}

}  // namespace

BatchDecoder::BatchDecoder(Model& model, uint32_t slots)
    : model_(model),
      ctx_(*model.ctx_),
      cfg_(model.cfg_),
      ctx_len_(model.ctx_len_),
      products_(ctx_, checked_slots(slots), cfg_.rms_norm_eps),
      step_(ctx_, "batch step"),
      argmax_(ctx_, "batch argmax") {
  if (cfg_.head_dim > kMaxHeadDim || cfg_.head_dim % 4)
    throw Error("batched decoding: head_dim " + std::to_string(cfg_.head_dim) +
                " is not a multiple of 4 up to " + std::to_string(kMaxHeadDim));
  const uint32_t q_rows = cfg_.num_heads * cfg_.head_dim, kv_rows = cfg_.num_kv_heads * cfg_.head_dim;
  tokens_stride_ = pad64(uint64_t(ctx_len_) + 1);
  logits_stride_ = pad64(cfg_.vocab_size);
  x_stride_ = pad8(cfg_.hidden_size);
  q_stride_ = pad8(q_rows);
  raw_stride_ = q_rows + 2ull * kv_rows;
  act_stride_ = pad8(cfg_.intermediate_size);
  auto storage = [&](const char* label, uint64_t words) {
    return ctx_.buffer(4 * words * slots, gpu::BufferUsage::StorageIO, label);
  };
  slots_ = storage("batch slots", kSlotWords);
  tokens_ = storage("batch tokens", tokens_stride_);
  logits_ = storage("batch logits", logits_stride_);
  x_ = storage("batch x", x_stride_);
  raw_ = storage("batch qkv", raw_stride_);
  q_ = storage("batch q", q_stride_);
  att_ = storage("batch attention", q_stride_);
  act_ = storage("batch act", act_stride_);
  const uint32_t partials = ceil_div(cfg_.vocab_size, DecodeKernels::kArgmaxChunk);
  part_v_ = ctx_.buffer(4ull * partials * slots, gpu::BufferUsage::StorageIO, "batch argmax values");
  part_i_ = ctx_.buffer(4ull * partials * slots, gpu::BufferUsage::StorageIO, "batch argmax indices");
  for (auto& b : staging_)
    b = ctx_.buffer(4ull * slots * kMaxStepsPerSubmit, gpu::BufferUsage::MapRead | gpu::BufferUsage::CopyDst,
                    "batch tokens read");
  const uint64_t cache_words = uint64_t(cfg_.num_kv_heads) * ctx_len_ * cfg_.head_dim;
  for (uint32_t l = 0; l < cfg_.num_layers; ++l) {
    k_cache_.push_back(storage("batch k cache", cache_words));
    v_cache_.push_back(storage("batch v cache", cache_words));
  }
  pos_.assign(slots, 0);
  active_.assign(slots, false);
  tenure_.assign(slots, 1);
  samplers_.resize(slots);
  build_step();

  // Greedy slots' tokens, all at once: a slot whose record's kSlotArgmax word is 0 is skipped.
  for (auto& d : DecodeKernels(ctx_).argmax(logits_, part_v_, part_i_, tokens_, slots_, cfg_.vocab_size,
                                            DecodeKernels::kArgmaxChunk,
                                            {slots, logits_stride_, tokens_stride_, kSlotWords, kSlotArgmax}))
    argmax_.dispatch(d);
  argmax_.build();
}

gpu::Binding BatchDecoder::slot_state(uint32_t b) const {
  return gpu::BufferBinding{slots_, 4ull * kSlotWords * b, 16};
}
gpu::Binding BatchDecoder::slot_tokens(uint32_t b) const {
  return gpu::BufferBinding{tokens_, 4 * tokens_stride_ * b, 4 * (uint64_t(ctx_len_) + 1)};
}
gpu::Binding BatchDecoder::slot_logits(uint32_t b) const {
  return gpu::BufferBinding{logits_, 4 * logits_stride_ * b, 4ull * cfg_.vocab_size};
}

void BatchDecoder::build_step() {
  const ModelConfig& c = cfg_;
  const uint32_t n = slots();
  const uint32_t heads = c.num_heads, kv_heads = c.num_kv_heads, hd = c.head_dim;
  const RowProducts::QkvLayout qkv_at{ctx_len_, q_stride_, /*shared_cache=*/false};
  const gpu::Kernel& embed =
      ctx_.kernel(gpu::embedded_kernel("llm_batch", "embed_rows",
                                       {{gpu::kWeightFormatConstant, double(model_.embedding_.format)},
                                        {"SLOTS", n},
                                        {"COLS", c.hidden_size},
                                        {"COLS8", ceil_div(c.hidden_size, 8)},
                                        {"OUT_STRIDE", double(x_stride_)},
                                        {"TOKENS_STRIDE", double(tokens_stride_)},
                                        {"WG", kWorkgroup}}));
  step_.dispatch(embed, {model_.embedding_, x_, tokens_, slots_},
                 {ceil_div(ceil_div(c.hidden_size, 8), kWorkgroup), n}, {"embed_rows"});
  const bool qk_norm = architecture_of(c).qk_norm;
  const gpu::Kernel& attend = ctx_.kernel(gpu::embedded_kernel(
      "llm_batch", "attend_rows",
      {{"SLOTS", n},
       {"HEAD_DIM", hd},
       {"HEADS", heads},
       {"KV_HEADS", kv_heads},
       {"CTX", ctx_len_},
       {"Q_STRIDE", double(q_stride_)},
       {"OUT_STRIDE", double(q_stride_)},
       {"HWG", kAttendWorkgroup},
       {"SCALE", 1.0 / std::sqrt(double(hd))},
       {"GROUP", heads / kv_heads},
       {"HEAD_V4", hd / 4},
       {"SLICES", kAttendWorkgroup / (hd / 4)},
       {"SG_PARTS", kAttendWorkgroup / std::max(1u, ctx_.adapter().subgroup_min_size)}}));
  // Without q/k norms, RoPE is the Q/K/V product's epilogue; with them (Qwen3) a head's norm needs
  // the whole head first: rope_rows.
  const gpu::Kernel* rope = qk_norm ? &products_.rope_rows(c, qkv_at) : nullptr;
  const auto rope_epilogue = RowProducts::rope_epilogue(c, qkv_at);
  const auto out_stride = RowProducts::out_stride;
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const Model::Layer& L = model_.layers_[l];
    if (rope) {
      step_.dispatch(product("qkv_rows", L.qkv, x_, x_stride_, L.input_norm, {raw_, L.qkv_bias},
                             out_stride(raw_stride_)),
                     {"qkv_rows", L.qkv.bytes});
      step_.dispatch(*rope, {raw_, L.qk_norm, model_.rope_, slots_, q_, k_cache_[l], v_cache_[l]},
                     {heads + 2 * kv_heads, n}, {"rope_rows"});
    } else {
      step_.dispatch(product("qkv_rope_rows", L.qkv, x_, x_stride_, L.input_norm,
                             {q_, k_cache_[l], v_cache_[l], model_.rope_, L.qkv_bias}, rope_epilogue),
                     {"qkv_rope_rows", L.qkv.bytes});
    }
    step_.dispatch(attend, {q_, k_cache_[l], v_cache_[l], slots_, att_}, {heads, n}, {"attend_rows"});
    step_.dispatch(product("residual_rows", L.o, att_, q_stride_, att_, {x_}, out_stride(x_stride_)),
                   {"o_proj_rows", L.o.bytes});
    step_.dispatch(
        product("gate_up_rows", L.gate_up, x_, x_stride_, L.post_norm, {act_}, out_stride(act_stride_)),
        {"gate_up_rows", L.gate_up.bytes});
    step_.dispatch(product("residual_rows", L.down, act_, act_stride_, act_, {x_}, out_stride(x_stride_)),
                   {"down_rows", L.down.bytes});
  }
  step_.dispatch(product("logits_rows", model_.lm_head_, x_, x_stride_, model_.final_norm_, {logits_},
                         out_stride(logits_stride_)),
                 {"logits_rows", model_.lm_head_.bytes});
  step_.build();
}

void BatchDecoder::start(uint32_t slot, std::span<const uint32_t> prompt, const SamplingParams& params) {
  begin(slot, prompt, params);
  prefill(ctx_len_);
}

void BatchDecoder::begin(uint32_t slot, std::span<const uint32_t> prompt, const SamplingParams& params) {
  check_idle(slot);
  if (joining_)
    throw Error(
        "batched decoding: slot " + std::to_string(joining_->slot) +
        " is still prefilling its prompt; one prompt joins at a time (the model's decode state holds it)");
  if (prompt.empty() || prompt.size() > ctx_len_)
    throw Error("batched decoding: a prompt of " + std::to_string(prompt.size()) + " tokens; 1 to " +
                std::to_string(ctx_len_) + " fit the context");
  for (uint32_t id : prompt)
    if (id >= cfg_.vocab_size)
      throw Error("batched decoding: token id " + std::to_string(id) + " is not below the vocabulary size " +
                  std::to_string(cfg_.vocab_size));
  joining_ = Joining{slot, {prompt.begin(), prompt.end()}, params};
  model_.reset();
}

uint32_t BatchDecoder::prefill(uint32_t max_tokens) {
  if (!joining_) return 0;
  Joining& j = *joining_;
  // All but the last prompt token through the model's prompt path; the next step feeds the last.
  const uint32_t last = uint32_t(j.prompt.size()) - 1;
  const uint32_t n = std::min(max_tokens, last - j.fed);
  if (n > 0) {
    const auto t0 = SteadyClock::now();
    model_.feed(std::span(j.prompt).subspan(j.fed, n));
    j.fed += n;
    join_stats_.tokens += n;
    ++join_stats_.feeds;
    join_stats_.feed_ms += ms_since(t0);
  }
  if (j.fed == last) {
    occupy(j.slot, j.prompt, last, j.params);
    joining_.reset();
    ++join_stats_.prompts;
  }
  return n;
}

void BatchDecoder::adopt(uint32_t slot, const SamplingParams& params) {
  check_idle(slot);
  if (joining_)
    throw Error("batched decoding: slot " + std::to_string(joining_->slot) +
                " is prefilling its prompt on the model; nothing can be adopted from it now");
  const auto& seq = model_.sequence();
  if (seq.size() != size_t(model_.length()) + 1)
    throw Error("batched decoding: the model's sequence has " + std::to_string(seq.size()) + " tokens and " +
                std::to_string(model_.length()) +
                " positions in its cache; a sequence is adopted after a generation (one token unfed)");
  occupy(slot, seq, model_.length(), params);
}

void BatchDecoder::check_idle(uint32_t slot) const {
  if (slot >= slots()) throw Error("batched decoding: no slot " + std::to_string(slot));
  if (active_[slot] || (joining_ && joining_->slot == slot))
    throw Error("batched decoding: slot " + std::to_string(slot) + " is busy");
}

void BatchDecoder::occupy(uint32_t slot, std::span<const uint32_t> tokens, uint32_t fed,
                          const SamplingParams& params) {
  SlotSampler& s = samplers_[slot];
  s.plan.reset();
  if (params.temperature != 0) {  // (as the session: temperature 0 is greedy)
    if (!s.sampler) s.sampler = std::make_unique<Sampler>(ctx_, cfg_.vocab_size);
    s.sampler->set_params(params);
    s.plan.emplace(s.sampler->plan(slot_logits(slot), slot_tokens(slot), slot_state(slot)));
    s.plan->build();
  }
  copy_cache(slot, fed, /*to_slot=*/true);
  ctx_.write(tokens_, 4 * tokens_stride_ * slot, std::as_bytes(tokens));
  uint32_t record[kSlotArgmax + 1] = {};
  record[0] = fed;
  record[kSlotActive] = 1;
  record[kSlotArgmax] = !s.plan;
  ctx_.write(slots_, 4ull * kSlotWords * slot, std::as_bytes(std::span(record)));
  pos_[slot] = fed;
  active_[slot] = true;
  ++tenure_[slot];
}

void BatchDecoder::copy_cache(uint32_t slot, uint32_t rows, bool to_slot) {
  if (rows == 0) return;
  gpu::Recorder rec(ctx_);
  const uint64_t row = 4ull * cfg_.head_dim, per_head = row * ctx_len_;
  for (uint32_t l = 0; l < cfg_.num_layers; ++l)
    for (uint32_t h = 0; h < cfg_.num_kv_heads; ++h) {
      const uint64_t model_at = h * per_head, slot_at = (uint64_t(slot) * cfg_.num_kv_heads + h) * per_head;
      const Model::Layer& L = model_.layers_[l];
      if (to_slot) {
        rec.copy(L.k_cache, model_at, k_cache_[l], slot_at, row * rows);
        rec.copy(L.v_cache, model_at, v_cache_[l], slot_at, row * rows);
      } else {
        rec.copy(k_cache_[l], slot_at, L.k_cache, model_at, row * rows);
        rec.copy(v_cache_[l], slot_at, L.v_cache, model_at, row * rows);
      }
    }
  rec.submit();
}

void BatchDecoder::release(uint32_t slot) {
  if (slot >= slots() || !active_[slot])
    throw Error("batched decoding: slot " + std::to_string(slot) + " holds no sequence to release");
  if (joining_)
    throw Error("batched decoding: slot " + std::to_string(joining_->slot) +
                " is prefilling its prompt on the model; no sequence can move there now");
  check_none_in_flight("moving a sequence out of its slot");
  const uint32_t fed = pos_[slot];
  copy_cache(slot, fed, /*to_slot=*/false);
  // Tokens 0..fed: the next generation on the model feeds the last.
  model_.resume(ctx_.read<uint32_t>(tokens_, tokens_stride_ * slot, uint64_t(fed) + 1), fed);
  stop(slot);
}

void BatchDecoder::write_records() {
  std::vector<uint32_t> records(size_t(kSlotWords) * slots(), 0);
  for (uint32_t b = 0; b < slots(); ++b) {
    records[kSlotWords * b] = pos_[b];
    records[kSlotWords * b + kSlotActive] = active_[b];
    records[kSlotWords * b + kSlotArgmax] = active_[b] && !samplers_[b].plan;
  }
  ctx_.write(slots_, 0, std::as_bytes(std::span(records)));
}

DecodeProfile BatchDecoder::profile(uint32_t reps) {
  const auto first = std::find(active_.begin(), active_.end(), true);
  if (first == active_.end()) throw Error("batched decoding profile: no sequence is active");
  check_none_in_flight("profiling a step");
  std::vector<gpu::Plan*> plans{&step_, &argmax_};
  for (uint32_t b = 0; b < slots(); ++b)
    if (active_[b] && samplers_[b].plan) plans.push_back(&*samplers_[b].plan);
  // The pickers advance the positions in the records: each repetition starts from the host's.
  return profile_plans(ctx_, plans, reps, pos_[first - active_.begin()], [&] { write_records(); });
}

void BatchDecoder::stop(uint32_t slot) {
  if (joining_ && joining_->slot == slot) joining_.reset();
  if (!active_.at(slot)) return;
  const uint32_t idle[2] = {0, 0};  // kSlotActive, kSlotArgmax
  ctx_.write(slots_, 4ull * (kSlotWords * slot + kSlotActive), std::as_bytes(std::span(idle)));
  active_[slot] = false;
  ++tenure_[slot];
}

void BatchDecoder::check_none_in_flight(const char* what) const {
  if (!rounds_.empty())
    throw Error(std::string("batched decoding: ") + what + " needs the rounds in flight collected first (" +
                std::to_string(rounds_.size()) + " in flight)");
}

void BatchDecoder::submit(uint32_t count) {
  if (count < 1 || count > kMaxStepsPerSubmit)
    throw Error("batched decoding: " + std::to_string(count) + " steps in one submit; 1 to " +
                std::to_string(kMaxStepsPerSubmit));
  if (rounds_.size() >= kMaxRoundsInFlight)
    throw Error("batched decoding: " + std::to_string(rounds_.size()) + " rounds in flight already, " +
                std::to_string(kMaxRoundsInFlight) + " at most: collect one first");
  for (uint32_t b = 0; b < slots(); ++b)
    if (active_[b] && pos_[b] + count > ctx_len_)
      throw Error("batched decoding: slot " + std::to_string(b) + " at position " + std::to_string(pos_[b]) +
                  " has room for " + std::to_string(ctx_len_ - std::min(pos_[b], ctx_len_)) + " of " +
                  std::to_string(count) + " steps (a context of " + std::to_string(ctx_len_) +
                  " positions); stop it first");
  InFlight round{count, next_staging_, pos_, std::vector<uint64_t>(slots(), 0)};
  next_staging_ = (next_staging_ + 1) % kMaxRoundsInFlight;
  bool any = false;
  for (uint32_t b = 0; b < slots(); ++b)
    if (active_[b]) {
      round.tenure[b] = tenure_[b];
      any = true;
    }
  if (any) {
    // The pickers write each slot's token and advance its position on the GPU, so the steps chain
    // without the host; the tokens are read back once. A command buffer per step: the GPU runs one
    // while the host records the next.
    const gpu::Buffer& staging = staging_[round.staging];
    for (uint32_t i = 0; i < count; ++i) {
      gpu::Recorder rec(ctx_);
      step_.encode(rec);
      argmax_.encode(rec);
      for (uint32_t b = 0; b < slots(); ++b)
        if (active_[b] && samplers_[b].plan) samplers_[b].plan->encode(rec);
      rec.end_pass();
      if (i + 1 == count)
        for (uint32_t b = 0; b < slots(); ++b)
          if (active_[b])
            rec.copy(tokens_, 4 * (tokens_stride_ * b + pos_[b] + 1), staging, 4ull * b * count, 4 * count);
      rec.submit();
    }
    for (uint32_t b = 0; b < slots(); ++b)
      if (active_[b]) pos_[b] += count;
  }
  rounds_.push_back(std::move(round));
}

BatchDecoder::Round BatchDecoder::collect() {
  if (rounds_.empty()) throw Error("batched decoding: no round in flight to collect");
  const InFlight round = std::move(rounds_.front());
  rounds_.pop_front();
  Round out{std::vector<std::vector<uint32_t>>(round.count, std::vector<uint32_t>(slots(), kNoToken)),
            round.first};
  const bool any = std::any_of(round.tenure.begin(), round.tenure.end(), [](uint64_t t) { return t != 0; });
  if (!any) return out;
  gpu::Buffer& staging = staging_[round.staging];
  std::vector<std::byte> bytes;
  try {
    bytes = ctx_.map_read(staging, 4ull * slots() * round.count);
  } catch (...) {
    // A map that failed or timed out may still complete into it later.
    staging = ctx_.buffer(staging.size(), gpu::BufferUsage::MapRead | gpu::BufferUsage::CopyDst,
                          "batch tokens read");
    throw;
  }
  for (uint32_t b = 0; b < slots(); ++b)
    if (round.tenure[b] != 0 && round.tenure[b] == tenure_[b])
      for (uint32_t i = 0; i < round.count; ++i)
        std::memcpy(&out.tokens[i][b], bytes.data() + 4ull * (b * round.count + i), 4);
  return out;
}

std::vector<std::vector<uint32_t>> BatchDecoder::steps(uint32_t count) {
  check_none_in_flight("a round of steps read back at once");
  submit(count);
  return collect().tokens;
}

std::vector<float> BatchDecoder::read_logits(uint32_t slot) {
  return ctx_.read<float>(logits_, logits_stride_ * slot, cfg_.vocab_size);
}

}  // namespace wgfuse::llm
