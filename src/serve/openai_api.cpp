#include "serve/openai_api.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "serve/bounded_http.h"
#include "serve/kernel_index.h"
#include "serve/submission.h"
#include "util/error.h"

namespace wgfuse::serve {
namespace {

using nlohmann::json;
using HandlerResponse = httplib::Server::HandlerResponse;

constexpr int kMaxDepth = 16;  // messages[i].content[j] needs 4 levels of arrays and objects
constexpr auto kPoll = std::chrono::milliseconds(200);  // how soon a wait notices a client leaving

// A request refused: OpenAI's status, message, offending parameter and code.
struct ApiError {
  int status;
  std::string message;
  std::string param, code;
};

[[noreturn]] void bad(const std::string& param, const std::string& message, const std::string& code = "") {
  throw ApiError{400, param + ": " + message, param, code};
}

std::string type_of(int status) {
  if (status == 429) return "requests";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

json error_body(const ApiError& e) {
  const auto or_null = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  return {{"error",
           {{"message", e.message},
            {"type", type_of(e.status)},
            {"param", or_null(e.param)},
            {"code", or_null(e.code)}}}};
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-cache");
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_api_error(httplib::Response& res, const ApiError& e) {
  send_json(res, e.status, error_body(e));
}

std::string random_id(const char* prefix) {
  static std::mutex mutex;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard lock(mutex);
  char hex[25];
  std::snprintf(hex, sizeof hex, "%016llx%08x", static_cast<unsigned long long>(rng()), uint32_t(rng()));
  return std::string(prefix) + hex;
}

const char* finish_name(FinishReason f) {
  return f == FinishReason::Length ? "length" : "stop";
}

// Typed fields of the request body, each refused with its name when it has the wrong type or range.
struct Fields {
  const json& body;
  bool has(const char* key) const { return body.contains(key) && !body[key].is_null(); }
  double number(const char* key, double lo, double hi) const {
    const json& v = body[key];
    if (!v.is_number()) bad(key, "must be a number");
    const double x = v.get<double>();
    if (!(x >= lo && x <= hi)) bad(key, "must be within " + json(lo).dump() + " .. " + json(hi).dump());
    return x;
  }
  int64_t integer(const char* key, int64_t lo, int64_t hi) const {
    const json& v = body[key];
    if (!v.is_number_integer()) bad(key, "must be an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) bad(key, "is out of range");
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) bad(key, "must be within " + std::to_string(lo) + " .. " + std::to_string(hi));
    return x;
  }
  bool boolean(const char* key) const {
    if (!body[key].is_boolean()) bad(key, "must be true or false");
    return body[key].get<bool>();
  }
  const std::string& string(const char* key) const {
    if (!body[key].is_string()) bad(key, "must be a string");
    return body[key].get_ref<const std::string&>();
  }
};

// The text of a message's content: a string, or an array of {"type": "text", "text": ...} parts.
std::string content_text(const json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) bad(where, "must be a string or an array of text parts");
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const json& part = content[j];
    const std::string at = where + "[" + std::to_string(j) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      bad(at, "must be an object with a \"type\"");
    if (part["type"] != "text")
      bad(at + ".type", "'" + part["type"].get<std::string>() + "' is not supported (text parts only)");
    if (!part.contains("text") || !part["text"].is_string()) bad(at + ".text", "must be a string");
    text += part["text"].get<std::string>();
  }
  return text;
}

}  // namespace

struct OpenAiApi::Parsed {
  GenerationRequest request;
  bool stream = false, include_usage = false;
  std::string id;
};

OpenAiApi::OpenAiApi(llm::Session& session, OpenAiOptions options, std::mutex& device)
    : session_(session),
      options_(std::move(options)),
      key_digest_(options_.api_key.empty() ? "" : sha256_hex(options_.api_key)),
      limiter_(options_.rate),
      created_(std::time(nullptr)),
      worker_(std::make_unique<GenerationWorker>(session_, options_.max_queue, device, options_.parallel,
                                                 options_.join_tokens)) {}

OpenAiApi::~OpenAiApi() {
  worker_->stop();
}

bool OpenAiApi::owns(const std::string& path) const {
  return path == "/health" || path == "/v1" || path.starts_with("/v1/");
}

void OpenAiApi::send_error(httplib::Response& res, int status, const std::string& message) const {
  send_api_error(res, {status, message, "", status == 404 ? "not_found" : ""});
}

void OpenAiApi::stop() {
  worker_->stop();
}

bool OpenAiApi::key_accepted(const httplib::Request& req) const {
  if (key_digest_.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  const std::string bearer = "Bearer ";
  const std::string given = header.starts_with(bearer) ? header.substr(bearer.size()) : "";
  // Digests of equal length, compared in constant time: neither the key nor its length leaks.
  const std::string digest = sha256_hex(given);
  return !given.empty() && CRYPTO_memcmp(digest.data(), key_digest_.data(), digest.size()) == 0;
}

HandlerResponse OpenAiApi::pre_route(const httplib::Request& req, httplib::Response& res) {
  const bool post = req.path == "/v1/chat/completions" || req.path == "/v1/completions";
  const auto refuse = [&](const ApiError& e) {
    send_api_error(res, e);
    if (req.has_header("Content-Length") || req.has_header("Transfer-Encoding"))
      BoundedHttpServer::close_after_response(res);  // the body is not read
    return HandlerResponse::Handled;
  };
  const bool allowed = post ? req.method == "POST" : (req.method == "GET" || req.method == "HEAD");
  if (!allowed)
    return refuse(
        {405,
         "method " + req.method + " is not allowed on " + req.path + " (" + (post ? "POST" : "GET") + " is)",
         "", "method_not_allowed"});
  if (req.path == "/health") return HandlerResponse::Unhandled;
  if (!key_accepted(req))
    return refuse({401,
                   "Incorrect or missing API key: send the key given to `wgfuse serve --api-key` as "
                   "`Authorization: Bearer KEY`",
                   "", "invalid_api_key"});
  if (!post) return HandlerResponse::Unhandled;
  double retry_after = 0;
  if (limiter_.admit(req.remote_addr, retry_after)) return HandlerResponse::Unhandled;
  const auto seconds = std::to_string(int64_t(std::ceil(retry_after)));
  res.set_header("Retry-After", seconds);
  return refuse({429,
                 "rate limit: too many requests from " + req.remote_addr + "; retry after " + seconds + " s",
                 "", "rate_limit_exceeded"});
}

void OpenAiApi::mount(httplib::Server& http) {
  http.Post("/v1/chat/completions",
            [this](const httplib::Request& req, httplib::Response& res) { generate(Kind::Chat, req, res); });
  http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    generate(Kind::Completion, req, res);
  });

