// wgfuse generate | chat: a Qwen2-architecture model from a Hugging Face folder, decoded on the
// GPU (src/llm/model.h), text streamed as it is generated, one timing line at the end.
#include <readline/history.h>
#include <readline/readline.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "bench/dispatch_bench.h"
#include "commands.h"
#include "llm/chat_template.h"
#include "llm/model.h"
#include "llm/model_files.h"
#include "llm/persistent_decode.h"
#include "llm/sampler.h"
#include "llm/tokenizer.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/stats.h"

namespace wgfuse::cli {
namespace {

struct LlmOptions {
  std::string model_dir, dtype = "f16";
  std::optional<uint32_t> ctx;  // default: 4096, or the model's max_position_embeddings if smaller
  uint32_t steps_per_submit = 8;
  llm::AttentionSplit attention;
  std::string fusion = "none";
  uint32_t attn_fuse_max = llm::ModelOptions{}.attn_fuse_max;
  uint32_t attn_short_max = llm::ModelOptions{}.attn_short_max;
  // Sampling: unset flags take generation_config.json's values (greedy when it has none).
  std::optional<double> temp, top_p, repeat_penalty;
  std::optional<int64_t> top_k;
  uint64_t seed = 0;
};

struct GenerateOptions {
  std::string prompt, prompt_file, prompt_ids, system, json_path, logits_path;
  int64_t n = 128;
  bool chat = false, quiet = false;
  uint32_t profile_reps = 0;  // --profile: repetitions of the timed decode step; 0 = off
  uint32_t warmup = 0;        // --warmup: tokens generated (greedy, not shown) before the timed run
  // --decode persistent (issue 9, experimental): one dispatch per token; see start_persistent.
  std::string decode = "steps";
  uint32_t persistent_wg = 0;      // workgroups of the grid; 0 = the largest the probe passes
  uint32_t probe_spin = 1u << 20;  // SwiftShader needs ~1M to see 2 workgroups co-resident
  uint32_t decode_check = 8;
};

void add_llm_options(CLI::App* c, LlmOptions& o) {
  c->add_option("-m,--model", o.model_dir,
                "Hugging Face model folder (config.json, *.safetensors, tokenizer.json)")
      ->required();
  c->add_option("--dtype", o.dtype, "weight storage on the GPU: f16 (packed in u32) | f32")
      ->check(CLI::IsMember({"f16", "f32"}))
      ->capture_default_str();
  c->add_option("--ctx", o.ctx,
                "KV-cache length in tokens (default 4096, or the model's max_position_embeddings if smaller)")
      ->check(CLI::PositiveNumber);
  c->add_option("--temp", o.temp, "temperature; 0 = greedy (default: generation_config.json, else greedy)");
  c->add_option("--top-k", o.top_k, "keep the k most likely tokens; 0 = off");
  c->add_option("--top-p", o.top_p, "keep the smallest set of tokens reaching this probability; 1 = off");
  c->add_option("--repeat-penalty", o.repeat_penalty, "repetition penalty over the whole sequence; 1 = off");
  c->add_option("--seed", o.seed, "random seed: the same seed gives the same text")->capture_default_str();
  c->add_option("--steps-per-submit", o.steps_per_submit, "decode steps recorded into one command buffer")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  c->add_option("--attn-chunk", o.attention.chunk, "decode attention: KV-cache positions per workgroup")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  c->add_option(
       "--attn-heads", o.attention.heads_per_wg,
       "decode attention: query heads per workgroup (a divisor of heads / kv heads; they share K/V reads)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  c->add_option("--fusion", o.fusion,
                "decode layers: none (split, 6 dispatches a layer: the fastest measured) | full (attention "
                "fused with o_proj, 4 a layer; slower on the H100, docs/RESULTS.md)")
      ->check(CLI::IsMember({"none", "full"}))
      ->capture_default_str();
  c->add_option("--attn-short-max", o.attn_short_max,
                "with --fusion none: positions below which decode attention is one dispatch per layer "
                "(a workgroup per head; at most 4096 by workgroup memory); 0 = always split along the cache")
      ->capture_default_str();
  c->add_option("--attn-fuse-max", o.attn_fuse_max,
                "with --fusion full: positions from which decode attention is split along the cache again")
      ->capture_default_str();
}

// The sampling settings: flags over generation_config.json over greedy.
llm::SamplingParams sampling(const LlmOptions& o, const llm::GenerationConfig& gen) {
  llm::SamplingParams p;
  const bool file_samples = gen.do_sample;
  p.temperature = o.temp.value_or(file_samples ? gen.temperature : 0.0);
  p.top_k = o.top_k.value_or(file_samples ? int64_t(gen.top_k) : 0);
  p.top_p = o.top_p.value_or(file_samples ? gen.top_p : 1.0);
  p.repetition_penalty = o.repeat_penalty.value_or(file_samples ? gen.repetition_penalty : 1.0);
  p.seed = o.seed;
  llm::validate(p);
  return p;
}

// A progress bar on stderr while weights upload, when stderr is a terminal.
class ProgressBar {
 public:
  explicit ProgressBar(std::string what) : what_(std::move(what)), tty_(isatty(2)) {}
  void operator()(uint64_t done, uint64_t total) {
    if (!tty_ || total == 0) return;
    const int pct = int(100.0 * double(done) / double(total));
    if (pct == last_) return;
    last_ = pct;
    const int filled = pct * 30 / 100;
    std::fprintf(stderr, "\r%s [%s%s] %3d%% of %.2f GB", what_.c_str(), std::string(filled, '#').c_str(),
                 std::string(30 - filled, ' ').c_str(), pct, double(total) / 1e9);
    if (done >= total) std::fputc('\n', stderr);
  }

