// The generic loader of workload files (docs/SIMULATIONS.md, "Workload files"): the JSON header
// becomes a Workload, the WGSL below it the definition that fuse::SimProgram compiles. The built-in
// workloads are loaded by it from their embedded files like any other.
#include "sim/workloads.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "gpu/kernel.h"
#include "sim/market_data.h"
#include "sim/reference.h"
#include "sim/script_reference.h"
#include "util/error.h"
#include "util/large_stack.h"

namespace wgfuse::sim {

namespace {

using nlohmann::json;

// The per-step data generators a header may name ("data": NAME).
WorkloadData market_data(uint32_t steps, uint32_t seed) {
  auto records = generate_market(steps, seed).records;
  auto device = device_records(records);
  return {.records = std::move(records),
          .stride = kMarketRecord,
          .device = std::move(device),
          .device_stride = kMarketDeviceRecord};
}
const std::map<std::string, std::function<WorkloadData(uint32_t, uint32_t)>>& data_generators() {
  static const std::map<std::string, std::function<WorkloadData(uint32_t, uint32_t)>> all = {
      {"market", market_data}};
  return all;
}

// The policy libraries a header may name ("policy": NAME): the embedded family it adds. Both
// are the same MLP (genome layout, arithmetic up to the order of the logits' sums, reference):
// sim_mlp_tree sums the logits as a tree, a team's lanes each over their own units.
const std::map<std::string, std::string>& policies() {
  static const std::map<std::string, std::string> all = {{"mlp", "sim_mlp"}, {"mlp_tree", "sim_mlp_tree"}};
  return all;
}
// The hidden units of kernels/sim_mlp.wgsl and sim_mlp_tree.wgsl (MLP_HIDDEN).
constexpr uint32_t kMlpHidden = 16;

template <class Map>
std::string names_of(const Map& m) {
  std::string s;
  for (auto& [k, v] : m) s += (s.empty() ? "" : ", ") + k;
  return s;
}

// Reads the fields of one JSON object of the header, naming the file, the field, what it expects.
class Fields {
 public:
  Fields(const json& j, std::string origin, std::string path, std::set<std::string> known)
      : j_(j), origin_(std::move(origin)), path_(std::move(path)) {
    if (!j.is_object()) fail("", "an object");
    for (auto& [k, v] : j.items())
      if (!known.count(k)) {
        std::string list;
        for (auto& n : known) list += (list.empty() ? "" : ", ") + n;
        throw Error(origin_ + ": header field \"" + path_ + k + "\" is not one of " + list);
      }
  }
  bool has(const std::string& k) const { return j_.contains(k); }
  const json& at(const std::string& k) const { return j_.at(k); }
  std::string name(const std::string& k) const { return path_ + k; }

  [[noreturn]] void fail(const std::string& k, const std::string& expected) const {
    const std::string field = path_ + k;
    std::string got = k.empty() ? j_.dump() : j_.contains(k) ? j_.at(k).dump() : "nothing";
    if (got.size() > 60) got = got.substr(0, 57) + "...";
    throw Error(origin_ + ": header field \"" + (field.empty() ? "(the header)" : field) + "\" must be " +
                expected + ", not " + got);
  }
  void require(const std::string& k, const std::string& expected) const {
    if (!has(k)) fail(k, expected);
  }
  uint64_t integer(const std::string& k, uint64_t lo, uint64_t hi, std::optional<uint64_t> def = {}) const {
    const std::string expected = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    if (!has(k)) {
      if (def) return *def;
      fail(k, expected);
    }
    const auto& v = j_.at(k);
    if (!v.is_number_integer() || v.get<int64_t>() < int64_t(lo) || v.get<uint64_t>() > hi) fail(k, expected);
    return v.get<uint64_t>();
  }
  double number(const std::string& k, double lo, double hi, std::optional<double> def = {}) const {
    std::ostringstream os;
    os << "a number from " << lo << " to " << hi;
    if (!has(k)) {
      if (def) return *def;
      fail(k, os.str());
    }
    const auto& v = j_.at(k);
    if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi)) fail(k, os.str());
    return v.get<double>();
  }
  std::string string(const std::string& k, std::optional<std::string> def = {}) const {
    if (!has(k)) {
      if (def) return *def;
      fail(k, "a string");
    }
    if (!j_.at(k).is_string()) fail(k, "a string");
    return j_.at(k).get<std::string>();
  }
  Fields object(const std::string& k, std::set<std::string> known) const {
    static const json empty = json::object();
    if (has(k) && !j_.at(k).is_object()) fail(k, "an object");
    return Fields(has(k) ? j_.at(k) : empty, origin_, path_ + k + ".", std::move(known));
  }

