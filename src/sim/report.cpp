#include "sim/report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "sim/reference.h"
#include "util/stats.h"

namespace wgfuse::sim {
namespace {

using Clock = std::chrono::steady_clock;
using fuse::Strategy;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

nlohmann::json summary_json(const Summary& s) {
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}};
}

// One timed mode: its rates, times, counts and fitness trajectory. Also returns the median rate.
// `genome_bytes`: the population's genomes, which every evaluation reads at least once.
nlohmann::json mode_json(const ModeRun& r, uint64_t genome_bytes, double& median_gen_per_s) {
  std::vector<double> gps;
  for (double s : r.seconds) gps.push_back(1.0 / s);
  const Summary rate = gps.empty() ? Summary{} : summarize(gps);
  median_gen_per_s = rate.median;
  nlohmann::json jm;
  jm["gen_per_s"] = summary_json(rate);
  jm["seconds_per_generation"] = r.seconds;
  auto optional_summary = [](const std::vector<double>& v) {
    return v.empty() ? nlohmann::json(nullptr) : summary_json(summarize(v));
  };
  jm["gpu_evaluation_ms"] = optional_summary(r.gpu_eval_ms);
  jm["gpu_ga_ms"] = optional_summary(r.gpu_ga_ms);
  jm["gpu_between_generations_ms"] = optional_summary(r.gpu_between_generations_ms);
  jm["gpu_between_passes_ms"] = optional_summary(r.gpu_between_passes_ms);
  if (!r.gpu_ga_kernel_ms.empty()) {
    const char* names[Evolution::kKernels] = {"reduce", "select", "breed"};
    for (uint32_t i = 0; i < Evolution::kKernels; ++i) {
      std::vector<double> v;
      for (auto& k : r.gpu_ga_kernel_ms) v.push_back(k[i]);
      jm["gpu_ga_kernel_ms"][names[i]] = summary_json(summarize(v));
    }
  }
  // The evaluation's rate of reading the genomes (against the copy bandwidth: how near the
  // memory bound an embarrassingly parallel workload such as Rastrigin gets).
  jm["genome_read_gb_per_s"] =
      r.gpu_eval_ms.empty() ? nlohmann::json(nullptr)
                            : nlohmann::json(double(genome_bytes) / (summarize(r.gpu_eval_ms).median * 1e6));
  jm["in_flight"] = r.in_flight;
  jm["generations_per_submit"] = r.per_submit;
  jm["dispatches_per_generation"] = r.dispatches_per_generation;
  jm["submits_per_generation"] = r.submits_per_generation;
  std::vector<double> best, mean;
  for (auto& st : r.stats) {
    best.push_back(st.best);
    mean.push_back(st.mean);
  }
  jm["best_fitness"] = best;
  jm["mean_fitness"] = mean;
  return jm;
}

ModeRun run_mode(SimRunner& runner, Strategy m, const SimReportOptions& o) {
  const auto t_mode = Clock::now();
  auto last_line = t_mode;
  auto progress = [&](uint32_t gen, const GenerationStats& st, double) {
    if (o.quiet || seconds_since(t_mode) < 3.0 || seconds_since(last_line) < 2.0) return;
    last_line = Clock::now();
    std::fprintf(stderr, "  [%s] generation %u/%u, best %.6g, mean %.6g, %.1f s\n",
                 fuse::to_string(m).c_str(), gen + 1, o.generations, st.best, st.mean, seconds_since(t_mode));
  };
  return runner.run(m, o.generations, progress, o.in_flight, o.per_submit, o.ga_kernels);
}

