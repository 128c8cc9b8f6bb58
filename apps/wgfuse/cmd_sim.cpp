// wgfuse sim: evolve neural policies on sequential simulations, each individual's whole episode
// run per step (one dispatch + wait per step), batched (one command buffer), fused (one
// dispatch for the episode) or, where the workload has one, cooperative (one dispatch, a team
// of invocations per individual), with the fitness of all checked against each other and
// against a double-precision CPU reference. docs/SIMULATIONS.md describes the workloads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "fuse/sim_program.h"
#include "gpu/recorder.h"
#include "sim/reference.h"
#include "sim/runner.h"
#include "sim/workloads.h"
#include "util/error.h"

namespace wgfuse::cli {


namespace {

struct SimOptions {
  std::string workload;
  uint32_t pop = 0, steps = 0, generations = 10, seed = 1, samples = 64;
  std::string mode = "all";
  bool check = false, dump_wgsl = false, quiet = false;
  std::string json_path, data_path;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void run_sim(const SimOptions& o, const GlobalOptions& g) {
  const auto& w = sim::find_workload(o.workload);
  if (o.dump_wgsl) {
    std::printf("%s", fuse::generated_source(w.spec).c_str());
    return;
  }
  const uint32_t pop = o.pop ? o.pop : w.default_pop;
  const uint32_t steps = o.steps ? o.steps : w.default_steps;
  std::vector<fuse::Strategy> modes;
  const bool coop = w.spec.has_coop();
  if (o.mode == "all") {
    modes = {fuse::Strategy::PerStep, fuse::Strategy::Batched, fuse::Strategy::Fused};
    if (coop) modes.push_back(fuse::Strategy::Coop);
  } else {
    modes = {fuse::parse_strategy(o.mode)};
    if (modes[0] == fuse::Strategy::Coop) fuse::require_coop(w.spec);
  }

  gpu::Context ctx(g.context_options());
  sim::SimRunner runner(ctx, w, pop, steps, o.seed);
  if (!o.data_path.empty()) {
    if (!w.needs_market_data) throw Error("--write-data: workload '" + w.name + "' has no data");
    sim::write_market_records(runner.market(), o.data_path);
  }
  const auto& a = ctx.adapter();
  std::printf("wgfuse sim %s: pop %u, steps %u, genome %u f32, %u generations, seed %u\n", w.name.c_str(), pop,
              steps, runner.genome_len(), o.generations, o.seed);
  std::printf("  %s\n", w.summary.c_str());
  std::printf("  adapter: %s (%s, %s)\n", a.device.c_str(), a.backend.c_str(), a.adapter_type.c_str());
  auto t_compile = std::chrono::steady_clock::now();
  runner.compile();
  double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_compile).count();

  nlohmann::json j;
  j["workload"] = w.name;
  j["pop"] = pop;
  j["steps"] = steps;
  j["genome_len"] = runner.genome_len();
  j["generations"] = o.generations;
  j["seed"] = o.seed;
  j["compile_seconds"] = compile_s;
  j["ga"] = {{"kind", "GA: tournament selection, uniform crossover, Gaussian mutation, elitism"},
             {"tournament", w.ga.tournament}, {"elites", w.ga.elites}, {"mutation_rate", w.ga.rate},
             {"sigma", w.ga.sigma},
             {"lo", w.ga.lo}, {"hi", w.ga.hi}};
  j["adapter"] = adapter_json(ctx);
  j["modes"] = nlohmann::json::object();
  if (!coop) j["modes_unavailable"] = {{"coop", w.name + " has no cooperative form (only market has one)"}};

