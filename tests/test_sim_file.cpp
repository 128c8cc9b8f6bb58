// Workload files (`wgfuse sim FILE.wgsl`, docs/SIMULATIONS.md "Workload files"): the built-ins are
// such files, a copy of one runs exactly as the built-in does, and a bad file is refused naming the
// file, the field or declaration, the limit and the fix; a WGSL error names the line of the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <regex>
#include <string>

#include "fuse/sim_program.h"
#include "sim/runner.h"
#include "sim/workloads.h"
#include "sim_support.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

using fuse::Strategy;
using test::context;

// The text of a built-in workload file.
std::string builtin_text(const std::string& name) {
  return sim::find_workload(name).spec.source;
}

// `text` with its first `from` replaced by `to` (which must be there).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The message of the Error that loading `text` as "user.wgsl" throws ("" if it loads).
std::string load_error(const std::string& text) {
  try {
    sim::load_workload(text, "user.wgsl");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// Test that the five built-ins are loaded from their embedded files by the generic loader, with
// the settings the C++ table held before they became files.
TEST(SimWorkloadFile, BuiltinsAreFiles) {
  std::vector<std::string> names;
  for (auto& w : sim::workloads()) {
    names.push_back(w.name);
    EXPECT_EQ(w.spec.origin, "kernels/sim_" + w.name + ".wgsl");
    EXPECT_TRUE(w.reference) << w.name;
    EXPECT_EQ(w.spec.source.rfind("///", 0), 0u) << w.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"acrobot", "cartpole", "market", "mountaincar", "rastrigin"}));
  const auto& cp = sim::find_workload("cartpole");
  EXPECT_EQ(cp.genome_len, 114u);
  EXPECT_EQ(cp.spec.state_bytes, 24u);
  EXPECT_EQ(cp.spec.policy, "sim_mlp");
  EXPECT_EQ(cp.ga.sigma, 0.1f);
  EXPECT_EQ(cp.boundary_margin, 2e-2);
  const auto& ra = sim::find_workload("rastrigin");
  EXPECT_EQ(ra.genome_len, 0u);
  EXPECT_EQ(ra.init_scale, 5.12f);
  EXPECT_TRUE(ra.spec.team_splits_steps);
  EXPECT_EQ(ra.spec.team_workgroup_size, 1024u);
  EXPECT_EQ(ra.spec.max_team, 64u);
  EXPECT_EQ(ra.spec.overrides.at("TEAM_STEP_UNROLL"), 8.0);
  EXPECT_EQ(ra.ga.rate, 0.05f);
  EXPECT_EQ(ra.reference_rtol, 1e-4);
  const auto& mk = sim::find_workload("market");
  EXPECT_TRUE(mk.data);
  EXPECT_EQ(mk.spec.state_bytes, 108u);
  EXPECT_EQ(mk.spec.auto_invocations, 40000u);
  EXPECT_EQ(mk.spec.auto_min_team, 4u);
  EXPECT_EQ(mk.spec.auto_max_team, 4u);
  EXPECT_EQ(mk.ga.sigma, 0.05f);
  EXPECT_EQ(mk.default_pop, 10000u);
  EXPECT_EQ(sim::find_workload("acrobot").reference_horizon, 60u);
}

// Test that a user's copy of a built-in file, under another name, evaluates bitwise as the
// built-in does under every strategy: nothing about the built-ins is special.
TEST(SimWorkloadFile, CopyRunsLikeTheBuiltin) {
  const auto copy = sim::load_workload(
      replaced(builtin_text("mountaincar"), "\"name\": \"mountaincar\"", "\"name\": \"my_car\""),
      "my_car.wgsl");
  EXPECT_EQ(copy.name, "my_car");
  const uint32_t pop = 37, steps = 23;
  const uint32_t team = fuse::max_team(context(), copy.spec);
  sim::SimRunner mine(context(), copy, pop, steps, 3, 1, team);
  sim::SimRunner builtin(context(), sim::find_workload("mountaincar"), pop, steps, 3, 1, team);
  for (auto& r : fuse::strategies()) {
    if (!fuse::offered(context(), r.id)) continue;
    const auto a = mine.evaluate_initial(r.id), b = builtin.evaluate_initial(r.id);
    EXPECT_TRUE(sim::compare_fitness(a, b, 0).bitwise) << r.name;
  }
}

