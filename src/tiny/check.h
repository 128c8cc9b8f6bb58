// --check and the tests: each strategy's tokens against the double-precision reference exactly,
// its logits within a relative tolerance (f32 arithmetic against double).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tiny/runner.h"
#include "tiny/tiny_model.h"

namespace wgfuse::tiny {

// |gpu - reference| <= kLogitTolerance * max |reference| over that step's 256 logits: relative to
// the step's scale, since a single logit may be arbitrarily close to zero.
inline constexpr double kLogitTolerance = 1e-4;

// The sequences a check covers: all of them up to 64, else 64 spread evenly plus the first and
// the last (deterministic).
std::vector<uint32_t> checked_sequences(uint32_t sequences);

// The reference generations of the checked sequences, computed once for every strategy (on all
// CPU cores).
struct ReferenceSet {
  std::vector<uint32_t> sequences;
  std::vector<Generation> generations;  // one per entry of `sequences`
};
ReferenceSet reference_set(const TinyModel& m, std::string_view prompt, uint32_t tokens, uint32_t sequences);

struct CheckResult {
  bool ok = true;
  uint32_t sequences = 0;     // checked
  double max_error = 0;       // largest |gpu - ref| / step scale seen (NaN: an unwritten logit)
  std::string first_failure;  // sequence, step, expected and actual
};
// Compares the runner's last run with `ref`.
CheckResult check_run(TinyRunner& runner, const ReferenceSet& ref);

}  // namespace wgfuse::tiny
