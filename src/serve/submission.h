// The submission JSON of POST /api/results (schema_version 1, docs/WEB_API.md): its validation
// and plausibility checks. A rejection names the field, e.g. "results[2].median: must be >= min".
#pragma once

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace wgfuse::serve {

class ValidationError : public Error {
 public:
  using Error::Error;
};

struct SubmissionLimits {
  static constexpr size_t max_results = 256;
  static constexpr size_t max_samples = 10000;
  static constexpr size_t max_string = 256;
  static constexpr size_t max_list = 256;  // adapter features, sizes, limits entries
  static constexpr double min_speedup = 0.01, max_speedup = 10000;
};

// Throws ValidationError naming the first offending field.
void validate_submission(const nlohmann::json& submission);

}  // namespace wgfuse::serve
