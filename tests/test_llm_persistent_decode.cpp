// The persistent single-dispatch decode (llm::PersistentDecoder) against the step decoder
// (llm::Model) and the double-precision reference (llm::ref::Decoder) on small random
// Qwen2-architecture models: hidden 48, 3 layers, 4 heads on 2 kv heads (head_dim 12),
// intermediate 72, vocab 301; f32 and f16 storage, tied and untied LM heads.
// One workgroup is always co-resident with itself, so the grid barriers are exercised without
// depending on SwiftShader's scheduling; several workgroups run where the probe passes, and a
// barrier that then times out must be reported, never give wrong tokens.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <ostream>

#include "llm/model.h"
#include "llm/persistent.h"
#include "llm/persistent_decode.h"
#include "llm_support.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

using gpu::WeightFormat;
using test::context;
using test::normalised_error;
using test::small_llm_config;

constexpr uint32_t kVocab = 301;  // odd: the LM head's last pair of rows has one

const std::vector<uint32_t> kPrompt = {7, 123, 42, 299, 0, 64, 5};

struct Decoded {
  std::vector<uint32_t> tokens;
  std::vector<std::vector<float>> logits;  // one per generated token
};

Decoded run_persistent(llm::PersistentDecoder& d, uint32_t n, uint32_t k = 8, bool logits = true) {
  Decoded r;
  llm::GenerateOptions opt;
  opt.steps_per_submit = k;
  if (logits) opt.on_logits = [&](std::span<const float> l) { r.logits.emplace_back(l.begin(), l.end()); };
  r.tokens = d.generate(kPrompt, n, {}, opt);
  return r;
}

Decoded run_steps(const llm::ModelConfig& cfg, const llm::HostWeights& w, WeightFormat dtype, uint32_t n) {
  llm::Model model(context(), cfg, w.lookup(), {.dtype = dtype, .ctx = 64});
  Decoded r;
  llm::GenerateOptions opt;
  opt.on_logits = [&](std::span<const float> l) { r.logits.emplace_back(l.begin(), l.end()); };
  r.tokens = model.generate(kPrompt, n, {}, opt);
  return r;
}

struct Case {
  WeightFormat dtype;
  bool tied;
  uint32_t workgroup_size;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << gpu::to_string(c.dtype) << (c.tied ? " tied" : " untied") << " wg" << c.workgroup_size;
}
class LlmPersistentDecode : public ::testing::TestWithParam<Case> {};

// Test 24 greedy tokens and every step's logits of one-workgroup persistent dispatches against
// the step decoder (same stored weights: tokens equal, logits within f32 rounding) and the
// reference (tokens equal on the stored weights; logits within the storage dtype's tolerance of
// the unrounded weights, a quantized format's within f32 rounding of the dequantized weights). A
// workgroup of 32 threads takes the 30-position cache in tiles of 32 and 64 in one.
TEST_P(LlmPersistentDecode, MatchesStepDecoderAndReference) {
  const auto [dtype, tied, wg] = GetParam();
  const auto cfg = small_llm_config(tied, kVocab);
  const auto weights = llm::HostWeights::random(cfg, tied ? 31 : 32);
  const uint32_t n = 24;
  llm::PersistentDecoder d(context(), cfg, weights.lookup(),
                           {.dtype = dtype, .ctx = 64, .workgroup_size = wg});
  const Decoded got = run_persistent(d, n, 1);
  ASSERT_EQ(got.tokens.size(), n);
  ASSERT_EQ(got.logits.size(), n);

  const Decoded steps = run_steps(cfg, weights, dtype, n);
  EXPECT_EQ(got.tokens, steps.tokens) << "tokens differ from the step decoder";
  for (uint32_t i = 0; i < n; ++i)
    EXPECT_LE(normalised_error<float>(got.logits[i], steps.logits[i]), 1e-5) << "step " << i;

  const llm::HostWeights stored = test::as_stored(weights, dtype);
  llm::ref::Decoder on_stored(cfg, llm::ref::Weights::load(cfg, stored.lookup()), 64);
  EXPECT_EQ(got.tokens, on_stored.greedy(kPrompt, n)) << "tokens differ from the reference";
  // Quantized formats: against the dequantized weights, within f32 rounding.
  const bool quantized = gpu::is_quantized(dtype);
  llm::ref::Decoder exact(cfg, llm::ref::Weights::load(cfg, (quantized ? stored : weights).lookup()), 64);
  auto want = exact.prefill(kPrompt);
  const double tol = dtype == WeightFormat::F32 || quantized ? 1e-4
                     : dtype == WeightFormat::F16            ? 1e-2
                                                             : 4e-2;
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_LE(normalised_error<double>(got.logits[i], want), tol) << "step " << i;
    if (i + 1 < n) want = exact.forward(got.tokens[i]);
  }
  const auto& s = d.stats();
  EXPECT_EQ(d.barriers_per_token(), 5 * cfg.num_layers + 1);
  EXPECT_EQ(s.prompt_tokens, kPrompt.size());
  EXPECT_EQ(s.decode_dispatches, n - 1);  // one dispatch per decoded token
  EXPECT_EQ(s.stale_reads, 0u);           // one workgroup: its barriers order its own stores
  EXPECT_EQ(s.batches_run_again, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Storage, LlmPersistentDecode,
    ::testing::Values(Case{WeightFormat::F32, false, 32}, Case{WeightFormat::F32, true, 64},
                      Case{WeightFormat::F16, false, 64}, Case{WeightFormat::F16, true, 32},
                      Case{WeightFormat::BF16, false, 32}, Case{WeightFormat::Q4_K, false, 32},
                      Case{WeightFormat::Q5_0, true, 64}),
    [](const auto& info) {
      return std::string(gpu::to_string(info.param.dtype)) + (info.param.tied ? "_tied" : "_untied") + "_wg" +
             std::to_string(info.param.workgroup_size);
    });

