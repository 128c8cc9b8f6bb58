// The report of `wgfuse sim`: the run of each strategy, the table of generation rates with the
// dispatches and submits behind them, the speedups, the best-fitness trajectory, a sample of
// generation-0 fitness beside the CPU reference, and (--check) the verdicts of the equivalence
// checks; as text on stdout and as JSON (read by bench/baselines/sim_report.py).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuse/sim_program.h"
#include "sim/runner.h"

namespace wgfuse::sim {

struct SimReportOptions {
  std::vector<fuse::Strategy> modes;  // run in this order
  bool all_modes = false;             // the user asked for every strategy (--mode all)
  std::string auto_why;               // --mode auto: why it chose modes[0] (and the team size)
  uint32_t generations = 10;          // timed generations per mode
  uint32_t seed = 1;
  uint32_t samples = 64;                    // individuals compared with the CPU reference and written to JSON
  bool check = false;                       // run the equivalence checks
  bool quiet = false;                       // no progress lines on stderr
  uint32_t in_flight = kDefaultInFlight;    // generations in flight (SimRunner::run)
  uint32_t per_submit = kDefaultPerSubmit;  // generations per command buffer (SimRunner::run)
  bool ga_kernels = false;                  // time each GA kernel in its own pass (SimRunner::run)
  bool robustness_disabled = false;         // the device was created with Dawn's disable_robustness
  double copy_gb_per_s = 0;  // a copy kernel's bandwidth on this device (0: not measured), against
                             // which the evaluation's reading of the genomes is reported
};

// Compiles and runs every mode of `o` on `runner`, printing the report as it goes. Returns the
// JSON document; with o.check, its "check"/"pass" says whether every check passed.
// `adapter_line` describes the adapter for the text header, `adapter` for the JSON.
nlohmann::json run_and_report(SimRunner& runner, const SimReportOptions& o, const std::string& adapter_line,
                              const nlohmann::json& adapter);

}  // namespace wgfuse::sim
