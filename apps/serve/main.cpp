// wgfuse-serve: the browser benchmark page, the kernels it runs, and the results API
// (docs/WEB_API.md); `wgfuse serve` runs it. Also the client of `--submit`: a submission JSON on
// stdin, POSTed, the reply on stdout. A program of its own so that wgfuse itself needs no HTTP,
// TLS or database libraries (their dependencies run to Kerberos and LDAP) where no one serves.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <mutex>
#include <thread>

#include "gpu/kernel.h"
#include "llm/batch_decoder.h"
#include "llm/session.h"
#include "model_assets.h"
#include "serve/client.h"
#include "serve/openai_api.h"
#include "serve/server.h"
#include "sim/workloads.h"
#include "util/error.h"

namespace wgfuse {
namespace {

namespace fs = std::filesystem;

// The page: --web DIR, else web/ beside the binary (a package), else the source tree's web/ (a
// build). Files the build generates (the vendored chart library) are in web/ beside the binary,
// looked up after the page's own. Without any page the API and kernels are still served.
std::vector<fs::path> web_roots(const std::string& web_option) {
  const fs::path beside = fs::read_symlink("/proc/self/exe").parent_path() / "web";
  fs::path primary = web_option;
  if (primary.empty()) primary = fs::exists(beside / "index.html") ? beside : fs::path(WGFUSE_SOURCE_WEB_DIR);
  std::vector<fs::path> roots;
  if (fs::is_directory(primary)) {
    roots.push_back(primary);
  } else if (!web_option.empty()) {
    throw Error("serve: --web " + web_option +
                " is not a directory (the page's files: index.html, app/, ...)");
  } else {
    std::fprintf(stderr,
                 "wgfuse serve: no page found (%s, %s); serving the API and kernels only (see --web)\n",
                 beside.c_str(), primary.c_str());
  }
  if (fs::is_directory(beside) && (roots.empty() || !fs::equivalent(beside, primary)))
    roots.push_back(beside);
  return roots;
}

// The embedded kernel families as GET /kernels/index.json lists them (its version is every
// result's kernel_version): the same table the wgfuse binary built beside this one runs.
serve::KernelIndex embedded_kernel_index() {
  std::vector<std::pair<std::string, std::string>> families;
  for (auto& f : gpu::embedded_kernel_families())
    families.emplace_back(std::string(f.name), std::string(f.source));
  return serve::make_kernel_index(std::move(families));
}

// --submit URL: the submission on stdin gets the kernel version where a result lacks it.
void submit(const std::string& url) {
  std::string body{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  nlohmann::json submission = nlohmann::json::parse(body, nullptr, false);
  if (submission.is_discarded() || !submission.contains("results") || !submission["results"].is_array())
    throw Error("--submit: stdin is not a submission JSON with a results array (docs/WEB_API.md)");
  const std::string version = embedded_kernel_index().version;
  for (auto& r : submission["results"])
    if (r.is_object() && !r.contains("kernel_version")) r["kernel_version"] = version;
  const auto reply = serve::submit_results(url, submission);
  std::printf("%s\n", nlohmann::json{{"id", reply.id}, {"accepted", reply.accepted}}.dump().c_str());
}

// --model: the model loaded on the GPU before the server listens, and its OpenAI API at /v1/.
struct ModelServing {
  llm::SessionOptions session;
  serve::OpenAiOptions api;
  std::string adapter = "auto", dtype = "auto", api_rate = "600/min";
  std::unique_ptr<gpu::Context> ctx;
  std::unique_ptr<llm::Session> model;
  std::mutex device;  // the GPU: the generation worker's steps, the chat page's shard reads and plans

  std::shared_ptr<serve::RouteSet> load(const std::string& host) {
    if (host != "127.0.0.1" && host != "localhost" && host != "::1")
      std::fprintf(stderr,
                   "wgfuse serve: warning: --host %s serves the model API beyond this machine without TLS: "
                   "prompts, replies and the API key cross the network in clear text (put a TLS proxy in "
                   "front)\n",
                   host.c_str());
    if (dtype != "auto") session.dtype = gpu::parse_weight_format(dtype, "--dtype");
    session.notice = [](const std::string& s) { std::fprintf(stderr, "wgfuse serve: %s\n", s.c_str()); };
    model = std::make_unique<llm::Session>(session);  // checks the files before the GPU is touched
    // The chat page runs plans made from this device's kernels in a browser, and desktop browsers
    // offer at most 32 KiB of workgroup memory: kernels sized by the limit (the tiled prefill
    // attention's tile) must fit that, whatever this GPU grants.
    ctx = std::make_unique<gpu::Context>(gpu::ContextOptions{.adapter = gpu::parse_adapter_choice(adapter),
                                                             .max_compute_workgroup_storage_size = 32768});
    try {
      model->load(*ctx);
    } catch (const Error& e) {
      if (!session.binding_limit) throw;
      throw Error("--limits " + std::to_string(session.binding_limit) + ": " + e.what());
    }
    api.model_id = fs::path(session.model_dir).filename().string();
    if (api.model_id.empty()) api.model_id = fs::path(session.model_dir).parent_path().filename().string();
    api.rate = serve::RateLimit::parse(api_rate, "--api-rate");
    std::printf("wgfuse serve: model %s on %s, context %u tokens, loaded in %.0f ms\n", api.model_id.c_str(),
                ctx->adapter().device.c_str(), model->ctx_len(), model->load_ms());
    return std::make_shared<serve::OpenAiApi>(*model, api, device);
  }
};

void add_model_options(CLI::App& cmd, ModelServing& m) {
  cmd.add_option("--api-key", m.api.api_key,
                 "with --model: the key /v1/ requests must send (Authorization: Bearer KEY)")
      ->envname("WGFUSE_API_KEY");
  cmd.add_option("--parallel", m.api.parallel,
                 "with --model: requests decoded together, each step reading the weights once for all "
                 "(1: one at a time through the single-sequence decoder)")
      ->check(CLI::Range(1u, llm::BatchDecoder::kMaxSlots))
      ->capture_default_str();
  cmd.add_option("--join-tokens", m.api.join_tokens,
                 "with --model and --parallel > 1: prompt tokens of joining requests fed between two "
                 "batched steps (more: joiners start sooner, running streams wait longer)")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  cmd.add_option("--max-queue", m.api.max_queue,
                 "with --model: requests waiting at most; more are answered 503")
      ->check(CLI::Range(size_t(1), size_t(4096)))
      ->capture_default_str();
  cmd.add_option("--api-rate", m.api_rate,
                 "with --model: generation requests per client address (COUNT/min, ..., off)")
      ->capture_default_str();
  cmd.add_option("--ctx", m.session.ctx,
                 "with --model: KV-cache length in tokens, the most a prompt and its completion may take "
                 "(default 4096, or the model's max_position_embeddings if smaller)")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--dtype", m.dtype, "with --model: weight storage on the GPU: auto | f32 | f16 | bf16")
      ->check(CLI::IsMember({"auto", "f32", "f16", "bf16"}))
      ->capture_default_str();
  cmd.add_option("--adapter", m.adapter, "with --model: the WebGPU adapter: auto | gpu | cpu")
      ->capture_default_str();
}

}  // namespace
}  // namespace wgfuse

int main(int argc, char** argv) {
  using namespace wgfuse;
  CLI::App cmd{"wgfuse serve: the browser benchmark and its results API (docs/WEB_API.md)", "wgfuse serve"};
  ModelServing serving;  // --model's OpenAI API; outlives the options' route sets, which use its session
  serve::ServerOptions options;
  std::string db = "results.sqlite", web, rate = "60/min", read_rate = "600/min", workload_rate = "60/min",
              submit_url, model_dir;
  cmd.add_option("--host", options.host, "address to listen on")->capture_default_str();
  cmd.add_option("--port", options.port, "port to listen on (0: any free port, printed)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd.add_option("--db", db, "SQLite file, or a PostgreSQL URI postgresql://user@host:port/dbname")
      ->capture_default_str();
  cmd.add_option("--web", web,
                 "the page's directory (default: web/ beside the binary, else the source tree's)");
  cmd.add_option("--rate", rate, "submissions per client address: COUNT/s, COUNT/min, COUNT/hour, or off")
      ->capture_default_str();
  cmd.add_option("--read-rate", read_rate,
                 "other API requests (queries) per client address: COUNT/s, COUNT/min, COUNT/hour, or off")
      ->capture_default_str();
  cmd.add_option("--workload-rate", workload_rate,
                 "workload files expanded for the playground (POST /api/sim/workload) per client address: "
                 "COUNT/s, COUNT/min, COUNT/hour, or off")
      ->capture_default_str();
  cmd.add_option("--max-connections", options.connections.max_connections,
                 "connections open at once (a thread each); more are answered 503")
      ->check(CLI::Range(1, 900))  // (httplib's select() needs descriptors below 1024)
      ->capture_default_str();
  cmd.add_option("--max-connections-per-address", options.connections.max_connections_per_address,
                 "connections open at once from one client address; more are answered 503")
      ->check(CLI::Range(1, 900))
      ->capture_default_str();
  double head_timeout = options.connections.head_timeout.count() / 1e3;
  double body_timeout = options.connections.body_timeout.count() / 1e3;
  cmd.add_option("--head-timeout", head_timeout, "seconds for a request's line and headers to arrive")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  cmd.add_option("--body-timeout", body_timeout, "seconds for a request's body to arrive, after its headers")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  cmd.add_flag("--access-log", options.access_log, "print a line per request on stderr");
  cmd.add_option("--model", model_dir,
                 "Hugging Face model folder for the chat page (/chat): its plan, packed weights and "
                 "tokenizer under /model/; and OpenAI's API for it at /v1/ (docs/WEB_API.md)");
  std::string limits = "device";
  cmd.add_option("--limits", limits,
                 "with --model: the limits the page's plans are made for: device (this machine's), browser "
                 "(WebGPU's defaults: 128 MiB per buffer and binding), or BYTES per buffer and binding (what "
                 "a browser grants); the weight arena is split to fit, another buffer over it is refused")
      ->capture_default_str();
  add_model_options(cmd, serving);
  cmd.add_option("--submit", submit_url,
                 "instead of serving: POST the submission JSON on stdin to URL, print the reply (how "
                 "`wgfuse bench|sim --submit` send theirs)");
  cmd.callback([&] {
    if (!submit_url.empty()) return submit(submit_url);
    options.rate = serve::RateLimit::parse(rate);
    options.read_rate = serve::RateLimit::parse(read_rate, "--read-rate");
    options.workload_rate = serve::RateLimit::parse(workload_rate, "--workload-rate");
    // A visitor's file: its header's CPU reference (a script path) is neither looked up nor run.
    options.expand_workload = [](const std::string& text, const std::string& origin) {
      return sim::web_workload(sim::load_workload(text, origin, sim::References::skip));
    };
    options.connections.head_timeout = std::chrono::milliseconds(int64_t(head_timeout * 1e3));
    options.connections.body_timeout = std::chrono::milliseconds(int64_t(body_timeout * 1e3));
    options.web_roots = web_roots(web);

    // SIGTERM and SIGINT are taken by one thread (sigwait), blocked in every other, so that the
    // stop is an ordinary call rather than work inside a signal handler.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    // (After the mask: the worker and Dawn threads the model starts inherit it.)
    serving.api.max_body_bytes = options.connections.max_body_bytes;
    serving.session.model_dir = model_dir;
    serving.session.binding_limit = serve::parse_limits(limits);
    if (!model_dir.empty()) options.route_sets.push_back(serving.load(options.host));

    std::unique_ptr<serve::ModelAssets> model;
    if (!model_dir.empty()) {
      model = std::make_unique<serve::ModelAssets>(model_dir, *serving.model, serving.device);
      options.more_routes = [&](httplib::Server& http) { model->routes(http); };
      options.llm_check = model->llm_check();
      std::printf("wgfuse serve: model %s at /chat\n", model->describe().c_str());
    }
    serve::ResultsStore store(serve::open_database(db));
    serve::Server server(options, embedded_kernel_index(), store);
    const int port = server.bind();
    const std::string page = options.web_roots.empty() ? "none" : options.web_roots.front().string();
    std::printf("wgfuse serve: http://%s:%d/ (results in %s, page from %s)\n", options.host.c_str(), port,
                store.describe().c_str(), page.c_str());
    std::fflush(stdout);
    std::atomic<bool> finished = false;
    std::thread stopper([&] {
      int signal = 0;
      sigwait(&stop_signals, &signal);
      // A stop() that comes before run() has started listening would be lost: wait for it.
      while (!finished && !server.listening()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (!finished) server.stop();
    });
    server.run();  // returns once stopped and the requests in flight are answered
    finished = true;
    kill(getpid(), SIGTERM);  // wakes the stopper if run() ended by itself; pending and harmless otherwise
    stopper.join();
    std::printf("wgfuse serve: stopped\n");
  });
  try {
    cmd.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cmd.exit(e);
  } catch (const Error& e) {
    std::fprintf(stderr, "wgfuse serve: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wgfuse serve: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
