// `wgfuse serve --model DIR`: what the chat page needs to run the model with the native engine's
// own plan (docs/PLAN.md) — the plan for a prompt length and sampling settings, the packed weight
// arena as the GPU holds it (read back from the model loaded here, in shards with SHA-256), and
// the tokenizer files. Routes (docs/WEB_API.md, "Model"):
//   GET /model/index.json                   config, stop ids, tokenizer files, shards and hashes
//   GET /model/plan.json?prompt_length=L[&temperature=&top_k=&top_p=&repeat_penalty=&seed=]
//   GET /model/shards/BUFFER/INDEX          the shard's bytes (X-SHA256 says its hash)
//   GET /model/files/NAME                   tokenizer.json, tokenizer_config.json, generation_config.json
//                                           (a GGUF file: the first two, made from its metadata)
//   GET /model/check.json                   the llm suite's check generation and benchmark prompt
//                                           (apps/serve/model_check.h)
#pragma once

#include <httplib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu/context.h"
#include "llm/model.h"
#include "llm/model_files.h"
#include "llm/session.h"
#include "model_check.h"

namespace wgfuse::serve {

struct ModelAssetsOptions {
  uint64_t shard_bytes = 8u << 20;  // a fetch the page can verify and cache on its own
};

// --limits: "device" (0: this machine's limits), "browser" (WebGPU's default
// maxStorageBufferBindingSize, 128 MiB, below its default maxBufferSize) or bytes. Throws Error.
uint64_t parse_limits(const std::string& text);

class ModelAssets {
 public:
  // Serves the step decoder of `session` (loaded from `dir`, a Hugging Face folder or a GGUF
  // file): one upload of the weights for the API and the page. `device` is held whenever this
  // reads the GPU or builds plans on the model (the generation worker holds it while it steps).
  // Hashes the arena shards; throws Error naming the file and the fix on bad input.
  ModelAssets(const std::filesystem::path& dir, llm::Session& session, std::mutex& device,
              ModelAssetsOptions options = {});
  ~ModelAssets();
  // Registers the routes above; before the server's catch-all file route.
  void routes(httplib::Server& http);
  // For the log line: "DIR (N MB in K shards)".
  std::string describe() const;
  // What llm results submitted to this server are checked against.
  const LlmCheck& llm_check() const { return check_.check; }

 private:
  struct Shard {
    std::string buffer;
    uint32_t index;
    uint64_t offset, bytes;
    std::string sha256;
  };
  std::string read_shard(const Shard& s);  // the bytes from the GPU, under the device lock
  nlohmann::json plan(const httplib::Request& req);

  std::filesystem::path dir_;
  ModelAssetsOptions options_;
  const llm::ModelFiles& files_;
  std::vector<int32_t> stop_ids_;
  std::map<std::string, std::string> generated_;  // a GGUF file's tokenizer files, by name
  std::string tokenizer_unavailable_;             // why a GGUF file's are not served, or empty
  gpu::Context& ctx_;
  llm::Model& model_;
  std::vector<Shard> shards_;
  nlohmann::json index_;
  CheckGeneration check_;
  std::mutex& device_;  // the Context and Model are used by one thread at a time
};

}  // namespace wgfuse::serve