  std::map<fuse::Strategy, double> rate;
  std::map<fuse::Strategy, sim::ModeRun> runs;
  for (auto m : modes) {
    auto t_mode = std::chrono::steady_clock::now();
    auto last_line = t_mode;
    auto progress = [&](uint32_t gen, const fuse::GenerationStats& st, double) {
      auto now = std::chrono::steady_clock::now();
      if (o.quiet || std::chrono::duration<double>(now - t_mode).count() < 3.0 ||
          std::chrono::duration<double>(now - last_line).count() < 2.0)
        return;
      last_line = now;
      std::fprintf(stderr, "  [%s] generation %u/%u, best %.6g, mean %.6g, %.1f s\n", fuse::to_string(m).c_str(),
                   gen + 1, o.generations, st.best, st.mean,
                   std::chrono::duration<double>(now - t_mode).count());
    };
    auto r = runner.run(m, o.generations, progress);
    std::vector<double> gps;
    for (double s : r.seconds) gps.push_back(1.0 / s);
    double med = median(gps);
    rate[m] = med;
    nlohmann::json jm;
    jm["gen_per_s"] = {{"median", med},
                       {"min", gps.empty() ? 0 : *std::min_element(gps.begin(), gps.end())},
                       {"max", gps.empty() ? 0 : *std::max_element(gps.begin(), gps.end())}};
    jm["seconds_per_generation"] = r.seconds;
    if (r.gpu_eval_ms.empty()) {
      jm["gpu_evaluation_ms"] = nullptr;
    } else {
      jm["gpu_evaluation_ms"] = {{"median", median(r.gpu_eval_ms)},
                                 {"min", *std::min_element(r.gpu_eval_ms.begin(), r.gpu_eval_ms.end())},
                                 {"max", *std::max_element(r.gpu_eval_ms.begin(), r.gpu_eval_ms.end())}};
    }
    jm["dispatches_per_generation"] = r.dispatches_per_generation;
    jm["submits_per_generation"] = r.submits_per_generation;
    std::vector<double> best, mean;
    for (auto& st : r.stats) {
      best.push_back(st.best);
      mean.push_back(st.mean);
    }
    jm["best_fitness"] = best;
    jm["mean_fitness"] = mean;
    j["modes"][fuse::to_string(m)] = jm;
    runs[m] = std::move(r);
  }

  if (!coop && o.mode == "all")
    std::printf("\n  (coop: not run, %s has no cooperative form; only market has one)\n", w.name.c_str());
  std::printf("\n  %-8s %12s %21s %14s %12s %14s\n", "mode", "gen/s", "min - max", "dispatches/gen", "submits/gen",
              "GPU eval ms");
  for (auto m : modes) {
    auto& jm = j["modes"][fuse::to_string(m)];
    char gpu[32] = "-";
    if (!jm["gpu_evaluation_ms"].is_null())
      std::snprintf(gpu, sizeof gpu, "%.4g", jm["gpu_evaluation_ms"]["median"].get<double>());
    std::printf("  %-8s %12.4g %10.4g - %-10.4g %14llu %12llu %14s\n", fuse::to_string(m).c_str(), rate[m],
                jm["gen_per_s"]["min"].get<double>(), jm["gen_per_s"]["max"].get<double>(),
                (unsigned long long)runs[m].dispatches_per_generation,
                (unsigned long long)runs[m].submits_per_generation, gpu);
  }
  j["speedups"] = nlohmann::json::object();
  if (rate.count(fuse::Strategy::Fused)) {
    for (auto m : {fuse::Strategy::PerStep, fuse::Strategy::Batched}) {
      if (!rate.count(m) || rate[m] <= 0) continue;
      double s = rate[fuse::Strategy::Fused] / rate[m];
      j["speedups"]["fused_vs_" + fuse::to_string(m)] = s;
      std::printf("  speedup fused vs %s: %.2fx\n", fuse::to_string(m).c_str(), s);
    }
  }
  if (rate.count(fuse::Strategy::Coop)) {
    for (auto m : {fuse::Strategy::PerStep, fuse::Strategy::Batched, fuse::Strategy::Fused}) {
      if (!rate.count(m) || rate[m] <= 0) continue;
      double s = rate[fuse::Strategy::Coop] / rate[m];
      j["speedups"]["coop_vs_" + fuse::to_string(m)] = s;
      std::printf("  speedup coop vs %s: %.2fx\n", fuse::to_string(m).c_str(), s);
    }
  }
  if (rate.count(fuse::Strategy::PerStep) && rate.count(fuse::Strategy::Batched) && rate[fuse::Strategy::PerStep] > 0)
    j["speedups"]["batched_vs_perstep"] = rate[fuse::Strategy::Batched] / rate[fuse::Strategy::PerStep];

