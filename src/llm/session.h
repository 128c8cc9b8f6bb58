// Session: everything a generation needs, built from a Hugging Face folder and typed options, so
// that `wgfuse generate`, `wgfuse chat`, a server and the tests use one assembly:
//   the files (config, tensors, tokenizer, chat template, stop ids, generation_config.json),
//   the sampling settings (options over generation_config.json over greedy) and the GPU sampler,
//   the decoder: the step decoder (llm::Model), or the persistent decoder where it may run (its
//   prompts then through the step decoder's prefill).
// The constructor reads and checks everything without touching the GPU, so that bad input fails
// before gigabytes are uploaded; load() then builds the decoder on a device.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/context.h"
#include "llm/chat_template.h"
#include "llm/decoder.h"
#include "llm/model.h"
#include "llm/model_files.h"
#include "llm/persistent_decode.h"
#include "llm/sampler.h"
#include "llm/tokenizer.h"
#include "util/clock.h"

namespace wgfuse::llm {

enum class DecoderKind { Steps, Persistent };
DecoderKind parse_decoder_kind(std::string_view s);  // "steps" | "persistent"; throws Error otherwise
std::string_view fusion_name(Fusion f);              // "none" | "full"
// Token ids given as text (--prompt-ids, tokenize --decode): separated by whitespace, commas or
// JSON brackets ("1 2 3", "1,2,3", "[1, 2, 3]"), as `wgfuse tokenize` prints them; each below
// `limit`. Errors start with `what`.
std::vector<uint32_t> parse_token_ids(std::string_view text, uint64_t limit, const std::string& what);

// Unset values take generation_config.json's (when it samples), else greedy.
struct SamplingOverrides {
  std::optional<double> temperature, top_p, repetition_penalty;
  std::optional<int64_t> top_k;
  uint64_t seed = 0;
};

// DecoderKind::Persistent (experimental, greedy only): the co-residency probe decides whether the
// persistent decoder may run at all, else the step decoder runs (a notice says why; also when a
// grid barrier times out during the check). Its first check_tokens tokens and their logits must
// equal the step decoder's on the first prompt generated from: an Error otherwise.
struct PersistentChoice {
  uint32_t workgroups = 0;         // 0 = the largest power of two up to 256 that the probe passes
  uint32_t probe_spin = 1u << 20;  // SwiftShader needs ~1M to see 2 workgroups co-resident
  uint32_t check_tokens = 8;       // 0 = no check
  PersistentVariant variant;
};

struct SessionOptions {
  std::string model_dir;  // config.json, *.safetensors, tokenizer.json
  // Weight storage; unset: the checkpoint's own 16-bit type (bf16 stays bf16, f16 stays f16, f32
  // becomes f16).
  std::optional<gpu::WeightFormat> dtype;
  std::optional<uint32_t> ctx;  // default: 4096, or the model's max_position_embeddings if smaller
  uint32_t steps_per_submit = 8;
  AttentionSplit attention;
  Fusion fusion = Fusion::None;
  uint32_t attn_fuse_max = ModelOptions{}.attn_fuse_max;
  uint32_t attn_short_max = ModelOptions{}.attn_short_max;
  uint32_t attn_long_from = ModelOptions{}.attn_long_from;
  uint32_t prefill_chunk = ModelOptions{}.prefill_chunk;
  uint32_t prefill_short_max = ModelOptions{}.prefill_short_max;
  uint64_t binding_limit = 0;  // ModelOptions::binding_limit: plan for a browser's limits (serve --limits)
  PromptTile prefill_tile;     // tokens == 0: the rule (DecodeKernels::prompt_tile)
  PromptAttention prefill_attention = ModelOptions{}.prefill_attention;
  uint32_t prefill_attention_splits = ModelOptions{}.prefill_attention_splits;
  SamplingOverrides sampling;
  DecoderKind decoder = DecoderKind::Steps;
  PersistentChoice persistent;
  std::function<void(uint64_t done, uint64_t total)> progress;  // weight upload: bytes so far, in all
  std::function<void(const std::string&)> notice;               // decisions the user should hear of
};

// How the decode runs.
struct DecoderChoice {
  DecoderKind kind = DecoderKind::Steps;
  std::string fallback_reason;  // the persistent decoder was asked for and could not run
  uint32_t workgroups = 0, workgroup_size = 0, barriers_per_token = 0, checked_tokens = 0;  // persistent
  std::string variant;  // persistent: to_string(PersistentVariant)
};

// What a caller sees while a reply is generated.
struct Stream {
  std::function<void(std::string_view)> on_text;  // the reply's text as it comes (whole characters)
  const std::atomic<bool>* stop = nullptr;        // once true, the token being delivered is the last
  std::vector<float>* logits = nullptr;           // appended: each generated token's logits (slow)
};

struct Reply {
  std::vector<uint32_t> ids;       // generated, an EOS id included
  bool stopped_at_eos = false;     // (the EOS id prints no text)
  std::string text;                // the ids as text, special tokens skipped
  uint32_t dropped_exchanges = 0;  // chat(): the oldest user/assistant pairs dropped to fit --ctx
};

class Session {
 public:
  explicit Session(SessionOptions options);
  // Builds the step decoder and the sampler on ctx, which must outlive the session.
  void load(gpu::Context& ctx);