// Test every variant of the dispatch (llm::PersistentVariant) against the step decoder, as above
// (whose cases run the default, split+down+rounds=4+ahead but for f32: with one workgroup one block per
// head, in tiles; its teams too few for one pass over 24 row pairs, so down=2: 9 column groups in chunks
// of 5 and 4): base (a head per workgroup); attention
// split over positions (split=3: 31 positions in tiles of 10 (32 threads, 3 per position) or 21 give 2 blocks
// of 2 tiles or 2 of 1, combined by o_proj's staging; split=1 one block; rounds=N up to N rounds of 10
// positions a tile: split=1+rounds=2 takes the 31 in tiles of 20 and 11, split=3+rounds=3 each block in one
// tile); down_proj split over columns (down=N: 72 columns, 9 groups, in chunks of 5, 3 or 3 groups; 3 layers,
// so the residual moves X_W, X2_W, X_W and the final norm reads the last layer's partials).
struct VariantCase {
  const char* variant;
  WeightFormat dtype;
  uint32_t workgroup_size;
};
class LlmPersistentVariant : public ::testing::TestWithParam<VariantCase> {};

TEST_P(LlmPersistentVariant, MatchesStepDecoder) {
  const auto [variant, dtype, wg] = GetParam();
  const auto cfg = small_llm_config(false, kVocab);
  const auto weights = llm::HostWeights::random(cfg, 38);
  const uint32_t n = 24;
  llm::PersistentDecoder d(
      context(), cfg, weights.lookup(),
      {.dtype = dtype, .ctx = 64, .workgroup_size = wg, .variant = llm::parse_persistent_variant(variant)});
  const Decoded got = run_persistent(d, n, 8);
  const Decoded steps = run_steps(cfg, weights, dtype, n);
  EXPECT_EQ(got.tokens, steps.tokens);
  ASSERT_EQ(got.logits.size(), steps.logits.size());
  for (uint32_t i = 0; i < n; ++i)
    EXPECT_LE(normalised_error<float>(got.logits[i], steps.logits[i]), 1e-5) << "step " << i;
}

