#include "serve/server.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <regex>

#include "serve/static_files.h"
#include "serve/submission.h"
#include "util/error.h"

namespace wgfuse::serve {
namespace {

using nlohmann::json;

// (Bytes that are not UTF-8, e.g. from a request's path, become U+FFFD instead of an exception.)
void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-cache");
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
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
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno == ERANGE || v < lo || v > hi) {
    send_error(
        res, 400,
        std::string(name) + ": must be an integer within " + std::to_string(lo) + ".." + std::to_string(hi));
    return false;
  }
  out = v;
  return true;
}

// The column filters of GET /api/results and /api/summary, and `flagged` (yes, no; absent: both).
bool filters(const httplib::Request& req, httplib::Response& res, ResultQuery& q) {
  for (auto& column : ResultsStore::filter_columns())
    if (req.has_param(column.c_str())) q.equals[column] = req.get_param_value(column.c_str());
  if (!req.has_param("flagged")) return true;
  const std::string flagged = req.get_param_value("flagged");
  if (flagged != "yes" && flagged != "no") {
    send_error(res, 400, "flagged: must be yes or no, not '" + flagged + "'");
    return false;
  }
  q.flagged = flagged == "yes" ? Flagged::yes : Flagged::no;
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

// `text` for a log line: control bytes, backslashes and bytes past ASCII as \xHH, so that a
// request cannot forge or break lines.
std::string printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f && c != '\\') {
      out += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);
      out += hex;
    }
  }
  return out;
}

// The media type of a Content-Type value, lower case, without parameters or blanks.
std::string media_type(const std::string& content_type) {
  std::string type = content_type.substr(0, content_type.find(';'));
  std::erase_if(type, [](char c) { return c == ' ' || c == '\t'; });
  for (char& c : type) c = char(std::tolower(static_cast<unsigned char>(c)));
  return type;
}

// The first part of the request that is not UTF-8 ("path", "query parameter x", "Content-Type"),
// "" when all are.
std::string not_utf8(const httplib::Request& req) {
  if (!is_utf8(req.path)) return "path";
  for (auto& [key, value] : req.params)
    if (!is_utf8(key) || !is_utf8(value)) return "query parameter " + printable(key);
  if (!is_utf8(req.get_header_value("Content-Type"))) return "Content-Type";
  return "";
}

bool expects_body(const httplib::Request& req) {
  return req.has_header("Content-Length") || req.has_header("Transfer-Encoding");
}

// Answers a request whose body was not read (to its end), so its connection closes.
void refuse_unread(httplib::Response& res, int status, const std::string& reason) {
  send_error(res, status, reason);
  BoundedHttpServer::close_after_response(res);
}

// Reads the body of `req`, of media type `type`, into `text`: at most `limit` bytes, whether
// chunked or of a fixed length. Otherwise answers why (415, 400, 413, or the connection limit's
// refusal) and returns false.
bool read_body_of_type(const httplib::Request& req, httplib::Response& res,
                       const httplib::ContentReader& read_body, const std::string& type, size_t limit,
                       std::string& text) {
  const std::string content_type = req.get_header_value("Content-Type");
  if (media_type(content_type) != type) {
    refuse_unread(res, 415, "Content-Type: must be " + type + ", not '" + printable(content_type) + "'");
    return false;
  }
  const std::string too_large = "body: larger than the limit of " + std::to_string(limit) + " bytes";
  if (req.has_header("Content-Length")) {
    const std::string length = req.get_header_value("Content-Length");
    char* end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(length.c_str(), &end, 10);
    if (length.empty() || *end || errno == ERANGE || length[0] == '-') {
      refuse_unread(res, 400, "Content-Length: '" + printable(length) + "' is not a byte count");
      return false;
    }
    if (n > limit) {
      refuse_unread(res, 413, too_large);
      return false;
    }
  }
  bool over = false;
  const bool read = read_body([&](const char* data, size_t n) {
    over = text.size() + n > limit;
    if (!over) text.append(data, n);
    return !over;
  });
  if (over) {
    refuse_unread(res, 413, too_large);
    return false;
  }
  if (!read) {
    const std::string cut = BoundedHttpServer::refusal();
    if (cut.empty())
      refuse_unread(res, 400, "body: could not be read (malformed chunked encoding, or the client left)");
    else
      refuse_unread(res, std::stoi(cut.substr(0, 3)), cut.substr(4));
    return false;
  }
  return true;
}

