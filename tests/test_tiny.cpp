// The tiny transformer: every strategy against the double-precision reference on SwiftShader
// (random weights, odd shapes, grouped-query attention, several sequences), the poison that makes
// an unwritten output fail, the model folder round trip, and the limits' errors.
#include <gtest/gtest.h>

#include <filesystem>

#include "support.h"
#include "tiny/check.h"
#include "tiny/runner.h"
#include "tiny/tiny_model.h"
#include "util/error.h"

namespace wgfuse::tiny {
namespace {

struct Case {
  Shape shape;
  uint32_t tokens, sequences;
  const char* prompt;
};

void expect_all_strategies_match(const Case& k, uint32_t seed) {
  const auto model = random_model(tiny_config(k.shape), seed);
  TinyRunner runner(test::context(), model, k.prompt, k.tokens, k.sequences);
  const auto ref = reference_set(model, k.prompt, k.tokens, k.sequences);
  for (auto s : kStrategies) {
    SCOPED_TRACE(std::string(strategy_name(s)));
    const auto st = runner.run(s);
    const auto c = check_run(runner, ref);
    EXPECT_TRUE(c.ok) << c.first_failure;
    EXPECT_EQ(c.sequences, k.sequences);
    EXPECT_LE(c.max_error, kLogitTolerance);
    EXPECT_GT(st.dispatches, 0u);
  }
}

TEST(Tiny, StrategiesMatchReferenceGqaThreeLayers) {
  expect_all_strategies_match({{.d = 32, .layers = 3, .heads = 2, .kv_heads = 1}, 9, 1, "abc"}, 7);
}

TEST(Tiny, StrategiesMatchReferenceFourHeadsManySequences) {
  expect_all_strategies_match({{.d = 64, .layers = 2, .heads = 4, .kv_heads = 2}, 9, 3, "Hi!"}, 11);
}

// d = 36: rows of 36 columns end in a block of 4 after two of 16 (the products' remainder loop),
// head_dim 18 (RoPE pairs not a multiple of 4), one layer, 5 tokens.
TEST(Tiny, StrategiesMatchReferenceRaggedWidth) {
  expect_all_strategies_match({{.d = 36, .layers = 1, .heads = 2}, 5, 2, "Zq"}, 13);
}

// Every knob of the fused strategies gives the reference's tokens and logits, at a ragged width
// (d = 36: 9 column blocks, head_dim 18) with grouped-query attention: teams of one thread (the
// path of adapters without subgroups), teams of 2 up to the adapter's widest, few and many
// threads, single's activations in storage. Batched runs the op dispatches with the same lanes.
TEST(Tiny, TuningKnobsMatchReference) {
  auto& ctx = test::context();
  const uint32_t widest = ctx.features().subgroups ? std::min(32u, ctx.adapter().subgroup_min_size) : 1;
  const uint32_t most = std::min(256u, ctx.limits().max_compute_invocations_per_workgroup);
  const auto model = random_model(tiny_config({.d = 36, .layers = 2, .heads = 2, .kv_heads = 1}), 17);
  const auto ref = reference_set(model, "Tq!", 7, 2);
  using Act = Tuning::Activations;
  std::vector<Tuning> knobs{{.threads = 32, .lanes = 1},
                            {.threads = most, .lanes = 1, .single_activations = Act::Storage}};
  for (uint32_t l = 2; l <= widest; l *= 2) {
    knobs.push_back({.threads = 32, .lanes = l});
    knobs.push_back({.threads = most, .lanes = l, .single_activations = Act::Storage});
    knobs.push_back({.threads = most, .lanes = l, .single_activations = Act::Workgroup});
  }
  for (const auto& t : knobs) {
    TinyRunner runner(ctx, model, "Tq!", 7, 2, t);
    const auto& r = runner.resolved();
    SCOPED_TRACE("threads " + std::to_string(r.threads) + ", lanes " + std::to_string(r.lanes) +
                 (r.single_in_workgroup ? ", workgroup" : ", storage"));
    EXPECT_EQ(r.threads, t.threads);
    EXPECT_EQ(r.single_in_workgroup, t.single_activations != Act::Storage);
    // 36 rows of down fit `most` threads several times: they share rows when lanes are allowed
    if (t.lanes > 1 && t.threads == most) {
      EXPECT_GT(r.down, 1u);
    }
    for (auto s : {Strategy::Batched, Strategy::Layer, Strategy::Single}) {
      SCOPED_TRACE(std::string(strategy_name(s)));
      runner.run(s);
      const auto c = check_run(runner, ref);
      EXPECT_TRUE(c.ok) << c.first_failure;
      EXPECT_LE(c.max_error, kLogitTolerance);
    }
  }
}

// Auto threads: one sequence gets the most (up to 512), many sequences fewer, never below 128
// (131,072 / sequences as a power of two, within what the device allows).
TEST(Tiny, AutoThreadsShrinkWithSequencesDownTo128) {
  auto& ctx = test::context();
  const uint32_t device_max =
      std::min(ctx.limits().max_compute_invocations_per_workgroup, ctx.limits().max_compute_workgroup_size_x);
  const auto model = random_model(tiny_config({.d = 16, .layers = 1, .heads = 2}), 3);
  auto threads = [&](uint32_t sequences) {
    return TinyRunner(ctx, model, "a", 1, sequences).resolved().threads;
  };
  EXPECT_EQ(threads(1), std::min(512u, device_max));
  EXPECT_EQ(threads(300), std::min(256u, device_max));  // 131,072 / 300 = 436.9
  EXPECT_EQ(threads(1024), std::min(128u, device_max));
  EXPECT_EQ(threads(5000), std::min(128u, device_max));
}

// The generation feeds its tokens back: different sequences (prompts shifted per sequence) give
// different tokens, and a run's tokens are those of the reference's own greedy loop.
TEST(Tiny, SequencesDifferAndTokensFeedBack) {
  const auto model = random_model(tiny_config({.d = 32, .layers = 1, .heads = 2}), 3);
  TinyRunner runner(test::context(), model, "xyz", 12, 2);
  runner.run(Strategy::Single);
  EXPECT_NE(runner.tokens(0), runner.tokens(1));
  EXPECT_EQ(runner.tokens(1), reference_generation(model, sequence_prompt("xyz", 1), 12).tokens);
}

// The check can fail: outputs left as reset() poisons them (no strategy ran) are rejected, and
// so is a model other than the one that ran.
TEST(Tiny, CheckRejectsUnwrittenAndWrongOutputs) {
  const auto cfg = tiny_config({.d = 32, .layers = 1, .heads = 2});
  const auto model = random_model(cfg, 5);
  TinyRunner runner(test::context(), model, "ab", 5, 2);
  const auto ref = reference_set(model, "ab", 5, 2);
  runner.run(Strategy::Batched);
  ASSERT_TRUE(check_run(runner, ref).ok);
  runner.reset();
  auto c = check_run(runner, ref);
  EXPECT_FALSE(c.ok);
  EXPECT_TRUE(std::isnan(c.max_error));
  EXPECT_NE(runner.tokens(0)[0], ref.generations[0].tokens[0]);

  runner.run(Strategy::Single);
  c = check_run(runner, reference_set(random_model(cfg, 6), "ab", 5, 2));
  EXPECT_FALSE(c.ok);
  EXPECT_FALSE(c.first_failure.empty());
}

TEST(Tiny, CheckedSequencesSampleLargeRuns) {
  EXPECT_EQ(checked_sequences(3), (std::vector<uint32_t>{0, 1, 2}));
  const auto s = checked_sequences(16384);
  EXPECT_GE(s.size(), 65u);
  EXPECT_LE(s.size(), 66u);
  EXPECT_EQ(s.front(), 0u);
  EXPECT_EQ(s.back(), 16383u);
}

// --write-model writes the random model as a Qwen2 folder that loads back to the same weights.
TEST(Tiny, WrittenModelLoadsBackIdentical) {
  const auto cfg = tiny_config({.d = 32, .layers = 2, .heads = 2, .kv_heads = 1});
  const auto dir = std::filesystem::temp_directory_path() / "wgfuse_tiny_model_test";
  std::filesystem::remove_all(dir);
  write_model(dir, cfg, 9);
  const auto loaded = load_model(dir);
  const auto random = random_model(cfg, 9);
  EXPECT_EQ(loaded.config.hidden_size, 32u);
  EXPECT_EQ(loaded.config.num_kv_heads, 1u);
  EXPECT_EQ(pack_weights(loaded.config, loaded.weights, 10), pack_weights(cfg, random.weights, 10));
  std::filesystem::remove_all(dir);
}

TEST(Tiny, BadShapesAndLimitsAreNamed) {
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { tiny_config({.d = 30, .heads = 4}); }).find("not a multiple of --heads"),
            std::string::npos);
  EXPECT_NE(
      message([] { tiny_config({.d = 30, .heads = 3}); }).find("hidden_size = 30 must be a multiple of 4"),
      std::string::npos);
  EXPECT_NE(message([] { tiny_config({.d = 32, .heads = 2, .kv_heads = 3}); }).find("num_key_value_heads"),
            std::string::npos);
  const auto model = random_model(tiny_config({.d = 32, .layers = 1, .heads = 2}), 1);
  EXPECT_NE(message([&] { TinyRunner(test::context(), model, "a", 300, 1); }).find("--tokens 300"),
            std::string::npos);
  EXPECT_NE(message([&] {
              TinyRunner(test::context(), model, "a", 3, 1, {.threads = 48});
            }).find("--threads 48 must be a multiple of 32"),
            std::string::npos);
  EXPECT_NE(message([&] {
              TinyRunner(test::context(), model, "a", 3, 1, {.lanes = 3});
            }).find("--lanes 3 must be a power of two"),
            std::string::npos);
  EXPECT_NE(message([&] { TinyRunner(test::context(), model, "a", 3, 1, {.lanes = 64}); }).find("--lanes 64"),
            std::string::npos);
  // The smallest width whose activations (256 tokens) pass this adapter's workgroup memory.
  const uint64_t limit = test::context().limits().max_compute_workgroup_storage_size;
  uint32_t d = 256;
  auto fits = [&](uint32_t w) {
    return activation_floats(tiny_config({.d = w, .heads = 16}), 257) * 4 <= limit;
  };
  while (d < 1024 && fits(d)) d *= 2;
  if (fits(d)) GTEST_SKIP() << "this adapter's workgroup memory holds even d=1024";
  // Single then keeps them in storage, unless asked for workgroup memory.
  const auto big = random_model(tiny_config({.d = d, .layers = 1, .heads = 16}), 1);
  EXPECT_FALSE(TinyRunner(test::context(), big, "a", 256, 1).resolved().single_in_workgroup);
  EXPECT_NE(message([&] {
              TinyRunner(test::context(), big, "a", 256, 1,
                         {.single_activations = Tuning::Activations::Workgroup});
            }).find("maxComputeWorkgroupStorageSize"),
            std::string::npos);
}

}  // namespace
}  // namespace wgfuse::tiny
