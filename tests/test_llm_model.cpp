// The whole decoder on the GPU (llm::Model) against the double-precision reference decoder
// (llm::ref::Decoder) on small random Qwen2-architecture models: hidden 48, 3 layers, 4 heads on
// 2 kv heads (head_dim 12), intermediate 72, vocab 300, tied and untied LM heads, f32 and f16
// storage.
// Logit error is normalised: max |gpu - reference| / max |reference| per step, <= 1e-4 (f32
// storage) and <= 1e-2 (f16 storage, against the unrounded weights). Greedy tokens must equal
// those of the reference run on the weights as stored (rounded to f16 for f16 storage).
#include <cmath>
#include <cstdio>
#include <ostream>

#include "llm/model.h"
#include "llm_support.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

using gpu::WeightFormat;
using test::as_stored;
using test::context;
using test::normalised_error;
using test::small_llm_config;

const std::vector<uint32_t> kPrompt = {7, 123, 42, 299, 0, 64};

llm::ref::Decoder reference(const llm::ModelConfig& c, const llm::HostWeights& w, uint32_t capacity) {
  return llm::ref::Decoder(c, llm::ref::Weights::load(c, w.lookup()), capacity);
}

struct Case {
  WeightFormat dtype;
  bool tied;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << gpu::to_string(c.dtype) << (c.tied ? " tied" : " untied");
}
class LlmModel : public ::testing::TestWithParam<Case> {};

// Test 32 greedy tokens and every step's logits against the reference. Decode attention in one
// pass (attend_short) below position 20, then in chunks of 16 positions, from position 28 in chunks
// of 32 (the sequence spans 2), the tied model with both heads of a kv group in one workgroup.
TEST_P(LlmModel, LogitsAndGreedyTokensMatchTheReference) {
  const auto [dtype, tied] = GetParam();
  const auto cfg = small_llm_config(tied);
  const auto weights = llm::HostWeights::random(cfg, tied ? 11 : 12);
  const uint32_t n = 32;
  llm::Model model(context(), cfg, weights.lookup(),
                   {.dtype = dtype,
                    .attn_short_max = 20,
                    .attn_long_from = 28,
                    .ctx = 64,
                    .attention = {.chunk = 16, .heads_per_wg = tied ? 2u : 1u}});

  std::vector<std::vector<float>> logits;
  llm::GenerateOptions opt;
  opt.on_logits = [&](std::span<const float> l) { logits.emplace_back(l.begin(), l.end()); };
  const auto tokens = model.generate(kPrompt, n, {}, opt);
  ASSERT_EQ(tokens.size(), n);
  ASSERT_EQ(logits.size(), n);

  auto stored = reference(cfg, as_stored(weights, dtype), 64);
  EXPECT_EQ(tokens, stored.greedy(kPrompt, n))
      << "greedy tokens differ from the reference on the stored weights";

  // Logits along the GPU's own sequence, against the unrounded weights.
  const double tol = dtype == WeightFormat::F32 ? 1e-4 : dtype == WeightFormat::F16 ? 1e-2 : 4e-2;
  auto exact = reference(cfg, weights, 64);
  auto want = exact.prefill(kPrompt);
  double worst = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const double e = normalised_error(logits[i], want);
    EXPECT_LE(e, tol) << "step " << i;
    worst = std::max(worst, e);
    if (i + 1 < n) want = exact.forward(tokens[i]);
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.2e", worst);
  RecordProperty("max_normalised_logit_error", text);
}

// Test that K steps per submit give the same tokens as one step per submit, with one submit and
// one read-back per K decode steps, and the dispatch count of the recorded step. The untied model:
// the tied one repeats the prompt's last token, so any two runs would agree on tokens.
TEST(LlmModelRun, KStepsPerSubmitCountsAndTokens) {
  const WeightFormat dtype = WeightFormat::F16;
  const auto cfg = small_llm_config(false);
  const auto weights = llm::HostWeights::random(cfg, 21);
  llm::Model one(context(), cfg, weights.lookup(), {.dtype = dtype, .ctx = 64});
  llm::GenerateOptions k1;
  k1.steps_per_submit = 1;
  const auto want = one.generate(kPrompt, 32, {}, k1);

  llm::Model model(context(), cfg, weights.lookup(), {.dtype = dtype, .ctx = 64});
  llm::GenerateOptions k8;
  k8.steps_per_submit = 8;
  std::vector<uint32_t> streamed;
  const auto got = model.generate(
      kPrompt, 32, [&](uint32_t id) { return streamed.push_back(id), true; }, k8);
  EXPECT_EQ(got, want);
  EXPECT_EQ(streamed, got);
  const auto& s = model.stats();
  // Split layers (the default), attention in one pass (attend_short), split along the cache at long
  // contexts: one dispatch either way.
  EXPECT_EQ(s.dispatches_per_step, 1 + 5 * cfg.num_layers + 1 + 2);
  EXPECT_EQ(s.dispatches_per_step_long, 1 + 5 * cfg.num_layers + 1 + 2);
  EXPECT_EQ(s.decode_tokens, 31u);  // the first token ends the prompt phase
  EXPECT_EQ(s.decode_steps, 31u);
  EXPECT_EQ(s.decode_submits, 4u);  // ceil(31 / 8)
  EXPECT_EQ(s.decode_readbacks, 4u);
  EXPECT_EQ(s.decode_dispatches, 31u * s.dispatches_per_step);
  EXPECT_EQ(s.debug_readbacks, 0u);
  EXPECT_EQ(s.prompt_tokens, kPrompt.size());
}

