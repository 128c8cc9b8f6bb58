#include "serve/server.h"

#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "serve/static_files.h"
#include "serve/submission.h"
#include "util/error.h"

namespace wgfuse::serve {
namespace {

using nlohmann::json;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-cache");
  res.set_content(body.dump(), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& reason) {
  send_json(res, status, {{"error", reason}});
}

// A non-negative integer query parameter within [lo, hi], else a 400 naming it.
bool integer_param(const httplib::Request& req, httplib::Response& res, const char* name, int64_t lo,
                   int64_t hi, int64_t& out) {
  if (!req.has_param(name)) return true;
  const std::string text = req.get_param_value(name);
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || v < lo || v > hi) {
    send_error(
        res, 400,
        std::string(name) + ": must be an integer within " + std::to_string(lo) + ".." + std::to_string(hi));
    return false;
  }
  out = v;
  return true;
}

bool only_params(const httplib::Request& req, httplib::Response& res, const std::vector<std::string>& known) {
  for (auto& [key, value] : req.params) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (auto& k : known) list += (list.empty() ? "" : ", ") + k;
      send_error(res, 400, key + ": unknown query parameter (known: " + list + ")");
      return false;
    }
  }
  return true;
}

}  // namespace

std::string utc_now_iso8601() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t seconds = std::time_t(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char seconds_text[32], millis[8];
  std::strftime(seconds_text, sizeof seconds_text, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(millis, sizeof millis, ".%03dZ", int(ms % 1000));
  return std::string(seconds_text) + millis;
}

Server::Server(ServerOptions options, KernelIndex kernels, ResultsStore& store)
    : options_(std::move(options)),
      kernels_(std::move(kernels)),
      store_(store),
      limiter_(options_.rate),
      http_(std::make_unique<httplib::Server>()) {
  const size_t threads = options_.threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.body_limit);
  routes();
}

Server::~Server() = default;

int Server::bind() {
  const std::string where = "--host " + options_.host + " --port " + std::to_string(options_.port);
  if (options_.port == 0) {
    int port = http_->bind_to_any_port(options_.host);
    if (port <= 0)
      throw Error("serve: cannot listen on " + where + ": no free port, or the host is not local");
    return port;
  }
  if (!http_->bind_to_port(options_.host, options_.port))
    throw Error("serve: cannot listen on " + where +
                ": the port is in use or the host is not an address of this machine");
  return options_.port;
}

void Server::run() {
  http_->listen_after_bind();
}

void Server::stop() {
  http_->stop();
}

