// cpp-httplib's server with the bounds it lacks (docs/WEB_API.md, "Connections"): a thread per
// connection up to a total and a per-address cap, a deadline for each request's head and body
// (not per read, so a client trickling a byte a second is cut off), caps on the head's bytes and
// header lines, pipelined requests kept in order (one buffer per connection), and a stop that ends
// every connection within a bounded time whatever the clients do.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>

namespace wgfuse::serve {

struct ConnectionLimits {
  size_t max_connections = 512;             // at once, all addresses together
  size_t max_connections_per_address = 32;  // at once, from one client address
  size_t max_head_bytes = 32 << 10;         // request line and headers
  size_t max_header_lines = 100;
  size_t max_body_bytes = 1 << 20;  // the framing of a chunked body comes on top (see bounded_http.cpp)
  std::chrono::milliseconds head_timeout{10000};   // from a request's first byte to its blank line
  std::chrono::milliseconds body_timeout{30000};   // from there to the body's last byte
  std::chrono::milliseconds idle_timeout{5000};    // a kept-alive connection waiting for its next request
  std::chrono::milliseconds write_timeout{10000};  // to write one response
  std::chrono::milliseconds stop_grace{2000};      // after stop(), for the requests in flight
  size_t max_requests_per_connection = 1000;
};

class BoundedHttpServer : public httplib::Server {
 public:
  explicit BoundedHttpServer(ConnectionLimits limits);
  ~BoundedHttpServer() override;
  // After bind: a listen backlog for bursts of connections (httplib's is 5: a burst of clients
  // would wait out SYN retransmissions, seconds each, before anyone refused them).
  void widen_backlog();
  // Ends idle connections now and every other within stop_grace, then stops as httplib::Server::stop.
  void stop_bounded();

  // From a handler (on the connection's thread): close the connection after this response, which
  // then says `Connection: close` (a request whose body was not read leaves the stream unusable).
  static void close_after_response(httplib::Response& res);
  // Why the current request was cut off (a limit or a deadline), "" if it was not.
  static std::string refusal();
  // From a streamed response's content provider: the next write starts a fresh write_timeout, so
  // that a long stream is bounded per piece rather than as a whole.
  static void restart_write_deadline();
  // From a handler or content provider: the client has closed or reset the connection.
  static bool client_left();

  // Open connections at the moment (for the tests' and the log's view of the caps).
  size_t open_connections() const { return open_; }

 private:
  bool process_and_close_socket(socket_t sock) override;
  bool admit(const std::string& address, std::string& why);
  void release(const std::string& address);

  ConnectionLimits limits_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> stop_deadline_ns_{0};
  int stop_pipe_[2] = {-1, -1};  // written by stop_bounded(); every connection's wait polls it
  std::mutex mutex_;
  std::map<std::string, size_t> per_address_;
  std::atomic<size_t> open_{0};
};

}  // namespace wgfuse::serve
