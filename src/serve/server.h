// `wgfuse serve`: the browser benchmark's page, the kernel sources it runs (from the binary's
// embedded table), and the results API over a ResultsStore (docs/WEB_API.md).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "serve/bounded_http.h"
#include "serve/kernel_index.h"
#include "serve/rate_limiter.h"
#include "serve/results_store.h"
#include "serve/submission.h"

namespace wgfuse::serve {

// Routes served beside the benchmark's (the OpenAI API of `serve --model`), with their own
// methods, keys, rate limits and error shape for the paths they own; mounted before the static
// files' catch-all.
class RouteSet {
 public:
  virtual ~RouteSet() = default;
  virtual bool owns(const std::string& path) const = 0;
  // Before routing, for an owned path (the server has checked its bytes are UTF-8): Handled when
  // it answered (a method, key or rate refused).
  virtual httplib::Server::HandlerResponse pre_route(const httplib::Request& req, httplib::Response& res) = 0;
  // An error the server answers on an owned path (404, 413, a deadline, an exception), in this
  // set's shape.
  virtual void send_error(httplib::Response& res, int status, const std::string& message) const = 0;
  virtual void mount(httplib::Server& http) = 0;
  // The server is stopping: end every wait of a handler now.
  virtual void stop() = 0;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                               // 0: any free port (bind() says which)
  std::vector<std::filesystem::path> web_roots;  // looked up in order
  RateLimit rate;                                // per client address, over submissions (POST /api/results)
  RateLimit read_rate{.per_window = 600};        // per client address, over the other /api requests
  ConnectionLimits connections;                  // bodies larger than max_body_bytes get 413
  bool access_log = false;                       // a line per request on stderr
  // More routes (`--model`: apps/serve/model_assets.h), registered before the page's files.
  std::function<void(httplib::Server&)> more_routes;
  // POST /api/sim/workload (the playground): a workload file's text, named `origin` in messages, to
  // what the page runs (sim::web_workload); throws Error where the file is wrong. Unset: the route
  // answers 404. Kept a function so that this layer needs nothing of the simulations.
  std::function<nlohmann::json(const std::string& text, const std::string& origin)> expand_workload;
  size_t max_workload_bytes = 64 * 1024;      // a workload file's text at most; more gets 413
  RateLimit workload_rate{.per_window = 60};  // per client address, over POST /api/sim/workload
  std::vector<std::shared_ptr<RouteSet>> route_sets;
  // `--model`: the native run llm results are checked against (serve/submission.h); unset: the
  // server refuses llm results.
  std::optional<LlmCheck> llm_check;
};

class Server {
 public:
  Server(ServerOptions options, KernelIndex kernels, ResultsStore& store);
  ~Server();
  // Binds the listening socket; the port bound. Throws Error naming --host/--port on failure.
  int bind();
  // Serves until stop(); then finishes the requests in flight before returning.
  void run();
  // Whether run() is listening (from just before its first accept until it returns).
  bool listening() const;
  // Stops accepting, ends idle connections, and every other within connections.stop_grace; safe
  // from any thread, a no-op unless listening.
  void stop();

 private:
  void routes();
  RouteSet* owner(const std::string& path) const;  // the route set owning path, or nullptr
  void answer_error(const httplib::Request& req, httplib::Response& res, int status,
                    const std::string& reason) const;
  ServerOptions options_;
  KernelIndex kernels_;
  ResultsStore& store_;
  RateLimiter limiter_;           // submissions
  RateLimiter read_limiter_;      // queries: a researcher's page navigation, far cheaper than a write
  RateLimiter workload_limiter_;  // workload files expanded: each costs a parse of up to 64 KiB
  std::unique_ptr<BoundedHttpServer> http_;
};

// The current UTC time as ISO 8601 with milliseconds, "2026-11-22T18:43:53.123Z".
std::string utc_now_iso8601();

}  // namespace wgfuse::serve