void print_table(const std::vector<Strategy>& modes, const std::map<Strategy, ModeRun>& runs,
                 const std::map<Strategy, double>& rate, const nlohmann::json& jmodes) {
  std::printf("\n  %-8s %12s %21s %14s %12s %14s %12s\n", "mode", "gen/s", "min - max", "dispatches/gen",
              "submits/gen", "GPU eval ms", "GPU GA ms");
  for (auto m : modes) {
    auto& jm = jmodes[fuse::to_string(m)];
    char gpu[32] = "-", ga[32] = "-";
    if (!jm["gpu_evaluation_ms"].is_null())
      std::snprintf(gpu, sizeof gpu, "%.4g", jm["gpu_evaluation_ms"]["median"].get<double>());
    if (!jm["gpu_ga_ms"].is_null())
      std::snprintf(ga, sizeof ga, "%.4g", jm["gpu_ga_ms"]["median"].get<double>());
    std::printf("  %-8s %12.4g %10.4g - %-10.4g %14llu %12llu %14s %12s\n", fuse::to_string(m).c_str(),
                rate.at(m), jm["gen_per_s"]["min"].get<double>(), jm["gen_per_s"]["max"].get<double>(),
                (unsigned long long)runs.at(m).dispatches_per_generation,
                (unsigned long long)runs.at(m).submits_per_generation, gpu, ga);
  }
}

// Fused and team against the slower strategies (printed), and batched against per-step (JSON only).
nlohmann::json speedups(const std::map<Strategy, double>& rate) {
  nlohmann::json js = nlohmann::json::object();
  auto versus = [&](Strategy fast, std::initializer_list<Strategy> slower) {
    if (!rate.count(fast)) return;
    for (auto m : slower) {
      if (!rate.count(m) || rate.at(m) <= 0) continue;
      const double s = rate.at(fast) / rate.at(m);
      js[fuse::to_string(fast) + "_vs_" + fuse::to_string(m)] = s;
      std::printf("  speedup %s vs %s: %.2fx\n", fuse::to_string(fast).c_str(), fuse::to_string(m).c_str(),
                  s);
    }
  };
  versus(Strategy::Fused, {Strategy::PerStep, Strategy::Batched});
  versus(Strategy::Team, {Strategy::PerStep, Strategy::Batched, Strategy::Fused});
  if (rate.count(Strategy::PerStep) && rate.count(Strategy::Batched) && rate.at(Strategy::PerStep) > 0)
    js["batched_vs_perstep"] = rate.at(Strategy::Batched) / rate.at(Strategy::PerStep);
  return js;
}

// The runs of the different strategies start from the same population with the same GA seed:
// where the fitness agrees, the whole evolution agrees.
nlohmann::json trajectory_agreement(const std::map<Strategy, ModeRun>& runs) {
  nlohmann::json jt = nlohmann::json::object();
  auto& ref = runs.begin()->second;
  for (auto& [m, r] : runs) {
    if (m == ref.strategy) continue;
    double mx = 0;
    for (size_t i = 0; i < r.stats.size(); ++i) {
      double x = ref.stats[i].best, y = r.stats[i].best;
      double den = std::max(std::abs(x), std::abs(y));
      mx = std::max(mx, x == y ? 0.0 : std::abs(x - y) / den);
    }
    jt[fuse::to_string(m) + "_vs_" + fuse::to_string(ref.strategy) + "_best_max_rel"] = mx;
  }
  return jt;
}