  const SessionOptions& options() const { return opt_; }
  const ModelFiles& files() const { return files_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  const SamplingParams& sampling() const { return params_; }
  // The ids that end a generation (the config files' EOS ids and <|im_end|>).
  const std::vector<uint32_t>& stop_ids() const { return stop_ids_; }
  // The sampling settings of the next generations: `o` over generation_config.json over greedy
  // (the options' own overrides are not consulted). Throws Error naming a value out of range.
  void set_sampling(const SamplingOverrides& o);
  // What set_sampling(o) would choose, checked, without touching the session (any thread).
  SamplingParams resolve_sampling(const SamplingOverrides& o) const;
  uint32_t ctx_len() const { return ctx_len_; }  // KV-cache positions
  double load_ms() const { return load_ms_; }    // from the constructor to the end of load()
  gpu::Context& context() const;
  Decoder& decoder();  // after load()
  // The step decoder (its weights, buffers and plans: a server's batched decoder and the chat
  // page's assets share them); an Error once the persistent decoder took it for its prompts.
  Model& step_decoder();
  const DecoderChoice& decoder_choice() const { return choice_; }

  // Prompts: text as it stands, or wrapped in the chat template (a system prompt when not empty).
  std::vector<uint32_t> encode(std::string_view text) const;
  std::vector<uint32_t> encode_chat(std::string_view user, const std::string& system);
  // A whole conversation through the chat template, ending with the assistant's turn to speak.
  // The template is read on first use (not thread-safe); encode() is.
  std::vector<uint32_t> encode_messages(std::span<const ChatMessage> messages, bool enable_thinking = true);
  // Tokens that fit after a prompt of this length; an Error when none does.
  uint32_t room(size_t prompt_tokens) const;

  // Generates up to n tokens after `prompt` (continuing the decoder's sequence), streamed.
  Reply generate(std::span<const uint32_t> prompt, uint32_t n, const Stream& stream = {});
  // The same generation as token ids: each is passed to on_token (false stops; a stop id stops
  // after it) and returned, the stop id included; the decoder's sequence holds them after.
  std::vector<uint32_t> decode(std::span<const uint32_t> prompt, uint32_t n,
                               const std::function<bool(uint32_t)>& on_token,
                               const std::function<void(std::span<const float>)>& on_logits = {});
  Reply generate(std::string_view text, uint32_t n, const Stream& stream = {});
  // Generates up to n tokens after `prompt`, greedy and unshown, then repeats the prompt phase
  // until those rounds have taken kWarmUpBusyMs (at most kWarmUpMaxRounds), and resets the
  // decoder: the timed run then finds the pipelines compiled and the GPU at its working clocks.
  // Returns how many prompt rounds followed the n tokens.
  uint32_t warm_up(std::span<const uint32_t> prompt, uint32_t n);
  static constexpr double kWarmUpBusyMs = 250;
  static constexpr uint32_t kWarmUpMaxRounds = 32;

  // Chat: the history is rendered through the chat template every turn and fed whole; the
  // decoder keeps the KV cache of the common prefix. When a turn does not fit in --ctx, the
  // oldest user/assistant pairs are dropped (the system prompt stays). A turn needs room for
  // kChatReserve tokens of reply: new_chat refuses a system prompt that leaves less, chat a
  // message that alone leaves less (an Error, the history kept as before the turn).
  static constexpr uint32_t kChatReserve = 16;
  void new_chat(const std::string& system = {});
  Reply chat(std::string_view user, uint32_t n, const Stream& stream = {});
  const std::vector<ChatMessage>& history() const { return history_; }

  // One step decoder step after the last generation, each dispatch timed (Model::profile_decode).
  DecodeProfile profile(uint32_t reps);
  // The step decoder's plans, for a prompt of prompt_length tokens, written to `path` as JSON
  // (llm/plan_file.h); the token picker is the session's (the sampler, or greedy argmax).
  void write_plan(const std::string& path, uint32_t prompt_length);
  // The last generation's last prompt chunk, each dispatch timed (Model::profile_prefill).
  PrefillProfile profile_prefill(uint32_t reps);

 private:
  const ChatTemplate& chat_template();
  std::string ctx_fix() const;  // how to make room: raise --ctx, or shorten where it is at the maximum
  // params_ into the sampler and its steps (the picker; none when greedy).
  void apply_sampling();
  // DecoderKind::Persistent, on the first generation: probes, builds and checks it on `prompt`.
  void choose_decoder(std::span<const uint32_t> prompt, uint32_t n);

  SessionOptions opt_;
  SteadyClock::time_point t0_;
  ModelFiles files_;
  Tokenizer tokenizer_;
  std::vector<uint32_t> stop_ids_;  // EOS ids of the config files and <|im_end|>
  SamplingParams params_;
  uint32_t ctx_len_;
  std::optional<ChatTemplate> template_;
  gpu::Context* ctx_ = nullptr;
  std::unique_ptr<Model> model_;  // the step decoder, or the persistent decoder's prompt feeder
  std::unique_ptr<Sampler> sampler_;
  std::optional<gpu::Plan> picker_;  // the sampler's plan on the step decoder's buffers; none: greedy
  std::unique_ptr<PersistentDecoder> persistent_;
  bool chosen_ = false;
  DecoderChoice choice_;
  double load_ms_ = 0;
  std::vector<ChatMessage> history_;
};

}  // namespace wgfuse::llm
