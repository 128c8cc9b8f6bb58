#include "llm/session.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "llm/gguf_model.h"
#include "llm/plan_file.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

uint32_t checked_ctx(const ModelFiles& files, const SessionOptions& o) {
  const auto& cfg = files.config();
  const uint32_t ctx_len = o.ctx.value_or(std::min(4096u, cfg.max_position_embeddings));
  if (ctx_len > cfg.max_position_embeddings)
    throw Error("--ctx " + std::to_string(ctx_len) + " is more than the model's max_position_embeddings (" +
                std::to_string(cfg.max_position_embeddings) + ", " +
                (files.gguf() ? o.model_dir + ": context_length" : o.model_dir + "/config.json") + ")");
  DecodeKernels::attend_chunks(cfg, ctx_len, o.attention);  // checks --attn-chunk, --attn-heads
  return ctx_len;
}

// The sampling settings: overrides over generation_config.json over greedy.
SamplingParams sampling_params(const SamplingOverrides& o, const GenerationConfig& gen,
                               const std::string& dir) {
  SamplingParams p;
  const bool file_samples = gen.do_sample;
  if (file_samples) {  // the values taken from the file, named as the file's
    SamplingParams f;
    if (!o.temperature) f.temperature = gen.temperature;
    if (!o.top_k) f.top_k = int64_t(gen.top_k);
    if (!o.top_p) f.top_p = gen.top_p;
    if (!o.repetition_penalty) f.repetition_penalty = gen.repetition_penalty;
    validate(f, (std::filesystem::path(dir) / "generation_config.json").string());
  }
  p.temperature = o.temperature.value_or(file_samples ? gen.temperature : 0.0);
  p.top_k = o.top_k.value_or(file_samples ? int64_t(gen.top_k) : 0);
  p.top_p = o.top_p.value_or(file_samples ? gen.top_p : 1.0);
  p.repetition_penalty = o.repetition_penalty.value_or(file_samples ? gen.repetition_penalty : 1.0);
  p.seed = o.seed;
  validate(p);
  return p;
}

// The text of generated ids. A model's vocabulary may be padded past the tokenizer's (Qwen2.5:
// 151,936 rows, 151,665 tokens): an id with no token is no text, as Hugging Face's decode skips it.
std::string text_of(const Tokenizer& tok, const std::vector<uint32_t>& ids) {
  std::vector<int32_t> known;
  for (uint32_t id : ids)
    if (id < tok.vocab_size()) known.push_back(int32_t(id));
  return tok.decode(known, /*skip_special=*/true);
}

}  // namespace

DecoderKind parse_decoder_kind(std::string_view s) {
  if (s == "steps") return DecoderKind::Steps;
  if (s == "persistent") return DecoderKind::Persistent;
  throw Error("--decode '" + std::string(s) + "': expected steps or persistent");
}