// Test that every header mistake names the file, the field and what it expects.
TEST(SimWorkloadFile, HeaderErrorsNameTheField) {
  const std::string cp = builtin_text("cartpole");
  struct Case {
    std::string text, words;
  };
  const std::vector<Case> cases = {
      {std::regex_replace(cp, std::regex("///"), "//"), "user.wgsl: no header"},
      {replaced(cp, "\"state_bytes\": 24,", "\"state_bytes\": 24"), "is not valid JSON"},
      {replaced(cp, "\"state_bytes\": 24", "\"state_bytes\": \"24\""),
       "header field \"state_bytes\" must be 24, the size of struct State by WGSL's layout rules (or leave "
       "the "
       "field out), not \"24\""},
      {replaced(cp, "\"state_bytes\": 24", "\"state_bytes\": 20"), "\"state_bytes\" must be 24, the size"},
      {replaced(cp, "\"state_bytes\"", "\"state_size\""), "\"state_size\" is not one of"},
      {replaced(cp, "\"rate\": 0.1", "\"rate\": 2"), "\"ga.rate\" must be a number from 0 to 1, not 2"},
      {replaced(cp, "\"lo\": -10.0", "\"lo\": 20"), "\"ga.hi\" must be above ga.lo"},
      {replaced(cp, "\"length\": 114", "\"length\": 113"), "the genes of the MLP policy 4-16-2"},
      {replaced(cp, "\"length\": 114", "\"length\": \"all\""),
       "\"genome.length\" must be an integer or \"steps\""},
      {replaced(cp, "\"policy\": \"mlp\"", "\"policy\": \"cnn\""), "\"policy\" must be one of mlp"},
      {replaced(cp, "\"builtin\": \"cartpole\"", "\"builtin\": \"pong\""),
       "no built-in CPU reference 'pong' (known: acrobot, cartpole, market, mountaincar, rastrigin)"},
      {replaced(cp, "\"pop\": 4096", "\"pop\": 1"), "\"defaults.pop\" must be an integer from 2"},
      {replaced(cp, "\"name\": \"cartpole\"", "\"name\": \"Cart Pole\""), "\"name\" must be a lower-case"},
      {replaced(cp, "\"name\": \"cartpole\",", ""), "\"name\" must be a string, not nothing"},
      {replaced(cp, "\"policy\": \"mlp\",", "\"policy\": \"mlp\", \"team\": {\"max\": 32},"),
       "\"team.max\" must be at most 16 with the MLP policy"},
      {replaced(cp, "\"policy\": \"mlp\",", "\"policy\": \"mlp\", \"team\": {\"max\": 12},"),
       "\"team.max\" must be a power of two from 1 to 1024, not 12"},
      {replaced(cp, "\"builtin\": \"cartpole\",", "\"python\": \"x.py\", \"builtin\": \"cartpole\","),
       "\"reference\" must be an object with either \"builtin\""},
  };
  for (auto& c : cases) {
    const auto m = load_error(c.text);
    EXPECT_NE(m.find(c.words), std::string::npos) << "want '" << c.words << "' in: " << m;
    EXPECT_EQ(m.rfind("user.wgsl: ", 0), 0u) << m;
  }
}

// Test that a State too large for registers is refused with the limit and the fix, and an MLP
// too large for its registers likewise.
TEST(SimWorkloadFile, TooLargeIsRefusedWithTheLimitAndFix) {
  const std::string cp = builtin_text("cartpole");
  auto m = load_error(replaced(replaced(cp, "\"state_bytes\": 24,", ""), "  ret: f32,",
                               "  ret: f32,\n  history: array<f32, 1024>,"));
  for (auto w : {"user.wgsl: struct State: a State of 4120 bytes is over the limit of 1024", "registers",
                 "keep what does not change in the genome"})
    EXPECT_NE(m.find(w), std::string::npos) << m;
  m = load_error(replaced(replaced(cp, "const MLP_OUT: u32 = 2u;", "const MLP_OUT: u32 = 12u;"),
                          "\"length\": 114,", ""));
  for (auto w : {"2 to 8 actions (MLP_OUT), not 4 and 12", "write your own policy"})
    EXPECT_NE(m.find(w), std::string::npos) << m;
}

