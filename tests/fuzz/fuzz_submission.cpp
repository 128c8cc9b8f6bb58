// libFuzzer target: a POST /api/results body through what the server does with it before storing
// (parse with the depth bound, validate, flag). Any outcome but a submission or a
// ValidationError is a finding, and so is an accepted submission that breaks what validation
// promises the store.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "serve/submission.h"

namespace {

using nlohmann::json;

// Every string of an accepted submission is free of control characters and within the limit.
void check_strings(const json& v) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (wgfuse::serve::without_control_characters(s) != s ||
        wgfuse::serve::utf8_length(s) > wgfuse::serve::SubmissionLimits::max_string)
      __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  try {
    json s = wgfuse::serve::parse_submission_body(body);
    wgfuse::serve::validate_submission(s);
    wgfuse::serve::flag_implausible(s, "0123456789abcdef");
    for (const char* key : {"client_version", "os"}) check_strings(s[key]);
    for (auto& [key, value] : s["adapter"].items()) check_strings(value);
    for (const json& r : s["results"]) {
      for (const char* key : {"suite", "name", "unit", "kernel_version"}) check_strings(r[key]);
      if (!r["flags"].is_array()) __builtin_trap();
      (void)r.dump();  // as the store writes it: must not throw on a validated submission
      (void)r["equivalence"].dump();
    }
  } catch (const wgfuse::serve::ValidationError&) {
  }
  return 0;
}