void Server::routes() {
  auto& http = *http_;

  // The rate limit covers the API (writes, and the queries that cost database time); the page's
  // static files are cheap and cached.
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!req.path.starts_with("/api/")) return httplib::Server::HandlerResponse::Unhandled;
    double retry_after = 0;
    if (limiter_.admit(req.remote_addr, retry_after)) return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("Retry-After", std::to_string(int64_t(std::ceil(retry_after))));
    send_error(res, 429,
               "rate limit: too many requests from " + req.remote_addr + "; retry after " +
                   std::to_string(int64_t(std::ceil(retry_after))) + " s");
    return httplib::Server::HandlerResponse::Handled;
  });

  // Errors httplib answers itself (413, 404, 400 on a bad request line) get a body that says why.
  const size_t body_limit = options_.body_limit;
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([body_limit](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        std::string reason = "HTTP " + std::to_string(res.status);
        if (res.status == 413)
          reason = "body: larger than the limit of " + std::to_string(body_limit) + " bytes";
        if (res.status == 404) reason = "not found: " + req.method + " " + req.path;
        if (res.status == 400) reason = "bad request: " + req.method + " " + req.path;
        send_error(res, res.status, reason);
        return httplib::Server::HandlerResponse::Handled;
      }));

  http.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    }
    std::fprintf(stderr, "wgfuse serve: %s %s failed: %s\n", req.method.c_str(), req.path.c_str(),
                 what.c_str());
    send_error(res, 500, "server error (logged on the server)");
  });

  if (options_.access_log)
    http.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      std::fprintf(stderr, "%s %s %s %d\n", req.remote_addr.c_str(), req.method.c_str(), req.path.c_str(),
                   res.status);
    });

  http.Post("/api/results", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string type = req.get_header_value("Content-Type");
    if (type.substr(0, type.find(';')) != "application/json")
      return send_error(res, 415, "Content-Type: must be application/json, not '" + type + "'");
    json body;
    try {
      body = json::parse(req.body);
    } catch (const json::exception& e) {  // a syntax error, or a number beyond double range
      return send_error(res, 400, std::string("body: malformed JSON: ") + e.what());
    }
    try {
      validate_submission(body);
    } catch (const ValidationError& e) {
      return send_error(res, 400, e.what());
    }
    const int64_t id = store_.insert(body, utc_now_iso8601());
    send_json(res, 201, {{"id", id}, {"accepted", body.at("results").size()}});
  });

  http.Get("/api/results", [this](const httplib::Request& req, httplib::Response& res) {
    std::vector<std::string> known = ResultsStore::filter_columns();
    known.insert(known.end(), {"limit", "offset", "format"});
    if (!only_params(req, res, known)) return;
    ResultQuery q;
    for (auto& column : ResultsStore::filter_columns())
      if (req.has_param(column.c_str())) q.equals[column] = req.get_param_value(column.c_str());
    if (!integer_param(req, res, "limit", 1, ResultsStore::max_limit, q.limit) ||
        !integer_param(req, res, "offset", 0, INT64_MAX, q.offset))
      return;
    const std::string format = req.has_param("format") ? req.get_param_value("format") : "json";
    if (format == "json") return send_json(res, 200, store_.query(q));
    if (format != "csv") return send_error(res, 400, "format: must be json or csv, not '" + format + "'");
    res.set_header("Cache-Control", "no-cache");
    res.set_header("Content-Disposition", "attachment; filename=\"wgfuse-results.csv\"");
    res.set_content(store_.query_csv(q), "text/csv; charset=utf-8");
  });

  http.Get("/api/summary", [this](const httplib::Request& req, httplib::Response& res) {
    if (!only_params(req, res, {"by", "suite"})) return;
    const std::string by = req.has_param("by") ? req.get_param_value("by") : "vendor";
    const auto& keys = ResultsStore::summary_keys();
    if (std::find(keys.begin(), keys.end(), by) == keys.end())
      return send_error(res, 400,
                        "by: must be one of vendor, device, backend, browser, source; not '" + by + "'");
    send_json(res, 200, store_.summary(by, req.has_param("suite") ? req.get_param_value("suite") : ""));
  });

  http.Get("/kernels/index.json", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, kernels_.to_json());
  });

  http.Get(R"(/kernels/([A-Za-z0-9_]+)\.wgsl)", [this](const httplib::Request& req, httplib::Response& res) {
    const KernelFile* file = kernels_.find(req.matches[1].str());
    if (!file) {
      res.status = 404;
      res.set_content(
          "no kernel family '" + req.matches[1].str() + "' (GET /kernels/index.json lists them)\n",
          "text/plain; charset=utf-8");
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Kernel-SHA256", file->sha256);
    res.set_content(file->text, "text/plain; charset=utf-8");
  });

  http.Get(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!is_safe_relative_path(req.path == "/" ? "/index.html" : req.path)) {
      res.status = 400;
      res.set_content("bad path: " + req.path + " (no '..', '.', hidden or empty segments)\n",
                      "text/plain; charset=utf-8");
      return;
    }
    auto file = resolve_static(options_.web_roots, req.path);
    if (!file) {
      res.status = 404;
      res.set_content("not found: " + req.path + "\n", "text/plain; charset=utf-8");
      return;
    }
    std::ifstream in(*file, std::ios::binary);
    std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    res.set_header("Cache-Control", cache_control_for(file->string()));
    res.set_content(std::move(body), content_type_for(file->string()));
  });
}

}  // namespace wgfuse::serve