INSTANTIATE_TEST_SUITE_P(
    Variants, LlmPersistentVariant,
    ::testing::Values(
        VariantCase{"base", WeightFormat::F16, 32}, VariantCase{"base", WeightFormat::Q4_K, 64},
        VariantCase{"split=3", WeightFormat::F32, 32}, VariantCase{"split=3", WeightFormat::F16, 64},
        VariantCase{"split=1", WeightFormat::BF16, 32}, VariantCase{"down=2", WeightFormat::F32, 32},
        VariantCase{"split=3+down=4", WeightFormat::F16, 64}, VariantCase{"down=3", WeightFormat::Q8_0, 32},
        VariantCase{"ahead", WeightFormat::F16, 32},
        VariantCase{"split=3+down=4+ahead", WeightFormat::BF16, 64},
        VariantCase{"down=3+ahead", WeightFormat::F16, 32}, VariantCase{"ahead", WeightFormat::Q8_0, 32},
        VariantCase{"ahead", WeightFormat::Q4_0, 64}, VariantCase{"split=3+ahead", WeightFormat::Q4_1, 32},
        VariantCase{"ahead", WeightFormat::Q5_1, 32}, VariantCase{"down=3+ahead", WeightFormat::Q5_K, 64},
        VariantCase{"down=3+ahead", WeightFormat::Q6_K, 32}, VariantCase{"ahead", WeightFormat::Q4_ZP, 32},
        VariantCase{"split=1+rounds=2", WeightFormat::F16, 32},
        VariantCase{"split=3+rounds=3+down=2", WeightFormat::F32, 32}),
    [](const auto& info) {
      std::string name = std::string(info.param.variant) + "_" + gpu::to_string(info.param.dtype) + "_wg" +
                         std::to_string(info.param.workgroup_size);
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

// Test the variant names: every part, their combinations, the grid's choice of blocks, and clear
// errors for what is not a variant or cannot run.
TEST(LlmPersistentDecodeRun, VariantNamesAndLimits) {
  EXPECT_EQ(llm::to_string(llm::parse_persistent_variant("base")), "base");
  EXPECT_EQ(llm::to_string(llm::parse_persistent_variant("down=3+split=18")), "split=18+down=3");
  EXPECT_EQ(llm::to_string(llm::parse_persistent_variant("split")), "split");  // resolved by the decoder
  EXPECT_EQ(llm::to_string(llm::parse_persistent_variant("down+ahead")), "down+ahead");  // the same
  EXPECT_EQ(llm::to_string(llm::parse_persistent_variant("ahead+down=2")), "down=2+ahead");
  EXPECT_EQ(llm::to_string(llm::parse_persistent_variant("rounds=3+split")), "split+rounds=3");
  EXPECT_EQ(llm::to_string(llm::parse_persistent_variant("rounds=1")), "base");
  for (const char* bad : {"", "l2", "split=0", "split=x", "split+", "split=99999999999", "down=1",
                          "down=", "rounds=0", "rounds=5"}) {
    try {
      llm::parse_persistent_variant(bad);
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const Error& e) {
      EXPECT_NE(
          std::string(e.what()).find(
              "expected base, or split, split=N (N >= 1), down, down=N (N >= 2), rounds=N (1 to 4), ahead"),
          std::string::npos)
          << e.what();
    }
  }
  const auto cfg = small_llm_config(true, kVocab);
  const auto weights = llm::HostWeights::random(cfg, 40);
  llm::PersistentDecoder autos(
      context(), cfg, weights.lookup(),
      {.ctx = 8, .workgroups = 3, .workgroup_size = 32, .variant = llm::parse_persistent_variant("split")});
  EXPECT_EQ(llm::to_string(autos.variant()), "split=1");  // min(32, 3) workgroups / 4 heads, at least 1
  try {
    llm::PersistentDecoder d(
        context(), cfg, weights.lookup(),
        {.ctx = 8, .workgroup_size = 32, .variant = llm::parse_persistent_variant("split=9")});
    ADD_FAILURE() << "9 blocks of 4 heads in a workgroup of 32 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at most the workgroup size (32) blocks"), std::string::npos)
        << e.what();
  }
  auto odd = cfg;
  odd.head_dim = 10;
  const auto odd_weights = llm::HostWeights::random(odd, 41);
  try {
    llm::PersistentDecoder d(context(), odd, odd_weights.lookup(),
                             {.ctx = 8, .variant = llm::parse_persistent_variant("split=2")});
    ADD_FAILURE() << "head_dim 10 accepted for the split";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim (10) a multiple of 4"), std::string::npos) << e.what();
  }
  try {
    llm::PersistentDecoder d(
        context(), cfg, weights.lookup(),
        {.dtype = WeightFormat::F32, .ctx = 8, .variant = llm::parse_persistent_variant("ahead")});
    ADD_FAILURE() << "ahead accepted for f32 weights";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one vec4; f32 weights take two"), std::string::npos) << e.what();
  }
  llm::PersistentDecoder by_default(context(), odd, odd_weights.lookup(), {.ctx = 8});
  // The default split needs head_dim % 4 == 0; the default loads every format but f32 ahead; one
  // workgroup's 8 teams take 8 of the 24 row pairs in a pass, so down_proj splits in the fewest, 2.
  EXPECT_EQ(llm::to_string(by_default.variant()), "down=2+ahead");  // no rounds without the split
  for (const WeightFormat f : {WeightFormat::F32, WeightFormat::Q8_0}) {
    llm::PersistentDecoder d(context(), cfg, weights.lookup(), {.dtype = f, .ctx = 8});
    EXPECT_EQ(llm::to_string(d.variant()),
              f == WeightFormat::F32 ? "split=1+down=2+rounds=4" : "split=1+down=2+rounds=4+ahead")
        << gpu::to_string(f);
  }
  // The default down split: as many chunks (2 to 4) as one pass of the grid's teams (8 a workgroup)
  // covers of the 24 row pairs' units.
  for (const auto& [groups, down] : {std::pair{6u, "+down=2+"}, std::pair{9u, "+down=3+"},
                                     std::pair{12u, "+down=4+"}, std::pair{64u, "+down=4+"}}) {
    llm::PersistentDecoder d(context(), cfg, weights.lookup(), {.ctx = 8, .workgroups = groups});
    EXPECT_NE(llm::to_string(d.variant()).find(down), std::string::npos)
        << groups << " workgroups: " << llm::to_string(d.variant());
  }
}

// n tokens of a 64-thread persistent decoder of `variant` equal the step decoder's, logits within
// 1e-5.
void expect_steps_tokens(const llm::ModelConfig& cfg, const llm::HostWeights& weights, WeightFormat dtype,
                         const char* variant, uint32_t n) {
  llm::PersistentDecoder d(
      context(), cfg, weights.lookup(),
      {.dtype = dtype, .ctx = 64, .workgroup_size = 64, .variant = llm::parse_persistent_variant(variant)});
  const Decoded got = run_persistent(d, n);
  const Decoded steps = run_steps(cfg, weights, dtype, n);
  EXPECT_EQ(got.tokens, steps.tokens);
  ASSERT_EQ(got.logits.size(), steps.logits.size());
  for (uint32_t i = 0; i < n; ++i)
    EXPECT_LE(normalised_error<float>(got.logits[i], steps.logits[i]), 1e-5) << "step " << i;
}

