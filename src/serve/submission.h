// The submission JSON of POST /api/results (schema_version 1, docs/WEB_API.md): parsing, validation
// and plausibility. A rejection names the field, e.g. "results[2].median: must be >= min"; a result
// that is well-formed but implausible is kept, flagged with the reasons (docs/WEB_API.md's rules).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace wgfuse::serve {

class ValidationError : public Error {
 public:
  using Error::Error;
};

struct SubmissionLimits {
  static constexpr size_t max_results = 256;
  static constexpr size_t max_samples = 10000;
  static constexpr size_t max_string = 256;  // characters (code points), after sanitising
  static constexpr int max_depth = 8;        // nesting of arrays and objects; the schema needs 5
  static constexpr size_t max_list = 256;    // adapter features, sizes, limits entries
  static constexpr double min_speedup = 0.01, max_speedup = 10000;
};

// Plausibility bounds: a result beyond them is flagged (kept, and left out of the summary).
struct PlausibilityLimits {
  static constexpr double bandwidth_margin = 1.5;  // achieved GB/s over the adapter's copy bound
  static constexpr double max_gbs = 20000;         // beyond any GPU's memory bandwidth
  static constexpr double max_tok_s = 1e6, max_gen_s = 1e8;
  static constexpr double min_time_us = 1e-3;             // a timed repetition shorter than 1 ns
  static constexpr double max_counter = 1e9;              // dispatches or submits per timed repetition
  static constexpr double max_size = 9007199254740992.0;  // 2^53: a size must be an exact count
};

// What the llm suite's results are checked against: the greedy generation the model this server
// serves (`serve --model`) made with the native engine at start (GET /model/check.json). An llm
// result names the model ("<model> prefill", "<model> decode") and carries the browser's tokens in
// equivalence.tokens; the server compares them itself, so a false "passed" is refused and a
// failed check is stored (flagged) as the evidence it is.
struct LlmCheck {
  std::string model;  // the served model's name (GET /model/index.json "name")
  std::vector<int64_t> prompt_ids, expected_ids;
};

// A POST body as JSON: UTF-8, at most max_depth levels deep (checked before the parser recurses or
// anything stores it). Throws ValidationError naming "body", the limit and what needs how much.
nlohmann::json parse_json_body(std::string_view body, int max_depth, const std::string& needed = "");
nlohmann::json parse_submission_body(std::string_view body);  // SubmissionLimits::max_depth

// Throws ValidationError naming the first offending field. Sanitises strings in place: bidi and
// other control characters are removed, then the length is checked in characters; an empty
// adapter.device becomes "<vendor> <architecture>" (else the description). llm results are refused
// without `llm` (a server serving no model cannot check them).
void validate_submission(nlohmann::json& submission, const LlmCheck* llm = nullptr);

// Sets each result's "flags" to the reasons it is implausible (an empty array when it is not),
// `kernel_version` being the version this server serves. For a validated submission.
void flag_implausible(nlohmann::json& submission, const std::string& kernel_version);

// `text` without bidi controls (U+061C, U+200E/F, U+202A..E, U+2066..9) and C0/C1 controls.
std::string without_control_characters(std::string_view text);
// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool is_utf8(std::string_view text);
// Code points in UTF-8 `text` (bytes that do not continue a sequence).
size_t utf8_length(std::string_view text);

}  // namespace wgfuse::serve