std::vector<uint32_t> parse_token_ids(std::string_view text, uint64_t limit, const std::string& what) {
  const auto separator = [](char c) { return std::isspace(uint8_t(c)) || c == ',' || c == '[' || c == ']'; };
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < text.size();) {
    if (separator(text[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && !separator(text[end])) ++end;
    const std::string_view word = text.substr(i, end - i);
    uint64_t v = 0;
    const bool digits = word.size() <= 10 && word.find_first_not_of("0123456789") == std::string_view::npos;
    for (char c : word) v = digits ? v * 10 + uint64_t(c - '0') : v;
    if (!digits || v >= limit)
      throw Error(what + ": \"" + utf8_lossy(std::string(word.substr(0, 40))) + "\" at byte offset " +
                  std::to_string(i) + " is not a token id below " + std::to_string(limit) +
                  " (non-negative integers separated by spaces or commas, as `wgfuse tokenize` prints them)");
    ids.push_back(uint32_t(v));
    i = end;
  }
  return ids;
}

std::string_view fusion_name(Fusion f) {
  return f == Fusion::Full ? "full" : "none";
}

Session::Session(SessionOptions options)
    : opt_(std::move(options)),
      t0_(SteadyClock::now()),
      files_(opt_.model_dir),  // checks every tensor of the architecture's table
      tokenizer_(files_.gguf() ? gguf_tokenizer(*files_.gguf()) : load_tokenizer(opt_.model_dir)),
      ctx_len_(checked_ctx(files_, opt_)) {
  if (opt_.notice)
    for (const std::string& w : files_.warnings()) opt_.notice("warning: " + w);
  for (int32_t id : files_.gguf() ? gguf_stop_token_ids(tokenizer_, *files_.gguf())
                                  : stop_token_ids(tokenizer_, opt_.model_dir))
    stop_ids_.push_back(uint32_t(id));
  params_ = sampling_params(opt_.sampling, files_.generation(), opt_.model_dir);
  if (opt_.decoder == DecoderKind::Persistent && params_.temperature != 0)
    throw Error(
        "--decode persistent decodes greedily only: give --temp 0 (the model's generation_config.json "
        "asks for sampling)");
}

void Session::load(gpu::Context& ctx) {
  ctx_ = &ctx;
  ModelOptions mo;
  mo.dtype = opt_.dtype;
  mo.ctx = ctx_len_;
  mo.attention = opt_.attention;
  mo.fusion = opt_.fusion;
  mo.attn_fuse_max = opt_.attn_fuse_max;
  mo.attn_short_max = opt_.attn_short_max;
  mo.attn_long_from = opt_.attn_long_from;
  mo.prefill_chunk = opt_.prefill_chunk;
  mo.prefill_short_max = opt_.prefill_short_max;
  mo.binding_limit = opt_.binding_limit;
  mo.prefill_tile = opt_.prefill_tile;
  mo.prefill_attention = opt_.prefill_attention;
  mo.prefill_attention_splits = opt_.prefill_attention_splits;
  mo.progress = opt_.progress;
  model_ = std::make_unique<Model>(
      ctx, files_.config(), [this](std::string_view name) { return files_.find(name); }, mo);
  sampler_ = std::make_unique<Sampler>(ctx, files_.config().vocab_size);
  apply_sampling();
  load_ms_ = ms_since(t0_);
}

gpu::Context& Session::context() const {
  if (!ctx_) throw Error("the session is not loaded (Session::load)");
  return *ctx_;
}

Decoder& Session::decoder() {
  if (persistent_) return *persistent_;
  if (!model_) throw Error("the session is not loaded (Session::load)");
  return *model_;
}

Model& Session::step_decoder() {
  if (!model_) throw Error("the session is not loaded (Session::load)");
  if (persistent_) throw Error("the step decoder feeds the persistent decoder's prompts: it is not free");
  return *model_;
}

std::vector<uint32_t> Session::encode(std::string_view text) const {
  const auto ids = tokenizer_.encode(text);
  return {ids.begin(), ids.end()};
}

const ChatTemplate& Session::chat_template() {
  if (!template_)
    template_ = files_.gguf() ? gguf_chat_template(*files_.gguf())
                              : ChatTemplate::from_file(files_.dir() / "tokenizer_config.json");
  return *template_;
}

std::vector<uint32_t> Session::encode_chat(std::string_view user, const std::string& system) {
  std::vector<ChatMessage> msgs;
  if (!system.empty()) msgs.push_back({"system", system});
  msgs.push_back({"user", std::string(user)});
  return encode_messages(msgs);
}

std::vector<uint32_t> Session::encode_messages(std::span<const ChatMessage> messages, bool enable_thinking) {
  return encode(chat_template().render(messages, /*add_generation_prompt=*/true, enable_thinking));
}

SamplingParams Session::resolve_sampling(const SamplingOverrides& o) const {
  return sampling_params(o, files_.generation(), opt_.model_dir);
}

void Session::set_sampling(const SamplingOverrides& o) {
  const SamplingParams p = resolve_sampling(o);
  if (opt_.decoder == DecoderKind::Persistent && p.temperature != 0)
    throw Error("--decode persistent decodes greedily only: temperature must be 0");
  params_ = p;
  if (sampler_) apply_sampling();  // else load() does
}

void Session::apply_sampling() {
  sampler_->set_params(params_);
  picker_.reset();
  if (params_.temperature != 0) {
    if (persistent_) throw Error("sampling needs the step decoder (--decode persistent is greedy only)");
    const auto b = model_->decode_buffers();
    picker_.emplace(sampler_->plan(b.logits, b.tokens, b.state));
  }
}

std::string Session::ctx_fix() const {
  const uint32_t max = files_.config().max_position_embeddings;
  return ctx_len_ < max ? "raise --ctx (the model allows " + std::to_string(max) + ") or shorten it"
                        : "shorten it (--ctx is at the model's max_position_embeddings)";
}

uint32_t Session::room(size_t prompt_tokens) const {
  if (prompt_tokens >= ctx_len_)
    throw Error("the prompt is " + std::to_string(prompt_tokens) + " tokens; --ctx " +
                std::to_string(ctx_len_) + " leaves no room to generate: " + ctx_fix());
  return ctx_len_ - uint32_t(prompt_tokens);
}

void Session::choose_decoder(std::span<const uint32_t> prompt, uint32_t n) {
  if (chosen_) return;
  chosen_ = true;
  if (opt_.decoder != DecoderKind::Persistent) return;
  gpu::Context& ctx = context();
  const uint32_t wg = 256;
  auto notice = [&](const std::string& s) {
    if (opt_.notice) opt_.notice(s);
  };
  auto fall_back = [&](const std::string& why) {
    notice("--decode persistent cannot run here, using the step decoder: " + why);
    persistent_.reset();
    model_->reset();  // a check that failed may have left the prompt it took from the persistent decoder
    choice_ = {.kind = DecoderKind::Steps, .fallback_reason = why};
  };
  if (const std::string why = persistent_unsupported(files_.config()); !why.empty()) return fall_back(why);
  if (const auto& formats = model_->stats().weight_formats; formats.size() > 1)
    return fall_back("the matrices are stored in " + std::to_string(formats.size()) +
                     " formats (a GGUF file of mixed tensor types, or an AWQ/GPTQ folder's 4-bit layers "
                     "beside its f16 embedding); the one-dispatch decoder decodes one");
  // Auto: at most 256 workgroups (2 per SM of an H100) that the light probe passes, then halved
  // until the decode kernel's own probe passes too (fit_grid); a barrier that times out falls back.
  const bool auto_grid = opt_.persistent.workgroups == 0;
  const GridChoice grid = choose_grid(ctx, opt_.persistent.workgroups, wg, opt_.persistent.probe_spin, 256);
  if (grid.workgroups == 0) return fall_back(grid.reason);
  const uint32_t checked = std::min(opt_.persistent.check_tokens, n);
  std::string diff;
  try {
    persistent_ = std::make_unique<PersistentDecoder>(
        ctx, files_.config(), [this](std::string_view name) { return files_.find(name); },
        PersistentOptions{.dtype = opt_.dtype,
                          .ctx = ctx_len_,
                          .workgroups = grid.workgroups,
                          .workgroup_size = wg,
                          .fit_grid = auto_grid,
                          .probe_spin = opt_.persistent.probe_spin,
                          .variant = opt_.persistent.variant,
                          .matrices_from = model_.get()});
    persistent_->take_prompts_from(model_.get());  // checked as it runs
    if (checked) diff = compare_with_steps(*model_, *persistent_, prompt, checked, 1e-3);
  } catch (const Error& e) {
    if (std::string(e.what()).find("timed out") == std::string::npos) throw;
    return fall_back(e.what());
  }
  if (!diff.empty()) return fall_back("its check against the step decoder failed: " + diff);
  const std::string fitted = persistent_->workgroups() == grid.workgroups
                                 ? ""
                                 : " (fitted to the decode kernel; the light probe passed " +
                                       std::to_string(grid.workgroups) + " workgroups)";
  notice("persistent decode: " + std::to_string(persistent_->workgroups()) + " workgroups of " +
         std::to_string(wg) + fitted + ", " + std::to_string(persistent_->barriers_per_token()) +
         " grid barriers per token, " + std::to_string(checked) + " tokens checked, variant " +
         to_string(persistent_->variant()));
  choice_ = {.kind = DecoderKind::Persistent,
             .workgroups = persistent_->workgroups(),
             .workgroup_size = wg,
             .barriers_per_token = persistent_->barriers_per_token(),
             .checked_tokens = checked,
             .variant = to_string(persistent_->variant())};
}

uint32_t Session::warm_up(std::span<const uint32_t> prompt, uint32_t n) {
  choose_decoder(prompt, n);
  GenerateOptions go;
  go.steps_per_submit = opt_.steps_per_submit;
  decoder().generate(prompt, n, {}, go);
  decoder().reset();
  // Then the prompt phase again until those rounds have taken kWarmUpBusyMs, the GPU busy nearly
  // all of it: a GPU lowers its clock within a second of idling (the first prompt's pipeline
  // creation can idle it that long) and regains it only under sustained work, so a timed run
  // straight after one short round may run at a fraction of the clock (docs/RESULTS.md, session 16).
  double busy_ms = 0;
  uint32_t rounds = 0;
  for (; rounds < kWarmUpMaxRounds && busy_ms < kWarmUpBusyMs; ++rounds) {
    decoder().generate(prompt, 1, {}, go);
    busy_ms += decoder().stats().prefill_ms;
    decoder().reset();
  }
  return rounds;
}

std::vector<uint32_t> Session::decode(std::span<const uint32_t> prompt, uint32_t n,
                                      const std::function<bool(uint32_t)>& on_token,
                                      const std::function<void(std::span<const float>)>& on_logits) {
  choose_decoder(prompt, n);
  GenerateOptions go;
  go.steps_per_submit = opt_.steps_per_submit;
  go.eos_ids = stop_ids_;
  go.picker = picker_ ? &*picker_ : nullptr;
  go.on_logits = on_logits;
  return decoder().generate(prompt, n, on_token, go);
}

Reply Session::generate(std::span<const uint32_t> prompt, uint32_t n, const Stream& stream) {
  StreamDecoder text(tokenizer_, /*skip_special=*/true);
  Reply r;
  const auto on_token = [&](uint32_t id) {
    if (std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end()) {
      r.stopped_at_eos = true;
      return false;
    }
    if (stream.on_text && id < tokenizer_.vocab_size()) stream.on_text(text.push(int32_t(id)));
    return !(stream.stop && stream.stop->load());
  };
  std::function<void(std::span<const float>)> on_logits;
  if (stream.logits)
    on_logits = [&](std::span<const float> l) {
      stream.logits->insert(stream.logits->end(), l.begin(), l.end());
    };
  r.ids = decode(prompt, n, on_token, on_logits);
  if (stream.on_text) stream.on_text(text.finish());
  r.text = text_of(tokenizer_, r.ids);
  return r;
}

Reply Session::generate(std::string_view text, uint32_t n, const Stream& stream) {
  const auto ids = encode(text);
  return generate(ids, std::min(n, room(ids.size())), stream);
}

void Session::new_chat(const std::string& system) {
  history_.clear();
  if (system.empty()) return;
  const std::vector<ChatMessage> alone = {{"system", system}, {"user", ""}};
  const size_t tokens = encode(chat_template().render(alone, true)).size();
  if (tokens + kChatReserve > ctx_len_)
    throw Error("--system is " + std::to_string(tokens) +
                " tokens in the chat template, which leaves fewer than " + std::to_string(kChatReserve) +
                " of --ctx " + std::to_string(ctx_len_) + " for a message and its reply: " + ctx_fix());
  history_.push_back({"system", system});
}

Reply Session::chat(std::string_view user, uint32_t n, const Stream& stream) {
  // A turn that fails leaves the history as it was (the chat goes on); the decoder starts over,
  // its sequence may hold part of the failed turn.
  const std::vector<ChatMessage> before = history_;
  try {
    history_.push_back({"user", std::string(user)});
    std::vector<uint32_t> ids;
    uint32_t dropped = 0;
    while (true) {
      ids = encode(chat_template().render(history_, true));
      if (ids.size() + kChatReserve <= ctx_len_) break;
      const size_t first = (!history_.empty() && history_[0].role == "system") ? 1 : 0;
      if (history_.size() - first <= 1)
        throw Error("this message is " + std::to_string(ids.size()) +
                    " tokens in the chat template, which leaves fewer than " + std::to_string(kChatReserve) +
                    " of --ctx " + std::to_string(ctx_len_) + " for the reply: " + ctx_fix());
      history_.erase(history_.begin() + long(first), history_.begin() + long(first) + 2);
      ++dropped;
    }
    // The decoder's sequence is the previous render plus the reply: the positions it shares with
    // this render stay in the KV cache. A reply whose text does not encode back to its ids (a
    // special token, a character split across tokens) then costs the tokens from there on, not
    // the whole conversation.
    Decoder& d = decoder();
    const auto& seq = d.sequence();
    size_t reused = size_t(std::mismatch(seq.begin(), seq.end(), ids.begin(), ids.end()).first - seq.begin());
    if (reused < seq.size()) {
      // Only fed positions are in the cache, and at least one token goes through the prompt.
      reused = std::min<size_t>({reused, d.length(), ids.size() - 1});
      d.resume(std::span(ids).first(reused), uint32_t(reused));
    }
    Reply r = generate(std::span(ids).subspan(reused), std::min(n, room(ids.size())), stream);
    r.dropped_exchanges = dropped;
    history_.push_back({"assistant", r.text});
    return r;
  } catch (...) {
    history_ = before;
    if (model_ || persistent_) decoder().reset();
    throw;
  }
}

PrefillProfile Session::profile_prefill(uint32_t reps) {
  if (!model_) throw Error("the session is not loaded (Session::load)");
  if (persistent_)
    throw Error("--profile-prefill times the step decoder's kernels: not with --decode persistent");
  return model_->profile_prefill(reps);
}

DecodeProfile Session::profile(uint32_t reps) {
  if (!model_) throw Error("the session is not loaded (Session::load)");
  if (persistent_) throw Error("--profile times the step decoder's kernels: not with --decode persistent");
  return model_->profile_decode(picker_ ? &*picker_ : nullptr, reps);
}

void Session::write_plan(const std::string& path, uint32_t prompt_length) {
  if (opt_.decoder == DecoderKind::Persistent)
    throw Error("--write-plan writes the step decoder's plan: not with --decode persistent");
  if (!model_) throw Error("the session is not loaded (Session::load)");
  llm::write_plan(path,
                  plan_json(*model_, prompt_length, params_.temperature != 0 ? sampler_.get() : nullptr));
}

}  // namespace wgfuse::llm