// Test the long-row and long-cache paths of the dispatch against the step decoder: a down_proj row
// of 1,101 columns (138 column groups: two trips of four groups per lane of a 32-thread team, the
// second partial; in chunks of 35 with down=4) and 48 cache positions in one tile of 64
// (the V sum's trips of four loads over five parts of 12 dimensions, and its tail). With "ahead"
// whole rows take their first trip from the words loaded ahead, the second from team_dots' loop.
TEST(LlmPersistentDecodeRun, LongRowsAndLongCacheMatchTheStepDecoder) {
  auto cfg = small_llm_config(false, kVocab);
  cfg.intermediate_size = 1101;
  const auto weights = llm::HostWeights::random(cfg, 34);
  const uint32_t n = 42;
  for (const auto& [dtype, variant] :
       {std::pair{WeightFormat::F32, "split+down=4"}, std::pair{WeightFormat::F16, "ahead"},
        std::pair{WeightFormat::BF16, "split+down=4+ahead"}, std::pair{WeightFormat::Q8_0, "ahead"},
        std::pair{WeightFormat::Q5_K, "split+down=4+ahead"}}) {
    SCOPED_TRACE(variant);
    expect_steps_tokens(cfg, weights, dtype, variant, n);
  }
}

// Test a split down_proj whose workgroups' units cross a chunk's end: 23 row pairs (hidden 46) in
// teams of two, so one iteration stages two chunks of the input, and xs is sized for them alone
// (560 of the 1,101 inputs with down=4, 736 with down=3), not for all of it.
TEST(LlmPersistentDecodeRun, DownSplitStagesTheChunksItsUnitsCross) {
  auto cfg = small_llm_config(false, kVocab);
  cfg.hidden_size = 46;
  cfg.intermediate_size = 1101;
  const auto weights = llm::HostWeights::random(cfg, 35);
  const uint32_t n = 12;
  for (const auto& [dtype, variant] :
       {std::pair{WeightFormat::F16, "down=4"}, std::pair{WeightFormat::Q8_0, "down=3+ahead"}}) {
    SCOPED_TRACE(variant);
    expect_steps_tokens(cfg, weights, dtype, variant, n);
  }
}

// Test K positions per submit, a sequence continued by a second generate() (a chat turn), and
// an EOS id that stops generation with the tokens computed past it discarded, also where they
// read a stale word.
TEST(LlmPersistentDecodeRun, BatchesContinuationAndEos) {
  // Untied: with a tied LM head this small random model repeats the prompt's last token, and
  // tokens that are all alike would hide a batch's tokens in the wrong place.
  const auto cfg = small_llm_config(false, kVocab);
  const auto weights = llm::HostWeights::random(cfg, 33);
  llm::PersistentDecoder one(context(), cfg, weights.lookup(), {.dtype = WeightFormat::F16, .ctx = 64});
  const auto want = run_persistent(one, 20, 1, false).tokens;
  const std::vector<uint32_t> more = {9, 8};
  const auto want_more = one.generate(more, 6);

  llm::PersistentDecoder d(context(), cfg, weights.lookup(), {.dtype = WeightFormat::F16, .ctx = 64});
  EXPECT_EQ(run_persistent(d, 20, 8, false).tokens, want);
  EXPECT_EQ(d.stats().decode_submits, 3u);  // ceil(19 / 8)
  EXPECT_EQ(d.stats().decode_dispatches, 19u);
  EXPECT_EQ(d.generate(more, 6), want_more);

  llm::PersistentDecoder e(context(), cfg, weights.lookup(), {.dtype = WeightFormat::F16, .ctx = 64});
  llm::GenerateOptions opt;
  opt.steps_per_submit = 8;
  // EOS: a token first generated inside the second decode batch (tokens 9..16: the prompt's, then
  // batches of 8), not its first, so generate() stops in a batch whose later tokens were computed.
  size_t at = 10;
  while (at < 16 && std::find(want.begin(), want.end(), want[at]) != want.begin() + at) ++at;
  ASSERT_LT(at, 16u) << "no token of the second batch is new: pick another seed";
  opt.eos_ids = {want[at]};
  EXPECT_EQ(e.generate(kPrompt, 20, {}, opt), std::vector<uint32_t>(want.begin(), want.begin() + at + 1));

  // on_token stops at the 4th token, in the first decode batch, with the second in flight; where
  // that one read a stale word (dispatch 16: the prompt takes 0..6, the first batch 7..14), which
  // generate() never reads, the next turn's first batch is discarded and run again.
  auto four = [](uint32_t& count) { return [&count](uint32_t) { return ++count < 4; }; };
  opt.eos_ids.clear();
  uint32_t clean_count = 0, count = 0;
  llm::PersistentDecoder clean(context(), cfg, weights.lookup(), {.dtype = WeightFormat::F16, .ctx = 64});
  const auto first_turn = clean.generate(kPrompt, 20, four(clean_count), opt);
  EXPECT_EQ(first_turn, std::vector<uint32_t>(want.begin(), want.begin() + 4));
  EXPECT_EQ(clean.stats().decode_steps, 16u);  // both batches ran
  const auto second_turn = clean.generate(more, 6);
  llm::PersistentDecoder f(
      context(), cfg, weights.lookup(),
      {.dtype = WeightFormat::F16,
       .ctx = 64,
       .drop_stores = llm::PersistentOptions::DropStores{"Q_W", 16 * cfg.num_layers + 1, true}});
  EXPECT_EQ(f.generate(kPrompt, 20, four(count), opt), first_turn);
  EXPECT_EQ(f.stats().batches_run_again, 0u);
  EXPECT_EQ(f.generate(more, 6), second_turn);
  EXPECT_EQ(f.stats().batches_run_again, 1u);
  EXPECT_EQ(f.stats().stale_reads_by_region.size(), 1u);
}

