#include "tiny/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "tiny/check.h"
#include "util/error.h"
#include "util/stats.h"

namespace wgfuse::tiny {
namespace {

struct Result {
  Strategy strategy;
  Summary seconds;
  RunStats stats;
  double gpu_ns = -1;
  std::optional<CheckResult> check;
};

nlohmann::json optional_number(double v) {
  return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr);
}

std::vector<Result> run_strategies(TinyRunner& runner, const TinyModel& m, const TinyOptions& o) {
  std::optional<ReferenceSet> ref;
  if (o.check) ref = reference_set(m, o.prompt, o.tokens, o.sequences);
  std::vector<Result> out;
  for (auto s : o.strategies) {
    Result r{s};
    r.stats = runner.run(s);  // warm-up: pipelines and buffers in first use; the run checked
    if (ref) r.check = check_run(runner, *ref);
    std::vector<double> secs;
    for (uint32_t i = 0; i < o.repeats; ++i) secs.push_back(runner.run(s).seconds);
    r.seconds = summarize(secs.empty() ? std::vector<double>{r.stats.seconds} : secs);
    r.gpu_ns = runner.gpu_ns(s);
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json strategies_json(const std::vector<Result>& rs, const TinyOptions& o) {
  nlohmann::json a = nlohmann::json::array();
  const double generated = double(o.tokens) * o.sequences;
  for (const auto& r : rs) {
    nlohmann::json j{{"name", strategy_name(r.strategy)},
                     {"seconds_median", r.seconds.median},
                     {"seconds_min", r.seconds.min},
                     {"seconds_max", r.seconds.max},
                     {"tokens_per_s", generated / r.seconds.median},
                     {"tokens_per_s_per_sequence", o.tokens / r.seconds.median},
                     {"gpu_ms", optional_number(r.gpu_ns < 0 ? -1 : r.gpu_ns / 1e6)},
                     {"dispatches", r.stats.dispatches},
                     {"submits", r.stats.submits},
                     {"dispatches_per_token", double(r.stats.dispatches) / o.tokens},
                     {"submits_per_token", double(r.stats.submits) / o.tokens}};
    if (r.check)
      j["check"] = {{"pass", r.check->ok},
                    {"sequences", r.check->sequences},
                    {"max_rel_error", std::isnan(r.check->max_error) ? nlohmann::json("nan")
                                                                     : nlohmann::json(r.check->max_error)},
                    {"first_failure", r.check->first_failure}};
    a.push_back(std::move(j));
  }
  return a;
}

// single's tokens/s (wall clock) and GPU time against each other strategy that ran.
nlohmann::json speedups_json(const std::vector<Result>& rs) {
  nlohmann::json j = nlohmann::json::object();
  const Result* single = nullptr;
  for (const auto& r : rs)
    if (r.strategy == Strategy::Single) single = &r;
  if (!single) return j;
  for (const auto& r : rs) {
    if (&r == single) continue;
    const std::string name(strategy_name(r.strategy));
    j["single_over_" + name] = r.seconds.median / single->seconds.median;
    if (r.gpu_ns > 0 && single->gpu_ns > 0) j["single_over_" + name + "_gpu"] = r.gpu_ns / single->gpu_ns;
  }
  return j;
}

void print_table(const std::vector<Result>& rs, const TinyOptions& o, const nlohmann::json& speedups) {
  std::printf("%-8s %14s %14s %10s %10s %12s %10s  %s\n", "strategy", "tokens/s", "tok/s/seq", "ms/run",
              "GPU ms", "dispatch/tok", "submit/tok", o.check ? "check" : "");
  const double generated = double(o.tokens) * o.sequences;
  for (const auto& r : rs) {
    char gpu[32] = "n/a";
    if (r.gpu_ns >= 0) std::snprintf(gpu, sizeof gpu, "%.3f", r.gpu_ns / 1e6);
    std::string check;
    if (r.check)
      check = r.check->ok ? "ok (" + std::to_string(r.check->sequences) + " seq)"
                          : "FAIL: " + r.check->first_failure;
    std::printf("%-8s %14.1f %14.1f %10.3f %10s %12.1f %10.2f  %s\n",
                std::string(strategy_name(r.strategy)).c_str(), generated / r.seconds.median,
                o.tokens / r.seconds.median, r.seconds.median * 1e3, gpu,
                double(r.stats.dispatches) / o.tokens, double(r.stats.submits) / o.tokens, check.c_str());
  }
  for (auto& [k, v] : speedups.items()) std::printf("  %-28s %8.1fx\n", k.c_str(), v.get<double>());
}

nlohmann::json tuning_json(const Resolved& r) {
  return {{"threads", r.threads},
          {"lanes", r.lanes},
          {"lanes_per_op",
           {{"qkv", r.qkv},
            {"o", r.o},
            {"gate_up", r.gate_up},
            {"down", r.down},
            {"head", r.head},
            {"scores", r.scores},
            {"attend", r.attend}}},
          {"single_activations", r.single_in_workgroup ? "workgroup" : "storage"}};
}

nlohmann::json config_json(const TinyModel& m, const TinyOptions& o) {
  const auto& c = m.config;
  return {{"d", c.hidden_size},
          {"layers", c.num_layers},
          {"heads", c.num_heads},
          {"kv_heads", c.num_kv_heads},
          {"head_dim", c.head_dim},
          {"ffn", c.intermediate_size},
          {"vocab", kVocab},
          {"tied_lm_head", c.tie_word_embeddings},
          {"model", m.source},
          {"prompt", o.prompt},
          {"prompt_tokens", o.prompt.size()},
          {"tokens", o.tokens},
          {"sequences", o.sequences},
          {"repeats", o.repeats}};
}

}  // namespace

nlohmann::json run_report(gpu::Context& ctx, const TinyModel& m, const TinyOptions& o) {
  TinyRunner runner(ctx, m, o.prompt, o.tokens, o.sequences, o.tuning);
  const auto rs = run_strategies(runner, m, o);
  const auto speedups = speedups_json(rs);
  if (o.print) {
    const auto& c = m.config;
    std::printf(
        "tiny transformer: d=%u, %u layers, %u heads (%u kv), ffn %u, vocab %u, %s; prompt %zu bytes, %u "
        "tokens, "
        "%u sequence(s)\n",
        c.hidden_size, c.num_layers, c.num_heads, c.num_kv_heads, c.intermediate_size, kVocab,
        m.source.c_str(), o.prompt.size(), o.tokens, o.sequences);
    const auto& t = runner.resolved();
    std::printf(
        "fused: %u threads per workgroup, lanes per item up to %u (qkv %u, o %u, gate|up %u, down %u, head "
        "%u, scores %u, attend %u); single's activations in %s memory\n",
        t.threads, t.lanes, t.qkv, t.o, t.gate_up, t.down, t.head, t.scores, t.attend,
        t.single_in_workgroup ? "workgroup" : "storage");
    print_table(rs, o, speedups);
  }
  nlohmann::json j{{"config", config_json(m, o)},
                   {"tuning", tuning_json(runner.resolved())},
                   {"strategies", strategies_json(rs, o)},
                   {"speedups", speedups}};
  // The generated tokens of the last strategy run (with --check, every strategy's are equal), per
  // sequence, for baselines to compare with; at most the first 1,024 sequences.
  nlohmann::json ids = nlohmann::json::array();
  for (uint32_t seq = 0; seq < std::min<uint32_t>(o.sequences, 1024); ++seq)
    ids.push_back(runner.tokens(seq));
  j["generated_ids"] = ids;
  if (o.check) {
    bool pass = true;
    for (const auto& r : rs) pass = pass && r.check->ok;
    j["check"] = {{"pass", pass}};
  }
  return j;
}

nlohmann::json run_sweep(gpu::Context& ctx, const Shape& shape, const TinyOptions& o) {
  constexpr uint32_t kNarrow = 256;       // widths up to this run the whole grid
  constexpr uint32_t kWideHeadDim = 128;  // past it: a real model's heads
  constexpr uint32_t kWideTokens = 8;
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%5s %6s %9s %6s %7s", "d", "layers", "sequences", "tokens", "threads");
  for (auto s : o.strategies) std::printf(" %14s", (std::string(strategy_name(s)) + " tok/s").c_str());
  std::printf(" %14s\n", "single/batched");
  bool pass = true;
  for (uint32_t d : o.sweep_widths)
    for (uint32_t layers : o.sweep_layers)
      for (uint32_t seqs : o.sweep_sequences) {
        const bool wide = d > kNarrow;
        if (seqs == 16384 && d != 64) continue;
        if (wide && (layers != 1 || seqs != 1)) continue;
        TinyOptions ro = o;
        ro.sequences = seqs;
        ro.print = false;
        if (wide) ro.tokens = std::min(o.tokens, kWideTokens);
        Shape s = shape;
        s.d = d;
        s.layers = layers;
        if (wide) s.heads = s.kv_heads = std::max(1u, d / kWideHeadDim);
        nlohmann::json row{
            {"d", d}, {"layers", layers}, {"heads", s.heads}, {"sequences", seqs}, {"tokens", ro.tokens}};
        try {
          const auto m = random_model(tiny_config(s), o.seed);
          const auto r = run_report(ctx, m, ro);
          row["threads"] = r["tuning"]["threads"];
          row["tuning"] = r["tuning"];
          row["strategies"] = r["strategies"];
          row["speedups"] = r["speedups"];
          if (r.contains("check")) pass = pass && r["check"]["pass"].get<bool>();
          std::printf("%5u %6u %9u %6u %7u", d, layers, seqs, ro.tokens,
                      r["tuning"]["threads"].get<uint32_t>());
          double single = 0, batched = 0;
          for (const auto& st : r["strategies"]) {
            std::printf(" %14.1f", st["tokens_per_s"].get<double>());
            if (st["name"] == "single") single = st["tokens_per_s"];
            if (st["name"] == "batched") batched = st["tokens_per_s"];
          }
          if (single > 0 && batched > 0) std::printf(" %13.2fx", single / batched);
          std::printf("\n");
        } catch (const Error& e) {
          row["skipped"] = e.what();
          std::printf("%5u %6u %9u  skipped: %s\n", d, layers, seqs, e.what());
        }
        std::fflush(stdout);
        rows.push_back(std::move(row));
      }
  nlohmann::json j{{"sweep", rows}};
  if (o.check) j["check"] = {{"pass", pass}};
  return j;
}

}  // namespace wgfuse::tiny