// Test that the fused layers (attend_o: 4 dispatches a layer), the split ones (--fusion none:
// 5 with attention in one pass, 5 in chunks with --attn-short-max 0), split layers that switch
// from one pass to chunks at position 20 (--attn-short-max 20) and fused layers that switch to
// split ones at position 20 (--attn-fuse-max 20), the last two with
// the prompt fed one decode step at a time and chunks of 16 positions (32 from position 26: the
// split_long variant; with --attn-long-from 8, from position 20 at once), give the same 24 greedy
// tokens as the reference on the stored weights, and logits within f32 rounding of each other at
// every step.
TEST_P(LlmModel, FusedAndSplitLayersAgree) {
  const auto [dtype, tied] = GetParam();
  const auto cfg = small_llm_config(tied);
  const auto weights = llm::HostWeights::random(cfg, tied ? 13 : 14);
  const uint32_t n = 24;
  struct Run {
    std::vector<uint32_t> tokens;
    std::vector<std::vector<float>> logits;
    uint32_t dispatches;
    std::vector<std::pair<llm::Model::LayerVariant, uint32_t>> variants;  // and where each begins
  };
  auto generate = [&](llm::ModelOptions o) {
    o.dtype = dtype;
    o.ctx = 64;
    llm::Model model(context(), cfg, weights.lookup(), o);
    Run r;
    llm::GenerateOptions opt;
    opt.on_logits = [&](std::span<const float> l) { r.logits.emplace_back(l.begin(), l.end()); };
    r.tokens = model.generate(kPrompt, n, {}, opt);
    r.dispatches = model.stats().dispatches_per_step;
    for (const auto& v : model.decode_variants()) r.variants.push_back({v.variant, v.from});
    return r;
  };
  const Run split = generate({.fusion = llm::Fusion::None});
  const Run chunked = generate({.fusion = llm::Fusion::None, .attn_short_max = 0});
  const Run crossing = generate({.fusion = llm::Fusion::None,
                                 .attn_short_max = 20,
                                 .attn_long_from = 26,
                                 .prefill_chunk = 0,
                                 .attention = {.chunk = 16}});
  const Run long_at_once = generate({.fusion = llm::Fusion::None,
                                     .attn_short_max = 20,
                                     .attn_long_from = 8,
                                     .prefill_chunk = 0,
                                     .attention = {.chunk = 16}});
  const Run fused = generate({.fusion = llm::Fusion::Full});
  const Run mixed = generate({.fusion = llm::Fusion::Full,
                              .attn_fuse_max = 20,
                              .attn_long_from = 26,
                              .prefill_chunk = 0,
                              .attention = {.chunk = 16}});
  EXPECT_EQ(split.dispatches, 1 + 5 * cfg.num_layers + 3);
  EXPECT_EQ(chunked.dispatches, 1 + 5 * cfg.num_layers + 3);
  EXPECT_EQ(fused.dispatches, 1 + 4 * cfg.num_layers + 3);
  using enum llm::Model::LayerVariant;
  const std::vector<std::pair<llm::Model::LayerVariant, uint32_t>> crossing_variants = {
      {Short, 0}, {Split, 20}, {SplitLong, 26}};
  const std::vector<std::pair<llm::Model::LayerVariant, uint32_t>> long_variants = {{Short, 0},
                                                                                    {SplitLong, 20}};
  EXPECT_EQ(crossing.variants, crossing_variants);
  EXPECT_EQ(long_at_once.variants, long_variants);
  auto stored = reference(cfg, as_stored(weights, dtype), 64);
  const auto want = stored.greedy(kPrompt, n);
  ASSERT_EQ(split.logits.size(), n);
  for (const auto& [name, r] : {std::pair<std::string, const Run&>{"split", split},
                                {"chunked", chunked},
                                {"crossing", crossing},
                                {"long_at_once", long_at_once},
                                {"fused", fused},
                                {"mixed", mixed}}) {
    EXPECT_EQ(r.tokens, want) << name;
    for (uint32_t i = 0; i < n; ++i) {
      const std::vector<double> s(split.logits[i].begin(), split.logits[i].end());
      EXPECT_LE(normalised_error(r.logits.at(i), s), 1e-5) << name << ", step " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Storage, LlmModel,
                         ::testing::Values(Case{WeightFormat::F32, false}, Case{WeightFormat::F32, true},
                                           Case{WeightFormat::F16, false}, Case{WeightFormat::F16, true},
                                           Case{WeightFormat::BF16, false}),
                         [](const auto& info) {
                           return std::string(gpu::to_string(info.param.dtype)) +
                                  (info.param.tied ? "_tied" : "_untied");
                         });

class LlmModelQuantized : public ::testing::TestWithParam<WeightFormat> {};

// Test each quantized format end to end, quantized at load from the f32 weights (as --dtype q8_0
// does): 8 greedy tokens equal to the reference's on the dequantized weights, and every step's
// logits within f32 rounding of that reference (the prompt through the prefill products, then
// decode steps).
TEST_P(LlmModelQuantized, LogitsAndGreedyTokensMatchTheDequantizedReference) {
  const WeightFormat dtype = GetParam();
  const auto cfg = small_llm_config(false);
  const auto weights = llm::HostWeights::random(cfg, 13);
  const uint32_t n = 8;
  llm::Model model(context(), cfg, weights.lookup(), {.dtype = dtype, .ctx = 32});
  EXPECT_EQ(model.stats().weight_format, dtype);
  std::vector<std::vector<float>> logits;
  llm::GenerateOptions opt;
  opt.on_logits = [&](std::span<const float> l) { logits.emplace_back(l.begin(), l.end()); };
  const auto tokens = model.generate(kPrompt, n, {}, opt);
  ASSERT_EQ(logits.size(), n);

  const auto stored = as_stored(weights, dtype);
  EXPECT_EQ(tokens, reference(cfg, stored, 32).greedy(kPrompt, n));
  auto along = reference(cfg, stored, 32);
  auto want = along.prefill(kPrompt);
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_LE(normalised_error(logits[i], want), 1e-4) << "step " << i;
    if (i + 1 < n) want = along.forward(tokens[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, LlmModelQuantized, ::testing::ValuesIn(test::quantized_formats()),
                         [](const auto& info) { return gpu::to_string(info.param); });

// Test that generation stops at an EOS id inside a K batch: the tokens after it, already computed
// on the GPU (in the same command buffer or the next one in flight), are never reported.
TEST(LlmModelRun, EosInsideABatchDiscardsTheRest) {
  const auto cfg = small_llm_config(false);
  const auto weights = llm::HostWeights::random(cfg, 31);
  llm::Model model(context(), cfg, weights.lookup(), {.dtype = WeightFormat::F32, .ctx = 64});
  const auto all = model.generate(kPrompt, 24);
  // The first token making its first appearance at index >= 3 plays EOS.
  size_t at = 3;
  while (at < all.size() && std::find(all.begin(), all.begin() + at, all[at]) != all.begin() + at) ++at;
  ASSERT_LT(at, all.size()) << "no fresh token to use as EOS";

  llm::Model again(context(), cfg, weights.lookup(), {.dtype = WeightFormat::F32, .ctx = 64});
  llm::GenerateOptions opt;
  opt.steps_per_submit = 16;
  opt.eos_ids = {all[at]};
  std::vector<uint32_t> streamed;
  const auto got = again.generate(
      kPrompt, 24, [&](uint32_t id) { return streamed.push_back(id), true; }, opt);
  EXPECT_EQ(got, std::vector<uint32_t>(all.begin(), all.begin() + at + 1));
  EXPECT_EQ(streamed, got);
  EXPECT_EQ(again.sequence().size(), kPrompt.size() + at + 1);

  // The callback stops it too.
  llm::Model third(context(), cfg, weights.lookup(), {.dtype = WeightFormat::F32, .ctx = 64});
  llm::GenerateOptions batch;
  batch.steps_per_submit = 16;
  const auto five = third.generate(
      kPrompt, 24, [n = 0](uint32_t) mutable { return ++n < 5; }, batch);
  EXPECT_EQ(five, std::vector<uint32_t>(all.begin(), all.begin() + 5));
  // The second command buffer (tokens 17..23) was in flight when the callback stopped; continuing
  // the sequence gives the rest of the uninterrupted generation.
  const auto rest = third.generate({}, 19, {}, batch);
  EXPECT_EQ(rest, std::vector<uint32_t>(all.begin() + 5, all.end()));
}

// Test that prefill (tiled matrix-matrix kernels, in chunks of 4 tokens: 2 prefill() calls, 3
// chunks) then decode gives the tokens of decode-only generation (the prompt fed one decode step
// at a time), and that a second generate() continues the same sequence as the reference does
// (the untied model, whose tokens vary).
TEST(LlmModelRun, PrefillThenDecodeEqualsDecodeOnly) {
  const auto cfg = small_llm_config(false);
  const auto weights = llm::HostWeights::random(cfg, 41);
  llm::Model decode_only(context(), cfg, weights.lookup(),
                         {.dtype = WeightFormat::F32, .ctx = 64, .prefill_chunk = 0});
  const auto want = decode_only.generate(kPrompt, 16);

  llm::Model model(context(), cfg, weights.lookup(),
                   {.dtype = WeightFormat::F32, .ctx = 64, .prefill_chunk = 4});
  model.prefill(std::span(kPrompt).first(1));
  model.prefill(std::span(kPrompt).subspan(1));
  EXPECT_EQ(model.length(), kPrompt.size());
  auto ref = reference(cfg, weights, 64);
  const auto last = ref.prefill(kPrompt);
  EXPECT_LE(normalised_error(model.read_logits(), last), 1e-4);
  EXPECT_EQ(model.generate({}, 16), want);

  // Continue: the last generated token and three new ones are fed, then 8 more generated.
  const std::vector<uint32_t> more = {5, 6, 7};
  const auto cont = model.generate(more, 8);
  std::vector<uint32_t> seq = kPrompt;
  seq.insert(seq.end(), want.begin(), want.end());
  seq.insert(seq.end(), more.begin(), more.end());
  ref.reset();
  EXPECT_EQ(cont, ref.greedy(seq, 8));
}

// Test that a 70-token prompt fed in chunks of 33 (33, 33, 4: whole and partial tiles, chunks
// attending to earlier chunks' cache) leaves the logits of decoding it position by position, for
// both storage dtypes, both prefill attention kernels, and the tiled products or the short passes
// (16, 16, 1 tokens; then 1).
TEST(LlmModelRun, PrefillChunksMatchDecodingEachPosition) {
  const auto cfg = small_llm_config(false);
  const auto weights = llm::HostWeights::random(cfg, 61);
  std::vector<uint32_t> prompt(70);
  for (uint32_t i = 0; i < prompt.size(); ++i) prompt[i] = (i * 37 + 11) % cfg.vocab_size;
  auto ref = reference(cfg, weights, 96);
  const auto ref_logits = ref.prefill(prompt);
  for (WeightFormat dtype : {WeightFormat::F32, WeightFormat::F16}) {
    llm::Model stepwise(context(), cfg, weights.lookup(), {.dtype = dtype, .ctx = 96, .prefill_chunk = 0});
    stepwise.prefill(prompt);
    const auto want = stepwise.read_logits();
    for (uint32_t short_max : {0u, 64u})
      for (auto attention : {llm::PromptAttention::Blocks, llm::PromptAttention::Tiled}) {
        const std::string what = std::string(gpu::to_string(dtype)) +
                                 (attention == llm::PromptAttention::Tiled ? " tiled" : " blocks") +
                                 (short_max ? " short passes" : " tiled products");
        llm::Model chunked(context(), cfg, weights.lookup(),
                           {.dtype = dtype,
                            .ctx = 96,
                            .prefill_chunk = 33,
                            .prefill_short_max = short_max,
                            .prefill_attention = attention});
        chunked.prefill(prompt);
        EXPECT_LE(normalised_error(chunked.read_logits(), want), 1e-5) << what;
        // Against the unrounded weights, as LogitsAndGreedyTokensMatchTheReference.
        EXPECT_LE(normalised_error(chunked.read_logits(), ref_logits),
                  dtype == WeightFormat::F32 ? 1e-4 : 1e-2)
            << what;
      }
  }
}

// Test that prompts of other lengths reuse the prefill's pipelines (a new pipeline is a driver
// compile in the first prompt of that length, e.g. every chat turn): 33, 40 and 57 tokens in the same
// tiles and K split (forced: 32 x 64, split 2) compile nothing after the first, and each prefill
// leaves the logits of decoding the prompt position by position.
TEST(LlmModelRun, PromptLengthsShareThePrefillPipelines) {
  const auto cfg = small_llm_config(false);
  const auto weights = llm::HostWeights::random(cfg, 62);
  llm::Model chunked(context(), cfg, weights.lookup(),
                     {.dtype = WeightFormat::F32,
                      .ctx = 96,
                      .prefill_chunk = 64,
                      .prefill_short_max = 0,
                      .prefill_tile = llm::parse_prompt_tile("32x64x2", "test")});
  llm::Model stepwise(context(), cfg, weights.lookup(),
                      {.dtype = WeightFormat::F32, .ctx = 96, .prefill_chunk = 0});
  size_t compiled = 0;
  for (uint32_t length : {33u, 40u, 57u}) {
    std::vector<uint32_t> prompt(length);
    for (uint32_t i = 0; i < length; ++i) prompt[i] = (i * 29 + length) % cfg.vocab_size;
    chunked.reset();
    chunked.prefill(prompt);
    stepwise.reset();
    stepwise.prefill(prompt);
    EXPECT_LE(normalised_error(chunked.read_logits(), stepwise.read_logits()), 1e-5) << length << " tokens";
    if (length == 33)
      compiled = context().kernels_compiled();
    else
      EXPECT_EQ(context().kernels_compiled(), compiled) << length << " tokens compiled new pipelines";
  }
}

// Test that bad weights and options are clear errors naming the problem, and that loading
// reports its progress up to the total.
// Test that decode attention takes one dispatch per head (attend_short) for at most
// Model::kAttendShortSpan / head_dim positions, whatever larger --attn-short-max asks for, and
// for what a smaller one asks for; never with the fused layer.
TEST(LlmModelRun, OnePassAttentionBoundFollowsHeadDim) {
  for (const uint32_t hd : {64u, 128u}) {
    auto cfg = small_llm_config(true);
    cfg.num_layers = 1, cfg.head_dim = hd, cfg.max_position_embeddings = 1024;
    const auto weights = llm::HostWeights::random(cfg, 13);
    auto short_max = [&](llm::ModelOptions o) {
      o.ctx = 1024, o.prefill_chunk = 0;
      return llm::Model(context(), cfg, weights.lookup(), o).short_max();
    };
    SCOPED_TRACE("head_dim " + std::to_string(hd));
    EXPECT_EQ(short_max({}), llm::Model::kAttendShortSpan / hd);
    EXPECT_EQ(short_max({.attn_short_max = 1000}), llm::Model::kAttendShortSpan / hd);
    EXPECT_EQ(short_max({.attn_short_max = 100}), 100u);
    EXPECT_EQ(short_max({.fusion = llm::Fusion::Full}), 0u);
  }
}

TEST(LlmModelRun, BadInputIsAClearError) {
  const auto cfg = small_llm_config(false);
  auto weights = llm::HostWeights::random(cfg, 51);
  auto expect_error = [&](const llm::HostWeights& w, const llm::ModelConfig& c, uint32_t ctx,
                          const std::string& what) {
    try {
      llm::Model m(context(), c, w.lookup(), {.dtype = WeightFormat::F16, .ctx = ctx});
      FAIL() << "accepted; expected an error about " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error(weights, cfg, 256, "max_position_embeddings");
  auto untied_without_head = cfg;
  untied_without_head.tie_word_embeddings = false;
  auto tied = llm::HostWeights::random(small_llm_config(true), 52);
  expect_error(tied, untied_without_head, 64, "lm_head.weight");
  auto bad = weights;
  bad.set("model.layers.1.mlp.up_proj.weight", {72, 47}, std::vector<float>(72 * 47, 0.5f));
  expect_error(bad, cfg, 64, "model.layers.1.mlp.up_proj.weight");

  uint64_t calls = 0, done = 0, total = 0;
  llm::Model model(context(), cfg, weights.lookup(),
                   {.dtype = WeightFormat::F16, .ctx = 16, .progress = [&](uint64_t d, uint64_t t) {
                      EXPECT_GE(d, done) << "progress went backwards";
                      ++calls, done = d, total = t;
                    }});
  EXPECT_GE(calls, 1u);  // once per upload chunk (a chunk holds several MB: this model fits one)
  EXPECT_EQ(done, total);
  EXPECT_GT(total, 0u);
  EXPECT_GE(model.stats().weight_bytes, total);
  EXPECT_THROW(model.generate(kPrompt, 0), Error);
  EXPECT_THROW(model.generate({}, 4), Error);
  EXPECT_THROW(model.generate(kPrompt, 12), Error);  // 6 + 12 - 1 > 16
  const std::vector<uint32_t> outside = {300};
  EXPECT_THROW(model.generate(outside, 4), Error);
}

}  // namespace
}  // namespace wgfuse