// Test that the State's size is computed by WGSL's layout rules (alignment of vec3 and vec4,
// array strides, nested structs, sizes named by consts) as the GPU lays it out, so the header may
// leave it out, and the per-step slots follow the State's alignment; a State with attributes is
// refused.
TEST(SimWorkloadFile, StateSizeFollowsTheLayoutRules) {
  const std::string cp = builtin_text("cartpole");
  const std::string odd = R"(const PAIRS: u32 = 3u;
struct Inner {
  x: u32,
  y: vec4<f32>,
}
struct State {
  a: f32,
  b: vec3<f32>,
  c: array<vec2f, PAIRS>,
  d: Inner,
  x: f32, x_dot: f32, theta: f32, theta_dot: f32, ret: f32, done: u32,
})";
  std::string text = cp;
  const auto start = text.find("struct State {");
  text.replace(start, text.find('}', start) + 1 - start, odd);
  text = replaced(replaced(text, "\"state_bytes\": 24,", ""), "return State(",
                  "return State(0.5, vec3<f32>(1.0), array<vec2f, PAIRS>(), Inner(3u, vec4<f32>()), ");
  const auto w = sim::load_workload(text, "odd.wgsl");
  // a 0-4, b 16-28, c 32-56 (stride 8), d 64-96 (y at 16 within), 6 words 96-120, rounded to 16.
  EXPECT_EQ(w.spec.state_bytes, 128u);
  EXPECT_EQ(test::slots_that_fit(w.spec, 999), 999u);
  sim::SimRunner r(context(), w, 19, 30, 2);  // per-step reads and writes the slots at that stride
  EXPECT_TRUE(
      sim::compare_fitness(r.evaluate_initial(Strategy::PerStep), r.evaluate_initial(Strategy::Fused), 1e-5)
          .over == 0);
  EXPECT_EQ(sim::load_workload(replaced(cp, "\"state_bytes\": 24,", ""), "u.wgsl").spec.state_bytes, 24u);
  const auto m = load_error(
      replaced(replaced(cp, "\"state_bytes\": 24,", ""), "  ret: f32,", "  ret: f32,\n  @align(16) q: f32,"));
  EXPECT_NE(m.find("user.wgsl: struct State: its fields must be f32, u32, i32, vectors and matrices of them"),
            std::string::npos)
      << m;
}

// Test that a missing declaration is named with its signature; one inside a comment does not count.
TEST(SimWorkloadFile, MissingDeclarationIsNamed) {
  const std::string cp = builtin_text("cartpole");
  auto m =
      load_error(replaced(cp, "fn sim_done(s: State)", "// fn sim_done(s: State)\nfn sim_ended(s: State)"));
  EXPECT_NE(m.find("user.wgsl: no declaration of `fn sim_done(s: State) -> bool`"), std::string::npos) << m;
  m = load_error(replaced(cp, "fn sim_done(s: State)",
                          "/* fn sim_done(s: State) /* nested */ */\nfn sim_ended(s: State)"));
  EXPECT_NE(m.find("no declaration of `fn sim_done"), std::string::npos) << m;
  m = load_error(replaced(cp, "struct State {", "struct Cart {"));
  EXPECT_NE(m.find("no declaration of `struct State { ... }`"), std::string::npos) << m;
  m = load_error(replaced(cp, "const SIM_TEAM_SPLITS_STEPS: bool = false;", ""));
  EXPECT_NE(m.find("SIM_TEAM_SPLITS_STEPS"), std::string::npos) << m;
  m = load_error(replaced(cp, "const MLP_IN: u32 = 4u;", ""));
  EXPECT_NE(m.find("\"policy\": \"mlp\" needs `const MLP_IN"), std::string::npos) << m;
}

