#include "submit.h"

#include <signal.h>
#include <spawn.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "fuse/strategy.h"
#include "util/error.h"
#include "util/stats.h"

namespace wgfuse::cli {
namespace {

using nlohmann::json;

double population_std(const std::vector<double>& v) {
  double mean = 0, sq = 0;
  for (double x : v) mean += x / double(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  return std::sqrt(sq / double(v.size()));
}

// The timing fields of a result from its raw samples.
json timing(const std::vector<double>& samples, const char* unit) {
  const Summary s = summarize(samples);
  return {{"unit", unit}, {"samples", samples}, {"median", s.median},
          {"min", s.min}, {"max", s.max},       {"std", population_std(samples)}};
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// Runs `tool args...` with `input` on its stdin; returns its stdout. Its stderr (a rejection's
// reason) passes through; a failure exit is an Error.
std::string run_with_stdin(const std::filesystem::path& tool, std::vector<std::string> args,
                           const std::string& input) {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) throw Error("--submit: pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  for (int fd : {in[0], in[1], out[0], out[1]}) posix_spawn_file_actions_addclose(&fa, fd);
  std::vector<char*> argv{const_cast<char*>(tool.c_str())};
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, tool.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    throw Error("--submit: cannot run " + tool.string());
  }
  // The child reads all of stdin before it writes, so writing first cannot deadlock; a child that
  // dies first makes the write fail (EPIPE) instead of killing wgfuse with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  for (size_t done = 0; done < input.size();) {
    const ssize_t n = write(in[1], input.data() + done, input.size() - done);
    if (n <= 0) break;
    done += size_t(n);
  }
  close(in[1]);
  std::string output;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) output.append(buf, size_t(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("--submit: the submission to " + args.back() + " failed (the reason is above)");
  return output;
}

}  // namespace

std::filesystem::path serve_tool() {
  const auto tool = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "wgfuse-serve";
  if (access(tool.c_str(), X_OK) != 0)
    throw Error("serve and --submit run " + tool.string() +
                ", which is missing or not executable: build it (scripts/setup builds every target) or "
                "take it from the package beside wgfuse");
  return tool;
}

json bench_submission_results(const bench::BenchReport& report) {
  json results = json::array();
  for (const auto& c : report.chain) {
    const std::string k = std::to_string(c.k);
    for (bool fused : {false, true}) {
      const auto& samples = fused ? c.fused_samples_us : c.unfused_samples_us;
      json r = timing(samples, "us");
      const double median = r["median"];
      const uint64_t bytes = fused ? c.fused_bytes : c.unfused_bytes;
      r.update(
          {{"suite", "chain"},
           {"name", std::string(fused ? "fused" : "unfused") + " k=" + k},
           {"sizes", {{"elements", c.elements}, {"ops", c.k}, {"runs_per_sample", c.runs_per_sample}}},
           // A sample is one timed submit of runs_per_sample chain runs, its value µs per run.
           {"dispatches", uint64_t(c.runs_per_sample) * (fused ? 1 : c.k)},
           {"submits", 1},
           {"speedup", fused ? json(c.unfused_us.median / c.fused_us.median) : json(nullptr)},
           {"baseline", fused ? json("unfused k=" + k) : json(nullptr)},
           {"bandwidth_gbs", double(bytes) / (median * 1e3)},
           {"bound_gbs", report.copy_bandwidth_gbs > 0 ? json(report.copy_bandwidth_gbs) : json(nullptr)},
           {"equivalence",
            {{"passed", c.passed},
             {"compared",
              "fused vs unfused (max relative difference), and vs a double-precision CPU reference"},
             {"max_abs_diff", c.max_rel_diff},
             {"tolerance", 1e-5}}}});
      results.push_back(std::move(r));
    }
  }
  return results;
}

json sim_submission_results(const json& sim, bool from_file) {
  if (!sim.contains("check"))
    throw Error(
        "--submit: the simulation ran without --check; a result without its equivalence check is not "
        "accepted");
  const std::string workload = sim.at("workload");
  const json& modes = sim.at("modes");
  const json& reference = sim.at("check").at("reference");
  const std::string baseline = fuse::to_string(fuse::Strategy::PerStep);
  const bool has_baseline = modes.contains(baseline);
  double baseline_rate = 0;
  if (has_baseline) baseline_rate = modes[baseline]["gen_per_s"]["median"];
  json results = json::array();
  for (auto& [mode, m] : modes.items()) {
    std::vector<double> rates;
    for (double s : m.at("seconds_per_generation")) rates.push_back(1.0 / s);
    json r = timing(rates, "gen/s");
    const bool versus = has_baseline && mode != baseline && baseline_rate > 0;
    r.update(
        {{"suite", from_file ? "sim-file" : "sim"},
         {"name", workload + " " + mode},
         {"sizes",
          {{"pop", sim.at("pop")},
           {"steps", sim.at("steps")},
           {"episodes", sim.at("episodes")},
           {"genome_len", sim.at("genome_len")}}},
         {"dispatches", m.at("dispatches_per_generation")},
         {"submits", m.at("submits_per_generation")},
         {"speedup", versus ? json(r["median"].get<double>() / baseline_rate) : json(nullptr)},
         {"baseline", versus ? json(workload + " " + baseline) : json(nullptr)},
         {"bandwidth_gbs", m.value("genome_read_gb_per_s", json(nullptr))},
         {"bound_gbs", nullptr},
         {"equivalence",
          {{"passed", sim.at("check").at("pass")},
           {"compared", reference.contains("none")
                            ? "every timed strategy vs the others (the workload file names no CPU reference)"
                            : "every timed strategy vs the others and vs the double-precision CPU reference"},
           {"max_abs_diff", reference.contains(mode) ? reference[mode].value("max_abs", 0.0) : 0.0},
           {"tolerance", reference.value("atol", 0.0)},
           {"relative_tolerance", reference.value("rtol", 0.0)}}}});
    results.push_back(std::move(r));
  }
  return results;
}

void submit_native(const std::string& url, const gpu::Context& ctx, json results) {
  const auto& a = ctx.adapter();
  const auto& f = ctx.features();
  const auto& l = ctx.limits();
  json features = json::array();
  if (f.subgroups) features.push_back("subgroups");
  if (f.timestamp_query) features.push_back("timestamp-query");
  if (f.shader_f16) features.push_back("shader-f16");
  utsname os{};
  uname(&os);
  const json submission = {
      {"schema_version", 1},
      {"source", "native"},
      {"client_version", "wgfuse " WGFUSE_VERSION},
      {"adapter",
       {{"vendor", a.vendor},
        {"architecture", a.architecture},
        {"device", a.device},
        {"description", a.description},
        {"backend", lower(a.backend)},
        {"features", features},
        {"limits",
         {{"maxComputeWorkgroupSizeX", l.max_compute_workgroup_size_x},
          {"maxComputeInvocationsPerWorkgroup", l.max_compute_invocations_per_workgroup},
          {"maxComputeWorkgroupStorageSize", l.max_compute_workgroup_storage_size},
          {"maxStorageBufferBindingSize", l.max_storage_buffer_binding_size},
          {"maxBufferSize", l.max_buffer_size}}}}},
      {"browser", nullptr},
      {"os", std::string(os.sysname) + " " + os.machine},
      {"results", std::move(results)},
  };
  const json reply = json::parse(run_with_stdin(serve_tool(), {"--submit", url}, submission.dump()));
  std::printf("submitted %lld results to %s: submission id %lld\n", reply.at("accepted").get<long long>(),
              url.c_str(), reply.at("id").get<long long>());
}

}  // namespace wgfuse::cli