  const auto model = [this] {
    return json{{"id", options_.model_id},
                {"object", "model"},
                {"created", created_},
                {"owned_by", "wgfuse"},
                {"context_length", session_.ctx_len()}};
  };
  http.Get("/v1/models", [model](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"object", "list"}, {"data", json::array({model()})}});
  });
  http.Get(R"(/v1/models/(.+))", [this, model](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1].str() != options_.model_id)
      return send_api_error(res, {404,
                                  "The model '" + req.matches[1].str() +
                                      "' does not exist; this server serves '" + options_.model_id + "'",
                                  "model", "model_not_found"});
    send_json(res, 200, model());
  });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const WorkerStatus s = worker_->status();
    send_json(res, 200,
              {{"status", "ok"},
               {"model", options_.model_id},
               {"context_length", session_.ctx_len()},
               {"scheduling", s.parallel > 1 ? "batched" : "sequential"},
               {"parallel", s.parallel},
               {"parallel_requested", options_.parallel},
               // batched: a lone request runs alone through the step decoder until company comes
               {"decoding", s.alone     ? "alone"
                            : s.running ? "batched"
                                        : "idle"},
               {"moved_to_batch", s.moved},
               {"moved_out_of_batch", s.moved_back},
               // what joining the batch cost: see serve::WorkerStatus
               {"joins",
                {{"prompts", s.joined},
                 {"tokens", s.join_tokens},
                 {"feeds", s.join_feeds},
                 {"feed_ms", s.join_feed_ms},
                 {"prompt_plans", s.prompt_plans},
                 {"rounds", s.join_rounds},
                 {"longest_round_ms", s.longest_join_round_ms}}},
               // the batched rounds: see serve::WorkerStatus::Rounds
               {"rounds",
                {{"rounds", s.decode.rounds},
                 {"steps", s.decode.steps},
                 {"overlapped", s.decode.overlapped},
                 {"submit_ms", s.decode.submit_ms},
                 {"wait_ms", s.decode.wait_ms},
                 {"deliver_ms", s.decode.deliver_ms}}},
               {"running", s.running},
               {"queued", s.queued},
               {"max_queue", s.max_queue},
               {"served", s.served},
               {"cancelled", s.cancelled}});
  });
  // Before the static files' catch-all: an unknown /v1/ path is an API error, not a missing page.
  http.Get(R"(/v1(/.*)?)", [this](const httplib::Request& req, httplib::Response& res) {
    send_error(
        res, 404,
        "not found: GET " + req.path + " (GET /v1/models, POST /v1/chat/completions, /v1/completions)");
  });
}