  const auto& shown = runs.count(fuse::Strategy::Fused) ? runs[fuse::Strategy::Fused] : runs.begin()->second;
  std::printf("\n  best fitness per generation (%s):", fuse::to_string(shown.strategy).c_str());
  for (size_t i = 0; i < shown.stats.size(); ++i)
    std::printf("%s %.6g", i % 10 == 0 ? "\n   " : "", shown.stats[i].best);
  std::printf("\n");

  // The runs of the different strategies start from the same population with the same GA seed:
  // where the fitness agrees, the whole evolution agrees.
  if (runs.size() > 1) {
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
    j["trajectory_agreement"] = jt;
  }

  // A sample of generation-0 fitness values at L and at the reference horizon, with the CPU
  // double-precision reference at both, for the baselines to compare against.
  {
    // Fused where it ran (what the baselines have always been compared with), else the last mode.
    const auto strategy = std::count(modes.begin(), modes.end(), fuse::Strategy::Fused) ? fuse::Strategy::Fused
                                                                                        : modes.back();
    const uint32_t n = std::min<uint32_t>(o.samples, pop);
    const uint32_t horizon = std::min(steps, w.reference_horizon);
    auto f = runner.evaluate_initial(strategy);
    auto fh = horizon == steps ? f : runner.evaluate_initial(strategy, horizon);
    nlohmann::json idx = nlohmann::json::array(), v = nlohmann::json::array(), vh = nlohmann::json::array(),
                   ref = nlohmann::json::array(), refh = nlohmann::json::array();
    const auto& genomes = runner.initial_genomes();
    const uint32_t len = runner.genome_len();
    for (uint32_t k = 0; k < n; ++k) {
      uint32_t i = uint32_t(uint64_t(k) * pop / n);
      std::span<const float> genome(genomes.data() + size_t(i) * len, len);
      idx.push_back(i);
      v.push_back(f[i]);
      vh.push_back(fh[i]);
      ref.push_back(sim::reference_fitness(w, genome, i, steps, o.seed, runner.market().records));
      refh.push_back(horizon == steps ? ref.back().get<double>()
                                      : sim::reference_fitness(w, genome, i, horizon, o.seed, runner.market().records));
    }
    j["sample_fitness"] = {{"strategy", fuse::to_string(strategy)}, {"indices", idx}, {"steps", steps},
                           {"values", v}, {"reference", ref}, {"horizon", horizon},
                           {"values_at_horizon", vh}, {"reference_at_horizon", refh}};
  }

