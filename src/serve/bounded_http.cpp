#include "serve/bounded_http.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <list>
#include <thread>
#include <utility>
#include <vector>

#include "util/error.h"

namespace wgfuse::serve {
namespace {

using Clock = std::chrono::steady_clock;

// What a handler or the error handler needs to know about the request on this thread's connection.
struct RequestState {
  int sock = -1;
  bool close_after = false;
  bool restart_write_deadline = false;
  std::string refusal;
};
thread_local RequestState* current_request = nullptr;

// A chunked body's framing (sizes, extensions, CRLFs) is read through the same stream: the body cap
// admits this much more, so that the handler's exact check on the content answers (413) first.
size_t framed_body_cap(size_t body) {
  return 2 * body + (64 << 10);
}

std::string numeric_host(const sockaddr_storage& addr, socklen_t len, int& port) {
  char host[NI_MAXHOST] = "", serv[NI_MAXSERV] = "";
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, serv, sizeof serv,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "";
  port = std::atoi(serv);
  return host;
}

// The connection's byte stream: one buffer for its whole life (pipelined requests stay in order),
// reads bounded by the request's deadline and its head/body caps.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int sock, const ConnectionLimits& limits, int stop_fd, const std::atomic<bool>& stopping,
                   const std::atomic<int64_t>& stop_deadline_ns)
      : sock_(sock),
        limits_(limits),
        stop_fd_(stop_fd),
        stopping_(stopping),
        stop_deadline_ns_(stop_deadline_ns) {}

  // Waits up to idle_timeout for the next request's first byte (already buffered, or arriving).
  bool wait_for_request() {
    if (begin_ < end_) return true;
    return wait(POLLIN, Clock::now() + limits_.idle_timeout, /*idle=*/true) && fill() > 0;
  }

  void begin_request(RequestState& state) {
    state_ = &state;
    in_head_ = true;
    head_bytes_ = body_bytes_ = lines_ = line_length_ = 0;
    deadline_ = Clock::now() + limits_.head_timeout;
    write_deadline_ = {};
    written_ = 0;
  }

  bool answered() const { return written_ > 0; }

  bool is_readable() const override { return begin_ < end_; }
  bool is_writable() const override {
    pollfd p{sock_, POLLOUT, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLOUT);
  }