 private:
  std::string what_;
  bool tty_;
  int last_ = -1;
};

// Everything a generation needs. open() reads and checks the files (config, every tensor's
// shape, tokenizer, sampling flags) without touching the GPU, so that bad input, a prompt longer
// than --ctx included, fails before gigabytes are uploaded; load() then creates the device, the
// model and the sampler.
struct Session {
  llm::ModelFiles files;
  llm::Tokenizer tokenizer;
  std::vector<int32_t> stop_ids;  // EOS ids of the config files and <|im_end|>
  llm::SamplingParams params;
  llm::ModelOptions model_options;
  SteadyClock::time_point t0;
  std::unique_ptr<gpu::Context> ctx;
  std::unique_ptr<llm::Model> model;
  std::unique_ptr<llm::Sampler> sampler;
  std::unique_ptr<llm::PersistentDecoder> persistent;  // --decode persistent, once probed and checked
  double load_ms = 0;

  const llm::ModelStats& stats() const { return persistent ? persistent->stats() : model->stats(); }

  uint32_t ctx_len() const { return model_options.ctx; }  // KV-cache positions

  static std::unique_ptr<Session> open(const LlmOptions& o) {
    const auto t0 = SteadyClock::now();
    llm::ModelFiles files(o.model_dir);
    const auto& cfg = files.config();
    const uint32_t ctx_len = o.ctx.value_or(std::min(4096u, cfg.max_position_embeddings));
    if (ctx_len > cfg.max_position_embeddings)
      throw Error("--ctx " + std::to_string(ctx_len) + " is more than the model's max_position_embeddings (" +
                  std::to_string(cfg.max_position_embeddings) + ", " + o.model_dir + "/config.json)");
    llm::DecodeKernels::attend_chunks(cfg, ctx_len, o.attention);  // checks --attn-chunk, --attn-heads
    llm::Tokenizer tok = llm::load_tokenizer(o.model_dir);
    auto stop = llm::stop_token_ids(tok, o.model_dir);
    const llm::SamplingParams params = sampling(o, files.generation());
    llm::ModelOptions mo;
    mo.dtype = llm::parse_weight_dtype(o.dtype);
    mo.ctx = ctx_len;
    mo.attention = o.attention;
    mo.fusion = llm::parse_fusion(o.fusion);
    mo.attn_fuse_max = o.attn_fuse_max;
    mo.attn_short_max = o.attn_short_max;
    auto bar = std::make_shared<ProgressBar>("loading " + o.model_dir);
    mo.progress = [bar](uint64_t done, uint64_t total) { (*bar)(done, total); };
    return std::unique_ptr<Session>(
        new Session{std::move(files), std::move(tok), std::move(stop), params, std::move(mo), t0});
  }

