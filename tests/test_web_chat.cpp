// The chat page against the native engine: a random Qwen2 model folder (a byte-level tokenizer of
// 262 ids with a chat template, so that typed text fits the small vocabulary) served by
// `wgfuse serve --model`, driven in headless chromium by tests/web/chat_e2e.mjs, which checks
// greedy tokens and logits against `wgfuse generate` and the page's chat controls.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "llm/safetensors_writer.h"
#include "llm_support.h"

namespace wgfuse {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = WGFUSE_SOURCE_DIR;

// Test that the chat page replays the native plan: the same greedy tokens, logits within 1e-5.
TEST(WebChat, PageMatchesNativeGenerate) {
  if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "no /usr/bin/chromium (scripts/setup installs it)";
  const fs::path dir = fs::temp_directory_path() / ("wgfuse_web_chat_" + std::to_string(getpid()));
  llm::ModelConfig c = test::small_llm_config(true, 1000);
  c.num_layers = 2;
  c.max_position_embeddings = 1024;  // a prompt of two prefill chunks
  llm::write_random_model(dir, c, llm::DType::F32, 11);
  fs::copy_file(kSource / "tests/fuzz/corpus/tokenizer/small_bpe.json", dir / "tokenizer.json");
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"chat_template": "{% for m in messages %}{{ '<|im_start|>' + m.role + '\n' + m.content + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"})";
  const fs::path out = fs::path(WGFUSE_BUILD_DIR) / "web-chat-e2e";
  const std::string cmd = "node '" + (kSource / "tests/web/chat_e2e.mjs").string() + "' --wgfuse '" +
                          WGFUSE_BINARY + "' --model '" + dir.string() + "' --out '" + out.string() +
                          "' 2>&1";
  const int rc = std::system(cmd.c_str());
  fs::remove_all(dir);
  EXPECT_EQ(rc, 0) << cmd;
}

}  // namespace
}  // namespace wgfuse
