// A workload file's CPU reference written as a Python script ("reference": {"python": "FILE.py"},
// docs/SIMULATIONS.md "Workload files"): one `python3 FILE.py` process per workload, started on the
// first episode asked for and kept, answering one JSON line per episode on its standard output:
//   wgfuse -> script: {"genome": [...], "steps": L, "seed": S, "generation": G, "episode": E,
//                      "individual": I, "data": [...] (only where the workload has per-step data)}
//   script -> wgfuse: {"fitness": F} or {"fitness": F, "margin": M} (the decision margin, reference.h)
// examples/sim/wgfuse_sim.py holds the loop and the RNG a script needs.
#pragma once

#include <string>

#include "sim/workloads.h"

namespace wgfuse::sim {

// The reference episode function of the script at `path`; `where` names the header field for
// messages. Throws Error when the script does not exist; a script that fails later (exits, or
// answers anything but the line above) throws Error naming it and what it said.
std::function<ReferenceRun(const Episode&)> script_reference(const std::string& path,
                                                             const std::string& where);

}  // namespace wgfuse::sim