  void load(const GlobalOptions& g) {
    ctx = std::make_unique<gpu::Context>(g.context_options());
    model = std::make_unique<llm::Model>(
        *ctx, files.config(), [this](std::string_view name) { return files.find(name); }, model_options);
    sampler = std::make_unique<llm::Sampler>(*ctx, files.config().vocab_size);
    sampler->set_params(params);
    load_ms = ms_since(t0);
  }
};

std::vector<uint32_t> to_u32(const std::vector<int32_t>& ids) {
  return {ids.begin(), ids.end()};
}

// The text of generated ids, skipping ids past the tokenizer's vocabulary (see run()).
std::string text_of(const llm::Tokenizer& tok, const std::vector<uint32_t>& ids) {
  std::vector<int32_t> known;
  for (uint32_t id : ids)
    if (id < tok.vocab_size()) known.push_back(int32_t(id));
  return tok.decode(known, /*skip_special=*/true);
}

std::vector<uint32_t> parse_ids(const std::string& s, uint32_t vocab) {
  std::vector<uint32_t> ids;
  std::string item;
  std::stringstream ss(s);
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v >= vocab)
      throw Error("--prompt-ids: '" + item + "' is not a token id below the vocabulary size " +
                  std::to_string(vocab));
    ids.push_back(uint32_t(v));
  }
  return ids;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("-f: cannot read the prompt file " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A float32 .npy of shape [rows, cols] (NumPy format 1.0), for --dump-logits.
void write_npy(const std::string& path, const std::vector<float>& data, size_t rows, size_t cols) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "), }";
  header.resize(((10 + header.size() + 1 + 63) / 64) * 64 - 10 - 1, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("--dump-logits: cannot write " + path);
  const uint16_t len = uint16_t(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * sizeof(float)));
  if (!f) throw Error("--dump-logits: writing " + path + " failed");
}

struct RunResult {
  std::vector<uint32_t> generated;
  bool stopped_at_eos = false;
};

// Generates after `prompt`, streaming decoded text to stdout.
RunResult run(Session& s, std::span<const uint32_t> prompt, int64_t n, uint32_t steps_per_submit,
              std::vector<float>* logits_out) {
  llm::GenerateOptions go;
  go.steps_per_submit = steps_per_submit;
  go.eos_ids = to_u32(s.stop_ids);
  std::vector<llm::Step> picker;
  if (s.params.temperature != 0) {
    const auto b = s.model->decode_buffers();
    picker = s.sampler->steps(b.logits, b.tokens, b.state);
    go.picker = picker;
  }
  if (logits_out)
    go.on_logits = [&](std::span<const float> l) {
      logits_out->insert(logits_out->end(), l.begin(), l.end());
    };
  llm::StreamDecoder dec(s.tokenizer, /*skip_special=*/true);
  RunResult r;
  const auto on_token = [&](uint32_t id) {
    const bool stop = std::find(go.eos_ids.begin(), go.eos_ids.end(), id) != go.eos_ids.end();
    if (stop) {
      r.stopped_at_eos = true;
      return false;
    }
    // A model's vocabulary may be padded past the tokenizer's (Qwen2.5: 151,936 rows, 151,665
    // tokens): an id with no token prints nothing, as Hugging Face's decode skips it.
    if (id < s.tokenizer.vocab_size()) std::fputs(dec.push(int32_t(id)).c_str(), stdout);
    std::fflush(stdout);
    return true;
  };
  r.generated = s.persistent ? s.persistent->generate(prompt, uint32_t(n), on_token, go)
                             : s.model->generate(prompt, uint32_t(n), on_token, go);
  std::fputs(dec.finish().c_str(), stdout);
  std::fflush(stdout);
  return r;
}

double rate(uint64_t tokens, double ms) {
  return ms > 0 ? 1e3 * double(tokens) / ms : 0;
}

nlohmann::json timing_json(const llm::ModelStats& st) {
  const double per = st.decode_steps ? 1.0 / double(st.decode_steps) : 0;  // per token computed
  // The prompt phase: every prompt position and the first generated token, in one submit when
  // the prompt fits one prefill chunk.
  return {{"prefill_ms", st.prefill_ms},
          {"prefill_tok_s", rate(st.prompt_tokens, st.prefill_ms)},
          {"decode_tok_s", rate(st.decode_tokens, st.decode_ms)},
          {"dispatches_per_token", double(st.decode_dispatches) * per},
          {"submits_per_token", double(st.decode_submits) * per},
          {"readbacks_per_token", double(st.decode_readbacks) * per},
          {"gpu_memory_bytes", st.gpu_memory_bytes}};
}

void print_timing(const Session& s) {
  const auto& st = s.stats();
  const auto t = timing_json(st);
  std::fprintf(
      stderr,
      "\n[%llu prompt tokens, prefill %.1f tok/s, %llu generated, decode %.1f tok/s, %.1f dispatches/token, "
      "%.2f submits/token, %.2f read-backs/token, GPU memory %.1f MB, load %.0f ms]\n",
      (unsigned long long)st.prompt_tokens, t["prefill_tok_s"].get<double>(),
      (unsigned long long)st.generated_tokens, t["decode_tok_s"].get<double>(),
      t["dispatches_per_token"].get<double>(), t["submits_per_token"].get<double>(),
      t["readbacks_per_token"].get<double>(), double(st.gpu_memory_bytes) / 1e6, s.load_ms);
}

nlohmann::json config_json(const llm::ModelConfig& c) {
  return {{"architecture", c.architecture},
          {"vocab_size", c.vocab_size},
          {"hidden_size", c.hidden_size},
          {"intermediate_size", c.intermediate_size},
          {"num_layers", c.num_layers},
          {"num_heads", c.num_heads},
          {"num_kv_heads", c.num_kv_heads},
          {"head_dim", c.head_dim},
          {"rope_theta", c.rope_theta},
          {"rms_norm_eps", c.rms_norm_eps},
          {"tie_word_embeddings", c.tie_word_embeddings}};
}

// --profile: one decode step after the generation, each dispatch timed in its own pass; a table
// per kernel on stderr (calls per token, µs, bytes, GB/s, % of the copy kernel's bandwidth).
nlohmann::json profile(Session& s, uint32_t reps) {
  std::vector<llm::Step> picker;
  if (s.params.temperature != 0) {
    const auto b = s.model->decode_buffers();
    picker = s.sampler->steps(b.logits, b.tokens, b.state);
  }
  const llm::DecodeProfile p = s.model->profile_decode(picker, reps);
  const double copy_gbs =
      bench::copy_kernel_bandwidth_gbs(*s.ctx, s.ctx->adapter().is_cpu ? 4u << 20 : 256u << 20, 5);
  struct Row {
    std::string name;
    uint32_t calls = 0;
    double us = 0;  // per token: the sum over calls of each call's median
    uint64_t bytes = 0;
  };
  std::vector<Row> rows;
  for (const auto& t : p.steps) {
    const std::string name = t.step->name.empty() ? t.step->kernel->key().entry : std::string(t.step->name);
    auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.name == name; });
    if (it == rows.end()) it = rows.insert(rows.end(), Row{name});
    ++it->calls;
    it->us += summarize(t.us).median;
    it->bytes += t.step->bytes + t.step->bytes_per_position * (uint64_t(p.position) + 1);
  }
  double sum_us = 0;
  uint64_t sum_bytes = 0;
  for (const auto& r : rows) sum_us += r.us, sum_bytes += r.bytes;
  const Summary whole = summarize(p.whole_step_us);
  std::fprintf(stderr,
               "\ndecode step at position %u, %u repetitions, GPU timestamps; copy kernel %.1f GB/s\n"
               "%-18s %6s %10s %10s %8s %10s %8s %8s\n",
               p.position, reps, copy_gbs, "kernel", "calls", "us/call", "us/token", "% step", "MB/token",
               "GB/s", "% copy");
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& r : rows) {
    const double gbs = r.us > 0 ? double(r.bytes) / (r.us * 1e3) : 0;
    std::fprintf(stderr, "%-18s %6u %10.2f %10.1f %7.1f%% %10.2f %8.1f %7.1f%%\n", r.name.c_str(), r.calls,
                 r.us / r.calls, r.us, 100 * r.us / sum_us, double(r.bytes) / 1e6, gbs, 100 * gbs / copy_gbs);
    kernels.push_back({{"kernel", r.name},
                       {"calls_per_token", r.calls},
                       {"us_per_token", r.us},
                       {"bytes_per_token", r.bytes},
                       {"gb_s", gbs}});
  }
  const double all_gbs = double(sum_bytes) / (whole.median * 1e3);
  std::fprintf(stderr,
               "%-18s %6zu %10s %10.1f %8s %10.2f %8.0f %7.1f%%  (each dispatch in its own pass)\n"
               "%-18s %6zu %10s %10.1f %8s %10s %8.0f %7.1f%%  [%.1f-%.1f] = %.0f tok/s of GPU time\n",
               "sum", p.steps.size(), "", sum_us, "", double(sum_bytes) / 1e6,
               double(sum_bytes) / (sum_us * 1e3), 100 * double(sum_bytes) / (sum_us * 1e3) / copy_gbs,
               "one pass", p.steps.size(), "", whole.median, "", "", all_gbs, 100 * all_gbs / copy_gbs,
               whole.min, whole.max, 1e6 / whole.median);
  return {{"position", p.position},
          {"repetitions", reps},
          {"copy_kernel_gb_s", copy_gbs},
          {"kernels", kernels},
          {"sum_of_dispatches_us", sum_us},
          {"one_pass_us", {{"median", whole.median}, {"min", whole.min}, {"max", whole.max}}},
          {"bytes_per_token", sum_bytes}};
}