// The file name a workload's messages give (query parameter `name`): a plain file name ending in
// .wgsl, never a path.
bool workload_file_name(const httplib::Request& req, httplib::Response& res, std::string& name) {
  name = req.has_param("name") ? req.get_param_value("name") : "workload.wgsl";
  static const std::regex plain(R"([A-Za-z0-9_][A-Za-z0-9_.-]{0,58}\.wgsl)");
  if (std::regex_match(name, plain)) return true;
  send_error(
      res, 400,
      "name: must be a file name of up to 64 letters, digits, '_', '.' and '-' ending in .wgsl, not '" +
          printable(name.substr(0, 80)) + "'");
  return false;
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
      read_limiter_(options_.read_rate),
      workload_limiter_(options_.workload_rate),
      http_(std::make_unique<BoundedHttpServer>(options_.connections)) {
  routes();
}

Server::~Server() = default;

int Server::bind() {
  const std::string where = "--host " + options_.host + " --port " + std::to_string(options_.port);
  if (options_.port == 0) {
    int port = http_->bind_to_any_port(options_.host);
    if (port <= 0)
      throw Error("serve: cannot listen on " + where + ": no free port, or the host is not local");
    http_->widen_backlog();
    return port;
  }
  if (!http_->bind_to_port(options_.host, options_.port))
    throw Error("serve: cannot listen on " + where +
                ": the port is in use or the host is not an address of this machine");
  http_->widen_backlog();
  return options_.port;
}

void Server::run() {
  http_->listen_after_bind();
}

bool Server::listening() const {
  return http_->is_running();
}

void Server::stop() {
  for (auto& set : options_.route_sets) set->stop();
  http_->stop_bounded();
}

RouteSet* Server::owner(const std::string& path) const {
  for (auto& set : options_.route_sets)
    if (set->owns(path)) return set.get();
  return nullptr;
}

void Server::answer_error(const httplib::Request& req, httplib::Response& res, int status,
                          const std::string& reason) const {
  if (RouteSet* set = owner(req.path)) return set->send_error(res, status, reason);
  send_error(res, status, reason);
}

void Server::routes() {
  auto& http = *http_;

  // Before any body is read: bytes that are not UTF-8, methods no route takes, then the rate limits
  // over the API: one for submissions, a higher one for the queries that cost database time (a
  // researcher changing filters); the page's static files are cheap and cached. A refused request's body is
  // never read, so its connection closes.
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const auto refuse = [&](int status, const std::string& reason) {
      answer_error(req, res, status, reason);
      if (expects_body(req)) BoundedHttpServer::close_after_response(res);
      return httplib::Server::HandlerResponse::Handled;
    };
    if (const std::string part = not_utf8(req); !part.empty())
      return refuse(400, part + ": not UTF-8 (percent-encode UTF-8 text)");
    if (RouteSet* set = owner(req.path)) return set->pre_route(req, res);
    const bool submit = req.method == "POST" && req.path == "/api/results";
    const bool expand = req.method == "POST" && req.path == "/api/sim/workload";
    if (req.method != "GET" && req.method != "HEAD" && !submit && !expand)
      return refuse(405, "method " + printable(req.method) + " is not allowed on " + req.path +
                             " (GET and HEAD everywhere, POST on /api/results and /api/sim/workload)");
    if (!req.path.starts_with("/api/")) return httplib::Server::HandlerResponse::Unhandled;
    double retry_after = 0;
    RateLimiter& limiter = submit ? limiter_ : expand ? workload_limiter_ : read_limiter_;
    if (limiter.admit(req.remote_addr, retry_after)) return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("Retry-After", std::to_string(int64_t(std::ceil(retry_after))));
    return refuse(429, std::string("rate limit: too many ") +
                           (submit   ? "submissions"
                            : expand ? "workload files"
                                     : "queries") +
                           " from " + req.remote_addr + "; retry after " +
                           std::to_string(int64_t(std::ceil(retry_after))) + " s");
  });

  // Errors httplib answers itself (a request cut off by a connection limit or deadline, 413, 404,
  // 400 on a bad request line) get a body that says why. Runs outside httplib's exception
  // handling: nothing may escape it.
  const size_t body_limit = options_.connections.max_body_bytes;
  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [this, body_limit](const httplib::Request& req, httplib::Response& res) {
        try {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          std::string reason = "HTTP " + std::to_string(res.status);
          if (const std::string cut = BoundedHttpServer::refusal(); !cut.empty()) {
            res.status = std::stoi(cut.substr(0, 3));
            reason = cut.substr(4);
          } else if (res.status == 413) {
            reason = "body: larger than the limit of " + std::to_string(body_limit) + " bytes";
          } else if (res.status == 404) {
            reason = "not found: " + req.method + " " + req.path;
          } else if (res.status == 400) {
            reason = "bad request: " + req.method + " " + req.path;
          }
          answer_error(req, res, res.status, reason);
          return httplib::Server::HandlerResponse::Handled;
        } catch (const std::exception& e) {
          std::fprintf(stderr, "wgfuse serve: answering HTTP %d failed: %s\n", res.status,
                       printable(e.what()).c_str());
          return httplib::Server::HandlerResponse::Unhandled;
        }
      }));

  http.set_exception_handler(
      [this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        std::fprintf(stderr, "wgfuse serve: %s %s failed: %s\n", printable(req.method).c_str(),
                     printable(req.path).c_str(), printable(what).c_str());
        answer_error(req, res, 500, "server error (logged on the server)");
      });

  if (options_.access_log)
    http.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      std::fprintf(stderr, "%s %s %s %d\n", printable(req.remote_addr).c_str(), printable(req.method).c_str(),
                   printable(req.path).c_str(), res.status);
    });

  // The body is read here, through a limit that holds for chunked and fixed-length bodies alike.
  http.Post("/api/results", [this, body_limit](const httplib::Request& req, httplib::Response& res,
                                               const httplib::ContentReader& read_body) {
    std::string text;
    if (!read_body_of_type(req, res, read_body, "application/json", body_limit, text)) return;
    json body;
    try {
      body = parse_submission_body(text);
      validate_submission(body, options_.llm_check ? &*options_.llm_check : nullptr);
    } catch (const ValidationError& e) {
      return send_error(res, 400, e.what());
    }
    flag_implausible(body, kernels_.version);
    size_t flagged = 0;
    for (auto& r : body["results"]) flagged += !r["flags"].empty();
    const int64_t id = store_.insert(body, utc_now_iso8601());
    send_json(res, 201, {{"id", id}, {"accepted", body.at("results").size()}, {"flagged", flagged}});
  });

  // A visitor's workload file to the modules the playground runs: the simulations' own loader, so
  // that the browser runs what native runs and is told the same errors (sim::web_workload).
  http.Post("/api/sim/workload", [this](const httplib::Request& req, httplib::Response& res,
                                        const httplib::ContentReader& read_body) {
    if (!options_.expand_workload)
      return refuse_unread(res, 404, "this server does not expand workload files");
    std::string name, text;
    if (!only_params(req, res, {"name"}) || !workload_file_name(req, res, name)) {
      BoundedHttpServer::close_after_response(res);
      return;
    }
    if (!read_body_of_type(req, res, read_body, "text/plain", options_.max_workload_bytes, text)) return;
    if (!is_utf8(text)) return send_error(res, 400, "body: not UTF-8 (a workload file is UTF-8 text)");
    try {
      send_json(res, 200, options_.expand_workload(text, name));
    } catch (const Error& e) {
      send_error(res, 422, e.what());
    }
  });

  http.Get("/api/results", [this](const httplib::Request& req, httplib::Response& res) {
    std::vector<std::string> known = ResultsStore::filter_columns();
    known.insert(known.end(), {"flagged", "submission", "limit", "offset", "format"});
    if (!only_params(req, res, known)) return;
    ResultQuery q;
    if (!filters(req, res, q)) return;
    if (!integer_param(req, res, "submission", 1, INT64_MAX, q.submission_id) ||
        !integer_param(req, res, "limit", 1, ResultsStore::max_limit, q.limit) ||
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
    std::vector<std::string> known = ResultsStore::filter_columns();
    known.push_back("by");
    if (!only_params(req, res, known)) return;
    const std::string by = req.has_param("by") ? req.get_param_value("by") : "vendor";
    const auto& keys = ResultsStore::summary_keys();
    if (std::find(keys.begin(), keys.end(), by) == keys.end())
      return send_error(res, 400,
                        "by: must be one of vendor, device, backend, browser, source; not '" + by + "'");
    ResultQuery q;
    if (!filters(req, res, q)) return;
    send_json(res, 200, store_.summary(by, q));
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

  if (options_.more_routes) options_.more_routes(http);
  for (auto& set : options_.route_sets) set->mount(http);

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
