// wgfuse sim: evolve neural policies on sequential simulations, each individual's whole episode
// run per step (one dispatch + wait per step), batched (one command buffer), fused (one
// dispatch for the episode) or as a team (one dispatch, a team of invocations per individual,
// where the adapter has subgroups), --mode auto choosing; with the fitness of all checked
// against each other and against a double-precision CPU reference. docs/SIMULATIONS.md
// describes the workloads.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "fuse/sim_program.h"
#include "sim/report.h"
#include "sim/runner.h"
#include "sim/workloads.h"
#include "submit.h"
#include "util/error.h"

namespace wgfuse::cli {
namespace {

struct SimOptions {
  std::string workload;
  uint32_t pop = 0, steps = 0, generations = 10, seed = 1, samples = 64, episodes = 1, team = 0;
  std::string mode = "auto";
  bool check = false, dump_wgsl = false, quiet = false;
  std::string json_path, data_path, submit;
};

void run_sim(const SimOptions& o, const GlobalOptions& g) {
  const auto& w = sim::find_workload(o.workload);
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

  gpu::Context ctx(g.context_options());
  const uint32_t pop = o.pop ? o.pop : w.default_pop;
  const auto choice = fuse::choose_auto(ctx, w.spec, pop);
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
  sim::SimRunner runner(ctx, w, pop, o.steps ? o.steps : w.default_steps, o.seed, o.episodes, team);
  if (!o.data_path.empty()) {
    if (!w.data) throw Error("--write-data: workload '" + w.name + "' has no data");
    sim::write_records(runner.data().records, o.data_path);
  }
  const auto& a = ctx.adapter();
  auto j = sim::run_and_report(runner, r, a.device + " (" + a.backend + ", " + a.adapter_type + ")",
                               adapter_json(ctx));
  if (!o.json_path.empty()) {
    std::ofstream f(o.json_path);
    if (!f) throw Error("cannot write JSON to '" + o.json_path + "'");
    f << j.dump(2) << "\n";
  }
  if (r.check && !j["check"]["pass"].get<bool>()) throw Error("sim --check failed for '" + w.name + "'");
  if (!o.submit.empty()) submit_native(o.submit, ctx, sim_submission_results(j));
}

}  // namespace

void add_sim(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand(
      "sim", "Evolve policies on a sequential simulation: per-step vs batched vs fused vs team execution");
  static SimOptions o;
  std::string names;
  for (auto& w : sim::workloads()) names += (names.empty() ? "" : " | ") + w.name;
  cmd->add_option("workload", o.workload, names)->required();
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
  cmd->add_flag("--check", o.check, "check the strategies against each other and the CPU reference");
  cmd->add_option("--json", o.json_path, "write the results as JSON to FILE");
  cmd->add_option("--submit", o.submit,
                  "post the results (checked: implies --check) to a wgfuse serve at URL (http://host:port)");
  cmd->add_option("--write-data", o.data_path, "market: write the price records (f32, steps x 22) to FILE");
  cmd->add_flag("--dump-wgsl", o.dump_wgsl, "print the generated WGSL of the workload and exit");
  cmd->add_flag("--quiet", o.quiet, "no progress lines");
  cmd->callback([&g] { run_sim(o, g); });
}

}  // namespace wgfuse::cli