// The 1-based line of `text` holding `what`.
uint32_t line_of(const std::string& text, const std::string& what) {
  const auto at = text.find(what);
  EXPECT_NE(at, std::string::npos) << what;
  return uint32_t(std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n')) + 1;
}

// Test that a WGSL compile error names the line of the user's file, not of the generated module,
// under every strategy's module; and that one in wgfuse's own part says so.
TEST(SimWorkloadFile, CompileErrorPointsAtTheFileLine) {
  const std::string bad = replaced(builtin_text("cartpole"), "let tau = 0.02;", "let tau = 0.02 + ;");
  const auto w = sim::load_workload(bad, "user.wgsl");
  const uint32_t line = line_of(bad, "let tau = 0.02 + ;");
  fuse::SimProgram p(context(), w.spec, 5, 3, w.genome_length(3), 1, {}, 0);
  try {
    p.compile();
    FAIL() << "a module with a syntax error compiled";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("user.wgsl:" + std::to_string(line) + ":"), std::string::npos) << m;
    EXPECT_EQ(m.find("at line"), std::string::npos) << m;
  }
  for (auto s : {Strategy::Fused, Strategy::Team}) {
    const uint32_t first = fuse::definition_first_line(w.spec, s);
    const auto src = fuse::generated_source(w.spec, s);
    EXPECT_EQ(line_of(src, "let tau = 0.02 + ;"), first + line - 1);
    const std::string inside =
        "kernel 'sim.x': WGSL error at line " + std::to_string(first + 6) + ", column 3: boom";
    EXPECT_EQ(fuse::locate_wgsl_error(w.spec, s, inside), "user.wgsl:7:3: WGSL error: boom");
    const auto outside =
        fuse::locate_wgsl_error(w.spec, s, "kernel 'sim.x': WGSL error at line 2, column 1: boom");
    EXPECT_NE(outside.find("wgfuse's part of the generated module (line 2, column 1"), std::string::npos)
        << outside;
  }
}

// A small workload of the user's own, with no CPU reference: a damped oscillator driven by a
// linear policy, 3 genes, the step count and the start state drawn as the built-ins draw theirs.
const char* kOscillator = R"(/// {
///   "name": "oscillator",
///   "summary": "damped oscillator, linear feedback",
///   "state_bytes": 12,
///   "genome": {"length": 3, "init_scale": 0.5},
///   "defaults": {"pop": 64, "steps": 40}
/// }
// The user's own policy: u = g0 x + g1 v + g2.
struct State {
  x: f32,
  v: f32,
  cost: f32,
}

fn sim_load(ind: u32) {}

const SIM_TEAM_SPLITS_STEPS: bool = false;

fn sim_init(ind: u32, episode: u32) -> State {
  return State(init_uniform(episode, 0u, 1.0), init_uniform(episode, 1u, 1.0), 0.0);
}

fn sim_step(t: u32, s: ptr<function, State>, ind: u32) {
  let u = clamp(gene(ind, 0u) * (*s).x + gene(ind, 1u) * (*s).v + gene(ind, 2u), -2.0, 2.0);
  let a = -(*s).x - 0.1 * (*s).v + u;
  (*s).v = (*s).v + 0.05 * a;
  (*s).x = (*s).x + 0.05 * (*s).v;
  (*s).cost = (*s).cost + (*s).x * (*s).x + 0.01 * u * u;
}

fn sim_done(s: State) -> bool {
  return false;
}

fn sim_fitness(s: State) -> f32 {
  return -s.cost;
}
)";