// Test several workgroups where the co-residency probe passes: the tokens equal the one-workgroup
// run's, or a barrier timed out and generate() said so (co-residency is not promised to last on
// SwiftShader under load); never other tokens.
TEST(LlmPersistentDecodeRun, SeveralWorkgroupsMatchOrReportTheTimeout) {
  const auto cfg = small_llm_config(false, kVocab);
  const auto weights = llm::HostWeights::random(cfg, 34);
  llm::PersistentDecoder one(context(), cfg, weights.lookup(), {.dtype = WeightFormat::F32, .ctx = 64});
  const auto want = run_persistent(one, 12, 4, false).tokens;
  for (uint32_t groups : {2u, 3u}) {
    SCOPED_TRACE(std::to_string(groups) + " workgroups");
    // SwiftShader needs long waits (workgroups on a shared CPU): ~1M spins, as the decoder's.
    const auto probe = llm::check_grid_sync(context(), groups, 64, 4, 1u << 22);
    if (!probe.ok()) {
      std::printf("[ info ] %u workgroups not tried: %s\n", groups, probe.message.c_str());
      continue;
    }
    llm::PersistentDecoder d(
        context(), cfg, weights.lookup(),
        {.dtype = WeightFormat::F32, .ctx = 64, .workgroups = groups, .workgroup_size = 64});
    try {
      EXPECT_EQ(run_persistent(d, 12, 4, false).tokens, want);
      std::printf("[ info ] %u workgroups: ran, tokens compared\n", groups);
    } catch (const Error& e) {
      std::printf("[ info ] %u workgroups: %s\n", groups, e.what());
      EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    }
  }
}

// Test that a grid barrier that times out (a spin limit of 0: no waiter ever sees the others) is
// an Error naming the barrier, and that the decoder refuses to go on afterwards.
TEST(LlmPersistentDecodeRun, BarrierTimeoutIsAnError) {
  const auto cfg = small_llm_config(true, kVocab);
  const auto weights = llm::HostWeights::random(cfg, 35);
  llm::PersistentDecoder d(context(), cfg, weights.lookup(),
                           {.dtype = WeightFormat::F16, .ctx = 64, .workgroups = 2, .spin_limit = 0});
  try {
    d.generate(kPrompt, 4);
    FAIL() << "a timed-out barrier was not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("grid barrier timed out (barrier 0 of 16, after layer 0 Q/K/V)"),
              std::string::npos)
        << e.what();
  }
  try {
    d.generate(kPrompt, 4);
    FAIL() << "a broken decoder went on";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("timed out earlier"), std::string::npos) << e.what();
  }
}