// A sample of generation-0 fitness values at L and at the reference horizon, with the CPU
// double-precision reference at both, for the baselines to compare against.
nlohmann::json sample_fitness(SimRunner& runner, const SimReportOptions& o) {
  const auto& w = runner.workload();
  const uint32_t pop = runner.pop(), steps = runner.steps();
  // Fused where it ran (what the baselines have always been compared with), else the last mode.
  const auto strategy =
      std::count(o.modes.begin(), o.modes.end(), Strategy::Fused) ? Strategy::Fused : o.modes.back();
  const uint32_t n = std::min<uint32_t>(o.samples, pop);
  const uint32_t horizon = std::min(steps, w.reference_horizon);
  auto f = runner.evaluate_initial(strategy);
  auto fh = horizon == steps ? f : runner.evaluate_initial(strategy, horizon);
  nlohmann::json idx = nlohmann::json::array(), v = nlohmann::json::array(), vh = nlohmann::json::array(),
                 ref = nlohmann::json::array(), refh = nlohmann::json::array();
  const auto& genomes = runner.initial_genomes();
  const uint32_t len = runner.genome_len();
  const auto& data = runner.data().records;
  for (uint32_t k = 0; k < n; ++k) {
    uint32_t i = uint32_t(uint64_t(k) * pop / n);
    std::span<const float> genome(genomes.data() + size_t(i) * len, len);
    idx.push_back(i);
    v.push_back(f[i]);
    vh.push_back(fh[i]);
    if (!w.reference) continue;
    ref.push_back(reference_fitness(w, genome, steps, runner.starts(), data, i));
    refh.push_back(horizon == steps ? ref.back().get<double>()
                                    : reference_fitness(w, genome, horizon, runner.starts(), data, i));
  }
  nlohmann::json out = {{"strategy", fuse::to_string(strategy)},
                        {"indices", idx},
                        {"steps", steps},
                        {"values", v},
                        {"horizon", horizon},
                        {"values_at_horizon", vh}};
  if (w.reference) {
    out["reference"] = ref;
    out["reference_at_horizon"] = refh;
  }
  return out;
}

// A strategy against per-step on the generation-0 population, within rtol, printed as a verdict
// line; individuals over it are judged against the reference (judge_over): the check fails on
// any `wrong` one, or when too many are over to judge.
nlohmann::json strategy_verdict(SimRunner& runner, const std::string& label,
                                const std::vector<float>& perstep, const std::vector<float>& other,
                                double rtol, bool& pass) {
  const auto a = compare_fitness(perstep, other, rtol);
  const auto j = judge_over(runner.workload(), runner.initial_genomes(), runner.steps(), runner.starts(),
                            runner.data().records, perstep, other, rtol);
  pass = j.pass();
  std::printf("    %-19s %s (max rel diff %.3g, %s, %u over %.0e", label.c_str(), pass ? "ok" : "FAIL",
              a.max_rel, a.bitwise ? "bitwise equal" : "not bitwise", a.over, rtol);
  if (a.over && !runner.workload().reference)
    std::printf(": no CPU reference to judge them by");
  else if (a.over && j.judged)
    std::printf(
        ": against the CPU double reference over %u steps, %u within its tolerance, %u sensitive to "
        "rounding, %u wrong",
        runner.steps(), j.near_reference, j.sensitive, j.wrong);
  else if (a.over)
    std::printf(": more than %u, not judged", kMaxJudged);
  std::printf(")\n");
  nlohmann::json js = {
      {"bitwise", a.bitwise}, {"max_rel", a.max_rel}, {"over", a.over}, {"rtol", rtol}, {"pass", pass}};
  if (a.over)
    js["over_judged"] = {{"judged", j.judged},
                         {"near_reference", j.near_reference},
                         {"sensitive", j.sensitive},
                         {"wrong", j.wrong}};
  return js;
}

