// wgfuse bench: the dispatch-overhead characterization (docs/METHODOLOGY.md).
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "bench/barrier_bench.h"
#include "bench/dispatch_bench.h"
#include "commands.h"
#include "submit.h"
#include "util/error.h"

namespace wgfuse::cli {

namespace {
void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) throw Error("cannot write " + path);
  f << text;
  if (!f.flush()) throw Error("writing " + path + " failed");
}
}  // namespace

void add_bench(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("bench", "Measure WebGPU dispatch overhead and what fusion saves");
  struct Opts {
    bool quick = false;
    std::string json, csv, submit;
    uint32_t reps = 0, max_dispatches = 0;
    std::vector<std::string> kernels;
    std::string suite = "dispatch";
    uint32_t barriers = 0;
    std::vector<uint32_t> workgroups;
    bool dump_shaders = false;
  };
  static Opts o;
  cmd->add_flag("--quick", o.quick, "CI scale: fewer repetitions, N up to 64, a 1M-float large kernel");
  cmd->add_option("--suite", o.suite,
                  "dispatch: the dispatch-overhead characterization; barrier: what a grid barrier inside one "
                  "dispatch costs against a dispatch boundary")
      ->check(CLI::IsMember({"dispatch", "barrier"}));
  cmd->add_option("--barriers", o.barriers,
                  "barrier suite: barriers per timed dispatch (default 256, quick 8)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option(
         "--workgroups", o.workgroups,
         "barrier suite: grid sizes to try, each probed for co-residency (default 1,32,66,132,264,528)")
      ->check(CLI::Range(1, 65535))
      ->delimiter(',');
  cmd->add_flag(
      "--dump-shaders", o.dump_shaders,
      "Dawn's dump_shaders toggle: each shader as compiled for the backend, on stderr with --verbose");
  cmd->add_option("--json", o.json, "write the report as JSON (schema docs/bench.schema.json)");
  cmd->add_option("--csv", o.csv, "write every measured point as CSV");
  cmd->add_option("--submit", o.submit,
                  "post the fused/unfused chain results to a wgfuse serve at URL (http://host:port)");
  cmd->add_option("--reps", o.reps, "timed repetitions per point (default 10, quick 3)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--max-dispatches", o.max_dispatches, "largest N of the sweep (default 4096, quick 64)")
      ->check(CLI::Range(4, 65536));
  cmd->add_option("--kernels", o.kernels, "only these of: empty small large")
      ->check(CLI::IsMember({"empty", "small", "large"}))
      ->delimiter(',');
  cmd->callback([&g] {
    auto copts = g.context_options();
    if (o.dump_shaders) copts.enabled_toggles.push_back("dump_shaders");
    gpu::Context ctx(copts);
    const bool tty = isatty(fileno(stderr));
    auto progress = [tty](const std::string& stage) {
      if (tty)
        std::fprintf(stderr, "\r\033[K  %s", stage.c_str());
      else
        std::fprintf(stderr, "  %s\n", stage.c_str());
    };
    if (o.suite == "barrier") {
      auto cfg =
          o.quick ? bench::BarrierConfig::quick_config() : bench::BarrierConfig::default_for(ctx.adapter());
      if (o.reps) cfg.reps = o.reps;
      if (o.barriers) cfg.barriers = o.barriers;
      if (!o.workgroups.empty()) cfg.workgroups = o.workgroups;
      std::fprintf(stderr, "wgfuse bench --suite barrier on %s (%s)\n", ctx.adapter().device.c_str(),
                   ctx.adapter().backend.c_str());
      auto report = bench::run_barrier_bench(ctx, cfg, progress);
      if (tty) std::fprintf(stderr, "\r\033[K");
      std::printf("%s", bench::to_table(report, ctx.adapter()).c_str());
      if (!o.json.empty()) write_file(o.json, bench::to_json(report, adapter_json(ctx)).dump(2) + "\n");
      for (auto& r : report.results)
        if (!r.passed)
          throw Error("a barrier check failed (" + r.design +
                      "): its timing measures broken synchronisation");
      return;
    }
    bench::BenchConfig cfg =
        o.quick ? bench::BenchConfig::quick_config() : bench::BenchConfig::default_for(ctx.adapter());
    if (o.reps) cfg.reps = o.reps;
    if (o.max_dispatches) cfg.max_dispatches = o.max_dispatches;
    cfg.only_kernels = o.kernels;
    std::fprintf(stderr, "wgfuse bench on %s (%s)%s\n", ctx.adapter().device.c_str(),
                 ctx.adapter().backend.c_str(), o.quick ? ", quick" : "");
    auto report = bench::run_dispatch_bench(ctx, cfg, progress);
    if (tty) std::fprintf(stderr, "\r\033[K");
    std::printf("%s", bench::to_table(report, ctx.adapter()).c_str());
    if (!o.json.empty()) write_file(o.json, bench::to_json(report, adapter_json(ctx)).dump(2) + "\n");
    if (!o.csv.empty()) write_file(o.csv, bench::to_csv(report));
    bool ok = true;
    for (auto& c : report.chain) ok &= c.passed;
    if (!ok) throw Error("a fused/unfused chain check failed: the timings above compare unequal work");
    if (!o.submit.empty()) {
      if (report.chain.empty()) throw Error("--submit: this run has no chain results to submit");
      submit_native(o.submit, ctx, bench_submission_results(report));
    }
  });
}

}  // namespace wgfuse::cli