 private:
  const json& j_;
  std::string origin_, path_;
};

// The header: the `///` lines of the file's leading comment block, the marks cut off.
json parse_header(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  std::string line, body;
  bool any = false;
  while (std::getline(in, line)) {
    const auto at = line.find_first_not_of(" \t\r");
    if (at == std::string::npos) continue;
    const std::string_view rest = std::string_view(line).substr(at);
    if (rest.starts_with(kHeaderMark)) {
      body += std::string(rest.substr(kHeaderMark.size())) + "\n";
      any = true;
    } else if (!rest.starts_with("//")) {
      break;
    }
  }
  if (!any)
    throw Error(origin +
                ": no header: a workload file begins with a JSON object in `///` comment lines "
                "(name, state_bytes, genome, defaults, ...; docs/SIMULATIONS.md, \"Workload files\")");
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    throw Error(origin + ": the header (its `///` lines) is not valid JSON: " + e.what());
  }
}

// The text without comments (declarations are searched in it): line comments and block comments,
// which nest in WGSL, each replaced by a space.
std::string without_comments(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "//") == 0) {
      i = std::min(text.find('\n', i), text.size());
      out += ' ';
    } else if (text.compare(i, 2, "/*") == 0) {
      int depth = 0;
      do {
        const bool opens = text.compare(i, 2, "/*") == 0, closes = text.compare(i, 2, "*/") == 0;
        depth += opens ? 1 : closes ? -1 : 0;
        i += opens || closes ? 2 : 1;
      } while (depth > 0 && i < text.size());
      out += ' ';
    } else {
      out += text[i++];
    }
  }
  return out;
}

// The value of `const NAME: u32 = N(u);` in `code`, or nothing.
std::optional<uint32_t> u32_const(const std::string& code, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(code, m, std::regex("const\\s+" + name + R"(\s*:\s*u32\s*=\s*(\d+)u?\s*;)")))
    return std::nullopt;
  return uint32_t(std::stoul(m[1].str()));
}

// WGSL's host-shareable layout of a type: its size and alignment.
struct Layout {
  uint32_t size, align;
};

uint32_t round_up(uint32_t x, uint32_t to) {
  return (x + to - 1) / to * to;
}