// --decode persistent: the co-residency probe decides whether the persistent decoder may run at
// all, else the step decoder runs, with the reason on stderr (also when a grid barrier times out
// during the check). Its first --decode-check tokens and their logits must equal the step
// decoder's: an Error otherwise (writes not visible across workgroups, or a wrong kernel).
// Returns how the decode ran, for --json.
nlohmann::json start_persistent(Session& s, const GenerateOptions& o, std::span<const uint32_t> prompt,
                                uint32_t n) {
  const uint32_t wg = 256;
  auto fall_back = [&](const std::string& why) {
    std::fprintf(stderr, "wgfuse: --decode persistent cannot run here, using the step decoder: %s\n",
                 why.c_str());
    s.persistent.reset();
    return nlohmann::json{{"mode", "steps"}, {"fallback_reason", why}};
  };
  if (const std::string why = llm::persistent_unsupported(s.files.config()); !why.empty())
    return fall_back(why);
  // Auto: at most 256 workgroups (2 per SM of an H100), since the probe's kernel is lighter than
  // the decode's and may fit more at once; a decode barrier that then times out falls back.
  const llm::GridChoice grid = llm::choose_grid(*s.ctx, o.persistent_wg, wg, o.probe_spin, 256);
  if (grid.workgroups == 0) return fall_back(grid.reason);
  llm::PersistentOptions po{.dtype = s.model_options.dtype,
                            .ctx = s.model_options.ctx,
                            .workgroups = grid.workgroups,
                            .workgroup_size = wg};
  s.persistent = std::make_unique<llm::PersistentDecoder>(
      *s.ctx, s.files.config(), [&s](std::string_view name) { return s.files.find(name); }, po);
  const uint32_t checked = std::min(o.decode_check, n);
  if (checked) {
    std::string diff;
    try {
      diff = llm::compare_with_steps(*s.model, *s.persistent, prompt, checked, 1e-3);
    } catch (const Error& e) {
      if (std::string(e.what()).find("timed out") == std::string::npos) throw;
      return fall_back(e.what());
    }
    if (!diff.empty())
      throw Error("--decode persistent: the check against the step decoder failed at " + diff +
                  " (--decode steps is the trusted path)");
  }
  std::fprintf(
      stderr,
      "wgfuse: persistent decode: %u workgroups of %u, %u grid barriers per token, %u tokens checked\n",
      grid.workgroups, wg, s.persistent->barriers_per_token(), checked);
  s.model.reset();  // checked: the step decoder's weights and cache are not needed any more
  return {{"mode", "persistent"},
          {"workgroups", grid.workgroups},
          {"workgroup_size", wg},
          {"barriers_per_token", s.persistent->barriers_per_token()},
          {"checked_tokens", checked}};
}