// Test that what the playground is sent (sim::web_workload) is the native module of each strategy
// with the file's first line where it says, the slot layout native uses, and the header's sizes;
// and that a visitor's file (References::skip) names a script that is neither looked up nor run.
TEST(SimWorkloadFile, WebWorkloadIsTheNativeModule) {
  const std::string text = std::string(kOscillator);
  const std::string header_end = "///   \"defaults\": {\"pop\": 64, \"steps\": 40}";
  const auto w = sim::load_workload(
      replaced(text, header_end,
               header_end + ",\n///   \"reference\": {\"python\": \"/no/such/dir/x.py\", \"rtol\": 0.25}"),
      "osc.wgsl", sim::References::skip);
  EXPECT_FALSE(w.reference);
  EXPECT_EQ(w.reference_rtol, 0.25);
  const auto j = sim::web_workload(w);
  for (auto [key, s] : {std::pair{"solo", Strategy::Fused}, std::pair{"team", Strategy::Team}}) {
    const auto& m = j["modules"][key];
    const std::string source = m["source"];
    EXPECT_EQ(source, fuse::generated_source(w.spec, s)) << key;
    const uint32_t first = m["first_line"];
    EXPECT_EQ(first, fuse::definition_first_line(w.spec, s)) << key;
    // the file's first line is the module's line `first`
    size_t at = 0;
    for (uint32_t line = 1; line < first; ++line) at = source.find('\n', at) + 1;
    EXPECT_EQ(source.compare(at, w.spec.source.size(), w.spec.source), 0) << key;
  }
  EXPECT_EQ(j["slot_bytes"], fuse::slot_bytes(w.spec));
  EXPECT_EQ(j["origin"], "osc.wgsl");
  EXPECT_EQ(j["defaults"]["steps"], 40);
  EXPECT_EQ(j["reference"]["rtol"], 0.25);
  EXPECT_TRUE(j["data"].is_null());
  EXPECT_EQ(sim::web_workload(sim::find_workload("market"))["data"], "market");
  // A State holding a vec4: the slot places it at 16 (native and browser alike).
  const auto v = sim::load_workload(replaced(replaced(text, "\"state_bytes\": 12,", ""), "struct State {",
                                             "struct State {\n  q: vec4<f32>,"),
                                    "vec.wgsl", sim::References::skip);
  EXPECT_EQ(sim::web_workload(v)["slot_bytes"], 16u + v.spec.state_bytes);
}

// Test that a header's own per-step data ("data": {"stride", "records"}) is what data4(t, i)
// reads at step t, padded to vec4s with zeros, under every strategy (a double-precision sum over the
// records here is the reference); an episode longer than the records, or a record of the wrong
// length, is refused naming the field; the playground is sent the padded records.
TEST(SimWorkloadFile, HeaderDataIsReadPerStep) {
  const std::string path = std::string(WGFUSE_SOURCE_DIR) + "/tests/data/sim/tracker.wgsl";
  const auto w = sim::load_workload_file(path);
  const uint32_t pop = 37, steps = 7, len = 2;
  sim::SimRunner r(context(), w, pop, steps, 3);
  const auto& data = w.inline_data->records;  // 5 f32 per step
  const auto& genomes = r.initial_genomes();
  for (auto s : {Strategy::PerStep, Strategy::Fused, Strategy::Team}) {
    const auto fitness = r.evaluate_initial(s);
    for (uint32_t i = 0; i < pop; ++i) {
      double x = 0, cost = 0;
      for (uint32_t t = 0; t < steps; ++t) {
        const float* rec = &data[t * 5];
        const double goal = double(rec[0]) + double(rec[1]) * rec[2] - rec[3] + rec[4];
        x += genomes[i * len] * (goal - x);  // gene 1 multiplies the padding zeros
        cost += (x - goal) * (x - goal);
      }
      EXPECT_NEAR(fitness[i], -cost, 1e-5 * cost + 1e-6) << fuse::to_string(s) << " individual " << i;
    }
  }
  EXPECT_EQ(sim::web_workload(w)["data"]["stride"], 8);
  EXPECT_EQ(sim::web_workload(w)["data"]["records"].size(), 9u * 8u);
  try {
    sim::SimRunner longer(context(), w, pop, 10, 3);
    FAIL() << "10 steps over 9 records ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("header field \"data.records\" holds 9 records, fewer than the 10 "
                                         "steps of an episode: --steps 9 at most"),
              std::string::npos)
        << e.what();
  }
  std::ifstream in(path);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto m = load_error(replaced(text, "[0.0, 3.0, -0.25, 0.5, 1.75]", "[0.0, 3.0, -0.25, 0.5]"));
  EXPECT_NE(m.find("user.wgsl: header field \"data.records\" must be an array of records, each an array of 5 "
                   "numbers (\"stride\"), one record per step (record 4 is not)"),
            std::string::npos)
      << m;
}

