// wgfuse sim: evolve neural policies on sequential simulations, each individual's whole episode
// run per step (one dispatch + wait per step), batched (one command buffer), fused (one
// dispatch for the episode) or as a team (one dispatch, a team of invocations per individual,
// where the adapter has subgroups), --mode auto choosing; with the fitness of all checked
// against each other and against a double-precision CPU reference. docs/SIMULATIONS.md
// describes the workloads.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/dispatch_bench.h"
#include "commands.h"
#include "fuse/sim_program.h"
#include "gpu/bandwidth.h"
#include "sim/report.h"
#include "sim/runner.h"
#include "sim/workloads.h"
#include "submit.h"
#include "util/error.h"
#include "webgpu/diagnostics.h"

namespace wgfuse::cli {
namespace {

struct SimOptions {
  std::string workload;
  uint32_t pop = 0, steps = 0, generations = 10, seed = 1, samples = 64, episodes = 1, team = 0;
  uint32_t workgroup = 0, in_flight = sim::kDefaultInFlight, per_submit = sim::kDefaultPerSubmit;
  std::string mode = "auto";
  bool check = false, dump_wgsl = false, dump_web = false, quiet = false, no_robustness = false,
       dump_shaders = false, bandwidth = false, ga_kernels = false;
  std::string json_path, data_path, submit;
  std::vector<std::string> overrides;  // NAME=VALUE
};

// --override NAME=VALUE (a WGSL override constant of the definition: a number, true or false).
std::map<std::string, double> parse_overrides(const std::vector<std::string>& items) {
  std::map<std::string, double> out;
  for (auto& item : items) {
    const auto eq = item.find('=');
    const std::string name = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    char* end = nullptr;
    const double v = value == "true" ? 1 : value == "false" ? 0 : std::strtod(value.c_str(), &end);
    if (name.empty() || value.empty() || (end && *end != '\0'))
      throw Error("--override '" + item + "': expected NAME=VALUE with a number, true or false");
    out[name] = v;
  }
  return out;
}

// A workload file's path (it names a .wgsl file or a folder) rather than a built-in's name.
bool is_workload_file(const std::string& arg) {
  return arg.ends_with(".wgsl") || arg.find('/') != std::string::npos;
}

void run_sim(const SimOptions& o, const GlobalOptions& g) {
  sim::Workload from_file;
  if (is_workload_file(o.workload))
    from_file =
        sim::load_workload_file(o.workload, o.dump_web ? sim::References::skip : sim::References::resolve);
  const auto& w = is_workload_file(o.workload) ? from_file : sim::find_workload(o.workload);
  if (o.dump_web) {
    std::printf("%s\n", sim::web_workload(w).dump(1).c_str());
    return;
  }
  const bool auto_mode = o.mode == "auto";
  if (o.dump_wgsl) {
    const auto s = auto_mode || o.mode == "all" ? fuse::Strategy::Fused : fuse::parse_strategy(o.mode);
    std::printf("%s", fuse::generated_source(w.spec, s).c_str());
    return;
  }
  sim::SimReportOptions r{.all_modes = o.mode == "all",
                          .generations = o.generations,
                          .seed = o.seed,
                          .samples = o.samples,
                          .check = o.check || !o.submit.empty(),
                          .quiet = o.quiet};
  if (!auto_mode && !r.all_modes) r.modes = {fuse::parse_strategy(o.mode)};

  auto copts = g.context_options();
  if (o.no_robustness) copts.enabled_toggles.push_back("disable_robustness");
  if (o.dump_shaders) {
    copts.enabled_toggles.push_back("dump_shaders");
    webgpu::set_verbose(true);  // Dawn logs the shaders; --verbose's route to stderr
  }
  gpu::Context ctx(copts);
  r.in_flight = o.in_flight;
  r.ga_kernels = o.ga_kernels;
  r.per_submit = o.per_submit;
  r.robustness_disabled = o.no_robustness;
  if (o.bandwidth)
    r.copy_gb_per_s = gpu::copy_kernel_bandwidth_gbs(ctx, ctx.adapter().is_cpu ? 4u << 20 : 256u << 20, 5);
  auto spec = w.spec;
  if (o.workgroup) spec.workgroup_size = spec.team_workgroup_size = o.workgroup;
  const uint32_t pop = o.pop ? o.pop : w.default_pop;
  const auto choice = fuse::choose_auto(ctx, spec, pop);
  if (auto_mode) {
    r.modes = {choice.strategy};
    r.auto_why = choice.why;
  } else if (r.all_modes) {
    for (auto& row : fuse::strategies())
      if (fuse::offered(ctx, row.id)) r.modes.push_back(row.id);
  } else {
    fuse::require_offered(ctx, r.modes[0]);
  }
  // The team size: --team, else auto's choice (also for --mode team and all).
  const uint32_t team = o.team ? o.team : choice.team;
  sim::SimRunner runner(ctx, w, pop, o.steps ? o.steps : w.default_steps, o.seed, o.episodes, team,
                        o.workgroup, parse_overrides(o.overrides));
  if (!o.data_path.empty()) {
    if (!w.data) throw Error("--write-data: workload '" + w.name + "' has no data");
    sim::write_records(runner.data().records, o.data_path);
  }
  const auto& a = ctx.adapter();
  auto j = sim::run_and_report(runner, r, a.device + " (" + a.backend + ", " + a.adapter_type + ")",
                               adapter_json(ctx));
  if (o.bandwidth) {
    // What one timed pass over the genomes' size costs at best: the evaluation's real bound.
    const uint64_t bytes = runner.genome_bytes();
    std::printf(
        "\n  one dispatch per timed pass over the genomes' %.4g MB, median us: warm / right after a write\n"
        "  of the buffer read (as the GA's) / after evicting L2, and GB/s read after the write:\n",
        bytes / 1e6);
    for (auto& p : bench::same_size_bound(ctx, bytes, 20)) {
      std::printf("    %-44s %7.2f / %7.2f / %7.2f  (%.4g GB/s)\n", p.name.c_str(), p.warm_us, p.written_us,
                  p.cold_us, bytes / (p.written_us * 1e3));
      j["same_size_bound"].push_back(
          {{"name", p.name}, {"warm_us", p.warm_us}, {"written_us", p.written_us}, {"cold_us", p.cold_us}});
    }
  }
  if (!o.json_path.empty()) {
    std::ofstream f(o.json_path);
    if (!f) throw Error("cannot write JSON to '" + o.json_path + "'");
    f << j.dump(2) << "\n";
  }
  if (r.check && !j["check"]["pass"].get<bool>()) throw Error("sim --check failed for '" + w.name + "'");
  if (!o.submit.empty())
    submit_native(o.submit, ctx, sim_submission_results(j, is_workload_file(o.workload)));
}

}  // namespace

void add_sim(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand(
      "sim", "Evolve policies on a sequential simulation: per-step vs batched vs fused vs team execution");
  static SimOptions o;
  std::string names;
  for (auto& w : sim::workloads()) names += (names.empty() ? "" : " | ") + w.name;
  cmd->add_option("workload", o.workload, names + " | FILE.wgsl (a workload file: docs/SIMULATIONS.md)")
      ->required();
  cmd->add_option("--pop", o.pop, "population (default: the workload's)")->check(CLI::PositiveNumber);
  cmd->add_option("--steps", o.steps, "episode length L (default: the workload's)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--episodes", o.episodes,
                  "fitness = mean return over N start states, the same for every individual, drawn afresh "
                  "each generation")
      ->check(CLI::Range(1u, fuse::kMaxEpisodes))
      ->capture_default_str();
  cmd->add_option("--team", o.team,
                  "invocations per individual of the team strategy, a power of two (default: auto's choice)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--generations", o.generations, "timed generations per mode")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  std::vector<std::string> modes;
  std::string mode_help;
  for (auto& row : fuse::strategies()) {
    modes.emplace_back(row.name);
    mode_help += std::string(row.name) + (row.optional ? " (where the adapter has subgroups)" : "") + " | ";
  }
  modes.emplace_back("auto");
  modes.emplace_back("all");
  cmd->add_option("--mode", o.mode,
                  mode_help +
                      "auto (a strategy and team size from the population and the adapter) | all "
                      "(every strategy the adapter can run)")
      ->check(CLI::IsMember(modes))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "seed of the population, initial states, GA and market data")
      ->capture_default_str();
  cmd->add_option("--samples", o.samples, "individuals compared with the CPU reference and written to JSON")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--workgroup", o.workgroup,
                  "invocations per workgroup, a power of two (default: the workload's)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--in-flight", o.in_flight,
                  "generations submitted before the oldest one's statistics are read back (1: one at a time)")
      ->check(CLI::Range(1u, 8u))
      ->capture_default_str();
  cmd->add_option("--per-submit", o.per_submit,
                  "generations recorded into one command buffer, each with its statistics read back "
                  "(--in-flight then counts command buffers)")
      ->check(CLI::Range(1u, sim::kMaxPerSubmit))
      ->capture_default_str();
  cmd->add_flag("--time-ga-kernels", o.ga_kernels,
                "time each GA kernel (reduce, select, breed) in its own pass: gpu_ga_kernel_ms in the JSON");
  cmd->add_option("--override", o.overrides,
                  "NAME=VALUE: a WGSL override constant of the workload's kernels (e.g. MARKET_PREFETCH=0)");
  cmd->add_flag("--unsafe-no-robustness", o.no_robustness,
                "native only, to measure its cost: Dawn's disable_robustness toggle (out-of-bounds shader "
                "accesses become undefined; printed in the report)");
  cmd->add_flag("--dump-shaders", o.dump_shaders,
                "Dawn's dump_shaders toggle: each compiled shader on stderr");
  cmd->add_flag("--bandwidth", o.bandwidth,
                "measure a copy kernel's bandwidth and report the evaluation's genome reads against it");
  cmd->add_flag("--check", o.check, "check the strategies against each other and the CPU reference");
  cmd->add_option("--json", o.json_path, "write the results as JSON to FILE");
  cmd->add_option("--submit", o.submit,
                  "post the results (checked: implies --check) to a wgfuse serve at URL (http://host:port)");
  cmd->add_option("--write-data", o.data_path, "market: write the price records (f32, steps x 22) to FILE");
  cmd->add_flag("--dump-wgsl", o.dump_wgsl, "print the generated WGSL of the workload and exit");
  cmd->add_flag("--dump-web", o.dump_web,
                "print what `wgfuse serve` answers the playground for the workload (POST /api/sim/workload: "
                "its modules and layout, as JSON) and exit");
  cmd->add_flag("--quiet", o.quiet, "no progress lines");
  cmd->callback([&g] { run_sim(o, g); });
}

}  // namespace wgfuse::cli