// The --check verdicts, from the strategy table: each strategy against the first (per-step),
// bitwise or within its rtol, and every strategy against the CPU double reference.
nlohmann::json check(SimRunner& runner, const SimReportOptions& o, bool& ok) {
  const auto& w = runner.workload();
  std::printf("\n  check (generation-0 population, all individuals):\n");
  const auto rows = fuse::strategies();
  const auto& first = rows.front();
  const auto f0 = runner.evaluate_initial(first.id);
  nlohmann::json jc;
  bool strategies_ok = true;
  std::vector<Strategy> checked = {first.id};
  for (auto& r : rows.subspan(1)) {
    if (!fuse::offered(runner.context(), r.id)) continue;
    checked.push_back(r.id);
    const auto fr = runner.evaluate_initial(r.id);
    const std::string name(r.name), ref(first.name);
    bool pass = true;
    if (r.check_rtol == 0) {
      const auto a = compare_fitness(f0, fr, 0);
      pass = a.bitwise;
      std::printf("    %s vs %s: %s (max rel diff %.3g)\n", ref.c_str(), name.c_str(),
                  pass ? "bitwise equal" : "DIFFERENT", a.max_rel);
      jc[ref + "_vs_" + name] = {{"bitwise", a.bitwise}, {"max_rel", a.max_rel}, {"pass", pass}};
    } else {
      jc[name + "_vs_" + ref] =
          strategy_verdict(runner, name + " vs " + ref + ":", f0, fr, r.check_rtol, pass);
    }
    strategies_ok = strategies_ok && pass;
  }
  nlohmann::json jr = nlohmann::json::object();
  bool ref_ok = true;
  if (!w.reference) {
    std::printf("    no CPU reference (%s names none): the strategies checked against each other only\n",
                w.spec.origin.c_str());
    jr["none"] = true;
    checked.clear();
  }
  for (auto m : checked) {
    auto r = runner.check_reference(m, o.samples);
    std::printf(
        "    %-7s vs CPU double reference: %s (%u/%u samples agree at %u steps, %u at a decision boundary; "
        "max abs %.3g, max rel %.3g)\n",
        fuse::to_string(m).c_str(), r.pass() ? "ok" : "FAIL", r.agree, r.samples, r.horizon, r.at_boundary,
        r.max_abs, r.max_rel);
    if (r.first_bad >= 0)
      std::printf(
          "      first disagreement: individual %lld, GPU %.9g, reference %.9g (closest decision margin "
          "%.3g)\n",
          (long long)r.first_bad, r.got, r.want, r.margin);
    jr[fuse::to_string(m)] = {{"horizon", r.horizon},
                              {"samples", r.samples},
                              {"agree", r.agree},
                              {"at_boundary", r.at_boundary},
                              {"max_boundary_margin", r.max_boundary_margin},
                              {"max_abs", r.max_abs},
                              {"max_rel", r.max_rel},
                              {"pass", r.pass()}};
    ref_ok = ref_ok && r.pass();
  }
  jr["rtol"] = w.reference_rtol;
  jr["atol"] = w.reference_atol;
  jr["boundary_margin"] = w.boundary_margin;
  jc["reference"] = jr;
  ok = strategies_ok && ref_ok;
  jc["pass"] = ok;
  std::printf("  check %s\n", ok ? "passed" : "FAILED");
  return jc;
}

}  // namespace