std::string trimmed(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::optional<Layout> struct_layout(const std::string& code, const std::string& name, int depth = 0);
// Arrays and structs nest at most this deep in State (each level is a regular expression's pass).
constexpr int kMaxTypeDepth = 8;

// The layout of `type` in `code` (its structs and u32 consts), where it is made of scalars, vectors,
// fixed-size arrays and structs without attributes; nothing otherwise.
std::optional<Layout> type_layout(const std::string& code, std::string type, int depth) {
  if (depth > kMaxTypeDepth) return std::nullopt;
  type = trimmed(type);
  if (type == "f32" || type == "u32" || type == "i32") return Layout{4, 4};
  std::smatch m;
  if (std::regex_match(type, m, std::regex(R"(vec([234])(?:<\s*(?:f32|u32|i32)\s*>|[fui]))"))) {
    const uint32_t n = uint32_t(std::stoul(m[1].str()));
    return Layout{4 * n, n == 2 ? 8u : 16u};
  }
  if (std::regex_match(type, m, std::regex(R"(mat([234])x([234])(?:<\s*f32\s*>|f))"))) {
    const uint32_t columns = uint32_t(std::stoul(m[1].str())), rows = uint32_t(std::stoul(m[2].str()));
    const uint32_t align = rows == 2 ? 8 : 16;  // a column is a vecR
    return Layout{columns * align, align};
  }
  if (std::regex_match(type, m, std::regex(R"(array\s*<\s*([\s\S]+)\s*,\s*(\w+)\s*>)"))) {
    std::optional<uint32_t> count;
    if (std::regex_match(m[2].str(), std::regex(R"(\d+[ui]?)")))
      count = uint32_t(std::stoul(m[2].str()));
    else
      count = u32_const(code, m[2].str());
    const auto element = type_layout(code, m[1].str(), depth + 1);
    if (!count || !element) return std::nullopt;
    return Layout{*count * round_up(element->size, element->align), element->align};
  }
  if (std::regex_match(type, std::regex(R"([A-Za-z_]\w*)"))) return struct_layout(code, type, depth + 1);
  return std::nullopt;
}

std::optional<Layout> struct_layout(const std::string& code, const std::string& name, int depth) {
  // The body up to the first '}' found by hand: a pattern spanning it would rescan the rest of the
  // file from every unclosed `struct NAME {`.
  std::smatch m;
  if (depth > kMaxTypeDepth || !std::regex_search(code, m, std::regex("\\bstruct\\s+" + name + R"(\s*\{)")))
    return std::nullopt;
  const size_t open = size_t(m.position(0) + m.length(0)), close = code.find('}', open);
  if (close == std::string::npos) return std::nullopt;
  const std::string body = code.substr(open, close - open);
  if (body.find('@') != std::string::npos) return std::nullopt;  // @align, @size: not sized here
  uint32_t offset = 0, align = 1;
  int angle = 0;
  std::string member;
  auto add = [&]() -> bool {
    const auto colon = member.find(':');
    if (trimmed(member).empty()) return true;
    if (colon == std::string::npos) return false;
    const auto l = type_layout(code, member.substr(colon + 1), depth);
    if (!l) return false;
    offset = round_up(offset, l->align) + l->size;
    align = std::max(align, l->align);
    member.clear();
    return true;
  };
  for (char c : body) {
    angle += c == '<' ? 1 : c == '>' ? -1 : 0;
    if (c == ',' && angle == 0) {
      if (!add()) return std::nullopt;
    } else {
      member += c;
    }
  }
  if (!add()) return std::nullopt;
  return Layout{round_up(offset, align), align};
}

// Checks that `code` declares what every strategy calls; returns its SIM_TEAM_SPLITS_STEPS.
bool check_declarations(const std::string& code, const std::string& origin) {
  static const std::pair<const char*, const char*> required[] = {
      {R"(\bstruct\s+State\s*\{)", "struct State { ... }"},
      {R"(\bfn\s+sim_load\s*\()", "fn sim_load(ind: u32)"},
      {R"(\bfn\s+sim_init\s*\()", "fn sim_init(ind: u32, episode: u32) -> State"},
      {R"(\bfn\s+sim_step\s*\()", "fn sim_step(t: u32, s: ptr<function, State>, ind: u32)"},
      {R"(\bfn\s+sim_fitness\s*\()", "fn sim_fitness(s: State) -> f32"},
      {R"(\bfn\s+sim_done\s*\()", "fn sim_done(s: State) -> bool"},
  };
  for (auto& [pattern, decl] : required)
    if (!std::regex_search(code, std::regex(pattern)))
      throw Error(origin + ": no declaration of `" + decl +
                  "` (every workload declares State, sim_load, sim_init, sim_step, sim_fitness, sim_done "
                  "and SIM_TEAM_SPLITS_STEPS; docs/SIMULATIONS.md)");
  std::smatch m;
  if (!std::regex_search(code, m,
                         std::regex(R"(\bconst\s+SIM_TEAM_SPLITS_STEPS\s*:\s*bool\s*=\s*(true|false)\s*;)")))
    throw Error(origin +
                ": no declaration of `const SIM_TEAM_SPLITS_STEPS: bool = true;` or `= false;` (true: the "
                "steps are independent and a team divides them; false: a team shares the state)");
  return m[1].str() == "true";
}

// The header's own per-step data, "data": {"stride": S, "records": [[S numbers], ...]}: record t is
// what data4(t, i) reads at step t, laid out for the kernels in vec4s (S rounded up to 4, zeros after).
WorkloadData inline_data(const Fields& d) {
  WorkloadData out;
  out.stride = uint32_t(d.integer("stride", 1, kMaxInlineStride));
  out.device_stride = round_up(out.stride, 4);
  const std::string expected = "an array of records, each an array of " + std::to_string(out.stride) +
                               " numbers (\"stride\"), one record per step";
  d.require("records", expected);
  const json& records = d.at("records");
  if (!records.is_array() || records.empty()) d.fail("records", expected);
  for (size_t t = 0; t < records.size(); ++t) {
    const json& r = records[t];
    if (!r.is_array() || r.size() != out.stride)
      d.fail("records", expected + " (record " + std::to_string(t) + " is not)");
    for (const json& v : r) {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || std::abs(v.get<double>()) > 3.4e38)
        d.fail("records",
               expected + " (record " + std::to_string(t) + " holds " + v.dump() + ", not a finite f32)");
      out.records.push_back(v.get<float>());
    }
    out.device.insert(out.device.end(), out.records.end() - out.stride, out.records.end());
    out.device.resize(out.device.size() + out.device_stride - out.stride, 0.0f);
  }
  return out;
}

