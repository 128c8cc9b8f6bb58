// `wgfuse serve --model`'s OpenAI API: the stop strings' hold-back logic, then the official `openai`
// npm client (tests/serve/openai_client.mjs, run by node) against a real server on a small random
// Qwen2-architecture folder with Qwen's byte-level tokenizer: streamed and whole replies equal to
// `wgfuse generate`'s at temperature 0, error shapes and codes, the queue, a client that leaves.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "llm/safetensors_writer.h"
#include "llm_support.h"
#include "serve/stop_strings.h"
#include "support.h"

namespace wgfuse {
namespace {

namespace fs = std::filesystem;

// Pieces pushed one by one; what was shown, and whether a stop string ended it.
std::pair<std::string, bool> run_stops(std::vector<std::string> stops, std::vector<std::string> pieces) {
  serve::StopStrings s(std::move(stops));
  std::string shown;
  for (auto& p : pieces) shown += s.push(p);
  const bool hit = s.hit();
  shown += s.finish();
  return {shown, hit};
}

// Test that text before a stop string is shown, the stop string and the rest are not, and a
// possible start of a stop string is held back only until it is decided.
TEST(StopStrings, CutsAtTheFirstStopStringAcrossPieces) {
  EXPECT_EQ(run_stops({"END"}, {"abc", "dE", "N", "Dxyz"}), std::pair(std::string("abcd"), true));
  EXPECT_EQ(run_stops({"END"}, {"abc", "EN", "x"}), std::pair(std::string("abcENx"), false));
  EXPECT_EQ(run_stops({"END"}, {"abEN"}), std::pair(std::string("abEN"), false));    // released at the end
  EXPECT_EQ(run_stops({"xyz", "b"}, {"axyzb"}), std::pair(std::string("a"), true));  // the earliest wins
  EXPECT_EQ(run_stops({"\n\n", "é"}, {"caf", "\xc3\xa9", "!"}), std::pair(std::string("caf"), true));
  serve::StopStrings s({"END"});
  EXPECT_EQ(s.push("xxE"), "xx");  // "E" could begin END
  EXPECT_EQ(s.push("Q"), "EQ");
  EXPECT_EQ(s.push("END!"), "");
  EXPECT_TRUE(s.hit());
  EXPECT_EQ(s.push("more"), "");
}

// The folder, written once per test binary and removed at exit.
const fs::path& model_dir() {
  struct Folder {
    fs::path path = fs::temp_directory_path() / ("wgfuse_serve_openai_" + std::to_string(getpid()));
    Folder() {
      llm::write_random_model(path, test::small_llm_config(true, 301), llm::DType::F32, 43);
      test::write_byte_level_qwen_tokenizer(path);
    }
    ~Folder() { fs::remove_all(path); }
  };
  static const Folder folder;
  return folder.path;
}

TEST(ServeOpenAi, TheOfficialClientStreamsAndErrsAsOpenAiDoes) {
  const fs::path script = fs::path(WGFUSE_SOURCE_DIR) / "tests/serve/openai_client.mjs";
  if (std::system("node --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no node on the PATH";
  if (!fs::exists(fs::path(WGFUSE_SOURCE_DIR) / "node_modules/openai/package.json"))
    GTEST_SKIP() << "npm openai is not installed (scripts/setup)";
  const std::string cmd =
      "node '" + script.string() + "' '" + WGFUSE_BINARY + "' '" + model_dir().string() + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("openai client: all checks passed"), std::string::npos) << out;
  std::printf("%s", out.c_str());  // the phases' times and any check skipped
}

}  // namespace
}  // namespace wgfuse