// Test that every region's readers check its words' tags (the kernel's "Visibility across
// workgroups"): with the stores into one region left out in one layer (drop_stores), a reader
// meets the region's previous value, which it would use without the check; the batch must be
// discarded and run again, and then give the tokens and logits of a decoder that dropped nothing.
// Each region written once a layer and the residual (split down_proj: X_W and X2_W by turns; base:
// X_W alone, and ATT_W instead of the attention blocks), dropped in the prompt phase's first or
// fourth dispatch, or in the decode phase (two steps a batch, two batches in flight) in the first
// batch's second dispatch or the second batch's first, with 3 and 4 layers (the tags' count of
// earlier writes turns on both parities). A drop in every run of the batch ends in an Error.
TEST(LlmPersistentDecodeRun, EveryStaleReadDiscardsItsBatch) {
  enum Layers { Any, Even, Odd, Last };  // the layers of a dispatch that write the region
  struct Drop {
    const char* variant;
    const char* region;
    Layers written;
    const char* name;  // in stale_reads_by_region
  };
  const Drop drops[] = {{"split=3+down=2", "Q_W", Any, "queries"},
                        {"split=3+down=2", "CUR_W", Any, "current K/V"},
                        {"split=3+down=2", "PART_W", Any, "attention blocks"},
                        {"split=3+down=2", "ACT_W", Any, "mlp activation"},
                        {"split=3+down=2", "PDOWN_W", Any, "down_proj partials"},
                        {"split=3+down=2", "X_W", Even, "residual"},
                        {"split=3+down=2", "X2_W", Odd, "residual of odd layers"},
                        {"split=3+down=2", "BEST_W", Last, "best logits"},
                        {"base", "ATT_W", Any, "attention output"},
                        {"base", "X_W", Any, "residual"}};
  const uint32_t n = 6, dispatches[] = {0, 3, 8, 9};  // the prompt (7 tokens) takes dispatches 0..6
  llm::GenerateOptions two_a_batch;
  two_a_batch.steps_per_submit = 2;
  uint32_t turn = 0;
  for (const uint32_t layers : {3u, 4u}) {
    auto cfg = small_llm_config(false, kVocab);
    cfg.num_layers = layers;
    const auto weights = llm::HostWeights::random(cfg, 41);
    auto decoder = [&](const char* variant, std::optional<llm::PersistentOptions::DropStores> drop) {
      return std::make_unique<llm::PersistentDecoder>(
          context(), cfg, weights.lookup(),
          llm::PersistentOptions{.dtype = WeightFormat::F32,
                                 .ctx = 64,
                                 .workgroup_size = 32,
                                 .spin_limit = 64,
                                 .variant = llm::parse_persistent_variant(variant),
                                 .drop_stores = drop});
    };
    std::map<std::string, std::pair<std::vector<uint32_t>, std::vector<float>>> clean;  // by variant
    for (const char* variant : {"split=3+down=2", "base"}) {
      auto d = decoder(variant, std::nullopt);
      clean[variant].first = d->generate(kPrompt, n, {}, two_a_batch);
      clean[variant].second = d->read_logits();
    }
    for (const Drop& drop : drops) {
      // Layer 1, 0 or the last of the dispatch, or the nearest that writes the region.
      const uint32_t point = turn++ % 4, dispatch = dispatches[point];
      uint32_t layer = point % 3 == 0 ? 1 : point == 1 ? 0 : layers - 1;
      if (drop.written == Last) layer = layers - 1;
      if (drop.written == Even && layer % 2 == 1) --layer;
      if (drop.written == Odd && layer % 2 == 0) layer = layer + 1 < layers ? layer + 1 : layer - 1;
      const uint32_t at = dispatch * layers + layer;
      SCOPED_TRACE(std::string(drop.variant) + ", " + drop.region + " in layer " + std::to_string(layer) +
                   " of dispatch " + std::to_string(dispatch) + ", " + std::to_string(layers) + " layers");
      auto d = decoder(drop.variant, llm::PersistentOptions::DropStores{drop.region, at, true});
      EXPECT_EQ(d->generate(kPrompt, n, {}, two_a_batch), clean[drop.variant].first);
      EXPECT_LE(normalised_error<float>(d->read_logits(), clean[drop.variant].second), 1e-5);
      EXPECT_EQ(d->stats().batches_run_again, 1u);
      // Counted where it was: in the region left out, and nowhere else.
      EXPECT_EQ(d->stats().stale_reads_by_region.size(), 1u);
      EXPECT_TRUE(d->stats().stale_reads_by_region.contains(drop.name)) << drop.name;
    }
    if (layers != 3) continue;
    // Left out in every run, in the first write after the restart (dispatch 0, layer 0): the
    // prompt phase runs 8 times, then an Error. (Before that write, `live` must hold the other tag:
    // the failed run left the queries of its last layer, with the first write's tag where the
    // layers are odd, unless the restart zeroes it.)
    auto d = decoder("split=3+down=2", llm::PersistentOptions::DropStores{"Q_W", 0, false});
    try {
      d->generate(kPrompt, n, {}, two_a_batch);
      ADD_FAILURE() << "a stale word was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("8 runs in a row"), std::string::npos) << e.what();
    }
    EXPECT_EQ(d->stats().batches_run_again, 7u);
  }
}

// Test that options the kernel cannot run are clear errors naming the limit.
TEST(LlmPersistentDecodeRun, BadOptionsAreErrors) {
  const auto cfg = small_llm_config(true, kVocab);
  const auto weights = llm::HostWeights::random(cfg, 36);
  auto error_of = [&](llm::PersistentOptions o) -> std::string {
    try {
      llm::PersistentDecoder d(context(), cfg, weights.lookup(), o);
    } catch (const Error& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(error_of({.ctx = 64, .workgroup_size = 48}).find("power of two"), std::string::npos);
  EXPECT_NE(error_of({.ctx = 64, .workgroups = 0}).find("maxComputeWorkgroupsPerDimension"),
            std::string::npos);
  EXPECT_NE(error_of({.ctx = 1000}).find("max_position_embeddings"), std::string::npos);

  llm::PersistentDecoder d(context(), cfg, weights.lookup(), {.ctx = 8});
  try {
    d.generate(kPrompt, 4);  // 7 + 4 - 1 positions > 8
    FAIL() << "a sequence past --ctx was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceed --ctx 8"), std::string::npos) << e.what();
  }
}

