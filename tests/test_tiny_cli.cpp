// `wgfuse tiny` as a user runs it on SwiftShader: --check passes for every strategy and the JSON
// holds what the PyTorch baselines and the charts read; --write-model then --model runs the same
// weights; a bad shape is refused with the field named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support.h"

namespace wgfuse {
namespace {

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

TEST(TinyCli, CheckPassesAndJsonHasEveryStrategy) {
  const auto json = std::filesystem::temp_directory_path() / "wgfuse_tiny_cli.json";
  const auto r = test::run_wgfuse(
      "--adapter cpu tiny --d 32 --layers 2 --heads 2 --kv-heads 1 --tokens 6 --prompt ab "
      "--sequences 2 --repeats 1 --check --json " +
      json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(test::occurrences(r.out, "ok (2 seq)"), 4u) << r.out;
  const auto j = read_json(json);
  EXPECT_TRUE(j["check"]["pass"].get<bool>());
  EXPECT_EQ(j["config"]["kv_heads"], 1);
  ASSERT_EQ(j["strategies"].size(), 4u);
  for (const auto& s : j["strategies"]) {
    EXPECT_GT(s["tokens_per_s"].get<double>(), 0) << s.dump();
    EXPECT_TRUE(s["check"]["pass"].get<bool>()) << s.dump();
  }
  // one dispatch and one submit for the whole generation (6 tokens)
  EXPECT_DOUBLE_EQ(j["strategies"][3]["dispatches_per_token"].get<double>(), 1.0 / 6);
  EXPECT_TRUE(j["speedups"].contains("single_over_eager"));
  std::filesystem::remove(json);
}

TEST(TinyCli, WrittenModelRunsFromItsFolder) {
  const auto dir = std::filesystem::temp_directory_path() / "wgfuse_tiny_cli_model";
  std::filesystem::remove_all(dir);
  auto r = test::run_wgfuse(
      "--adapter cpu tiny --d 32 --layers 1 --heads 2 --seed 4 --tokens 3 --mode single "
      "--repeats 1 --write-model " +
      dir.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "config.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "model.safetensors"));
  r = test::run_wgfuse("--adapter cpu tiny --model " + dir.string() +
                       " --tokens 3 --mode single --repeats 1 --check");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find(dir.string()), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

// The knobs reach the kernels: a run with given threads and lanes passes --check and its JSON
// says what ran.
TEST(TinyCli, ThreadsAndLanesKnobs) {
  const auto json = std::filesystem::temp_directory_path() / "wgfuse_tiny_cli_knobs.json";
  const auto r = test::run_wgfuse(
      "--adapter cpu tiny --d 36 --layers 1 --heads 2 --tokens 4 --prompt xy --threads 64 --lanes 1 "
      "--single-activations storage --mode single --repeats 1 --check --json " +
      json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = read_json(json);
  EXPECT_EQ(j["tuning"]["threads"], 64);
  EXPECT_EQ(j["tuning"]["lanes"], 1);
  EXPECT_EQ(j["tuning"]["single_activations"], "storage");
  EXPECT_TRUE(j["check"]["pass"].get<bool>());
  std::filesystem::remove(json);
  const auto bad = test::run_wgfuse("--adapter cpu tiny --d 32 --threads 100");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find("--threads 100 must be a multiple of 32"), std::string::npos) << bad.out;
}

TEST(TinyCli, BadShapeIsRefusedNamingTheField) {
  const auto r = test::run_wgfuse("--adapter cpu tiny --d 30 --heads 4");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("--d 30 is not a multiple of --heads 4"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace wgfuse
