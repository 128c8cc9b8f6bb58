#include "model_assets.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "llm/chat_template.h"
#include "llm/gguf.h"
#include "llm/gguf_model.h"
#include "llm/plan_file.h"
#include "llm/sampler.h"
#include "llm/tokenizer.h"
#include "serve/kernel_index.h"
#include "util/error.h"

namespace wgfuse::serve {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The files of the folder the page may fetch: the tokenizer and its chat template, the stop ids'
// sources. Nothing else of the folder is reachable.
const char* const kServedFiles[] = {"tokenizer.json", "tokenizer_config.json", "generation_config.json"};

// A JSON body, gzipped where the client takes gzip: for application/json cpp-httplib would pick
// brotli at its default quality (11), which takes hundreds of ms on a plan of a few hundred KB, on
// the chat page's path to its first token. The charset in the type keeps httplib from compressing
// the body again.
void send_json(const httplib::Request& req, httplib::Response& res, const std::string& body) {
  const char* const type = "application/json; charset=utf-8";
  res.set_header("Vary", "Accept-Encoding");
  if (req.get_header_value("Accept-Encoding").find("gzip") != std::string::npos) {
    std::string packed;
    httplib::detail::gzip_compressor gzip;
    if (gzip.compress(body.data(), body.size(), true, [&](const char* data, size_t size) {
          packed.append(data, size);
          return true;
        })) {
      res.set_header("Content-Encoding", "gzip");
      return res.set_content(std::move(packed), type);
    }
  }
  res.set_content(body, type);
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(json{{"error", message}}.dump() + "\n", "application/json");
}

// A query parameter as a number in [lo, hi]; `fallback` when absent. Throws Error naming it.
double number_param(const httplib::Request& req, const char* name, double fallback, double lo, double hi) {
  if (!req.has_param(name)) return fallback;
  const std::string text = req.get_param_value(name);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(v >= lo && v <= hi))
    throw Error(std::string(name) + "=" + text.substr(0, 40) + ": must be a number in [" +
                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

// Streams a file in pieces (tokenizer.json is megabytes): memory stays one piece per request.
void send_file(httplib::Response& res, const fs::path& path) {
  const uint64_t size = fs::file_size(path);
  res.set_header("Cache-Control", "no-cache");
  res.set_content_provider(size, "application/json",
                           [path](size_t offset, size_t length, httplib::DataSink& sink) {
                             std::ifstream in(path, std::ios::binary);
                             in.seekg(std::streamoff(offset));
                             std::vector<char> piece(std::min<size_t>(length, 1 << 20));
                             in.read(piece.data(), std::streamsize(piece.size()));
                             if (in.gcount() <= 0) return false;
                             return sink.write(piece.data(), size_t(in.gcount()));
                           });
}

}  // namespace

uint64_t parse_limits(const std::string& text) {
  if (text == "device") return 0;
  if (text == "browser") return 128ull << 20;
  size_t used = 0;
  uint64_t bytes = 0;
  try {
    bytes = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || bytes < 4096)
    throw Error("--limits " + text + ": must be device, browser, or a number of bytes (at least 4096)");
  return bytes;
}

ModelAssets::ModelAssets(const fs::path& dir, llm::Session& session, std::mutex& device,
                         ModelAssetsOptions options)
    : dir_(dir),
      options_(std::move(options)),
      files_(session.files()),
      ctx_(session.context()),
      model_(session.step_decoder()),
      device_(device) {
  if (!files_.gguf())
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
      if (!fs::is_regular_file(dir / f))
        throw Error("--model " + dir.string() + ": no " + f +
                    " (the page tokenizes with it; copy it from the model's repository)");
  const llm::Tokenizer& tokenizer = session.tokenizer();
  stop_ids_ = llm::stop_token_ids(tokenizer, dir);
  // A GGUF file's tokenizer metadata, written out as the Hugging Face files it stands for, which
  // the page's tokenizer library reads. One the page could not encode with as the file asks
  // (a BOS to add) is left out and the index says why: /chat declines, the llm suite needs none.
  if (const llm::GgufFile* g = files_.gguf()) {
    try {
      generated_["tokenizer.json"] = llm::tokenizer_json_text(llm::gguf_tokenizer_spec(*g));
      generated_["tokenizer_config.json"] = llm::gguf_tokenizer_config_text(tokenizer, *g);
    } catch (const Error& e) {
      tokenizer_unavailable_ = e.what();
    }
  }

  const llm::ModelConfig& cfg = files_.config();

  // The weight buffers in shards of whole words, each hashed once from the GPU's own bytes.
  json shards = json::array();
  for (const llm::NamedBuffer& b : model_.buffers()) {
    if (b.contents.kind != llm::BufferContents::Kind::Weights) continue;
    const uint64_t size = b.buffer.size();
    for (uint64_t offset = 0, index = 0; offset < size; offset += options_.shard_bytes, ++index) {
      Shard s{b.name, uint32_t(index), offset, std::min(options_.shard_bytes, size - offset), ""};
      s.sha256 = sha256_hex(read_shard(s));
      shards.push_back({{"buffer", s.buffer},
                        {"index", s.index},
                        {"offset", s.offset},
                        {"bytes", s.bytes},
                        {"sha256", s.sha256}});
      shards_.push_back(std::move(s));
    }
  }
  json files = json::array();
  for (const char* f : kServedFiles)
    if (files_.gguf() ? generated_.contains(f) : fs::is_regular_file(dir / f)) files.push_back(f);
  fs::path named = fs::absolute(dir).lexically_normal();
  if (named.filename().empty()) named = named.parent_path();  // "DIR/"
  index_ = {{"name", named.filename().string()}, {"model", llm::config_json(cfg)},
            {"ctx", model_.capacity()},          {"stop_ids", stop_ids_},
            {"files", std::move(files)},         {"shards", std::move(shards)}};
  if (!tokenizer_unavailable_.empty()) index_["tokenizer_unavailable"] = tokenizer_unavailable_;
  {
    std::lock_guard lock(device_);  // the generation worker shares the model
    check_ = native_check_generation(model_, tokenizer, index_["name"].get<std::string>());
  }
}

ModelAssets::~ModelAssets() = default;

std::string ModelAssets::describe() const {
  uint64_t total = 0;
  for (const Shard& s : shards_) total += s.bytes;
  char text[96];
  std::snprintf(text, sizeof text, " (%.1f MB of weights in %zu shards)", double(total) / 1e6,
                shards_.size());
  return dir_.string() + text;
}

std::string ModelAssets::read_shard(const Shard& s) {
  std::lock_guard lock(device_);
  for (const llm::NamedBuffer& b : model_.buffers())
    if (b.name == s.buffer) {
      const auto bytes = ctx_.read_bytes(b.buffer, s.offset, s.bytes);
      return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
    }
  throw Error("model assets: no buffer " + s.buffer + " (internal error)");
}

json ModelAssets::plan(const httplib::Request& req) {
  if (!req.has_param("prompt_length")) throw Error("prompt_length: required (the prompt's tokens, 1 to ctx)");
  const auto length = uint32_t(number_param(req, "prompt_length", 0, 1, model_.capacity()));
  llm::SamplingParams p;
  p.temperature = number_param(req, "temperature", 0, 0, 1e6);
  p.top_k = int64_t(number_param(req, "top_k", 0, 0, double(files_.config().vocab_size)));
  p.top_p = number_param(req, "top_p", 1, 0, 1);
  p.repetition_penalty = number_param(req, "repeat_penalty", 1, 0, 1e6);
  p.seed = uint64_t(number_param(req, "seed", 0, 0, 9007199254740991.0));  // 2^53 - 1: exact in JSON
  std::lock_guard lock(device_);
  if (p.temperature == 0 && p.top_k == 0 && p.top_p == 1 && p.repetition_penalty == 1)
    return llm::plan_json(model_, length);
  llm::validate(p);
  llm::Sampler sampler(ctx_, files_.config().vocab_size);
  sampler.set_params(p);
  return llm::plan_json(model_, length, &sampler);
}

void ModelAssets::routes(httplib::Server& http) {
  http.Get("/model/index.json", [this](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_content(index_.dump(), "application/json");
  });
  http.Get("/model/check.json", [this](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_content(check_json(check_).dump(), "application/json");
  });
  http.Get("/model/plan.json", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      res.set_header("Cache-Control", "no-cache");
      send_json(req, res, plan(req).dump());
    } catch (const Error& e) {
      send_error(res, 400, std::string("GET /model/plan.json: ") + e.what());
    }
  });
  http.Get(R"(/model/shards/([A-Za-z0-9_.]+)/([0-9]{1,9}))",
           [this](const httplib::Request& req, httplib::Response& res) {
             const std::string buffer = req.matches[1].str();
             const auto index = uint32_t(std::stoul(req.matches[2].str()));
             auto it = std::find_if(shards_.begin(), shards_.end(),
                                    [&](const Shard& s) { return s.buffer == buffer && s.index == index; });
             if (it == shards_.end())
               return send_error(res, 404,
                                 "no shard " + buffer + "/" + std::to_string(index) +
                                     " (GET /model/index.json lists them)");
             try {
               std::string bytes = read_shard(*it);
               res.set_header("X-SHA256", it->sha256);
               res.set_header("Cache-Control", "no-cache");
               res.set_content(std::move(bytes), "application/octet-stream");
             } catch (const Error& e) {
               send_error(res, 500, std::string("reading the shard from the GPU: ") + e.what());
             }
           });
  http.Get(R"(/model/files/([A-Za-z_.]+))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string name = req.matches[1].str();
    const bool listed = std::find_if(std::begin(kServedFiles), std::end(kServedFiles),
                                     [&](const char* f) { return name == f; }) != std::end(kServedFiles);
    if (files_.gguf()) {
      const auto it = generated_.find(name);
      if (it == generated_.end())
        return send_error(res, 404, "no model file " + name + " (GET /model/index.json lists them)");
      res.set_header("Cache-Control", "no-cache");
      return send_json(req, res, it->second);  // (brotli at quality 11 took seconds on a tokenizer.json)
    }
    if (!listed || !fs::is_regular_file(dir_ / name))
      return send_error(res, 404, "no model file " + name + " (GET /model/index.json lists them)");
    send_file(res, dir_ / name);
  });
}

}  // namespace wgfuse::serve
