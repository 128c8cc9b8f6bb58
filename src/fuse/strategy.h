// The execution strategies of a program written once: each is a row of one table {name, entry
// point, dispatches, grid}, which the programs (SimProgram), the CLI's lists and `--check` read,
// so a strategy is added in one place.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace wgfuse::fuse {

enum class Strategy { PerStep, Batched, Fused, Team };

// How many dispatches one evaluation of `steps` time steps takes.
enum class Dispatches {
  InitStepsFitness,  // init, one per time step of each episode, one between episodes, fitness:
                     // episodes x (steps + 1) + 1
  One,               // the whole episode in one dispatch
};

// How the grid covers the individuals.
enum class Grid {
  PerIndividual,  // one invocation per individual, in workgroups of the program's workgroup size
  PerTeam,        // a team of TEAM consecutive invocations per individual, in workgroups of the
                  // program's workgroup size
};

struct StrategyRow {
  Strategy id;
  std::string_view name;   // as the CLI and the JSON spell it
  std::string_view entry;  // the entry point that advances time
  Dispatches dispatches;
  Grid grid;
  bool wait_each_dispatch;  // submit and wait after every dispatch but the last (an eager framework)
  bool optional;            // only where the adapter has the feature it needs (team: subgroups)
  // --check compares the strategy's fitness with the first row's: 0 means bitwise equal; a
  // negative value marks the first row itself.
  double check_rtol;
  std::string_view summary;
};

// Every strategy; the first is the reference of the others in `--check`.
std::span<const StrategyRow> strategies();
const StrategyRow& row(Strategy s);
std::string to_string(Strategy s);
// Throws Error listing the names of the table.
Strategy parse_strategy(std::string_view s);
// The names of the table joined with `sep` (for the CLI's help and checks).
std::string strategy_names(std::string_view sep);
uint64_t dispatch_count(Strategy s, uint32_t steps, uint32_t episodes = 1);

}  // namespace wgfuse::fuse