  ssize_t read(char* ptr, size_t size) override {
    if (begin_ == end_) {
      if (!wait(POLLIN, deadline_, false)) return -1;
      ssize_t n = fill();
      if (n <= 0) return n;
    }
    size_t n = std::min(size, end_ - begin_);
    if (in_head_)
      n = count_head(n);
    else if ((body_bytes_ += n) > framed_body_cap(limits_.max_body_bytes))
      return refuse("413 body larger than " + std::to_string(limits_.max_body_bytes) + " bytes");
    if (n == 0) return -1;
    std::memcpy(ptr, buffer_.data() + begin_, n);
    begin_ += n;
    return ssize_t(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (write_deadline_ == Clock::time_point{} ||
        (state_ && std::exchange(state_->restart_write_deadline, false)))
      write_deadline_ = Clock::now() + limits_.write_timeout;
    if (!wait(POLLOUT, write_deadline_, false)) return -1;
    const ssize_t n = send(sock_, ptr, size, MSG_NOSIGNAL);
    if (n > 0) written_ += size_t(n);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getpeername(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) ip = numeric_host(addr, len, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getsockname(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) ip = numeric_host(addr, len, port);
  }
  // (Below FD_SETSIZE while max_connections keeps the descriptors few, which httplib checks.)
  socket_t socket() const override { return sock_; }

 private:
  // How many of the next n buffered bytes belong to the head (up to its blank line); refuses a
  // head beyond the caps.
  size_t count_head(size_t n) {
    for (size_t k = 0; k < n; ++k) {
      const char c = buffer_[begin_ + k];
      if (++head_bytes_ > limits_.max_head_bytes) {
        refuse("431 request head larger than " + std::to_string(limits_.max_head_bytes) + " bytes");
        return 0;
      }
      if (c == '\r') continue;
      if (c != '\n') {
        ++line_length_;
        continue;
      }
      if (line_length_ == 0 && lines_ > 0) {  // the blank line: the body (if any) follows
        in_head_ = false;
        deadline_ = Clock::now() + limits_.body_timeout;
        return k + 1;
      }
      line_length_ = 0;
      if (++lines_ > limits_.max_header_lines + 1) {
        refuse("431 more than " + std::to_string(limits_.max_header_lines) + " header lines");
        return 0;
      }
    }
    return n;
  }

  ssize_t refuse(std::string why) {
    if (state_ && state_->refusal.empty()) state_->refusal = std::move(why);
    return -1;
  }

  // Until `fd` is ready for `events`, the deadline (earlier once stopping) or, for an idle wait, stop.
  bool wait(short events, Clock::time_point deadline, bool idle) {
    for (;;) {
      const bool stopping = stopping_;
      if (stopping) {
        if (idle) return false;
        deadline = std::min(deadline, Clock::time_point(std::chrono::nanoseconds(stop_deadline_ns_.load())));
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        if (!idle)
          refuse(stopping   ? "503 the server is stopping"
                 : in_head_ ? "408 request head not received within " +
                                  std::to_string(limits_.head_timeout.count()) + " ms"
                            : "408 request body not received within " +
                                  std::to_string(limits_.body_timeout.count()) + " ms");
        return false;
      }
      pollfd p[2] = {{sock_, events, 0}, {stop_fd_, POLLIN, 0}};
      const int n = poll(p, stopping ? 1 : 2, int(std::min<int64_t>(left, 60000)));
      if (n < 0 && errno != EINTR) return false;
      if (n > 0 && p[0].revents) return true;
    }
  }

  ssize_t fill() {
    if (begin_ == end_) begin_ = end_ = 0;
    if (buffer_.size() - end_ < 4096) {
      buffer_.erase(buffer_.begin(), buffer_.begin() + ptrdiff_t(begin_));
      end_ -= begin_;
      begin_ = 0;
      if (buffer_.size() - end_ < 4096) buffer_.resize(end_ + 16384);
    }
    ssize_t n = recv(sock_, buffer_.data() + end_, buffer_.size() - end_, 0);
    if (n > 0) end_ += size_t(n);
    return n;
  }

  int sock_;
  const ConnectionLimits& limits_;
  int stop_fd_;  // readable once the server stops: wakes every wait at once
  const std::atomic<bool>& stopping_;
  const std::atomic<int64_t>& stop_deadline_ns_;
  std::vector<char> buffer_ = std::vector<char>(16384);
  size_t begin_ = 0, end_ = 0;
  RequestState* state_ = nullptr;
  bool in_head_ = true;
  size_t head_bytes_ = 0, body_bytes_ = 0, lines_ = 0, line_length_ = 0;
  Clock::time_point deadline_{}, write_deadline_{};
  size_t written_ = 0;
};

// A thread per connection (admission caps how many do more than refuse); stop joins them all.
class ThreadPerConnection final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override {
    std::lock_guard lock(mutex_);
    reap();
    auto it = threads_.emplace(threads_.end());
    try {
      *it = std::thread([this, it, fn = std::move(fn)] {
        fn();
        std::lock_guard done(mutex_);
        finished_.push_back(it);
        changed_.notify_all();
      });
    } catch (const std::system_error&) {  // no thread to be had: serve (refuse) it on this one
      threads_.erase(it);
      fn();
    }
  }

  void shutdown() override {
    std::unique_lock lock(mutex_);
    for (;;) {
      reap();
      if (threads_.empty()) return;
      changed_.wait(lock);
    }
  }

 private:
  void reap() {
    for (auto it : finished_) {
      it->join();
      threads_.erase(it);
    }
    finished_.clear();
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::list<std::thread> threads_;
  std::vector<std::list<std::thread>::iterator> finished_;
};

// A whole response for a connection httplib does not answer: `status_and_reason` as refusals hold
// it ("503 the server is stopping"); the reason is plain ASCII made here.
std::string bare_response(const std::string& status_and_reason) {
  const std::string status = status_and_reason.substr(0, 3), reason = status_and_reason.substr(4);
  const std::string body = "{\"error\": \"" + reason + "\"}";
  const char* phrase = status == "408"   ? "Request Timeout"
                       : status == "413" ? "Payload Too Large"
                       : status == "431" ? "Request Header Fields Too Large"
                                         : "Service Unavailable";
  return "HTTP/1.1 " + status + " " + phrase +
         "\r\nContent-Type: application/json\r\nRetry-After: 5\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

void refuse_connection(int sock, const std::string& why) {
  const std::string reply = bare_response("503 " + why);
  (void)!send(sock, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(sock, SHUT_RDWR);
  close(sock);
}

// Ends the connection without a reset that could destroy the last response: no more writes, the
// unread rest drained for a moment, then closed.
void close_gracefully(int sock) {
  shutdown(sock, SHUT_WR);
  char scratch[16384];
  const auto until = Clock::now() + std::chrono::milliseconds(200);
  for (size_t drained = 0; drained < (1 << 20);) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    pollfd p{sock, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, int(left)) <= 0) break;
    const ssize_t n = recv(sock, scratch, sizeof scratch, 0);
    if (n <= 0) break;
    drained += size_t(n);
  }
  close(sock);
}

}  // namespace

BoundedHttpServer::BoundedHttpServer(ConnectionLimits limits) : limits_(limits) {
  if (pipe2(stop_pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
    throw Error("serve: cannot create a pipe: " + std::string(std::strerror(errno)));
  new_task_queue = [] { return new ThreadPerConnection; };
  set_keep_alive_max_count(limits_.max_requests_per_connection);
  set_keep_alive_timeout(std::max<time_t>(1, limits_.idle_timeout.count() / 1000));
  set_payload_max_length(limits_.max_body_bytes);
}

BoundedHttpServer::~BoundedHttpServer() {
  close(stop_pipe_[0]);
  close(stop_pipe_[1]);
}

void BoundedHttpServer::widen_backlog() {
  ::listen(svr_sock_, SOMAXCONN);
}

void BoundedHttpServer::stop_bounded() {
  const auto deadline = Clock::now() + limits_.stop_grace;
  stop_deadline_ns_ =
      std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
  stopping_ = true;
  (void)!::write(stop_pipe_[1], "x", 1);
  stop();
}

void BoundedHttpServer::close_after_response(httplib::Response& res) {
  res.set_header("Connection", "close");
  if (current_request) current_request->close_after = true;
}

std::string BoundedHttpServer::refusal() {
  return current_request ? current_request->refusal : "";
}

void BoundedHttpServer::restart_write_deadline() {
  if (current_request) current_request->restart_write_deadline = true;
}

bool BoundedHttpServer::client_left() {
  if (!current_request) return false;
  pollfd p{current_request->sock, POLLRDHUP, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

bool BoundedHttpServer::admit(const std::string& address, std::string& why) {
  std::lock_guard lock(mutex_);
  if (open_ >= limits_.max_connections) {
    why = "too many connections: " + std::to_string(limits_.max_connections) + " are open; retry later";
    return false;
  }
  size_t& mine = per_address_[address];
  if (mine >= limits_.max_connections_per_address) {
    why = "too many connections from " + address + ": " +
          std::to_string(limits_.max_connections_per_address) + " are open; close some or retry later";
    return false;
  }
  ++mine;
  ++open_;
  return true;
}

void BoundedHttpServer::release(const std::string& address) {
  std::lock_guard lock(mutex_);
  if (--per_address_[address] == 0) per_address_.erase(address);
  --open_;
}

bool BoundedHttpServer::process_and_close_socket(socket_t sock) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  int port = 0;
  const std::string address =
      getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len) == 0 ? numeric_host(addr, len, port) : "";
  std::string why;
  if (stopping_ || !admit(address, why)) {
    refuse_connection(sock, stopping_ ? "the server is stopping" : why);
    return false;
  }
  ConnectionStream stream(sock, limits_, stop_pipe_[0], stopping_, stop_deadline_ns_);
  bool ok = true;
  for (size_t n = 0; n < limits_.max_requests_per_connection && !stopping_; ++n) {
    if (!stream.wait_for_request()) break;
    RequestState state{.sock = sock};
    current_request = &state;
    stream.begin_request(state);
    bool closed = false;
    const bool last = n + 1 == limits_.max_requests_per_connection;
    ok = process_request(stream, last, closed, nullptr);
    current_request = nullptr;
    if (!state.refusal.empty() && !stream.answered()) {  // cut off in the request line: httplib said nothing
      const std::string reply = bare_response(state.refusal);
      (void)!send(sock, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    if (!ok || closed || last || state.close_after || !state.refusal.empty()) break;
  }
  release(address);
  close_gracefully(sock);
  return ok;
}

}  // namespace wgfuse::serve
