#include "fuse/strategy.h"

#include <array>

#include "util/error.h"

namespace wgfuse::fuse {

namespace {

constexpr std::array<StrategyRow, 4> kStrategies = {{
    {.id = Strategy::PerStep,
     .name = "perstep",
     .entry = "sim_step_main",
     .dispatches = Dispatches::InitStepsFitness,
     .grid = Grid::PerIndividual,
     .wait_each_dispatch = true,
     .optional = false,
     .check_rtol = -1,
     .summary = "one dispatch per time step, a submit and a wait after each"},
    {.id = Strategy::Batched,
     .name = "batched",
     .entry = "sim_step_main",
     .dispatches = Dispatches::InitStepsFitness,
     .grid = Grid::PerIndividual,
     .wait_each_dispatch = false,
     .optional = false,
     .check_rtol = 0,  // the same dispatches in the same order
     .summary = "per-step's dispatches in one command buffer, one wait"},
    {.id = Strategy::Fused,
     .name = "fused",
     .entry = "sim_fused_main",
     .dispatches = Dispatches::One,
     .grid = Grid::PerIndividual,
     .wait_each_dispatch = false,
     .optional = false,
     .check_rtol = 1e-5,  // the same functions in one loop: contraction may differ
     .summary = "one dispatch per episode, the step loop in the shader"},
    {.id = Strategy::Team,
     .name = "team",
     .entry = "sim_team_main",
     .dispatches = Dispatches::One,
     .grid = Grid::PerTeam,
     .wait_each_dispatch = false,
     .optional = true,
     .check_rtol = 1e-5,  // the same functions called from another kernel, as for fused
     .summary = "one dispatch per episode, a team of invocations per individual (subgroups)"},
}};

}  // namespace

std::span<const StrategyRow> strategies() {
  return kStrategies;
}

const StrategyRow& row(Strategy s) {
  for (auto& r : kStrategies)
    if (r.id == s) return r;
  throw Error("strategy " + std::to_string(int(s)) + " has no row in the strategy table");
}

std::string to_string(Strategy s) {
  return std::string(row(s).name);
}

std::string strategy_names(std::string_view sep) {
  std::string names;
  for (auto& r : kStrategies) names += (names.empty() ? "" : std::string(sep)) + std::string(r.name);
  return names;
}

Strategy parse_strategy(std::string_view s) {
  for (auto& r : kStrategies)
    if (r.name == s) return r.id;
  throw Error("unknown strategy '" + std::string(s) + "' (known: " + strategy_names(", ") + ")");
}

uint64_t dispatch_count(Strategy s, uint32_t steps, uint32_t episodes) {
  return row(s).dispatches == Dispatches::One ? 1 : uint64_t(episodes) * (uint64_t(steps) + 1) + 1;
}

}  // namespace wgfuse::fuse
