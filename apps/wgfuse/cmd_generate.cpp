// wgfuse generate: one prompt through an llm::Session (llm_options.h opens it from a Hugging Face
// folder or a GGUF file); text streamed as it is generated, the report (src/llm/report.h) at the end.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "commands.h"
#include "llm/batch_decoder.h"
#include "llm/report.h"
#include "llm/session.h"
#include "llm_options.h"
#include "util/error.h"
#include "util/stats.h"

namespace wgfuse::cli {
namespace {

struct GenerateOptions {
  std::string prompt, prompt_file, prompt_ids, system, json_path, logits_path, plan_path, decode = "steps";
  int64_t n = 128;
  bool chat = false;
  uint32_t profile_reps = 0;          // --profile: repetitions of the timed decode step; 0 = off
  uint32_t profile_prefill_reps = 0;  // --profile-prefill: repetitions of the timed prompt chunk
  uint32_t warmup = 0;                // --warmup: tokens generated (greedy, not shown) before the timed run
  uint32_t parallel = 0;              // --parallel: sequences decoded together after the run; 0 = off
  bool dump_shaders = false;          // --dump-shaders (hidden): Dawn's toggle, for reading the SPIR-V
  bool no_robustness = false;         // --unsafe-no-robustness (hidden): what Dawn's bounds clamps cost
};
std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("-f: cannot read the prompt file " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
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
// --parallel N: the prompt decoded as N sequences together (llm::BatchDecoder, greedy, as many
// steps as the run generated, kParallelStepsPerSubmit per submit after a first lone step), each
// sequence's tokens checked equal to the run's; prints and returns the step time and the
// aggregate rate, and the batched step's profile with --profile.
constexpr uint32_t kParallelStepsPerSubmit = 8;
nlohmann::json decode_in_parallel(llm::Session& s, gpu::Context& ctx, std::span<const uint32_t> prompt,
                                  const llm::Reply& r, const GenerateOptions& o) {
  if (r.ids.empty()) throw Error("--parallel: the run generated no token to decode again");
  const auto since = [](auto t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  llm::BatchDecoder batch(s.step_decoder(), o.parallel);
  for (uint32_t b = 0; b < o.parallel; ++b) batch.start(b, prompt);
  std::vector<double> step_ms;  // per step: a submit's time over its steps
  std::vector<std::vector<uint32_t>> ids(o.parallel);
  for (size_t t = 0; t < r.ids.size();) {
    const uint32_t count = t == 0 ? 1 : uint32_t(std::min<size_t>(kParallelStepsPerSubmit, r.ids.size() - t));
    const auto t0 = std::chrono::steady_clock::now();
    const auto steps = batch.steps(count);
    step_ms.insert(step_ms.end(), count, since(t0) / count);
    for (const auto& step : steps)
      for (uint32_t b = 0; b < o.parallel; ++b) ids[b].push_back(step[b]);
    t += count;
  }
  for (uint32_t b = 0; b < o.parallel; ++b)
    if (ids[b] != r.ids)
      throw Error("--parallel " + std::to_string(o.parallel) + ": sequence " + std::to_string(b) +
                  "'s tokens differ from the single run's (a batched decoding bug)");
  // The first step pays the kernels' first use (its own submit): the rate is over the others.
  const std::span<const double> timed = std::span(step_ms).subspan(step_ms.size() > 1 ? 1 : 0);
  double total = 0;
  for (double v : timed) total += v;
  const Summary st = summarize({timed.begin(), timed.end()});
  const double per_seq = 1e3 * double(timed.size()) / total;
  std::fprintf(stderr,
               "parallel: %u sequences x %zu tokens, every sequence equal to the run; step %.3f ms median "
               "[%.3f-%.3f] (%u steps a submit); %.1f tok/s per sequence, %.1f tok/s in all\n",
               o.parallel, r.ids.size(), st.median, st.min, st.max, kParallelStepsPerSubmit, per_seq,
               per_seq * o.parallel);
  nlohmann::json j{{"sequences", o.parallel},
                   {"tokens_per_sequence", r.ids.size()},
                   {"steps_per_submit", kParallelStepsPerSubmit},
                   {"step_ms", {{"median", st.median}, {"min", st.min}, {"max", st.max}}},
                   {"tok_s_per_sequence", per_seq},
                   {"tok_s", per_seq * o.parallel}};
  if (o.profile_reps)
    j["profile"] =
        llm::report_profile(stderr, ctx, batch.profile(o.profile_reps), o.profile_reps, s.decoder().stats());
  return j;
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
  if (o.parallel && (o.decode == "persistent" || s->sampling().temperature != 0))
    throw Error(
        "--parallel decodes the prompt again greedily through the step decoder's weights: with "
        "--temp 0 and --decode steps only");
  if (o.decode == "persistent" && (o.profile_reps || !o.plan_path.empty()))
    throw Error("--profile and --write-plan concern the step decoder: not with --decode persistent");
  if (s->files().gguf())
    std::fprintf(stderr, "wgfuse: %s: GGUF tensors %s\n", lo.s.model_dir.c_str(),
                 s->files().tensor_types().c_str());
  gpu::ContextOptions copts = g.context_options();
  if (o.dump_shaders) copts.enabled_toggles.push_back("dump_shaders");
  if (o.no_robustness) {
    copts.enabled_toggles.push_back("disable_robustness");
    std::fputs("wgfuse: UNSAFE: Dawn's shader robustness is disabled (--unsafe-no-robustness)\n", stderr);
  }
  s->load(ctx.emplace(copts));
  if (!o.plan_path.empty()) s->write_plan(o.plan_path, uint32_t(prompt.size()));
  const uint32_t warmup_rounds = o.warmup ? s->warm_up(prompt, std::min<uint32_t>(o.warmup, uint32_t(n))) : 0;
  std::vector<float> logits;
  const llm::Reply r = s->generate(prompt, uint32_t(n), to_stdout(o.logits_path.empty() ? nullptr : &logits));
  std::fputs(llm::timing_line(s->decoder().stats(), s->load_ms()).c_str(), stderr);
  nlohmann::json prof;
  if (o.profile_reps)
    prof =
        llm::report_profile(stderr, *ctx, s->profile(o.profile_reps), o.profile_reps, s->decoder().stats());
  nlohmann::json prefill_prof;
  if (o.profile_prefill_reps)
    prefill_prof = llm::report_prefill_profile(stderr, s->profile_prefill(o.profile_prefill_reps),
                                               o.profile_prefill_reps);
  // The run's report before --parallel, which reuses the model's prompt path.
  nlohmann::json j;
  if (!o.json_path.empty()) j = llm::run_json(*s, prompt, r);
  if (o.parallel) j["parallel"] = decode_in_parallel(*s, *ctx, prompt, r, o);
  if (!o.logits_path.empty()) {
    const size_t vocab = s->files().config().vocab_size;
    llm::write_npy(o.logits_path, logits, logits.size() / vocab, vocab);
  }
  if (!o.json_path.empty()) {
    j["adapter"] = adapter_json(*ctx);
    j["robustness"] = !o.no_robustness;
    j["warmup"] = {{"tokens", o.warmup}, {"prompt_rounds", warmup_rounds}};
    if (!prof.is_null()) j["profile"] = prof;
    if (!prefill_prof.is_null()) j["prefill_profile"] = prefill_prof;
    std::ofstream f(o.json_path);
    if (!f) throw Error("--json: cannot write " + o.json_path);
    // Paths and texts that are not UTF-8 (a folder's name) get U+FFFD rather than failing the dump.
    f << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
}
}  // namespace

void add_generate(CLI::App& app, GlobalOptions& g) {
  auto* c = app.add_subcommand(
      "generate", "generate text with a Qwen2/Qwen3/Llama model (Hugging Face folder or GGUF file)");
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
                "first generate this many tokens from the same prompt, unshown and untimed, then feed the "
                "prompt again until those rounds took " +
                    std::to_string(int(llm::Session::kWarmUpBusyMs)) +
                    " ms, so that the timed run starts at the GPU's working clock (benchmarks)")
      ->capture_default_str();
  c->add_flag("--profile{5}", o->profile_reps,
              "after generating, time one decode step per kernel with GPU timestamps (--profile=N: N "
              "times, default 5) and print a table: calls, µs, bytes, GB/s, % of copy bandwidth")
      ->check(CLI::Range(1u, 1000u));
  c->add_option("--parallel", o->parallel,
                "after the run, decode the prompt again as N sequences together (batched, as `serve "
                "--parallel`), check each against the run and print the aggregate rate (with --profile: "
                "the batched step's table too)")
      ->check(CLI::Range(1u, llm::BatchDecoder::kMaxSlots));
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
       "per token whose workgroups meet at grid barriers, the prompt through the step decoder's prefill; "
       "faster than steps at Qwen2.5-0.5B's size and short contexts, slower at 1.5B's and at long "
       "contexts on the H200 measured (docs/RESULTS.md); greedy only; falls back to steps where "
       "the co-residency probe or the --decode-check fails; a word read before its writer's store "
       "arrived discards the batch of tokens, which runs again: the JSON's decode.stale_reads and "
       "decode.batches_run_again)")
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
  c->add_flag("--dump-shaders", o->dump_shaders,
              "Dawn's dump_shaders toggle: each shader as compiled for the backend, on stderr with --verbose "
              "(a measurement tool)")
      ->group("");
  c->add_flag("--unsafe-no-robustness", o->no_robustness,
              "native only, to measure its cost: Dawn's disable_robustness toggle (out-of-bounds shader "
              "accesses become undefined; \"robustness\": false in the JSON)")
      ->group("");
  c->add_option_function<std::string>(
       "--persistent-variant",
       [lo](const std::string& v) { lo->s.persistent.variant = llm::parse_persistent_variant(v); },
       "--decode persistent, a measurement tool: base, or split, split=N, down, down=N, rounds=N, ahead "
       "joined by '+' (llm::PersistentVariant; default: split+down+rounds=4, plus ahead for every "
       "format but f32)")
      ->group("");
  c->add_option("--decode-check", lo->s.persistent.check_tokens,
                "--decode persistent: greedy tokens whose tokens and logits must equal the step decoder's "
                "before the run, else the step decoder runs (0 = no check)")
      ->capture_default_str();
  c->callback([lo, o, &g] { generate(*lo, *o, g); });
}

}  // namespace wgfuse::cli