// Test the grid choice: one workgroup always passes the probe; a probe that may not wait (spin
// limit 0) fails for every grid, which is the fallback to the step decoder, with the reason.
TEST(LlmPersistentDecodeRun, GridChoiceAndFallback) {
  EXPECT_EQ(llm::choose_grid(context(), 1, 64, 65536).workgroups, 1u);
  const auto any = llm::choose_grid(context(), 0, 64, 65536, 4);
  EXPECT_GE(any.workgroups, 1u);
  EXPECT_LE(any.workgroups, 4u);
  const auto none = llm::choose_grid(context(), 0, 64, 0, 4);
  EXPECT_EQ(none.workgroups, 0u);
  EXPECT_NE(none.reason.find("1 workgroups:"), std::string::npos) << none.reason;
  EXPECT_NE(none.reason.find("not co-resident"), std::string::npos) << none.reason;
}

// Test the decode kernel's own grid probe (fit_grid): a probe that may not wait fails at every grid,
// halved down to 1, which is an Error that says so ("timed out": the session falls back to the step
// decoder); a probe that may wait leaves a grid whose dispatches decode as one workgroup does. On
// SwiftShader the probe's one barrier promises nothing for the decode's later ones (its worker threads
// are the OS's to schedule: on a loaded machine one of two workgroups may wait for the other's core),
// so there a timeout of a grid above 1 is accepted, as GridSyncWorksOrIsReported accepts it.
TEST(LlmPersistentDecodeRun, GridFitsTheDecodeKernelItself) {
  const auto cfg = small_llm_config(false, kVocab);  // untied: the tied one repeats the prompt's last token
  const auto weights = llm::HostWeights::random(cfg, 39);
  try {
    llm::PersistentDecoder d(context(), cfg, weights.lookup(),
                             {.ctx = 64, .workgroups = 4, .fit_grid = true, .probe_spin = 0});
    FAIL() << "a probe that may not wait passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("timed out in the dispatch's own grid probe at every grid from 4 "
                                         "workgroups down to 1 (0 spins)"),
              std::string::npos)
        << e.what();
  }
  llm::PersistentDecoder one(context(), cfg, weights.lookup(), {.dtype = WeightFormat::F16, .ctx = 64});
  const auto want = run_persistent(one, 12, 4, false).tokens;
  llm::PersistentDecoder fitted(
      context(), cfg, weights.lookup(),
      {.dtype = WeightFormat::F16, .ctx = 64, .workgroups = 8, .fit_grid = true, .probe_spin = 1u << 22});
  std::printf("[ info ] a grid of 8 fitted to %u workgroups\n", fitted.workgroups());
  EXPECT_GE(fitted.workgroups(), 1u);
  EXPECT_LE(fitted.workgroups(), 8u);
  try {
    EXPECT_EQ(run_persistent(fitted, 12, 4, false).tokens, want);
  } catch (const Error& e) {
    std::printf("[ info ] %u workgroups: %s\n", fitted.workgroups(), e.what());
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    EXPECT_GT(fitted.workgroups(), 1u) << e.what();
  }
}

// Test a persistent decoder on a step decoder's matrices (matrices_from: no second upload) that
// hands its prompts to it (take_prompts_from): the model's prefill feeds a prompt's positions but the
// last, and the persistent decoder goes on from their K/V. Over a conversation of turns, each
// continuing the sequence, every turn's tokens and logits must equal those of a persistent decoder
// with its own matrices that feeds every position itself: after a first prompt (also against the
// reference), a later one (the model's cache first given the positions the persistent decoder
// generated), one too short to hand over, and one after someone else used the model (its cache
// then rebuilt from 0).
class LlmPersistentHandOver : public ::testing::TestWithParam<WeightFormat> {};