// The first `steps` records of `data`, which must hold that many.
WorkloadData first_steps(const WorkloadData& data, uint32_t steps, const std::string& origin) {
  const size_t have = data.records.size() / data.stride;
  if (steps > have)
    throw Error(origin + ": header field \"data.records\" holds " + std::to_string(have) +
                " records, fewer than the " + std::to_string(steps) + " steps of an episode: --steps " +
                std::to_string(have) + " at most, or more records");
  return {.records = {data.records.begin(), data.records.begin() + size_t(steps) * data.stride},
          .stride = data.stride,
          .device = {data.device.begin(), data.device.begin() + size_t(steps) * data.device_stride},
          .device_stride = data.device_stride};
}

// The stack load_workload parses on (load_workload says why).
constexpr size_t kWorkloadStackBytes = size_t(256) << 20;

uint32_t power_of_two(const Fields& f, const std::string& k, uint32_t hi, uint32_t def) {
  const uint32_t v = uint32_t(f.integer(k, 1, hi, def));
  if (v & (v - 1)) f.fail(k, "a power of two from 1 to " + std::to_string(hi));
  return v;
}

}  // namespace

namespace {

// load_workload's work, on a stack that fits its regular expressions' recursion (load_workload).
Workload parse_workload(std::string text, std::string origin, References references) {
  const json header = parse_header(text, origin);
  const Fields h(header, origin, "",
                 {"name", "summary", "state_bytes", "policy", "genome", "defaults", "ga", "workgroup", "team",
                  "overrides", "data", "reference"});
  Workload w;
  w.name = h.string("name");
  if (!std::regex_match(w.name, std::regex("[a-z][a-z0-9_]*")))
    h.fail("name", "a lower-case identifier ([a-z][a-z0-9_]*)");
  w.summary = h.string("summary", "");
  const std::string code = without_comments(text);

  auto& d = w.spec;
  d.name = w.name;
  d.origin = origin;
  d.team_splits_steps = check_declarations(code, origin);
  // The State's size and alignment by WGSL's layout rules; the header's state_bytes must agree.
  const auto state = struct_layout(code, "State");
  if (!state)
    throw Error(origin +
                ": struct State: its fields must be f32, u32, i32, vectors and matrices of them, arrays of a "
                "constant length and structs of those, without attributes (@align, @size): wgfuse lays out "
                "the per-step strategies' slots from them by WGSL's rules");
  if (h.has("state_bytes") && h.at("state_bytes") != state->size)
    h.fail("state_bytes", std::to_string(state->size) +
                              ", the size of struct State by WGSL's layout rules (or leave the field out)");
  if (state->size > kMaxStateBytes)
    throw Error(origin + ": struct State: a State of " + std::to_string(state->size) +
                " bytes is over the limit of " + std::to_string(kMaxStateBytes) +
                " (the fused and team strategies keep it in each invocation's registers, 255 at most on a "
                "GPU): keep what does not change in the genome or the per-step data (gene(), data4()), and "
                "running statistics rather than histories in State");
  d.state_bytes = state->size;
  d.state_align = state->align;

  uint32_t policy_genes = 0;
  if (h.has("policy")) {
    const std::string p = h.string("policy");
    auto it = policies().find(p);
    if (it == policies().end())
      h.fail("policy", "one of " + names_of(policies()) + " (or no field: your own)");
    d.policy = it->second;
    const auto in = u32_const(code, "MLP_IN"), out = u32_const(code, "MLP_OUT");
    if (!in || !out)
      throw Error(origin + ": \"policy\": \"" + p +
                  "\" needs `const MLP_IN: u32 = N;` and `const MLP_OUT: u32 = N;` "
                  "(the observations and the actions) declared in the file");
    if (*in < 1 || *in > 64 || *out < 2 || *out > uint32_t(kMaxMlpOutputs))
      throw Error(origin + ": the MLP policy takes 1 to 64 inputs (MLP_IN) and 2 to " +
                  std::to_string(kMaxMlpOutputs) + " actions (MLP_OUT), not " + std::to_string(*in) +
                  " and " + std::to_string(*out) +
                  ": its weights and logits live in registers; for more, write your own policy in the file");
    policy_genes = kMlpHidden * (*in + 1) + *out * (kMlpHidden + 1);
  }

  const auto genome = h.object("genome", {"length", "init_scale"});
  if (genome.has("length") && genome.at("length") == "steps") {
    w.genome_len = 0;
  } else {
    if (genome.has("length") && !genome.at("length").is_number_integer())
      genome.fail("length", "an integer or \"steps\" (one gene per step)");
    w.genome_len = uint32_t(genome.integer(
        "length", 1, 1u << 20, policy_genes ? std::optional<uint64_t>(policy_genes) : std::nullopt));
  }
  if (policy_genes && w.genome_len != policy_genes)
    genome.fail("length", std::to_string(policy_genes) + ", the genes of the MLP policy " +
                              std::to_string(*u32_const(code, "MLP_IN")) + "-16-" +
                              std::to_string(*u32_const(code, "MLP_OUT")) + " (or no field)");
  w.init_scale = float(genome.number("init_scale", 1e-30, 1e30, 1.0));

  const auto defaults = h.object("defaults", {"pop", "steps"});
  w.default_pop = uint32_t(defaults.integer("pop", 2, 1u << 24));
  w.default_steps = uint32_t(defaults.integer("steps", 1, 1u << 24));

  const auto ga = h.object("ga", {"tournament", "elites", "rate", "sigma", "lo", "hi"});
  w.ga = {.tournament = uint32_t(ga.integer("tournament", 1, 64, 3)),
          .elites = uint32_t(ga.integer("elites", 1, kMaxElites, 2)),
          .rate = float(ga.number("rate", 0, 1, 0.1)),
          .sigma = float(ga.number("sigma", 0, 1e30, 0.1)),
          .lo = float(ga.number("lo", -1e30, 1e30, -10.0)),
          .hi = float(ga.number("hi", -1e30, 1e30, 10.0)),
          .seed = 0};
  if (!(w.ga.lo < w.ga.hi)) ga.fail("hi", "above ga.lo (" + std::to_string(w.ga.lo) + ")");

  d.workgroup_size = power_of_two(h, "workgroup", 1024, 64);
  const auto team = h.object("team", {"workgroup", "max", "auto_invocations", "auto_min", "auto_max"});
  d.team_workgroup_size = team.has("workgroup") ? power_of_two(team, "workgroup", 1024, 0) : 0;
  d.max_team = power_of_two(team, "max", 1024, 16);
  if (!d.policy.empty() && d.max_team > kMlpHidden)
    team.fail("max", "at most " + std::to_string(kMlpHidden) +
                         " with the MLP policy: a team splits its 16 hidden units across its lanes");
  d.auto_invocations = team.integer("auto_invocations", 1, 1ull << 32, 0);
  d.auto_min_team = power_of_two(team, "auto_min", 1024, 1);
  d.auto_max_team = team.has("auto_max") ? power_of_two(team, "auto_max", 1024, 0) : 0;

  if (h.has("overrides")) {
    if (!h.at("overrides").is_object()) h.fail("overrides", "an object of WGSL override names and numbers");
    for (auto& [k, v] : h.at("overrides").items()) {
      if (!v.is_number() && !v.is_boolean())
        h.fail("overrides", "an object of WGSL override names and numbers (\"" + k + "\" is not)");
      d.overrides[k] = v.is_boolean() ? double(v.get<bool>()) : v.get<double>();
    }
  }

  if (h.has("data") && h.at("data").is_object()) {
    w.inline_data = std::make_shared<WorkloadData>(inline_data(h.object("data", {"stride", "records"})));
    w.data = [data = w.inline_data, origin](uint32_t steps, uint32_t) {
      return first_steps(*data, steps, origin);
    };
  } else if (h.has("data")) {
    if (!h.at("data").is_string())
      h.fail("data", "the name of a generator (" + names_of(data_generators()) +
                         ") or an object {\"stride\": N, \"records\": [[...], ...]}");
    auto it = data_generators().find(h.string("data"));
    if (it == data_generators().end()) h.fail("data", "one of " + names_of(data_generators()));
    w.data = it->second;
    w.data_name = it->first;
  }

  w.reference_horizon = 1u << 30;
  if (h.has("reference")) {
    const auto r = h.object("reference", {"builtin", "python", "horizon", "rtol", "atol", "boundary_margin"});
    if (r.has("builtin") == r.has("python"))
      h.fail("reference",
             "an object with either \"builtin\" (a built-in workload's name) or \"python\" (a "
             "script's path)");
    if (references == References::skip)
      r.string(r.has("builtin") ? "builtin" : "python");
    else if (r.has("builtin"))
      w.reference = builtin_reference(r.string("builtin"), origin + ": header field \"reference.builtin\"");
    else
      w.reference =
          script_reference((std::filesystem::path(origin).parent_path() / r.string("python")).string(),
                           origin + ": header field \"reference.python\"");
    w.reference_horizon = uint32_t(r.integer("horizon", 1, 1u << 30, 1u << 30));
    w.reference_rtol = r.number("rtol", 0, 1, 0);
    w.reference_atol = r.number("atol", 0, 1e30, 0);
    w.boundary_margin = r.number("boundary_margin", 0, 1e30, 0);
  }
  d.source = std::move(text);
  return w;
}

}  // namespace

