// Persistent decode (issue 9, experimental): one dispatch per token whose workgroups stay resident
// and meet at grid barriers between stages (kernels/llm_persistent.wgsl says what WebGPU does not
// promise and why each check exists). This file holds the checks that must pass before such a
// dispatch is trusted on a device; the decode itself is not built yet.
#pragma once

#include <cstdint>
#include <string>

#include "gpu/context.h"

namespace wgfuse::llm {

struct GridSyncCheck {
  uint32_t workgroups = 0;
  bool co_resident = false;  // the probe: every workgroup saw all others arrive within the spin limit
  bool visible = false;      // the exchange: every value read across a barrier matched the reference
  std::string message;       // what failed (empty when both passed), for the fallback notice
  bool ok() const { return co_resident && visible; }
};

// Runs the co-residency probe with `workgroups` workgroups of `wg` invocations, then, if it passed,
// `stages` rounds of cross-workgroup exchange compared with a double-precision reference.
// `spin_limit`: atomic loads a workgroup spends waiting at one barrier before giving up.
GridSyncCheck check_grid_sync(gpu::Context& ctx, uint32_t workgroups, uint32_t wg = 64, uint32_t stages = 4,
                              uint32_t spin_limit = 65536);

}  // namespace wgfuse::llm