TEST_P(LlmPersistentHandOver, StepDecoderTakesThePrompts) {
  const WeightFormat dtype = GetParam();
  const auto cfg = small_llm_config(false, kVocab);
  const auto weights = llm::HostWeights::random(cfg, 41);
  llm::Model model(context(), cfg, weights.lookup(), {.dtype = dtype, .ctx = 64});
  llm::PersistentOptions po{.dtype = dtype, .ctx = 64, .workgroup_size = 64};
  llm::PersistentDecoder alone(context(), cfg, weights.lookup(), po);
  po.matrices_from = &model;
  llm::PersistentDecoder handed(context(), cfg, weights.lookup(), po);
  handed.take_prompts_from(&model);
  // The matrices counted once: the model's buffers and this decoder's own but the matrices.
  EXPECT_LT(handed.stats().gpu_memory_bytes,
            model.stats().gpu_memory_bytes + alone.stats().gpu_memory_bytes - alone.stats().weight_bytes / 2);
  EXPECT_EQ(handed.stats().weight_bytes_per_token, alone.stats().weight_bytes_per_token);

  const uint32_t n = 6;
  auto turn = [&](const std::vector<uint32_t>& prompt, const char* what) {
    const Decoded want = [&] {
      Decoded r;
      llm::GenerateOptions opt;
      opt.on_logits = [&](std::span<const float> l) { r.logits.emplace_back(l.begin(), l.end()); };
      r.tokens = alone.generate(prompt, n, {}, opt);
      return r;
    }();
    Decoded got;
    llm::GenerateOptions opt;
    opt.on_logits = [&](std::span<const float> l) { got.logits.emplace_back(l.begin(), l.end()); };
    got.tokens = handed.generate(prompt, n, {}, opt);
    EXPECT_EQ(got.tokens, want.tokens) << what;
    for (uint32_t i = 0; i < n && i < got.logits.size() && i < want.logits.size(); ++i)
      EXPECT_LE(normalised_error<float>(got.logits[i], want.logits[i]), 1e-5) << what << ", step " << i;
    return got;
  };

  const Decoded first = turn(kPrompt, "first prompt");
  EXPECT_EQ(handed.stats().prompt_tokens, kPrompt.size());
  EXPECT_EQ(model.length(), kPrompt.size() - 1);  // the model fed all but the last position
  const llm::HostWeights stored = test::as_stored(weights, dtype);
  llm::ref::Decoder exact(cfg, llm::ref::Weights::load(cfg, stored.lookup()), 64);
  EXPECT_EQ(first.tokens, exact.greedy(kPrompt, n));

  const std::vector<uint32_t> later = {11, 250, 3, 97, 180};
  turn(later, "later prompt");
  EXPECT_EQ(handed.stats().prompt_tokens, later.size() + 1);  // and the last token generated before
  EXPECT_EQ(model.length(), kPrompt.size() + n + later.size() - 1);
  EXPECT_EQ(model.sequence(),
            std::vector<uint32_t>(handed.sequence().begin(), handed.sequence().begin() + model.length()));

  const uint32_t fed = model.length();
  turn({17, 4}, "short prompt");
  EXPECT_EQ(model.length(), fed);  // two positions: through the persistent dispatch

  model.reset();
  model.generate(std::vector<uint32_t>{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, 4);
  turn({200, 150, 100, 50, 25, 12}, "prompt after another use of the model");
}

// Test that a step decoder whose matrices lie in several buffers (a binding limit below the
// arena's size) is refused as the persistent decoder's weights, saying why.
TEST(LlmPersistentDecodeRun, SharedMatricesMustBeOneBuffer) {
  const auto cfg = small_llm_config(false, kVocab);
  const auto weights = llm::HostWeights::random(cfg, 43);
  llm::Model split(context(), cfg, weights.lookup(),
                   {.dtype = WeightFormat::F16, .ctx = 64, .binding_limit = 64 * 1024});
  ASSERT_GT(std::count_if(split.buffers().begin(), split.buffers().end(),
                          [](const llm::NamedBuffer& b) { return b.name.starts_with("weights."); }),
            1);
  try {
    llm::PersistentDecoder d(context(), cfg, weights.lookup(),
                             {.dtype = WeightFormat::F16, .ctx = 64, .matrices_from = &split});
    ADD_FAILURE() << "matrices in several buffers were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the step decoder's matrices lie in"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--decode steps"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Storage, LlmPersistentHandOver,
                         ::testing::Values(WeightFormat::F32, WeightFormat::Q8_0),
                         [](const auto& info) { return std::string(gpu::to_string(info.param)); });

// Test the check that guards the persistent decode: it passes against the step decoder on the
// same weights and names the first differing step against a model with other weights.
TEST(LlmPersistentDecodeRun, CheckAgainstStepDecoderCatchesDifferences) {
  const auto cfg = small_llm_config(true, kVocab);
  const auto weights = llm::HostWeights::random(cfg, 37);
  llm::Model steps(context(), cfg, weights.lookup(), {.dtype = WeightFormat::F16, .ctx = 64});
  llm::PersistentDecoder same(context(), cfg, weights.lookup(), {.dtype = WeightFormat::F16, .ctx = 64});
  EXPECT_EQ(llm::compare_with_steps(steps, same, kPrompt, 8, 1e-4), "");
  EXPECT_TRUE(same.sequence().empty());  // reset after the check

  auto other = weights;
  other.transform([](float v) { return v * 1.01f; });
  llm::PersistentDecoder off(context(), cfg, other.lookup(), {.dtype = WeightFormat::F16, .ctx = 64});
  const std::string diff = llm::compare_with_steps(steps, off, kPrompt, 8, 1e-4);
  EXPECT_NE(diff.find("step 0: logits differ"), std::string::npos) << diff;

  // A persistent run that fails (here: weights whose products overflow, so no logit is finite) is a
  // difference too.
  auto broken = weights;
  broken.transform([](float v) { return v * 1e30f; });
  llm::PersistentDecoder nan(context(), cfg, broken.lookup(), {.dtype = WeightFormat::F32, .ctx = 64});
  const std::string failed = llm::compare_with_steps(steps, nan, kPrompt, 8, 1e-4);
  EXPECT_NE(failed.find("the persistent decoder's run: generated token 1"), std::string::npos) << failed;
  EXPECT_TRUE(nan.sequence().empty());
}

}  // namespace
}  // namespace wgfuse