OpenAiApi::Parsed OpenAiApi::parse(Kind kind, const std::string& text) {
  json body;
  try {
    body = parse_json_body(text, kMaxDepth, "a chat request needs 4");
  } catch (const ValidationError& e) {
    throw ApiError{400, e.what(), "", "invalid_json"};
  }
  if (!body.is_object()) throw ApiError{400, "body: must be a JSON object", "", "invalid_json"};
  const Fields f{body};
  static const std::vector<std::string> known_chat = {"model",
                                                      "messages",
                                                      "stream",
                                                      "stream_options",
                                                      "max_tokens",
                                                      "max_completion_tokens",
                                                      "temperature",
                                                      "top_p",
                                                      "top_k",
                                                      "seed",
                                                      "stop",
                                                      "n",
                                                      "logprobs",
                                                      "top_logprobs",
                                                      "presence_penalty",
                                                      "frequency_penalty",
                                                      "repetition_penalty",
                                                      "user",
                                                      "chat_template_kwargs",
                                                      "response_format",
                                                      "tools",
                                                      "tool_choice",
                                                      "logit_bias"};
  static const std::vector<std::string> known_completion = {"model",
                                                            "prompt",
                                                            "stream",
                                                            "stream_options",
                                                            "max_tokens",
                                                            "temperature",
                                                            "top_p",
                                                            "top_k",
                                                            "seed",
                                                            "stop",
                                                            "n",
                                                            "logprobs",
                                                            "presence_penalty",
                                                            "frequency_penalty",
                                                            "repetition_penalty",
                                                            "user",
                                                            "echo",
                                                            "suffix",
                                                            "best_of",
                                                            "logit_bias"};
  const auto& known = kind == Kind::Chat ? known_chat : known_completion;
  for (auto& [key, value] : body.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      bad(key, "unknown or unsupported parameter", "unsupported_parameter");

  if (f.has("model") && f.string("model") != options_.model_id)
    throw ApiError{404,
                   "The model '" + f.string("model") + "' does not exist; this server serves '" +
                       options_.model_id + "' (GET /v1/models)",
                   "model", "model_not_found"};
  Parsed p;
  p.id = random_id(kind == Kind::Chat ? "chatcmpl-" : "cmpl-");
  if (f.has("stream")) p.stream = f.boolean("stream");
  if (f.has("stream_options")) {
    const json& o = body["stream_options"];
    if (!o.is_object()) bad("stream_options", "must be an object");
    if (!p.stream) bad("stream_options", "is only allowed with stream: true");
    if (o.contains("include_usage")) {
      if (!o["include_usage"].is_boolean()) bad("stream_options.include_usage", "must be true or false");
      p.include_usage = o["include_usage"].get<bool>();
    }
  }
  // What this server does not do: refused, rather than silently ignored.
  if (f.has("n") && f.integer("n", 1, 128) != 1) bad("n", "only 1 is supported");
  if (f.has("best_of") && f.integer("best_of", 1, 128) != 1) bad("best_of", "only 1 is supported");
  if (f.has("logprobs") && body["logprobs"] != false && body["logprobs"] != 0)
    bad("logprobs", "not supported by this server");
  if (f.has("top_logprobs")) bad("top_logprobs", "not supported by this server");
  if (f.has("echo") && f.boolean("echo")) bad("echo", "not supported by this server");
  if (f.has("suffix")) bad("suffix", "not supported by this server");
  for (const char* key : {"presence_penalty", "frequency_penalty"})
    if (f.has(key) && f.number(key, -2, 2) != 0)
      bad(key, "not supported by this server (repetition_penalty is: HF's multiplicative penalty)");
  if (f.has("logit_bias") && !(body["logit_bias"].is_object() && body["logit_bias"].empty()))
    bad("logit_bias", "not supported by this server");
  if (f.has("tools") && !(body["tools"].is_array() && body["tools"].empty()))
    bad("tools", "tool calls are not supported by this server");
  if (f.has("tool_choice") && body["tool_choice"] != "none")
    bad("tool_choice", "tool calls are not supported");
  if (f.has("response_format") && body["response_format"] != json{{"type", "text"}})
    bad("response_format", "only {\"type\": \"text\"} is supported");
  if (f.has("user")) f.string("user");

  // Sampling: unset values take the model's generation_config.json, else greedy; no seed: a fresh one.
  llm::SamplingOverrides& s = p.request.sampling;
  if (f.has("temperature")) s.temperature = f.number("temperature", 0, 2);
  if (f.has("top_p")) s.top_p = f.number("top_p", 0, 1);
  if (s.top_p && *s.top_p == 0) bad("top_p", "must be above 0 (1 keeps every token)");
  if (f.has("top_k")) s.top_k = f.integer("top_k", 0, INT32_MAX);
  if (f.has("repetition_penalty")) s.repetition_penalty = f.number("repetition_penalty", 0.01, 100);
  s.seed = f.has("seed") ? uint64_t(f.integer("seed", INT64_MIN, INT64_MAX)) : std::random_device{}();
  try {
    session_.resolve_sampling(s);
  } catch (const Error& e) {
    bad("sampling", e.what());
  }

  if (f.has("stop")) {
    const json& v = body["stop"];
    std::vector<std::string>& stops = p.request.stop;
    if (v.is_string()) {
      stops.push_back(v.get<std::string>());
    } else if (v.is_array()) {
      for (auto& x : v) {
        if (!x.is_string()) bad("stop", "must be a string or an array of strings");
        stops.push_back(x.get<std::string>());
      }
    } else {
      bad("stop", "must be a string or an array of strings");
    }
    if (stops.size() > options_.max_stop_strings)
      bad("stop", "at most " + std::to_string(options_.max_stop_strings) + " stop strings");
    for (auto& x : stops)
      if (x.empty() || x.size() > options_.max_stop_bytes)
        bad("stop", "each stop string must have 1 to " + std::to_string(options_.max_stop_bytes) + " bytes");
  }

  // The prompt.
  std::vector<uint32_t>& prompt = p.request.prompt;
  const char* prompt_param = kind == Kind::Chat ? "messages" : "prompt";
  if (kind == Kind::Chat) {
    if (!f.has("messages") || !body["messages"].is_array() || body["messages"].empty())
      bad("messages", "must be a non-empty array of {role, content}");
    std::vector<llm::ChatMessage> messages;
    for (size_t i = 0; i < body["messages"].size(); ++i) {
      const json& m = body["messages"][i];
      const std::string at = "messages[" + std::to_string(i) + "]";
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
        bad(at, "must be an object with a \"role\"");
      std::string role = m["role"].get<std::string>();
      if (role == "developer") role = "system";
      if (role != "system" && role != "user" && role != "assistant")
        bad(at + ".role", "'" + role + "' is not supported (system, developer, user or assistant)");
      if (!m.contains("content") || m["content"].is_null()) bad(at + ".content", "is required");
      messages.push_back({role, content_text(m["content"], at + ".content")});
    }
    bool thinking = true;
    if (f.has("chat_template_kwargs")) {
      const json& k = body["chat_template_kwargs"];
      if (!k.is_object()) bad("chat_template_kwargs", "must be an object");
      for (auto& [key, value] : k.items()) {
        if (key != "enable_thinking" || !value.is_boolean())
          bad("chat_template_kwargs." + key, "only enable_thinking (true or false) is supported");
        thinking = value.get<bool>();
      }
    }
    try {
      std::lock_guard lock(template_mutex_);
      prompt = session_.encode_messages(messages, thinking);
    } catch (const Error& e) {
      bad("messages", e.what());
    }
  } else {
    if (!f.has("prompt")) bad("prompt", "is required");
    json v = body["prompt"];
    if (v.is_array() && v.size() == 1 && v[0].is_string()) v = v[0];
    const uint32_t vocab = session_.files().config().vocab_size;
    if (v.is_string()) {
      try {
        prompt = session_.encode(v.get<std::string>());
      } catch (const Error& e) {
        bad("prompt", e.what());
      }
    } else if (v.is_array()) {
      for (auto& x : v) {
        if (!x.is_number_unsigned() || x.get<uint64_t>() >= vocab)
          bad("prompt", "must be a string or an array of token ids below the vocabulary size " +
                            std::to_string(vocab) + " (one prompt per request)");
        prompt.push_back(x.get<uint32_t>());
      }
    } else {
      bad("prompt", "must be a string or an array of token ids");
    }
  }
  if (prompt.empty()) bad(prompt_param, "gives no tokens");
  // (A tokenizer may know more tokens than the model has rows, e.g. a chat template's markers.)
  const uint32_t rows = session_.files().config().vocab_size;
  for (uint32_t id : prompt)
    if (id >= rows)
      bad(prompt_param, "the tokenizer gives token id " + std::to_string(id) +
                            ", beyond the model's vocabulary of " + std::to_string(rows) +
                            " (config.json vocab_size)");

  // The context: the prompt and the completion must fit in the KV cache.
  const uint32_t ctx = session_.ctx_len();
  const char* max_key = f.has("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  const std::optional<int64_t> asked =
      f.has(max_key) ? std::optional(f.integer(max_key, 1, INT32_MAX)) : std::nullopt;
  if (int64_t(prompt.size()) + asked.value_or(1) > int64_t(ctx))
    throw ApiError{
        400,
        "This model's maximum context length is " + std::to_string(ctx) +
            " tokens (--ctx). However, you "
            "requested " +
            std::to_string(prompt.size() + asked.value_or(1)) + " tokens (" + std::to_string(prompt.size()) +
            " in the " + prompt_param + ", " + std::to_string(asked.value_or(1)) +
            " in the completion). Please reduce the length of the " + prompt_param + " or " + max_key + ".",
        asked ? max_key : prompt_param, "context_length_exceeded"};
  p.request.max_tokens = uint32_t(asked.value_or(ctx - prompt.size()));
  return p;
}

void OpenAiApi::generate(Kind kind, const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<Generation> g;
  Parsed p;
  try {
    if (req.body.size() > options_.max_body_bytes)
      throw ApiError{413,
                     "body: larger than the limit of " + std::to_string(options_.max_body_bytes) + " bytes"};
    p = parse(kind, req.body);
    g = worker_->submit(p.request);
    if (!g) {
      res.set_header("Retry-After", "5");
      throw ApiError{503,
                     "the server is busy: " + std::to_string(options_.max_queue) +
                         " requests are waiting already (--max-queue); retry later",
                     "", "server_busy"};
    }
  } catch (const ApiError& e) {
    return send_api_error(res, e);
  }
  res.set_header("X-Requests-Ahead", std::to_string(g->queue_position()));
  if (p.stream) return stream(kind, p, std::move(g), res);
  answer(kind, p, *g, res);
}

void OpenAiApi::answer(Kind kind, const Parsed& p, Generation& g, httplib::Response& res) {
  std::string text;
  Generation::News n;
  for (;;) {
    n = g.take(kPoll);
    text += n.text;
    if (n.finish != FinishReason::None) break;
    if (BoundedHttpServer::client_left()) {
      g.cancel();
      BoundedHttpServer::close_after_response(res);
      return send_api_error(res, {499, "the client closed the connection", "", "client_closed"});
    }
  }
  if (n.finish == FinishReason::Error)
    return send_api_error(res, {500, "the generation failed: " + n.error, "", "generation_failed"});
  if (n.finish == FinishReason::Cancelled)
    return send_api_error(res, {503, "the server is stopping", "", "server_stopping"});
  json choice = kind == Kind::Chat ? json{{"index", 0},
                                          {"message", {{"role", "assistant"}, {"content", text}}},
                                          {"logprobs", nullptr},
                                          {"finish_reason", finish_name(n.finish)}}
                                   : json{{"index", 0},
                                          {"text", text},
                                          {"logprobs", nullptr},
                                          {"finish_reason", finish_name(n.finish)}};
  send_json(res, 200,
            {{"id", p.id},
             {"object", kind == Kind::Chat ? "chat.completion" : "text_completion"},
             {"created", std::time(nullptr)},
             {"model", options_.model_id},
             {"system_fingerprint", "wgfuse"},
             {"choices", json::array({choice})},
             {"usage",
              {{"prompt_tokens", n.prompt_tokens},
               {"completion_tokens", n.completion_tokens},
               {"total_tokens", n.prompt_tokens + n.completion_tokens}}},
             {"timings", {{"first_token_ms", n.first_token_ms}}}});
}

void OpenAiApi::stream(Kind kind, const Parsed& p, std::shared_ptr<Generation> g, httplib::Response& res) {
  struct State {
    size_t position = 0;
    bool role_sent = false, done = false;
  };
  const std::time_t created = std::time(nullptr);
  const auto chunk = [this, kind, id = p.id, created](const json& delta, const json& finish) {
    json choice = kind == Kind::Chat
                      ? json{{"index", 0}, {"delta", delta}, {"logprobs", nullptr}}
                      : json{{"index", 0}, {"text", delta.value("content", "")}, {"logprobs", nullptr}};
    choice["finish_reason"] = finish;
    return json{{"id", id},
                {"object", kind == Kind::Chat ? "chat.completion.chunk" : "text_completion"},
                {"created", created},
                {"model", options_.model_id},
                {"system_fingerprint", "wgfuse"},
                {"choices", json::array({choice})}};
  };
  const auto event = [](const json& j) {
    return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
  };
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto state = std::make_shared<State>();
  res.set_chunked_content_provider(
      "text/event-stream",
      [g, state, chunk, event, kind, include_usage = p.include_usage](size_t, httplib::DataSink& sink) {
        BoundedHttpServer::restart_write_deadline();
        if (BoundedHttpServer::client_left()) return false;
        const Generation::News n = g->take(kPoll);
        std::string out;
        // SSE comments, which clients skip: where a waiting request stands.
        if (!n.started && n.queue_position && n.queue_position != state->position)
          out += ": queued, " + std::to_string(n.queue_position) + " ahead\n\n";
        state->position = n.queue_position;
        if (n.started && !state->role_sent && kind == Kind::Chat)
          out += event(chunk({{"role", "assistant"}, {"content", ""}}, nullptr));
        state->role_sent = state->role_sent || n.started;
        if (!n.text.empty()) out += event(chunk({{"content", n.text}}, nullptr));
        if (n.finish == FinishReason::Error || n.finish == FinishReason::Cancelled) {
          const ApiError e = n.finish == FinishReason::Error
                                 ? ApiError{500, "the generation failed: " + n.error, "", "generation_failed"}
                                 : ApiError{503, "the server is stopping", "", "server_stopping"};
          out += event(error_body(e));
          state->done = true;
        } else if (n.finish != FinishReason::None) {
          const json usage = {{"prompt_tokens", n.prompt_tokens},
                              {"completion_tokens", n.completion_tokens},
                              {"total_tokens", n.prompt_tokens + n.completion_tokens}};
          json last = chunk(json::object(), finish_name(n.finish));
          last["usage"] = usage;
          last["timings"] = {{"first_token_ms", n.first_token_ms}};
          out += event(last);
          if (include_usage) {
            json u = chunk(json::object(), nullptr);
            u["choices"] = json::array();
            u["usage"] = usage;
            out += event(u);
          }
          out += "data: [DONE]\n\n";
          state->done = true;
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) return false;
        if (state->done) sink.done();
        return true;
      },
      [g](bool) { g->cancel(); });  // a no-op once finished; else the client left or the server stops
}

}  // namespace wgfuse::serve
