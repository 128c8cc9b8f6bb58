// wgfuse generate | chat: options wired to an llm::Session (src/llm/session.h), which loads a
// Qwen2-architecture model from a Hugging Face folder and decodes it on the GPU; text streamed as
// it is generated, the report (src/llm/report.h) at the end.
#include <readline/history.h>
#include <readline/readline.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "commands.h"
#include "llm/report.h"
#include "llm/session.h"
#include "util/error.h"

namespace wgfuse::cli {
namespace {

// The session's options, with the flags that name an enum kept as given.
struct LlmOptions {
  llm::SessionOptions s;
  std::string dtype = "auto", fusion = "none", prefill_tile = "auto";
};

struct GenerateOptions {
  std::string prompt, prompt_file, prompt_ids, system, json_path, logits_path, plan_path, decode = "steps";
  int64_t n = 128;
  bool chat = false;
  uint32_t profile_reps = 0;          // --profile: repetitions of the timed decode step; 0 = off
  uint32_t profile_prefill_reps = 0;  // --profile-prefill: repetitions of the timed prompt chunk
  uint32_t warmup = 0;                // --warmup: tokens generated (greedy, not shown) before the timed run
};

void add_llm_options(CLI::App* c, LlmOptions& o) {
  c->add_option("-m,--model", o.s.model_dir,
                "Hugging Face model folder (config.json, *.safetensors, tokenizer.json), or a GGUF file")
      ->required();
  c->add_option(
       "--dtype", o.dtype,
       "weight storage on the GPU: auto (the checkpoint's 16-bit type: bf16 stays bf16, f16 stays f16, "
       "f32 becomes f16) | f32 | f16 | bf16 | q8_0 | q4_0 | q4_1 | q5_0 | q5_1 | q4_k | q5_k | q6_k "
       "(ggml's formats, quantized at load: rows padded to whole blocks of 32, 256 for the k formats)")
      ->check(CLI::IsMember(
          {"auto", "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"}))
      ->capture_default_str();
  c->add_option("--ctx", o.s.ctx,
                "KV-cache length in tokens (default 4096, or the model's max_position_embeddings if smaller)")
      ->check(CLI::Range(1u, UINT32_MAX));
  c->add_option("--temp", o.s.sampling.temperature,
                "temperature; 0 = greedy (default: generation_config.json, else greedy)");
  c->add_option("--top-k", o.s.sampling.top_k, "keep the k most likely tokens; 0 = off");
  c->add_option("--top-p", o.s.sampling.top_p,
                "keep the smallest set of tokens reaching this probability; 1 = off");
  c->add_option("--repeat-penalty", o.s.sampling.repetition_penalty,
                "repetition penalty over the whole sequence; 1 = off");
  c->add_option("--seed", o.s.sampling.seed, "random seed: the same seed gives the same text")
      ->check(CLI::Validator(
          [](const std::string& v) -> std::string {
            // Digits only, at most 2^64 - 1: CLI11 would turn -1, 1e23 and 2^64 into 2^64 - 1.
            const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
            if (digits && (v.size() < 20 || (v.size() == 20 && v <= "18446744073709551615"))) return {};
            return v + " is not an integer from 0 to 18446744073709551615";
          },
          "UINT64"))
      ->capture_default_str();
  c->add_option("--steps-per-submit", o.s.steps_per_submit, "decode steps recorded into one command buffer")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  c->add_option("--attn-chunk", o.s.attention.chunk, "decode attention: KV-cache positions per workgroup")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  c->add_option(
       "--attn-heads", o.s.attention.heads_per_wg,
       "decode attention: query heads per workgroup (a divisor of heads / kv heads; they share K/V reads)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  c->add_option("--fusion", o.fusion,
                "decode layers: none (split, 6 dispatches a layer: the fastest measured) | full (attention "
                "fused with o_proj, 4 a layer; slower on the H100, docs/RESULTS.md)")
      ->check(CLI::IsMember({"none", "full"}))
      ->capture_default_str();
  c->add_option("--attn-short-max", o.s.attn_short_max,
                "with --fusion none: positions below which decode attention is one dispatch per layer "
                "(a workgroup per head; at most 4096 by workgroup memory); 0 = always split along the cache")
      ->capture_default_str();
  c->add_option("--attn-fuse-max", o.s.attn_fuse_max,
                "with --fusion full: positions from which decode attention is split along the cache again")
      ->capture_default_str();
  c->add_option("--prefill-chunk", o.s.prefill_chunk,
                "prompt tokens per prefill submit (tiled matrix-matrix kernels); 0 = one decode step per "
                "prompt token")
      ->capture_default_str();
  c->add_option("--prefill-tile", o.prefill_tile,
                "tokens x rows of output per workgroup of every prefill product: auto (by the product's "
                "size) or one of 32x64, 64x64, 64x128")
      ->capture_default_str();
}

// A progress bar on stderr while weights upload, when stderr is a terminal.
std::function<void(uint64_t, uint64_t)> progress_bar(std::string what) {
  if (!isatty(2)) return {};
  return [what = std::move(what), last = -1](uint64_t done, uint64_t total) mutable {
    const int pct = total ? int(100.0 * double(done) / double(total)) : 0;
    if (total == 0 || pct == last) return;
    last = pct;
    const int filled = pct * 30 / 100;
    std::fprintf(stderr, "\r%s [%s%s] %3d%% of %.2f GB", what.c_str(), std::string(filled, '#').c_str(),
                 std::string(30 - filled, ' ').c_str(), pct, double(total) / 1e9);
    if (done >= total) std::fputc('\n', stderr);
  };
}

// Reads and checks the folder and the options (no GPU yet).
std::unique_ptr<llm::Session> open_session(LlmOptions lo, const std::string& decode) {
  if (lo.dtype != "auto") lo.s.dtype = gpu::parse_weight_format(lo.dtype, "--dtype");
  lo.s.fusion = llm::parse_fusion(lo.fusion);
  lo.s.prefill_tile = llm::parse_prompt_tile(lo.prefill_tile, "--prefill-tile");
  lo.s.decoder = llm::parse_decoder_kind(decode);
  lo.s.progress = progress_bar("loading " + lo.s.model_dir);
  lo.s.notice = [](const std::string& s) { std::fprintf(stderr, "wgfuse: %s\n", s.c_str()); };
  return std::make_unique<llm::Session>(std::move(lo.s));
}

llm::Stream to_stdout(std::vector<float>* logits = nullptr) {
  return {
      .on_text = [](std::string_view t) { std::fwrite(t.data(), 1, t.size(), stdout), std::fflush(stdout); },
      .logits = logits};
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("-f: cannot read the prompt file " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// -n: a count of tokens, or -1 for "until EOS or the context is full" (llama.cpp's meaning).
void check_n(int64_t n) {
  if (n == 0 || n < -1)
    throw Error("-n " + std::to_string(n) +
                ": the number of tokens to generate must be at least 1, or -1 (until EOS or --ctx is full)");
}

// An output file is checked before the run, not after it: its folder must exist and be writable.
void check_writable(const std::string& path, const std::string& flag) {
  if (path.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) throw Error(flag + " " + path + ": a directory, expected a file name");
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const bool exists = fs::exists(p, ec);
  if (::access((exists ? p : dir).c_str(), W_OK) != 0)
    throw Error(flag + " " + path + ": cannot write there (" + std::strerror(errno) + ")");
}

void generate(const LlmOptions& lo, const GenerateOptions& o, const GlobalOptions& g) {
  check_n(o.n);
  const int given = !o.prompt.empty() + !o.prompt_file.empty() + !o.prompt_ids.empty();
  if (given != 1)
    throw Error("give exactly one of -p PROMPT, -f FILE or --prompt-ids IDS (a non-empty prompt)");
  check_writable(o.json_path, "--json");
  check_writable(o.logits_path, "--dump-logits");
  std::optional<gpu::Context> ctx;  // declared first: the session's buffers go before the device
  auto s = open_session(lo, o.decode);
  std::vector<uint32_t> prompt;
  if (!o.prompt_ids.empty()) {
    prompt = llm::parse_token_ids(o.prompt_ids, s->files().config().vocab_size, "--prompt-ids");
    if (prompt.empty()) throw Error("--prompt-ids: no token ids given");
  } else {
    const std::string text = o.prompt.empty() ? read_file(o.prompt_file) : o.prompt;
    if (text.empty()) throw Error("the prompt is empty");
    prompt = o.chat ? s->encode_chat(text, o.system) : s->encode(text);
  }
  const int64_t room = s->room(prompt.size());
  const int64_t n = o.n == -1 ? room : std::min<int64_t>(o.n, room);
  if (n < o.n)
    std::fprintf(stderr, "wgfuse: -n %lld: only %lld tokens fit in --ctx %u after the prompt\n",
                 (long long)o.n, (long long)n, s->ctx_len());
  if (o.decode == "persistent" && (o.profile_reps || !o.plan_path.empty()))
    throw Error("--profile and --write-plan concern the step decoder: not with --decode persistent");
  if (s->files().gguf())
    std::fprintf(stderr, "wgfuse: %s: GGUF tensors %s\n", lo.s.model_dir.c_str(),
                 s->files().tensor_types().c_str());
  s->load(ctx.emplace(g.context_options()));
  if (!o.plan_path.empty()) s->write_plan(o.plan_path, uint32_t(prompt.size()));
  if (o.warmup) s->warm_up(prompt, std::min<uint32_t>(o.warmup, uint32_t(n)));
  std::vector<float> logits;
  const llm::Reply r = s->generate(prompt, uint32_t(n), to_stdout(o.logits_path.empty() ? nullptr : &logits));
  std::fputs(llm::timing_line(s->decoder().stats(), s->load_ms()).c_str(), stderr);
  nlohmann::json prof;
  if (o.profile_reps) prof = llm::report_profile(stderr, *ctx, s->profile(o.profile_reps), o.profile_reps);
  nlohmann::json prefill_prof;
  if (o.profile_prefill_reps)
    prefill_prof = llm::report_prefill_profile(stderr, s->profile_prefill(o.profile_prefill_reps),
                                               o.profile_prefill_reps);
  if (!o.logits_path.empty()) {
    const size_t vocab = s->files().config().vocab_size;
    llm::write_npy(o.logits_path, logits, logits.size() / vocab, vocab);
  }
  if (!o.json_path.empty()) {
    nlohmann::json j = llm::run_json(*s, prompt, r);
    j["adapter"] = adapter_json(*ctx);
    if (!prof.is_null()) j["profile"] = prof;
    if (!prefill_prof.is_null()) j["prefill_profile"] = prefill_prof;
    std::ofstream f(o.json_path);
    if (!f) throw Error("--json: cannot write " + o.json_path);
    // Paths and texts that are not UTF-8 (a folder's name) get U+FFFD rather than failing the dump.
    f << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
}

// Interactive chat: each line a user turn, the reply streamed (llm::Session::chat).
// Ctrl-C during a reply ends the reply, not the chat: SIGINT sets this flag while a reply streams.
std::atomic<bool> g_reply_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);  // set from a signal handler

// SIGINT's handler for the lifetime of one reply; the previous one (the default: quit) after.
class InterruptReply {
 public:
  InterruptReply() {
    g_reply_interrupted = false;
    struct sigaction sa {};
    sa.sa_handler = [](int) { g_reply_interrupted = true; };
    sa.sa_flags = SA_RESTART;  // the GPU waits carry on; the flag is read after each token
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &previous_);
  }
  ~InterruptReply() { sigaction(SIGINT, &previous_, nullptr); }
  InterruptReply(const InterruptReply&) = delete;
  InterruptReply& operator=(const InterruptReply&) = delete;

 private:
  struct sigaction previous_ {};
};

// Interactive chat: each line a user turn, the reply streamed (llm::Session::chat). A turn that
// fails (a message longer than --ctx allows, a GPU error) is reported and the chat goes on with
// its history as before the turn.
void chat(const LlmOptions& lo, const std::string& system, int64_t n, const GlobalOptions& g) {
  check_n(n);
  std::optional<gpu::Context> ctx;  // declared first: the session's buffers go before the device
  auto s = open_session(lo, "steps");
  s->new_chat(system);  // checks the template and that --system leaves room, before the upload
  s->load(ctx.emplace(g.context_options()));
  std::fprintf(stderr, "wgfuse chat: %s on %s. Empty line or Ctrl-D to quit; Ctrl-C stops a reply.\n",
               lo.s.model_dir.c_str(), ctx->adapter().device.c_str());
  const uint32_t per_reply = n == -1 ? UINT32_MAX : uint32_t(std::min<int64_t>(n, UINT32_MAX));
  while (true) {
    char* line = readline("> ");
    if (!line) break;
    std::string text(line);
    std::free(line);
    if (text.empty()) break;
    add_history(text.c_str());
    try {
      InterruptReply interrupt;
      llm::Stream stream = to_stdout();
      stream.stop = &g_reply_interrupted;
      const llm::Reply r = s->chat(text, per_reply, stream);
      for (uint32_t i = 0; i < r.dropped_exchanges; ++i)
        std::fprintf(stderr, "[context full: dropped the oldest exchange]\n");
      std::fputc('\n', stdout);
      if (g_reply_interrupted) std::fprintf(stderr, "[interrupted]\n");
      std::fputs(llm::timing_line(s->decoder().stats(), s->load_ms()).c_str(), stderr);
    } catch (const Error& e) {
      std::fprintf(stderr, "wgfuse: error: %s\n[the chat goes on: the message was not added]\n", e.what());
    }
  }
}

}  // namespace

void add_generate(CLI::App& app, GlobalOptions& g) {
  auto* c =
      app.add_subcommand("generate", "generate text with a Qwen2-architecture model (Hugging Face folder)");
  auto lo = std::make_shared<LlmOptions>();
  auto o = std::make_shared<GenerateOptions>();
  add_llm_options(c, *lo);
  c->add_option("-p,--prompt", o->prompt, "the prompt text");
  c->add_option("-f,--file", o->prompt_file, "read the prompt from this file");
  c->add_option("--prompt-ids", o->prompt_ids,
                "the prompt as token ids, separated by spaces or commas, as `wgfuse tokenize` prints them "
                "(no tokenizer)");
  c->add_option("-n,--n-predict", o->n, "tokens to generate; -1 = until EOS or --ctx is full")
      ->capture_default_str();
  c->add_flag("--chat", o->chat, "wrap the prompt in the model's chat template");
  c->add_option("--system", o->system, "system prompt for --chat (default: the template's own)");
  c->add_option("--json", o->json_path, "write prompt/generated ids, timings and counts as JSON");
  c->add_option("--warmup", o->warmup,
                "first generate this many tokens from the same prompt, unshown and untimed (benchmarks)")
      ->capture_default_str();
  c->add_flag("--profile{5}", o->profile_reps,
              "after generating, time one decode step per kernel with GPU timestamps (--profile=N: N "
              "times, default 5) and print a table: calls, µs, bytes, GB/s, % of copy bandwidth")
      ->check(CLI::Range(1u, 1000u));
  c->add_option("--write-plan", o->plan_path, "write the prefill and decode plans as JSON (docs/PLAN.md)");
  c->add_flag("--profile-prefill{5}", o->profile_prefill_reps,
              "after generating, time the prompt's last prefill chunk per kernel with GPU timestamps "
              "(--profile-prefill=N: N times, default 5) and print a table: calls, µs, GFLOP, TFLOP/s")
      ->check(CLI::Range(1u, 1000u));
  c->add_option(
      "--dump-logits", o->logits_path,
      "write the logits that chose each generated token as float32 .npy [n, vocab] (slow: one read-back "
      "per token)");
  c->add_option(
       "--decode", o->decode,
       "decode path: steps (a list of dispatches per token) | persistent (experimental: one dispatch "
       "per token whose workgroups meet at grid barriers; greedy only; falls back to steps where "
       "the co-residency probe fails)")
      ->check(CLI::IsMember({"steps", "persistent"}))
      ->capture_default_str();
  c->add_option("--persistent-wg", lo->s.persistent.workgroups,
                "--decode persistent: workgroups of the grid (0 = the largest power of two up to 256 that "
                "the co-residency probe passes)")
      ->capture_default_str();
  c->add_option("--persistent-probe-spin", lo->s.persistent.probe_spin,
                "--decode persistent: atomic loads the co-residency probe waits per barrier (0 fails it: "
                "tests the fallback)")
      ->capture_default_str();
  c->add_option("--decode-check", lo->s.persistent.check_tokens,
                "--decode persistent: greedy tokens whose tokens and logits must equal the step decoder's "
                "before the run (0 = no check)")
      ->capture_default_str();
  c->callback([lo, o, &g] { generate(*lo, *o, g); });
}

void add_chat(CLI::App& app, GlobalOptions& g) {
  auto* c =
      app.add_subcommand("chat", "interactive chat with a Qwen2-architecture model (Hugging Face folder)");
  auto lo = std::make_shared<LlmOptions>();
  auto system = std::make_shared<std::string>();
  auto n = std::make_shared<int64_t>(512);
  add_llm_options(c, *lo);
  c->add_option("--system", *system, "system prompt (default: the template's own)");
  c->add_option("-n,--n-predict", *n, "at most this many tokens per reply; -1 = until EOS or --ctx is full")
      ->capture_default_str();
  c->callback([lo, system, n, &g] { chat(*lo, *system, *n, g); });
}

}  // namespace wgfuse::cli
