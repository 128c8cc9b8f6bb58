// The pages that run the served model against the native engine: a random Qwen2 model folder (a
// byte-level tokenizer of 262 ids with a chat template, so that typed text fits the small
// vocabulary), or the same model as a GGUF file (F16, or Q8_0/Q4_0 matrices) whose tokenizer the
// server writes out of its metadata, served by `wgfuse serve --model`, driven in headless chromium
// by tests/web/chat_e2e.mjs (greedy tokens and logits against `wgfuse generate`, the tokenizer
// corpus, the chat controls) and tests/web/llm_suite_e2e.mjs (the benchmark page's llm suite: its
// check, rates and submission).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "llm/gguf_writer.h"
#include "llm/safetensors_writer.h"
#include "llm_support.h"

namespace wgfuse {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = WGFUSE_SOURCE_DIR;
const char* const kTokenizer = "tests/fuzz/corpus/tokenizer/small_bpe.json";

// The pages' random Qwen2 model: 2 layers, a vocabulary of 1000, a context of 1024.
llm::ModelConfig page_model_config() {
  llm::ModelConfig c = test::small_llm_config(true, 1000);
  c.num_layers = 2;
  c.max_position_embeddings = 1024;  // a prompt of two prefill chunks
  return c;
}

const char* const kChatTemplate =
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '\\n' }}{% endfor %}{% if "
    "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// As a folder, with a byte-level tokenizer of 262 ids and a chat template.
fs::path write_page_model(const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() / ("wgfuse_" + tag + "_" + std::to_string(getpid()));
  llm::write_random_model(dir, page_model_config(), llm::DType::F32, 11);
  fs::copy_file(kSource / kTokenizer, dir / "tokenizer.json");
  std::ofstream(dir / "tokenizer_config.json") << nlohmann::json{{"chat_template", kChatTemplate}}.dump();
  return dir;
}

enum class PageModel {
  Folder,
  Gguf,           // F16 matrices
  QuantizedGguf,  // Q8_0 and Q4_0 matrices, a mix as llama-quantize writes one
};

// The quantized page model's type of each tensor (norms stay F32).
llm::DType quantized_type(const llm::ExpectedTensor& e) {
  using enum llm::TensorRole;
  switch (e.role) {
    case O:
    case Gate:
    case Up:
      return llm::DType::Q4_0;
    case Q:
    case K:
    case V:
    case Down:
    case Embedding:
      return llm::DType::Q8_0;
    default:
      return llm::DType::F32;
  }
}

// The model as one GGUF file, its tokenizer as metadata (the folder's tokenizer.json, as llama.cpp's
// converter writes a Qwen2 one; ids past it unused padding) and the chat template, and no
// tokenizer.json. Quantized: rows of whole 32-element blocks (hidden 64, intermediate 96); q, k,
// v, down and the (tied) embedding in Q8_0, o, gate and up in Q4_0.
fs::path write_page_gguf(const std::string& tag, bool quantized) {
  const fs::path folder = fs::temp_directory_path() / ("wgfuse_" + tag + "_" + std::to_string(getpid()));
  const fs::path file = folder.string() + ".gguf";
  const nlohmann::json tok = nlohmann::json::parse(std::ifstream(kSource / kTokenizer));
  llm::ModelConfig c = page_model_config();
  if (quantized) c.hidden_size = 64, c.intermediate_size = 96, c.head_dim = 16;
  std::vector<std::string> tokens(c.vocab_size), merges;
  std::vector<int32_t> types(c.vocab_size, 5);  // unused
  for (uint32_t i = 0; i < c.vocab_size; ++i) tokens[i] = "[PAD" + std::to_string(i) + "]";
  for (const auto& [text, id] : tok["model"]["vocab"].items()) {
    tokens[id.get<size_t>()] = text;
    types[id.get<size_t>()] = 1;  // normal
  }
  for (const auto& a : tok["added_tokens"]) {
    tokens[a["id"].get<size_t>()] = a["content"].get<std::string>();
    types[a["id"].get<size_t>()] = 3;  // control
  }
  for (const auto& m : tok["model"]["merges"]) merges.push_back(m.get<std::string>());
  const auto tensors = llm::write_random_model(folder, c, llm::DType::F32, 11);
  llm::GgufWriter w = quantized ? llm::gguf_model_writer(c, tensors, quantized_type)
                                : llm::gguf_model_writer(c, tensors, llm::DType::F16);
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "qwen2");
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_strings("tokenizer.ggml.merges", merges);
  w.add_string("tokenizer.chat_template", kChatTemplate);
  w.write(file);
  fs::remove_all(folder);
  return file;
}

// Runs tests/web/SCRIPT against `wgfuse serve --model` on a fresh random model; its exit status.
int run_page_script(const std::string& script, const std::string& tag, const std::string& args = "",
                    PageModel model = PageModel::Folder) {
  const fs::path dir = model == PageModel::Folder ? write_page_model(tag)
                                                  : write_page_gguf(tag, model == PageModel::QuantizedGguf);
  const fs::path out = fs::path(WGFUSE_BUILD_DIR) / tag;
  const std::string cmd = "node '" + (kSource / "tests/web" / script).string() + "' --wgfuse '" +
                          WGFUSE_BINARY + "' --model '" + dir.string() + "' --out '" + out.string() + "' " +
                          args + " 2>&1";
  const int rc = std::system(cmd.c_str());
  fs::remove_all(dir);
  return rc;
}

// Test that the chat page replays the native plan: the same greedy tokens, logits within 1e-5.
TEST(WebChat, PageMatchesNativeGenerate) {
  if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "no /usr/bin/chromium (scripts/setup installs it)";
  EXPECT_EQ(run_page_script("chat_e2e.mjs", "web-chat-e2e"), 0);
}

// Test that the chat page runs a GGUF file: its tokenizer made of the file's metadata gives the
// native ids on the tokenizer corpus, its greedy tokens and logits equal `wgfuse generate`'s on
// the file, and two chat turns go through the file's template.
TEST(WebChat, GgufPageMatchesNativeGenerate) {
  if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "no /usr/bin/chromium (scripts/setup installs it)";
  EXPECT_EQ(run_page_script("chat_e2e.mjs", "web-chat-gguf-e2e", "--cases greedy --skip-ui", PageModel::Gguf),
            0);
}

// Test the same for a GGUF file whose matrices are Q8_0 and Q4_0 (each stored in its own format:
// the plan's kernels read the blocks).
TEST(WebChat, QuantizedGgufPageMatchesNativeGenerate) {
  if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "no /usr/bin/chromium (scripts/setup installs it)";
  EXPECT_EQ(run_page_script("chat_e2e.mjs", "web-chat-quantized-e2e",
                            "--cases greedy --skip-ui --weight-formats q8_0,q4_0", PageModel::QuantizedGguf),
            0);
}

// Test that the benchmark page's llm suite reproduces the server's native check generation,
// measures the served model and submits, and that the server checks llm results itself; the model
// a GGUF file, served for a limit of 150,000 bytes per buffer and binding (its weights split over
// several buffers), and refused below what a buffer needs whole. A context of 512: the prefill's
// buffers hold a chunk of up to the context's rows, and at 1024 they would need more.
TEST(WebChat, LlmSuiteChecksMeasuresAndSubmits) {
  if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "no /usr/bin/chromium (scripts/setup installs it)";
  EXPECT_EQ(run_page_script("llm_suite_e2e.mjs", "web-llm-suite-e2e",
                            "--limits 150000 --serve-arg=--ctx --serve-arg=512", PageModel::Gguf),
            0);
}

}  // namespace
}  // namespace wgfuse
