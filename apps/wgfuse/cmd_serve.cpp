// wgfuse serve: the browser benchmark page, the kernels it runs, and the results API
// (docs/WEB_API.md).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "commands.h"
#include "gpu/kernel.h"
#include "serve/server.h"
#include "util/error.h"

namespace wgfuse::cli {
namespace {

namespace fs = std::filesystem;

serve::KernelIndex embedded_kernel_index() {
  std::vector<std::pair<std::string, std::string>> families;
  for (auto& f : gpu::embedded_kernel_families())
    families.emplace_back(std::string(f.name), std::string(f.source));
  return serve::make_kernel_index(std::move(families));
}

// The page: --web DIR, else web/ beside the binary (a package), else the source tree's web/ (a
// build). Files the build generates (the vendored chart library) are in web/ beside the binary,
// looked up after the page's own.
std::vector<fs::path> web_roots(const std::string& web_option) {
  const fs::path beside = fs::read_symlink("/proc/self/exe").parent_path() / "web";
  fs::path primary = web_option;
  if (primary.empty()) primary = fs::exists(beside / "index.html") ? beside : fs::path(WGFUSE_SOURCE_WEB_DIR);
  if (!fs::is_directory(primary))
    throw Error("serve: --web " + primary.string() +
                " is not a directory (the page's files: index.html, app/, ...)");
  std::vector<fs::path> roots{primary};
  if (fs::is_directory(beside) && !fs::equivalent(beside, primary)) roots.push_back(beside);
  return roots;
}

}  // namespace

void add_serve(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("serve", "Serve the browser benchmark and collect results (docs/WEB_API.md)");
  static serve::ServerOptions options;
  static std::string db = "results.sqlite", web, rate = "60/min";
  cmd->add_option("--host", options.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", options.port, "port to listen on (0: any free port, printed)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--db", db, "SQLite file, or a PostgreSQL URI postgresql://user@host:port/dbname")
      ->capture_default_str();
  cmd->add_option("--web", web,
                  "the page's directory (default: web/ beside the binary, else the source tree's)");
  cmd->add_option("--rate", rate, "API requests per client address: COUNT/s, COUNT/min, COUNT/hour, or off")
      ->capture_default_str();
  cmd->add_option("--threads", options.threads, "requests served at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_flag("--access-log", options.access_log, "print a line per request on stderr");
  cmd->callback([] {
    options.rate = serve::RateLimit::parse(rate);
    options.web_roots = web_roots(web);

    // SIGTERM and SIGINT are taken by one thread (sigwait), blocked in every other, so that the
    // stop is an ordinary call rather than work inside a signal handler.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    serve::ResultsStore store(serve::open_database(db));
    serve::Server server(options, embedded_kernel_index(), store);
    const int port = server.bind();
    std::printf("wgfuse serve: http://%s:%d/ (results in %s, page from %s)\n", options.host.c_str(), port,
                store.describe().c_str(), options.web_roots.front().c_str());
    std::fflush(stdout);
    std::thread stopper([&] {
      int signal = 0;
      sigwait(&stop_signals, &signal);
      server.stop();
    });
    server.run();  // returns once stopped and the requests in flight are answered
    if (stopper.joinable()) {
      kill(getpid(), SIGTERM);  // pending for the stopper if run() ended by itself; harmless otherwise
      stopper.join();
    }
    std::printf("wgfuse serve: stopped\n");
  });
}

}  // namespace wgfuse::cli
