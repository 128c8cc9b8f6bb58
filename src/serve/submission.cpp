#include "serve/submission.h"

#include <cmath>
#include <string>

namespace wgfuse::serve {
namespace {

using nlohmann::json;
using L = SubmissionLimits;

[[noreturn]] void reject(const std::string& field, const std::string& why) {
  throw ValidationError(field + ": " + why);
}

const char* type_name(const json& v) {
  return v.type_name();
}

const json& member(const json& object, const std::string& path, const char* key) {
  auto it = object.find(key);
  if (it == object.end()) reject(path + (path.empty() ? "" : ".") + key, "missing");
  return *it;
}

std::string join(const std::string& path, const char* key) {
  return path.empty() ? key : path + "." + key;
}

void check_object(const json& v, const std::string& field) {
  if (!v.is_object()) reject(field, std::string("must be an object, not ") + type_name(v));
}

std::string check_string(const json& v, const std::string& field) {
  if (!v.is_string()) reject(field, std::string("must be a string, not ") + type_name(v));
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > L::max_string)
    reject(field,
           "longer than " + std::to_string(L::max_string) + " characters (" + std::to_string(s.size()) + ")");
  return s;
}

double check_number(const json& v, const std::string& field) {
  if (!v.is_number()) reject(field, std::string("must be a number, not ") + type_name(v));
  double x = v.get<double>();
  if (!std::isfinite(x)) reject(field, "must be finite");
  return x;
}

void check_count(const json& v, const std::string& field) {
  if (!v.is_number_integer()) reject(field, std::string("must be an integer, not ") + type_name(v));
  if (v.is_number_unsigned()) return;
  if (v.get<int64_t>() < 0) reject(field, "must be >= 0");
}

void check_one_of(const std::string& s, std::initializer_list<const char*> allowed,
                  const std::string& field) {
  std::string list;
  for (auto* a : allowed) {
    if (s == a) return;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  reject(field, "'" + s + "' is not one of " + list);
}

// An object of at most max_list entries, short keys and finite numbers (sizes, adapter limits).
void check_flat_object(const json& v, const std::string& field) {
  check_object(v, field);
  if (v.size() > L::max_list) reject(field, "more than " + std::to_string(L::max_list) + " entries");
  for (auto& [key, value] : v.items()) {
    const std::string at = field + "." + key;
    if (key.size() > L::max_string)
      reject(field, "a key longer than " + std::to_string(L::max_string) + " characters");
    check_number(value, at);
  }
}

void check_adapter(const json& adapter) {
  check_object(adapter, "adapter");
  for (const char* key : {"vendor", "architecture", "device", "description", "backend"})
    check_string(member(adapter, "adapter", key), join("adapter", key));
  if (auto it = adapter.find("features"); it != adapter.end()) {
    if (!it->is_array()) reject("adapter.features", std::string("must be an array, not ") + type_name(*it));
    if (it->size() > L::max_list)
      reject("adapter.features", "more than " + std::to_string(L::max_list) + " entries");
    for (size_t k = 0; k < it->size(); ++k)
      check_string((*it)[k], "adapter.features[" + std::to_string(k) + "]");
  }
  if (auto it = adapter.find("limits"); it != adapter.end()) check_flat_object(*it, "adapter.limits");
}

void check_nullable_number(const json& result, const std::string& path, const char* key) {
  const json& v = member(result, path, key);
  if (v.is_null()) return;
  if (check_number(v, join(path, key)) < 0) reject(join(path, key), "must be >= 0");
}

void check_result(const json& r, const std::string& path) {
  check_object(r, path);
  check_one_of(check_string(member(r, path, "suite"), join(path, "suite")),
               {"dispatch", "chain", "sim", "tiny"}, join(path, "suite"));
  if (check_string(member(r, path, "name"), join(path, "name")).empty())
    reject(join(path, "name"), "must not be empty");
  const std::string version = check_string(member(r, path, "kernel_version"), join(path, "kernel_version"));
  if (version.size() != 16 || version.find_first_not_of("0123456789abcdef") != std::string::npos)
    reject(join(path, "kernel_version"),
           "must be 16 lower-case hex digits (GET /kernels/index.json \"version\")");
  check_flat_object(member(r, path, "sizes"), join(path, "sizes"));
  check_one_of(check_string(member(r, path, "unit"), join(path, "unit")),
               {"us", "ms", "tok/s", "gen/s", "GB/s"}, join(path, "unit"));

  const double median = check_number(member(r, path, "median"), join(path, "median"));
  const double min = check_number(member(r, path, "min"), join(path, "min"));
  const double max = check_number(member(r, path, "max"), join(path, "max"));
  const double std = check_number(member(r, path, "std"), join(path, "std"));
  if (median < min) reject(join(path, "median"), "must be >= min");
  if (median > max) reject(join(path, "median"), "must be <= max");
  if (std < 0) reject(join(path, "std"), "must be >= 0");

  const json& samples = member(r, path, "samples");
  const std::string samples_at = join(path, "samples");
  if (!samples.is_array()) reject(samples_at, std::string("must be an array, not ") + type_name(samples));
  if (samples.empty()) reject(samples_at, "must not be empty");
  if (samples.size() > L::max_samples)
    reject(samples_at, "more than " + std::to_string(L::max_samples) + " samples (" +
                           std::to_string(samples.size()) + ")");
  for (size_t k = 0; k < samples.size(); ++k) {
    const std::string at = samples_at + "[" + std::to_string(k) + "]";
    double x = check_number(samples[k], at);
    if (x < min || x > max) reject(at, "outside [min, max]");
  }

  check_count(member(r, path, "dispatches"), join(path, "dispatches"));
  check_count(member(r, path, "submits"), join(path, "submits"));

  const json& speedup = member(r, path, "speedup");
  const json& baseline = member(r, path, "baseline");
  if (speedup.is_null() != baseline.is_null())
    reject(join(path, speedup.is_null() ? "baseline" : "speedup"),
           "speedup and baseline are both null or both set");
  if (!speedup.is_null()) {
    double s = check_number(speedup, join(path, "speedup"));
    if (s < L::min_speedup || s > L::max_speedup) reject(join(path, "speedup"), "must be within 0.01..10000");
    check_string(baseline, join(path, "baseline"));
  }
  check_nullable_number(r, path, "bandwidth_gbs");
  check_nullable_number(r, path, "bound_gbs");

  const std::string eq_at = join(path, "equivalence");
  const json& eq = member(r, path, "equivalence");
  if (eq.is_null()) reject(eq_at, "missing (a result without its equivalence check is not accepted)");
  check_object(eq, eq_at);
  const json& passed = member(eq, eq_at, "passed");
  if (!passed.is_boolean())
    reject(join(eq_at, "passed"), std::string("must be a boolean, not ") + type_name(passed));
  if (!passed.get<bool>())
    reject(join(eq_at, "passed"), "the equivalence check failed; the result is not accepted");
  check_string(member(eq, eq_at, "compared"), join(eq_at, "compared"));
  for (const char* key : {"max_abs_diff", "tolerance"})
    if (check_number(member(eq, eq_at, key), join(eq_at, key)) < 0) reject(join(eq_at, key), "must be >= 0");
}

}  // namespace

void validate_submission(const json& s) {
  if (!s.is_object()) reject("body", std::string("must be a JSON object, not ") + type_name(s));
  const json& version = member(s, "", "schema_version");
  if (!version.is_number_integer() || version.get<int64_t>() != 1) reject("schema_version", "must be 1");
  const std::string source = check_string(member(s, "", "source"), "source");
  check_one_of(source, {"browser", "native"}, "source");
  check_string(member(s, "", "client_version"), "client_version");
  check_adapter(member(s, "", "adapter"));
  const json& browser = member(s, "", "browser");
  if (source == "native") {
    if (!browser.is_null()) reject("browser", "must be null when source is \"native\"");
  } else {
    check_object(browser, "browser");
    check_string(member(browser, "browser", "name"), "browser.name");
    check_string(member(browser, "browser", "version"), "browser.version");
  }
  check_string(member(s, "", "os"), "os");
  const json& results = member(s, "", "results");
  if (!results.is_array()) reject("results", std::string("must be an array, not ") + type_name(results));
  if (results.empty()) reject("results", "must not be empty");
  if (results.size() > L::max_results)
    reject("results", "more than " + std::to_string(L::max_results) + " results (" +
                          std::to_string(results.size()) + ")");
  for (size_t k = 0; k < results.size(); ++k) check_result(results[k], "results[" + std::to_string(k) + "]");
}

}  // namespace wgfuse::serve