  bool ok = true;
  if (o.check) {
    std::printf("\n  check (generation-0 population, all individuals):\n");
    const double rtol = 1e-5;
    auto fp = runner.evaluate_initial(fuse::Strategy::PerStep);
    auto fb = runner.evaluate_initial(fuse::Strategy::Batched);
    auto ff = runner.evaluate_initial(fuse::Strategy::Fused);
    auto pb = sim::compare_fitness(fp, fb, 0.0);
    auto pf = sim::compare_fitness(fp, ff, rtol);
    bool pb_ok = pb.bitwise, pf_ok = pf.over == 0;
    std::printf("    perstep vs batched: %s (max rel diff %.3g)\n", pb_ok ? "bitwise equal" : "DIFFERENT",
                pb.max_rel);
    std::printf("    fused vs perstep:   %s (max rel diff %.3g, %s, %u over %.0e)\n", pf_ok ? "ok" : "FAIL",
                pf.max_rel, pf.bitwise ? "bitwise equal" : "not bitwise", pf.over, rtol);
    nlohmann::json jc;
    jc["perstep_vs_batched"] = {{"bitwise", pb.bitwise}, {"max_rel", pb.max_rel}, {"pass", pb_ok}};
    jc["fused_vs_perstep"] = {{"bitwise", pf.bitwise}, {"max_rel", pf.max_rel}, {"over", pf.over},
                              {"rtol", rtol}, {"pass", pf_ok}};
    std::vector<fuse::Strategy> checked = {fuse::Strategy::PerStep, fuse::Strategy::Batched, fuse::Strategy::Fused};
    bool pc_ok = true;
    if (coop) {
      // The same functions called from another kernel: contraction may differ, as for fused.
      auto fc = runner.evaluate_initial(fuse::Strategy::Coop);
      auto pc = sim::compare_fitness(fp, fc, rtol);
      pc_ok = pc.over == 0;
      std::printf("    coop vs perstep:    %s (max rel diff %.3g, %s, %u over %.0e)\n", pc_ok ? "ok" : "FAIL",
                  pc.max_rel, pc.bitwise ? "bitwise equal" : "not bitwise", pc.over, rtol);
      jc["coop_vs_perstep"] = {{"bitwise", pc.bitwise}, {"max_rel", pc.max_rel}, {"over", pc.over},
                               {"rtol", rtol}, {"pass", pc_ok}};
      checked.push_back(fuse::Strategy::Coop);
    }
    nlohmann::json jr = nlohmann::json::object();
    bool ref_ok = true;
    for (auto m : checked) {
      auto r = runner.check_reference(m, o.samples);
      std::printf("    %-7s vs CPU double reference: %s (%u/%u samples agree at %u steps, %u at a decision boundary; "
                  "max abs %.3g, max rel %.3g)\n",
                  fuse::to_string(m).c_str(), r.pass() ? "ok" : "FAIL", r.agree, r.samples, r.horizon, r.at_boundary,
                  r.max_abs, r.max_rel);
      if (r.first_bad >= 0)
        std::printf("      first disagreement: individual %lld, GPU %.9g, reference %.9g (closest decision margin %.3g)\n",
                    (long long)r.first_bad, r.got, r.want, r.margin);
      jr[fuse::to_string(m)] = {{"horizon", r.horizon}, {"samples", r.samples}, {"agree", r.agree},
                                {"at_boundary", r.at_boundary}, {"max_boundary_margin", r.max_boundary_margin},
                                {"max_abs", r.max_abs}, {"max_rel", r.max_rel},
                                {"pass", r.pass()}};
      ref_ok = ref_ok && r.pass();
    }
    jr["rtol"] = w.reference_rtol;
    jr["atol"] = w.reference_atol;
    jr["boundary_margin"] = w.boundary_margin;
    jc["reference"] = jr;
    ok = pb_ok && pf_ok && pc_ok && ref_ok;
    jc["pass"] = ok;
    j["check"] = jc;
    std::printf("  check %s\n", ok ? "passed" : "FAILED");
  }

  if (!o.json_path.empty()) {
    j["wgfuse_version"] = WGFUSE_VERSION;
    std::ofstream f(o.json_path);
    if (!f) throw Error("cannot write JSON to '" + o.json_path + "'");
    f << j.dump(2) << "\n";
  }
  if (!ok) throw Error("sim --check failed for '" + w.name + "'");
}

}  // namespace

void add_sim(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand(
      "sim", "Evolve policies on a sequential simulation: per-step vs batched vs fused (vs cooperative) execution");
  static SimOptions o;
  std::string names;
  for (auto& w : sim::workloads()) names += (names.empty() ? "" : " | ") + w.name;
  cmd->add_option("workload", o.workload, names)->required();
  cmd->add_option("--pop", o.pop, "population (default: the workload's)")->check(CLI::PositiveNumber);
  cmd->add_option("--steps", o.steps, "episode length L (default: the workload's)")->check(CLI::PositiveNumber);
  cmd->add_option("--generations", o.generations, "timed generations per mode")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--mode", o.mode, "perstep | batched | fused | coop (market only) | all (coop included where the "
                                    "workload has it)")
      ->check(CLI::IsMember({"perstep", "batched", "fused", "coop", "all"}))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "seed of the population, initial states, GA and market data")
      ->capture_default_str();
  cmd->add_option("--samples", o.samples, "individuals compared with the CPU reference and written to JSON")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--check", o.check, "check the strategies against each other and the CPU reference");
  cmd->add_option("--json", o.json_path, "write the results as JSON to FILE");
  cmd->add_option("--write-data", o.data_path, "market: write the price records (f32, steps x 22) to FILE");
  cmd->add_flag("--dump-wgsl", o.dump_wgsl, "print the generated WGSL of the workload and exit");
  cmd->add_flag("--quiet", o.quiet, "no progress lines");
  cmd->callback([&g] { run_sim(o, g); });
}

}  // namespace wgfuse::cli