nlohmann::json run_and_report(SimRunner& runner, const SimReportOptions& o, const std::string& adapter_line,
                              const nlohmann::json& adapter) {
  const auto& w = runner.workload();
  const bool team = fuse::offered(runner.context(), Strategy::Team);
  std::printf(
      "wgfuse sim %s: pop %u, steps %u, episodes %u, genome %u f32, %u generations (%u in flight), seed %u\n",
      w.name.c_str(), runner.pop(), runner.steps(), runner.episodes(), runner.genome_len(), o.generations,
      o.in_flight, o.seed);
  std::printf("  %s\n", w.summary.c_str());
  std::printf("  adapter: %s\n", adapter_line.c_str());
  const auto t_compile = Clock::now();
  runner.compile();
  const double compile_s = seconds_since(t_compile);

  nlohmann::json j;
  j["workload"] = w.name;
  j["pop"] = runner.pop();
  j["steps"] = runner.steps();
  j["genome_len"] = runner.genome_len();
  j["generations"] = o.generations;
  j["seed"] = o.seed;
  j["episodes"] = runner.episodes();
  j["compile_seconds"] = compile_s;
  j["ga"] = {{"kind", "GA: tournament selection, uniform crossover, Gaussian mutation, elitism"},
             {"tournament", w.ga.tournament},
             {"elites", w.ga.elites},
             {"mutation_rate", w.ga.rate},
             {"sigma", w.ga.sigma},
             {"lo", w.ga.lo},
             {"hi", w.ga.hi}};
  j["adapter"] = adapter;
  j["modes"] = nlohmann::json::object();
  j["team"] = runner.team();
  j["in_flight"] = o.in_flight;
  j["generations_per_submit"] = o.per_submit;
  const auto& spec = runner.spec();
  j["workgroup"] = {{"fused", fuse::workgroup_size(spec, Strategy::Fused)},
                    {"team", fuse::workgroup_size(spec, Strategy::Team)}};
  j["overrides"] = spec.overrides;
  for (auto& [name, value] : spec.overrides) std::printf("  override %s = %g\n", name.c_str(), value);
  j["robustness"] = !o.robustness_disabled;
  if (o.robustness_disabled)
    std::printf(
        "  UNSAFE: Dawn's shader robustness is disabled (--unsafe-no-robustness): out-of-bounds "
        "accesses are undefined\n");
  if (!o.auto_why.empty()) {
    j["auto"] = {
        {"strategy", fuse::to_string(o.modes.front())}, {"team", runner.team()}, {"why", o.auto_why}};
    std::printf("  mode auto: %s\n", o.auto_why.c_str());
  }
  if (!team) j["modes_unavailable"] = {{"team", "the adapter has no subgroups"}};

  std::map<Strategy, double> rate;
  std::map<Strategy, ModeRun> runs;
  for (auto m : o.modes) {
    auto r = run_mode(runner, m, o);
    j["modes"][fuse::to_string(m)] = mode_json(r, runner.genome_bytes(), rate[m]);
    runs[m] = std::move(r);
  }

  if (!team && o.all_modes) std::printf("\n  (team: not run, the adapter has no subgroups)\n");
  print_table(o.modes, runs, rate, j["modes"]);
  if (o.copy_gb_per_s > 0) {
    j["copy_gb_per_s"] = o.copy_gb_per_s;
    const double bytes = double(runner.genome_bytes());
    for (auto m : o.modes) {
      auto& jm = j["modes"][fuse::to_string(m)];
      if (jm["genome_read_gb_per_s"].is_null()) continue;
      const double gbs = jm["genome_read_gb_per_s"].get<double>();
      jm["genome_read_of_copy"] = gbs / o.copy_gb_per_s;
      std::printf("  %s evaluation reads the genomes at %.4g GB/s, %.1f%% of a copy kernel's %.4g GB/s\n",
                  fuse::to_string(m).c_str(), gbs, 100 * gbs / o.copy_gb_per_s, o.copy_gb_per_s);
      // The copy kernel's bandwidth comes from many copies in one timed pass; the generation's
      // evaluation is one dispatch in its own pass, which carries the pass's fixed cost. The same
      // evaluation, ~5 ms of it back to back in one pass, gives the kernel's own rate.
      const double eval_us = summarize(runs[m].gpu_eval_ms).median * 1e3;
      const uint32_t count = uint32_t(std::clamp(5000.0 / eval_us, 2.0, 256.0));
      const double us = runner.evaluation_us_back_to_back(m, count);
      if (us <= 0) continue;
      jm["back_to_back"] = {{"evaluations", count},
                            {"us", us},
                            {"genome_read_gb_per_s", bytes / us / 1e3},
                            {"genome_read_of_copy", bytes / us / 1e3 / o.copy_gb_per_s}};
      std::printf(
          "    %u of them back to back in one pass: %.4g us each, %.4g GB/s, %.1f%% of the copy kernel's\n",
          count, us, bytes / us / 1e3, 100 * bytes / us / 1e3 / o.copy_gb_per_s);
    }
  }
  j["speedups"] = speedups(rate);

  const auto& shown = runs.count(Strategy::Fused) ? runs[Strategy::Fused] : runs.begin()->second;
  std::printf("\n  best fitness per generation (%s):", fuse::to_string(shown.strategy).c_str());
  for (size_t i = 0; i < shown.stats.size(); ++i)
    std::printf("%s %.6g", i % 10 == 0 ? "\n   " : "", shown.stats[i].best);
  std::printf("\n");

  if (runs.size() > 1) j["trajectory_agreement"] = trajectory_agreement(runs);
  j["sample_fitness"] = sample_fitness(runner, o);
  if (o.check) {
    bool ok = false;
    j["check"] = check(runner, o, ok);
  }
  j["wgfuse_version"] = WGFUSE_VERSION;
  return j;
}

}  // namespace wgfuse::sim