// Test that a file over the size limit is refused with the limit, and that a crafted file whose
// matching once recursed per character past a thread's stack, or rescanned the file from each
// unclosed struct, is answered at once.
TEST(SimWorkloadFile, LargeAndCraftedFilesAreRefused) {
  const std::string text = std::string(kOscillator);
  const auto m = load_error(text + std::string(sim::kMaxWorkloadBytes, ' '));
  EXPECT_NE(m.find("user.wgsl: " + std::to_string(text.size() + sim::kMaxWorkloadBytes) +
                   " bytes, over the limit of 262144 bytes"),
            std::string::npos)
      << m;
  const auto start = text.find("struct State {");
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& state : {"struct State { a: array<f32" + std::string(200000, ' ') + ", 4> }",
                                   "struct State { " + std::string(200000, 'a') + " }", [] {
                                     std::string s;
                                     for (int i = 0; i < 10000; ++i) s += "struct State {";
                                     return s;
                                   }()}) {
    std::string crafted = text;
    crafted.replace(start, text.find('}', start) + 1 - start, state);
    load_error(crafted);  // loads or is refused: either, without a crash
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

// Test that a user's file runs through the CLI with every strategy, the GA, --check (the
// strategies against each other: the file names no reference) and --json.
TEST(SimWorkloadFile, CliRunsAUserFile) {
  const auto path = write_file("oscillator.wgsl", kOscillator);
  const std::string json = ::testing::TempDir() + "/sim_oscillator.json";
  auto r = test::run_wgfuse("--adapter cpu sim " + path +
                            " --mode all --pop 37 --steps 23 --generations 2 --check --quiet --json " + json);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("no CPU reference (" + path + " names none)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
  const auto j = test::read_json(json);
  EXPECT_EQ(j["workload"], "oscillator");
  EXPECT_TRUE(j["check"]["pass"].get<bool>());
  EXPECT_TRUE(j["check"]["reference"]["none"].get<bool>());
  EXPECT_FALSE(j["sample_fitness"].contains("reference"));
  EXPECT_GE(j["modes"].size(), 3u);
  // A bad file through the CLI: the error names the file and line.
  const auto bad =
      write_file("oscillator_bad.wgsl", replaced(kOscillator, "let a = -(*s).x", "let a = -(*s).y"));
  test::expect_cli_error(
      "--adapter cpu sim " + bad + " --mode fused --pop 5 --steps 3 --generations 1 --quiet",
      bad + ":" + std::to_string(line_of(kOscillator, "let a = -(*s).x")) + ":");
  test::expect_cli_error("--adapter cpu sim " + ::testing::TempDir() + "/none.wgsl",
                         "cannot read the workload file");
}

std::string example(const std::string& name) {
  return std::string(WGFUSE_SOURCE_DIR) + "/examples/sim/" + name;
}

// The standard normal CDF.
double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

// Test that the Monte Carlo option pricer, a workload written only as a file, prices the call at
// the Black-Scholes closed form within 4 standard errors of its mean over an odd number of paths,
// and that its paths agree with its Python CPU reference.
TEST(SimExampleFiles, OptionPricerMatchesBlackScholes) {
  const auto w = sim::load_workload_file(example("option_pricer.wgsl"));
  const uint32_t pop = 65535;
  sim::SimRunner r(context(), w, pop, 16, 7);
  const auto f = r.evaluate_initial(Strategy::Fused);
  double sum = 0, sum2 = 0;
  for (float v : f) {
    ASSERT_GE(v, 0.0f);
    sum += v;
    sum2 += double(v) * v;
  }
  const double mean = sum / pop, se = std::sqrt((sum2 / pop - mean * mean) / pop);
  const double s0 = 100, k = 105, rate = 0.05, vol = 0.2, t = 1;
  const double d1 = (std::log(s0 / k) + (rate + vol * vol / 2) * t) / (vol * std::sqrt(t)),
               d2 = d1 - vol * std::sqrt(t);
  const double black_scholes = s0 * normal_cdf(d1) - k * std::exp(-rate * t) * normal_cdf(d2);
  EXPECT_NEAR(black_scholes, 8.0214, 1e-3);  // the textbook value of these parameters
  EXPECT_LT(se, 0.1);                        // tight enough to see a missing discount (0.4)
  EXPECT_NEAR(mean, black_scholes, 4 * se) << "standard error " << se;
  const auto check = r.check_reference(Strategy::Fused, 24);
  EXPECT_TRUE(check.pass()) << check.agree << "/" << check.samples << " first bad " << check.first_bad << ": "
                            << check.got << " vs " << check.want;
}

// Test that the Pendulum, a workload written only as a file with its own policy, runs per-step,
// batched and fused alike and agrees with its Python CPU reference over its horizon.
TEST(SimExampleFiles, PendulumAgreesWithItsReference) {
  const auto w = sim::load_workload_file(example("pendulum.wgsl"));
  EXPECT_EQ(w.reference_horizon, 40u);
  sim::SimRunner r(context(), w, 37, 40, 5);
  const auto perstep = r.evaluate_initial(Strategy::PerStep), fused = r.evaluate_initial(Strategy::Fused);
  EXPECT_TRUE(sim::compare_fitness(perstep, r.evaluate_initial(Strategy::Batched), 0).bitwise);
  EXPECT_EQ(sim::compare_fitness(perstep, fused, 1e-5).over, 0u);
  EXPECT_LT(*std::max_element(fused.begin(), fused.end()), 0.0f);  // a cost every step
  EXPECT_NE(*std::min_element(fused.begin(), fused.end()), *std::max_element(fused.begin(), fused.end()));
  const auto check = r.check_reference(Strategy::Fused, 37);
  EXPECT_TRUE(check.pass()) << check.agree << "/" << check.samples << " first bad " << check.first_bad << ": "
                            << check.got << " vs " << check.want;
}

// Test that a Python reference is really compared: one that answers a wrong fitness fails the
// check, one that answers nonsense or is missing is an error naming the script.
TEST(SimExampleFiles, PythonReferenceCanFail) {
  const std::string dir = ::testing::TempDir();
  const std::string text = std::string(kOscillator);
  const std::string header_end = "///   \"defaults\": {\"pop\": 64, \"steps\": 40}";
  auto with_script = [&](const std::string& name, const std::string& body) {
    write_file(name + ".py", body);
    return write_file(name + ".wgsl", replaced(text, header_end,
                                               header_end + ",\n///   \"reference\": {\"python\": \"" + name +
                                                   ".py\", \"rtol\": 1e-3, \"atol\": 1e-3}"));
  };
  const auto wrong = sim::load_workload_file(with_script(
      "osc_wrong", "import sys\nfor line in sys.stdin:\n    print('{\"fitness\": 0.5}', flush=True)\n"));
  sim::SimRunner r(context(), wrong, 9, 7, 1);
  const auto c = r.check_reference(Strategy::Fused, 9);
  EXPECT_FALSE(c.pass());
  EXPECT_EQ(c.agree, 0u);
  EXPECT_EQ(c.want, 0.5);
  const auto garbage = sim::load_workload_file(
      with_script("osc_garbage", "import sys\nfor line in sys.stdin:\n    print('hello', flush=True)\n"));
  sim::SimRunner g(context(), garbage, 9, 7, 1);
  try {
    g.check_reference(Strategy::Fused, 2);
    FAIL() << "a script answering 'hello' was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("osc_garbage.py' answered 'hello'"), std::string::npos) << e.what();
  }
  const auto missing =
      replaced(text, header_end, header_end + ",\n///   \"reference\": {\"python\": \"nowhere.py\"}");
  EXPECT_NE(load_error(missing).find("header field \"reference.python\": no script 'nowhere.py'"),
            std::string::npos)
      << load_error(missing);
}

}  // namespace
}  // namespace wgfuse
