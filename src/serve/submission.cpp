#include "serve/submission.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

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

template <typename Json>
Json& member(Json& object, const std::string& path, const char* key) {
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

// The string at `v`, sanitised in place (without control characters), at most max_string characters.
std::string check_string(json& v, const std::string& field) {
  if (!v.is_string()) reject(field, std::string("must be a string, not ") + type_name(v));
  auto& s = v.get_ref<std::string&>();
  s = without_control_characters(s);
  if (size_t n = utf8_length(s); n > L::max_string)
    reject(field, "longer than " + std::to_string(L::max_string) + " characters (" + std::to_string(n) + ")");
  return s;
}

double check_number(const json& v, const std::string& field) {
  if (!v.is_number()) reject(field, std::string("must be a number, not ") + type_name(v));
  double x = v.get<double>();
  if (!std::isfinite(x)) reject(field, "must be finite");
  return x;
}

// A count the databases store as a signed 64-bit integer.
void check_count(const json& v, const std::string& field) {
  if (!v.is_number_integer()) reject(field, std::string("must be an integer, not ") + type_name(v));
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
    reject(field, "must be at most " + std::to_string(INT64_MAX));
  if (!v.is_number_unsigned() && v.get<int64_t>() < 0) reject(field, "must be >= 0");
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

void check_adapter(json& adapter) {
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

// An llm result against the server's own native run: the browser's tokens are compared here, and
// `passed` and `max_abs_diff` (the count of positions that differ) must say what that comparison
// says. Called after the generic checks of the equivalence record.
void check_llm_result(json& r, const std::string& path, const LlmCheck* llm) {
  if (!llm)
    reject(join(path, "suite"),
           "llm results are checked against the model this server serves, and it serves none (start "
           "wgfuse serve with --model)");
  const std::string name = r["name"];
  if (name != llm->model + " prefill" && name != llm->model + " decode")
    reject(join(path, "name"), "'" + name + "' is not a variant of the served model (" + llm->model +
                                   " prefill, " + llm->model + " decode)");
  const std::string eq_at = join(path, "equivalence");
  json& eq = r["equivalence"];
  const std::string at = join(eq_at, "tokens");
  const json& tokens = member(eq, eq_at, "tokens");
  const std::vector<int64_t>& expected = llm->expected_ids;
  if (!tokens.is_array()) reject(at, std::string("must be an array, not ") + type_name(tokens));
  if (tokens.size() != expected.size())
    reject(at, std::to_string(tokens.size()) + " tokens; the check generates " +
                   std::to_string(expected.size()) + " (GET /model/check.json)");
  size_t differ = 0, first = 0;
  for (size_t k = 0; k < tokens.size(); ++k) {
    if (!tokens[k].is_number_integer())
      reject(at + "[" + std::to_string(k) + "]",
             std::string("must be an integer, not ") + type_name(tokens[k]));
    if (tokens[k].get<int64_t>() != expected[k] && differ++ == 0) first = k;
  }
  const std::string counted = std::to_string(differ) + " of " + std::to_string(expected.size());
  if (eq["passed"].get<bool>() != (differ == 0))
    reject(join(eq_at, "passed"), differ ? "true, but the tokens differ from the server's native run (" +
                                               counted + ", from position " + std::to_string(first) + ")"
                                         : "false, but the tokens equal the server's native run");
  if (eq["max_abs_diff"].get<double>() != double(differ))
    reject(join(eq_at, "max_abs_diff"),
           "must count the tokens that differ from the server's native run (" + counted + ")");
  if (eq["tolerance"].get<double>() != 0)
    reject(join(eq_at, "tolerance"), "must be 0 (every token must equal the native run's)");
}

void check_result(json& r, const std::string& path, const LlmCheck* llm) {
  check_object(r, path);
  const std::string suite = check_string(member(r, path, "suite"), join(path, "suite"));
  check_one_of(suite, {"dispatch", "chain", "sim", "sim-file", "tiny", "llm"}, join(path, "suite"));
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
  json& baseline = member(r, path, "baseline");
  if (speedup.is_null() != baseline.is_null())
    reject(join(path, speedup.is_null() ? "speedup" : "baseline"),
           "speedup and baseline are both null or both set");
  if (!speedup.is_null()) {
    double s = check_number(speedup, join(path, "speedup"));
    if (s < L::min_speedup || s > L::max_speedup) reject(join(path, "speedup"), "must be within 0.01..10000");
    check_string(baseline, join(path, "baseline"));
  }
  check_nullable_number(r, path, "bandwidth_gbs");
  check_nullable_number(r, path, "bound_gbs");

  const std::string eq_at = join(path, "equivalence");
  json& eq = member(r, path, "equivalence");
  if (eq.is_null()) reject(eq_at, "missing (a result without its equivalence check is not accepted)");
  check_object(eq, eq_at);
  const json& passed = member(eq, eq_at, "passed");
  if (!passed.is_boolean())
    reject(join(eq_at, "passed"), std::string("must be a boolean, not ") + type_name(passed));
  // The llm check is one the server redoes (check_llm_result): a failed one is kept, flagged.
  if (!passed.get<bool>() && suite != "llm")
    reject(join(eq_at, "passed"), "the equivalence check failed; the result is not accepted");
  check_string(member(eq, eq_at, "compared"), join(eq_at, "compared"));
  for (const char* key : {"max_abs_diff", "tolerance"})
    if (check_number(member(eq, eq_at, key), join(eq_at, key)) < 0) reject(join(eq_at, key), "must be >= 0");
  if (auto it = eq.find("relative_tolerance");
      it != eq.end() && check_number(*it, join(eq_at, "relative_tolerance")) < 0)
    reject(join(eq_at, "relative_tolerance"), "must be >= 0");
  if (suite == "llm") check_llm_result(r, path, llm);
}

bool is_control(char32_t c) {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f ||
         (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

std::string format_number(double x) {
  return json(x).dump();
}

// The reasons result `r` (validated) is implausible; docs/WEB_API.md lists the rules.
std::vector<std::string> implausibilities(const json& r, const std::string& kernel_version) {
  using P = PlausibilityLimits;
  std::vector<std::string> why;
  if (r["kernel_version"] != kernel_version)
    why.push_back("kernel_version: " + r["kernel_version"].get<std::string>() +
                  " is not the version this server serves (" + kernel_version + ")");

  std::vector<double> samples = r["samples"].get<std::vector<double>>();
  std::sort(samples.begin(), samples.end());
  const double min = r["min"], max = r["max"], median = r["median"];
  const auto near = [](double a, double b) {
    return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
  };
  if (!near(min, samples.front()))
    why.push_back("min: " + format_number(min) + " is not the smallest sample (" +
                  format_number(samples.front()) + ")");
  if (!near(max, samples.back()))
    why.push_back("max: " + format_number(max) + " is not the largest sample (" +
                  format_number(samples.back()) + ")");
  // Either middle sample (or any value between them) is a median, whatever the client's convention.
  const size_t n = samples.size();
  const double lower = samples[(n - 1) / 2], upper = samples[n / 2];
  if ((median < lower && !near(median, lower)) || (median > upper && !near(median, upper)))
    why.push_back("median: " + format_number(median) + " is not the median of the samples (" +
                  format_number(lower) + (lower == upper ? "" : ".." + format_number(upper)) + ")");

  const std::string unit = r["unit"];
  const bool is_time = unit == "us" || unit == "ms";
  const double floor_in_unit = unit == "ms" ? P::min_time_us / 1000 : P::min_time_us;
  if (is_time && samples.front() < floor_in_unit)
    why.push_back("samples: a repetition of " + format_number(samples.front()) + " " + unit +
                  " is shorter than 1 ns");
  const double ceiling = unit == "GB/s"    ? P::max_gbs
                         : unit == "tok/s" ? P::max_tok_s
                         : unit == "gen/s" ? P::max_gen_s
                                           : 0;
  if (ceiling > 0 && samples.back() > ceiling)
    why.push_back("samples: " + format_number(samples.back()) + " " + unit + " is above " +
                  format_number(ceiling) + " " + unit + ", beyond any GPU");
  if (!is_time && samples.front() <= 0) why.push_back("samples: a rate of 0 " + unit);

  const json& bandwidth = r["bandwidth_gbs"];
  const json& bound = r["bound_gbs"];
  for (const json* v : {&bandwidth, &bound})
    if (!v->is_null() && v->get<double>() > P::max_gbs)
      why.push_back(std::string(v == &bandwidth ? "bandwidth_gbs" : "bound_gbs") + ": " + format_number(*v) +
                    " GB/s is above " + format_number(P::max_gbs) + " GB/s, beyond any GPU");
  if (!bandwidth.is_null() && !bound.is_null() &&
      bandwidth.get<double>() > bound.get<double>() * P::bandwidth_margin)
    why.push_back("bandwidth_gbs: " + format_number(bandwidth) + " GB/s is above the adapter's copy bound (" +
                  format_number(bound) + " GB/s) x " + format_number(P::bandwidth_margin));

  const json& eq = r["equivalence"];
  if (!eq["passed"].get<bool>())
    why.push_back("equivalence.passed: the check failed (" + eq["compared"].get<std::string>() +
                  ", max_abs_diff " + format_number(eq["max_abs_diff"]) + ")");
  const double diff = eq["max_abs_diff"], tolerance = eq["tolerance"];
  if (!eq.contains("relative_tolerance") && diff > tolerance)
    why.push_back("equivalence: passed with max_abs_diff " + format_number(diff) + " above its tolerance " +
                  format_number(tolerance));

  for (const char* key : {"dispatches", "submits"})
    if (r[key].get<double>() > P::max_counter)
      why.push_back(std::string(key) + ": " + r[key].dump() + " per timed repetition is above " +
                    format_number(P::max_counter));
  for (auto& [key, value] : r["sizes"].items()) {
    const double x = value;
    if (x < 0 || x != std::floor(x) || x > P::max_size)
      why.push_back("sizes." + key + ": " + value.dump() + " is not a count (an integer within 0..2^53)");
  }
  return why;
}

}  // namespace

std::string without_control_characters(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t k = 0; k < text.size();) {
    const auto b = static_cast<unsigned char>(text[k]);
    const size_t n = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    char32_t c = n == 1 ? b : char32_t(b & (0x7f >> n));
    for (size_t j = 1; j < n && k + j < text.size(); ++j)
      c = (c << 6) | (static_cast<unsigned char>(text[k + j]) & 0x3f);
    if (!is_control(c)) out.append(text.substr(k, n));
    k += n;
  }
  return out;
}

bool is_utf8(std::string_view text) {
  for (size_t k = 0; k < text.size();) {
    const auto b = static_cast<unsigned char>(text[k]);
    const size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || k + n > text.size()) return false;
    char32_t c = n == 1 ? b : char32_t(b & (0x7f >> n));
    for (size_t j = 1; j < n; ++j) {
      const auto t = static_cast<unsigned char>(text[k + j]);
      if ((t & 0xc0) != 0x80) return false;
      c = (c << 6) | (t & 0x3f);
    }
    static constexpr char32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return false;
    k += n;
  }
  return true;
}

size_t utf8_length(std::string_view text) {
  return size_t(std::count_if(text.begin(), text.end(),
                              [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

json parse_json_body(std::string_view body, int max_depth, const std::string& needed) {
  // Depth first, on the bytes: nothing below (parsing, storing, dumping) then meets deep nesting.
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        reject("body", "nested deeper than " + std::to_string(max_depth) + " levels of arrays and objects" +
                           (needed.empty() ? "" : " (" + needed + ")"));
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  try {
    return json::parse(body);
  } catch (
      const json::exception& e) {  // a syntax error, bytes that are not UTF-8, a number beyond double range
    reject("body", std::string("malformed JSON: ") + e.what());
  }
}

json parse_submission_body(std::string_view body) {
  return parse_json_body(body, L::max_depth, "the submission needs 5");
}

void flag_implausible(json& submission, const std::string& kernel_version) {
  for (json& r : submission["results"]) r["flags"] = implausibilities(r, kernel_version);
}

void validate_submission(json& s, const LlmCheck* llm) {
  if (!s.is_object()) reject("body", std::string("must be a JSON object, not ") + type_name(s));
  const json& version = member(s, "", "schema_version");
  if (!version.is_number_integer() || version.get<int64_t>() != 1) reject("schema_version", "must be 1");
  const std::string source = check_string(member(s, "", "source"), "source");
  check_one_of(source, {"browser", "native"}, "source");
  check_string(member(s, "", "client_version"), "client_version");
  json& adapter = member(s, "", "adapter");
  check_adapter(adapter);
  // Browsers give no device name (Chrome: ""); vendor and architecture identify the GPU instead.
  if (adapter["device"].get_ref<const std::string&>().empty()) {
    std::string name = adapter["vendor"].get<std::string>();
    const std::string& architecture = adapter["architecture"].get_ref<const std::string&>();
    if (!architecture.empty()) name += (name.empty() ? "" : " ") + architecture;
    adapter["device"] = name.empty() ? adapter["description"] : json(name);
  }
  json& browser = member(s, "", "browser");
  if (source == "native") {
    if (!browser.is_null()) reject("browser", "must be null when source is \"native\"");
  } else {
    check_object(browser, "browser");
    check_string(member(browser, "browser", "name"), "browser.name");
    check_string(member(browser, "browser", "version"), "browser.version");
  }
  check_string(member(s, "", "os"), "os");
  json& results = member(s, "", "results");
  if (!results.is_array()) reject("results", std::string("must be an array, not ") + type_name(results));
  if (results.empty()) reject("results", "must not be empty");
  if (results.size() > L::max_results)
    reject("results", "more than " + std::to_string(L::max_results) + " results (" +
                          std::to_string(results.size()) + ")");
  for (size_t k = 0; k < results.size(); ++k)
    check_result(results[k], "results[" + std::to_string(k) + "]", llm);
}

}  // namespace wgfuse::serve
