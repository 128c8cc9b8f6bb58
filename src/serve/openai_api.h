// The OpenAI-compatible API of `wgfuse serve --model` (docs/WEB_API.md, "The model API"):
//   POST /v1/chat/completions  messages through the model's chat template; `stream` as server-sent
//                              events ending with a usage chunk and `data: [DONE]`
//   POST /v1/completions       a prompt as text or token ids
//   GET  /v1/models[/ID]       the one model served
//   GET  /health               the model, the scheduling and the queue (no key needed)
// Errors are OpenAI's {"error": {"message", "type", "param", "code"}} with its status codes. The
// requests are validated and tokenized on the connection's thread, then queued to the generation
// worker (serve/generation_worker.h), which alone uses the GPU; a connection waits on its request,
// streaming what comes, and cancels it when the client leaves.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>

#include "llm/session.h"
#include "serve/generation_worker.h"
#include "serve/rate_limiter.h"
#include "serve/server.h"

namespace wgfuse::serve {

struct OpenAiOptions {
  std::string model_id;               // what /v1/models lists and a request's "model" must name
  std::string api_key;                // empty: none asked; else `Authorization: Bearer KEY` on /v1/
  RateLimit rate{.per_window = 600};  // generation requests per client address
  uint32_t parallel = 8;              // requests decoded together (--parallel; 1: one at a time)
  // Prompt tokens of joining requests fed between two batched submits (--join-tokens).
  uint32_t join_tokens = GenerationWorker::kJoinChunk;
  size_t max_queue = 64;            // requests waiting beyond this are answered 503
  size_t max_body_bytes = 1 << 20;  // the server's ConnectionLimits (a chunked body reaches the handler)
  uint32_t max_stop_strings = 4, max_stop_bytes = 256;
};

class OpenAiApi final : public RouteSet {
 public:
  // `session` is loaded; the API's worker owns its generation from here on, holding `device`
  // while it uses the GPU (others that read the session's GPU buffers hold it too).
  OpenAiApi(llm::Session& session, OpenAiOptions options, std::mutex& device);
  ~OpenAiApi() override;

  bool owns(const std::string& path) const override;
  httplib::Server::HandlerResponse pre_route(const httplib::Request& req, httplib::Response& res) override;
  void send_error(httplib::Response& res, int status, const std::string& message) const override;
  void mount(httplib::Server& http) override;
  void stop() override;

 private:
  struct Parsed;
  enum class Kind { Chat, Completion };
  void generate(Kind kind, const httplib::Request& req, httplib::Response& res);
  Parsed parse(Kind kind, const std::string& body);
  void stream(Kind kind, const Parsed& p, std::shared_ptr<Generation> g, httplib::Response& res);
  void answer(Kind kind, const Parsed& p, Generation& g, httplib::Response& res);
  bool key_accepted(const httplib::Request& req) const;

  llm::Session& session_;
  OpenAiOptions options_;
  std::string key_digest_;     // SHA-256 of the key, compared in constant time
  std::mutex template_mutex_;  // the session reads its chat template on first use
  RateLimiter limiter_;
  std::time_t created_;
  std::unique_ptr<GenerationWorker> worker_;
};

}  // namespace wgfuse::serve