Workload load_workload(std::string text, std::string origin, References references) {
  if (text.size() > kMaxWorkloadBytes)
    throw Error(origin + ": " + std::to_string(text.size()) + " bytes, over the limit of " +
                std::to_string(kMaxWorkloadBytes) +
                " bytes of a workload file (its header, State and functions; generate large tables in "
                "sim_init or pass them as per-step data)");
  // libstdc++'s std::regex recurses once per character a repetition consumes, up to 512 bytes of
  // stack each: a file of kMaxWorkloadBytes needs at most 128 MiB, twice that is reserved.
  Workload w;
  util::run_with_stack(kWorkloadStackBytes,
                       [&] { w = parse_workload(std::move(text), std::move(origin), references); });
  return w;
}

Workload load_workload_file(const std::string& path, References references) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read the workload file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return load_workload(text.str(), path, references);
}

nlohmann::json web_workload(const Workload& w) {
  const auto& d = w.spec;
  const auto lines = [&](fuse::Strategy s) {
    return json{{"source", fuse::generated_source(d, s)}, {"first_line", fuse::definition_first_line(d, s)}};
  };
  return {{"name", w.name},
          {"summary", w.summary},
          {"origin", d.origin},
          {"state_bytes", d.state_bytes},
          {"state_align", d.state_align},
          {"slot_bytes", fuse::slot_bytes(d)},
          {"genome_len", w.genome_len},
          {"init_scale", w.init_scale},
          {"defaults", {{"pop", w.default_pop}, {"steps", w.default_steps}}},
          {"workgroup", d.workgroup_size},
          {"team_workgroup", fuse::workgroup_size(d, fuse::Strategy::Team)},
          {"max_team", d.max_team},
          {"team_splits_steps", d.team_splits_steps},
          {"overrides", d.overrides},
          {"data", w.inline_data
                       ? json{{"stride", w.inline_data->device_stride}, {"records", w.inline_data->device}}
                   : w.data_name.empty() ? json(nullptr)
                                         : json(w.data_name)},
          {"reference", {{"atol", w.reference_atol}, {"rtol", w.reference_rtol}}},
          {"modules", {{"solo", lines(fuse::Strategy::Fused)}, {"team", lines(fuse::Strategy::Team)}}}};
}

const std::vector<Workload>& workloads() {
  static const std::vector<Workload> all = [] {
    std::vector<Workload> out;
    for (auto& f : gpu::embedded_kernel_families()) {
      const auto at = f.source.find_first_not_of(" \t\r\n");
      if (at == std::string_view::npos || !f.source.substr(at).starts_with(kHeaderMark)) continue;
      out.push_back(load_workload(std::string(f.source), "kernels/" + std::string(f.name) + ".wgsl"));
    }
    return out;
  }();
  return all;
}

const Workload& find_workload(std::string_view name) {
  std::string known;
  for (auto& w : workloads()) {
    if (w.name == name) return w;
    known += (known.empty() ? "" : ", ") + w.name;
  }
  throw Error("unknown workload '" + std::string(name) + "' (known: " + known +
              "; or the path of a workload file, FILE.wgsl)");
}

}  // namespace wgfuse::sim