void generate(const LlmOptions& lo, const GenerateOptions& o, const GlobalOptions& g) {
  if (o.n <= 0)
    throw Error("-n " + std::to_string(o.n) + ": the number of tokens to generate must be at least 1");
  const int given = !o.prompt.empty() + !o.prompt_file.empty() + !o.prompt_ids.empty();
  if (given != 1)
    throw Error("give exactly one of -p PROMPT, -f FILE or --prompt-ids IDS (a non-empty prompt)");
  auto s = Session::open(lo);
  std::vector<uint32_t> prompt;
  if (!o.prompt_ids.empty()) {
    prompt = parse_ids(o.prompt_ids, s->files.config().vocab_size);
  } else {
    std::string text = o.prompt.empty() ? read_file(o.prompt_file) : o.prompt;
    if (text.empty()) throw Error("the prompt is empty");
    if (o.chat) {
      const auto tmpl =
          llm::ChatTemplate::from_file(std::filesystem::path(lo.model_dir) / "tokenizer_config.json");
      std::vector<llm::ChatMessage> msgs;
      if (!o.system.empty()) msgs.push_back({"system", o.system});
      msgs.push_back({"user", text});
      text = tmpl.render(msgs, /*add_generation_prompt=*/true);
    }
    prompt = to_u32(s->tokenizer.encode(text));
  }
  if (prompt.size() >= s->ctx_len())
    throw Error("the prompt is " + std::to_string(prompt.size()) + " tokens; --ctx " +
                std::to_string(s->ctx_len()) +
                " leaves no room to generate (raise --ctx or shorten the prompt)");
  const int64_t room = int64_t(s->ctx_len()) - int64_t(prompt.size());
  const int64_t n = std::min(o.n, room);
  if (n < o.n)
    std::fprintf(stderr, "wgfuse: -n %lld: only %lld tokens fit in --ctx %u after the prompt\n",
                 (long long)o.n, (long long)n, s->ctx_len());
  if (o.decode == "persistent" && s->params.temperature != 0)
    throw Error(
        "--decode persistent decodes greedily only: give --temp 0 (the model's generation_config.json "
        "asks for sampling)");
  if (o.decode == "persistent" && o.profile_reps)
    throw Error("--profile times the step decoder's kernels: not with --decode persistent");
  s->load(g);
  nlohmann::json decode = {{"mode", "steps"}};
  if (o.decode == "persistent") decode = start_persistent(*s, o, prompt, uint32_t(n));
  std::vector<float> logits;
  if (o.warmup) {
    // The same prompt and steps, unshown and untimed, so that the timed run finds the pipelines
    // compiled and the GPU at its working clocks; the model then starts afresh.
    llm::GenerateOptions go;
    go.steps_per_submit = lo.steps_per_submit;
    if (s->persistent) {
      s->persistent->generate(prompt, std::min<uint32_t>(o.warmup, uint32_t(n)), {}, go);
      s->persistent->reset();
    } else {
      s->model->generate(prompt, std::min<uint32_t>(o.warmup, uint32_t(n)), {}, go);
      s->model->reset();
    }
  }
  const RunResult r = run(*s, prompt, n, lo.steps_per_submit, o.logits_path.empty() ? nullptr : &logits);
  print_timing(*s);
  nlohmann::json prof;
  if (o.profile_reps) prof = profile(*s, o.profile_reps);
  if (!o.logits_path.empty()) {
    const size_t vocab = s->files.config().vocab_size;
    write_npy(o.logits_path, logits, logits.size() / vocab, vocab);
  }
  if (!o.json_path.empty()) {
    nlohmann::json j = timing_json(s->stats());
    j["prompt_ids"] = prompt;
    j["generated_ids"] = r.generated;
    j["stopped_at_eos"] = r.stopped_at_eos;
    j["text"] = text_of(s->tokenizer, r.generated);
    j["load_ms"] = s->load_ms;
    j["upload_ms"] = s->stats().upload_ms;
    j["prompt_tokens"] = s->stats().prompt_tokens;
    j["decode_tokens"] = s->stats().decode_tokens;
    j["decode_steps"] = s->stats().decode_steps;
    j["dispatches_per_step"] = s->stats().dispatches_per_step;
    j["dispatches_per_step_long"] = s->stats().dispatches_per_step_long;
    j["fusion"] = lo.fusion;
    j["attn_fuse_max"] = lo.attn_fuse_max;
    j["attn_short_max"] = lo.attn_short_max;
    j["decode"] = decode;
    j["steps_per_submit"] = lo.steps_per_submit;
    j["dtype"] = lo.dtype;
    j["ctx"] = s->ctx_len();
    j["attention"] = {{"chunk", lo.attention.chunk}, {"heads_per_wg", lo.attention.heads_per_wg}};
    j["model"] = {{"dir", lo.model_dir}, {"config", config_json(s->files.config())}};
    j["sampling"] = {{"temperature", s->params.temperature},
                     {"top_k", s->params.top_k},
                     {"top_p", s->params.top_p},
                     {"repetition_penalty", s->params.repetition_penalty},
                     {"seed", s->params.seed}};
    j["adapter"] = adapter_json(*s->ctx);
    if (!prof.is_null()) j["profile"] = prof;
    std::ofstream f(o.json_path);
    if (!f) throw Error("--json: cannot write " + o.json_path);
    f << j.dump(2) << "\n";
  }
}

// Interactive chat. The history is re-rendered through the chat template every turn and fed
// whole; the model keeps the KV cache of the common prefix. When a turn would not fit in --ctx,
// the oldest user/assistant pairs are dropped (the system prompt stays) and the user is told.
void chat(const LlmOptions& lo, const std::string& system, int64_t n, const GlobalOptions& g) {
  auto s = Session::open(lo);
  const auto tmpl =
      llm::ChatTemplate::from_file(std::filesystem::path(lo.model_dir) / "tokenizer_config.json");
  s->load(g);
  std::vector<llm::ChatMessage> history;
  if (!system.empty()) history.push_back({"system", system});
  std::fprintf(stderr, "wgfuse chat: %s on %s. Empty line or Ctrl-D to quit.\n", lo.model_dir.c_str(),
               s->ctx->adapter().device.c_str());
  while (true) {
    char* line = readline("> ");
    if (!line) break;
    std::string text(line);
    std::free(line);
    if (text.empty()) break;
    add_history(text.c_str());
    history.push_back({"user", text});
    std::vector<uint32_t> ids;
    while (true) {
      ids = to_u32(s->tokenizer.encode(tmpl.render(history, true)));
      if (ids.size() + 16 <= s->ctx_len()) break;
      const size_t first = (!history.empty() && history[0].role == "system") ? 1 : 0;
      if (history.size() - first <= 1)
        throw Error("this message alone is " + std::to_string(ids.size()) + " tokens, more than --ctx " +
                    std::to_string(s->ctx_len()) + " allows");
      history.erase(history.begin() + long(first), history.begin() + long(first) + 2);
      std::fprintf(stderr, "[context full: dropped the oldest exchange]\n");
    }
    // The model's sequence is the previous render plus the reply; reuse it only as a prefix.
    const auto& seq = s->model->sequence();
    const bool prefix = seq.size() <= ids.size() && std::equal(seq.begin(), seq.end(), ids.begin());
    if (!prefix) s->model->reset();
    const std::span<const uint32_t> fresh(ids.data() + (prefix ? seq.size() : 0),
                                          ids.size() - (prefix ? seq.size() : 0));
    const int64_t room = int64_t(s->ctx_len()) - int64_t(ids.size());
    const RunResult r = run(*s, fresh, std::min(n, room), lo.steps_per_submit, nullptr);
    std::fputc('\n', stdout);
    history.push_back({"assistant", text_of(s->tokenizer, r.generated)});
    print_timing(*s);
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
  c->add_option("--prompt-ids", o->prompt_ids, "the prompt as token ids, comma-separated (no tokenizer)");
  c->add_option("-n,--n-predict", o->n, "tokens to generate")->capture_default_str();
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
  c->add_option("--persistent-wg", o->persistent_wg,
                "--decode persistent: workgroups of the grid (0 = the largest power of two up to 256 that "
                "the co-residency probe passes)")
      ->capture_default_str();
  c->add_option("--persistent-probe-spin", o->probe_spin,
                "--decode persistent: atomic loads the co-residency probe waits per barrier (0 fails it: "
                "tests the fallback)")
      ->capture_default_str();
  c->add_option("--decode-check", o->decode_check,
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
  c->add_option("-n,--n-predict", *n, "at most this many tokens per reply")->capture_default_str();
  c->callback([lo, system, n, &g] { chat(*lo, *system, *n, g); });
}

}  // namespace wgfuse::cli
