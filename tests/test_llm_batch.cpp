// Batched decoding (llm::BatchDecoder, kernels/llm_batch.wgsl) on small random models of each
// architecture at odd sizes: three streams with prompts of different lengths join at different
// steps and leave at different steps; each step's logits of every stream are compared with the
// double-precision reference decoder (llm::ref::Decoder) fed the same tokens — the CPU reference
// of every batched kernel — and each stream's greedy tokens with the single-sequence step
// decoder's (llm::Model::generate) for the same prompt, whatever runs beside it.
#include <array>
#include <map>
#include <ostream>

#include "llm/batch_decoder.h"
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

struct Case {
  const char* name;
  llm::ModelConfig cfg;
  WeightFormat dtype;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name << " " << gpu::to_string(c.dtype);
}
class LlmBatch : public ::testing::TestWithParam<Case> {};

struct Stream {
  std::vector<uint32_t> prompt;
  uint32_t join_step, tokens;
};

// Three streams joining at different steps in the given slots of a batch of `slots`: each step's
// logits against the float64 reference, the tokens against each prompt's single-sequence run.
void check_streams(const Case& c, uint32_t slots, const std::array<uint32_t, 3>& slot_order) {
  const auto weights = llm::HostWeights::random(c.cfg, 71);
  constexpr uint32_t kCtx = 48;
  llm::Model model(context(), c.cfg, weights.lookup(), {.dtype = c.dtype, .ctx = kCtx, .prefill_chunk = 4});
  const std::vector<Stream> streams = {{{7, 123, 42, 299, 0}, 0, 9},                // 4 prefilled: one chunk
                                       {{201}, 2, 7},                               // nothing to prefill
                                       {{5, 9, 11, 250, 3, 77, 78, 1, 60}, 3, 6}};  // two chunks

  // Each prompt alone through the step decoder.
  std::vector<std::vector<uint32_t>> single;
  for (const Stream& s : streams) {
    model.reset();
    single.push_back(model.generate(s.prompt, s.tokens));
  }

  llm::BatchDecoder batch(model, slots);
  const auto stored = as_stored(weights, c.dtype);
  std::vector<llm::ref::Decoder> refs;
  std::vector<llm::ref::Vec> want(streams.size());
  std::vector<std::vector<uint32_t>> got(streams.size());
  std::map<size_t, uint32_t> slot_of;  // stream -> slot
  const double tol = c.dtype == WeightFormat::F32 ? 1e-4 : 1e-2;
  double worst = 0;
  for (uint32_t step = 0; step < 20; ++step) {
    for (size_t i = 0; i < streams.size(); ++i)
      if (streams[i].join_step == step) {
        batch.start(slot_order[i], streams[i].prompt);
        slot_of[i] = slot_order[i];
        refs.emplace_back(c.cfg, llm::ref::Weights::load(c.cfg, stored.lookup()), kCtx);
        want[i] = refs.back().prefill(streams[i].prompt);
      }
    if (slot_of.empty()) continue;
    const auto picked = batch.step();
    for (auto [i, slot] : slot_of) {
      ASSERT_NE(picked[slot], llm::BatchDecoder::kNoToken) << "stream " << i;
      const auto logits = batch.read_logits(slot);
      const double e = normalised_error(logits, want[i]);
      EXPECT_LE(e, tol) << "stream " << i << " token " << got[i].size();
      worst = std::max(worst, e);
      EXPECT_EQ(picked[slot], uint32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()))
          << "stream " << i << " token " << got[i].size() << ": not the largest logit";
      got[i].push_back(picked[slot]);
      want[i] = refs[i].forward(picked[slot]);
    }
    for (uint32_t b = 0; b < batch.slots(); ++b) {
      if (!batch.active(b)) {
        EXPECT_EQ(picked[b], llm::BatchDecoder::kNoToken) << "idle slot " << b;
      }
    }
    for (size_t i = 0; i < streams.size(); ++i)
      if (slot_of.contains(i) && got[i].size() == streams[i].tokens) {
        batch.stop(slot_of[i]);
        slot_of.erase(i);
      }
  }
  for (size_t i = 0; i < streams.size(); ++i)
    EXPECT_EQ(got[i], single[i]) << "stream " << i << ": tokens differ from the single-sequence run";
  char text[32];
  std::snprintf(text, sizeof text, "%.2e", worst);
  ::testing::Test::RecordProperty("max_normalised_logit_error", text);
}

// 8 slots: block_totals' row blocks are all slot groups (Q/K/V, o, down), the case where a row
// pair needs two rows per team; gate/up and the LM head in xreg_totals, one slot group.
TEST_P(LlmBatch, StreamsMatchTheReferenceAndSingleSequenceRuns) {
  check_streams(GetParam(), 8, {6, 0, 3});
}

// 13 slots: xreg_totals in two slot groups of 7 (grid y), the second one's last entry past the
// slots; the streams at both groups' edges.
TEST(LlmBatchRun, SlotGroupsOfTheRowProductsKeepTheirStreams) {
  check_streams({"qwen2_tied", test::small_llm_config(true), WeightFormat::F16}, 13, {12, 6, 7});
}

INSTANTIATE_TEST_SUITE_P(
    Architectures, LlmBatch,
    ::testing::Values(Case{"qwen2_untied", test::small_llm_config(false), WeightFormat::F32},
                      Case{"qwen2_tied", test::small_llm_config(true), WeightFormat::F16},
                      Case{"qwen3", test::qwen3_config(), WeightFormat::F32},
                      Case{"llama", test::llama_config(), WeightFormat::Q8_0}),
    [](const auto& info) { return std::string(info.param.name); });

// Test that attention past its first round of cache positions (ROUND in kernels/llm_batch.wgsl:
// 256) keeps the online softmax right: a stream decoding at positions 270.. beside a short one,
// its last two steps in one submit. head_dim 12 takes a round's V rows in one batch a thread,
// head_dim 128 in two (V_BATCH 16 of 8 slices).
TEST(LlmBatchRun, LongContextAttendsInRounds) {
  for (const uint32_t hd : {12u, 128u}) {
    SCOPED_TRACE("head_dim " + std::to_string(hd));
    auto cfg = test::small_llm_config(false);
    cfg.max_position_embeddings = 512, cfg.head_dim = hd;
    const auto weights = llm::HostWeights::random(cfg, 73);
    constexpr uint32_t kCtx = 280;
    llm::Model model(context(), cfg, weights.lookup(),
                     {.dtype = WeightFormat::F32, .ctx = kCtx, .prefill_chunk = 96});
    std::vector<uint32_t> prompt(271);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = uint32_t(i * 37 + 11) % cfg.vocab_size;
    constexpr uint32_t kTokens = 3;
    const auto single = model.generate(prompt, kTokens);
    llm::BatchDecoder batch(model, 2);
    batch.start(0, std::vector<uint32_t>{5, 6, 7});
    batch.start(1, prompt);
    llm::ref::Decoder ref(cfg, llm::ref::Weights::load(cfg, weights.lookup()), kCtx);
    llm::ref::Vec want = ref.prefill(prompt);
    // One step, then the other two in one submit (steps chained on the GPU).
    std::vector<uint32_t> got = {batch.step()[1]};
    EXPECT_LE(normalised_error(batch.read_logits(1), want), 1e-4) << "token 0";
    for (const auto& step : batch.steps(kTokens - 1)) {
      EXPECT_NE(step[0], llm::BatchDecoder::kNoToken);
      want = ref.forward(got.back());
      got.push_back(step[1]);
    }
    EXPECT_LE(normalised_error(batch.read_logits(1), want), 1e-4) << "the last token";
    EXPECT_EQ(got, single);
  }
}

// Test that a prompt joining in parts (begin, then prefill of at most 5 tokens between steps)
// leaves the running stream a token at every step while it is fed, and that both streams' tokens
// are the single-sequence decoder's; one prompt joins at a time, and stop() abandons it.
TEST(LlmBatchRun, PromptJoinsInChunksBetweenSteps) {
  const auto cfg = test::small_llm_config(false);
  const auto weights = llm::HostWeights::random(cfg, 74);
  llm::Model model(context(), cfg, weights.lookup(),
                   {.dtype = WeightFormat::F32, .ctx = 48, .prefill_chunk = 4});
  const std::vector<uint32_t> running = {9, 200, 31},
                              joining = {4, 88, 123, 7,   61, 290, 5,  13,  77, 2, 190, 45,
                                         8, 99, 16,  250, 3,  64,  11, 201, 30, 6, 42};
  const auto single_running = model.generate(running, 12);
  model.reset();
  const auto single_joining = model.generate(joining, 5);

  llm::BatchDecoder batch(model, 3);
  batch.start(2, running);
  std::vector<uint32_t> got_running = {batch.step()[2]}, got_joining;
  batch.begin(0, joining);
  EXPECT_THROW(batch.begin(1, running), Error);  // one prompt at a time
  EXPECT_THROW(batch.start(0, running), Error);  // its slot is busy
  uint32_t steps_while_fed = 0;
  while (got_joining.size() < single_joining.size()) {
    const uint32_t fed = batch.prefill(5);
    EXPECT_LE(fed, 5u);
    steps_while_fed += batch.joining().has_value();
    const auto picked = batch.step();
    got_running.push_back(picked[2]);
    if (batch.active(0))
      got_joining.push_back(picked[0]);
    else
      EXPECT_EQ(picked[0], llm::BatchDecoder::kNoToken);
  }
  // 22 tokens fed 5 at a time: the fifth prefill ends the prompt, four steps ran beside it.
  EXPECT_EQ(steps_while_fed, 4u);
  EXPECT_EQ(got_joining, single_joining);
  ASSERT_LE(got_running.size(), single_running.size());
  EXPECT_EQ(got_running,
            std::vector<uint32_t>(single_running.begin(), single_running.begin() + got_running.size()));

  batch.begin(1, joining);
  batch.prefill(3);
  batch.stop(1);  // abandoned mid-prompt: the slot is free again, the next prompt may join
  EXPECT_FALSE(batch.joining());
  EXPECT_FALSE(batch.active(1));
  batch.start(1, running);
  EXPECT_TRUE(batch.active(1));
}

// Test that prompts of odd lengths join back to back, each begun right after the last is fed with
// no step (and no wait for the GPU) between them, beside a running stream: every stream's tokens
// are the single-sequence decoder's; the joins run on the chunk plans prepare_feed() built (chunks
// of 13 tokens on the 16-token plan), and a prompt fed up to the end of the context is right too.
TEST(LlmBatchRun, PromptsJoinBackToBackOnPreparedPlans) {
  const auto cfg = test::small_llm_config(false);
  const auto weights = llm::HostWeights::random(cfg, 75);
  constexpr uint32_t kCtx = 64, kChunk = 13;
  llm::Model model(context(), cfg, weights.lookup(),
                   {.dtype = WeightFormat::F32, .ctx = kCtx, .prefill_chunk = 40});
  auto prompt = [&](uint32_t n, uint32_t seed) {
    std::vector<uint32_t> p(n);
    for (uint32_t i = 0; i < n; ++i) p[i] = (i * 71 + seed * 29 + 5) % cfg.vocab_size;
    return p;
  };
  const std::vector<std::vector<uint32_t>> prompts = {prompt(3, 1), prompt(37, 2), prompt(18, 3),
                                                      prompt(1, 4), prompt(59, 5)};
  const std::vector<uint32_t> running = prompt(6, 6);
  constexpr uint32_t kTokens = 5;  // 59 + 5 - 1 positions: the last prompt fills the context
  std::vector<std::vector<uint32_t>> single;
  for (const auto& p : prompts) {
    model.reset();
    single.push_back(model.generate(p, kTokens));
  }
  model.reset();
  const auto single_running = model.generate(running, 3 * kTokens);

  llm::BatchDecoder batch(model, 6);
  batch.start(5, running);
  std::vector<uint32_t> got_running = {batch.step()[5]};
  model.prepare_feed(kChunk);
  const size_t plans = model.prompt_plans();
  const llm::BatchDecoder::JoinStats before = batch.join_stats();  // the running stream's
  // The first four join in rounds of kChunk tokens, one prompt after another within a round.
  uint32_t next = 0;
  std::vector<std::vector<uint32_t>> got(prompts.size());
  for (uint32_t round = 0; next < 4 || batch.joining(); ++round) {
    uint32_t budget = kChunk;
    while (budget > 0 && (batch.joining() || next < 4)) {
      if (!batch.joining()) batch.begin(next, prompts[next]), ++next;
      budget -= batch.prefill(budget);
    }
    const auto picked = batch.step();
    got_running.push_back(picked[5]);
    for (uint32_t b = 0; b < 4; ++b)
      if (batch.active(b)) got[b].push_back(picked[b]);
    ASSERT_LT(round, 10u);
  }
  EXPECT_EQ(model.prompt_plans(), plans) << "a join built a plan prepare_feed() had not";
  EXPECT_EQ(batch.join_stats().prompts - before.prompts, 4u);
  EXPECT_EQ(batch.join_stats().tokens - before.tokens, 2u + 36 + 17 + 0);
  // The fifth whole: its last chunk (positions 40..57) takes a plan that ends with the tokens buffer
  // (25 tokens), not 32.
  batch.start(4, prompts[4]);
  EXPECT_EQ(model.prompt_plans(), plans + 1);
  while (got[4].size() < kTokens) {
    const auto picked = batch.step();
    got_running.push_back(picked[5]);
    for (uint32_t b = 0; b < 5; ++b)
      if (batch.active(b) && got[b].size() < kTokens) got[b].push_back(picked[b]);
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    got[i].resize(std::min<size_t>(got[i].size(), kTokens));
    EXPECT_EQ(got[i], single[i]) << "prompt " << i << " of " << prompts[i].size() << " tokens";
  }
  got_running.resize(std::min(got_running.size(), single_running.size()));
  EXPECT_EQ(got_running,
            std::vector<uint32_t>(single_running.begin(), single_running.begin() + got_running.size()));
}

// Test that a sequence moves from the step decoder into a slot (adopt) and back (release) beside
// another stream and goes on with the tokens of one uninterrupted single-sequence run; an idle slot
// or a prompt still joining cannot be released.
TEST(LlmBatchRun, SequenceMovesIntoASlotAndBack) {
  const auto cfg = test::small_llm_config(false);
  const auto weights = llm::HostWeights::random(cfg, 76);
  llm::Model model(context(), cfg, weights.lookup(),
                   {.dtype = WeightFormat::F32, .ctx = 40, .prefill_chunk = 8});
  const std::vector<uint32_t> prompt = {11, 250, 3, 97, 42, 7, 180, 66, 9, 1, 23};
  const auto single = model.generate(prompt, 14);
  model.reset();
  const auto single_beside = model.generate(std::vector<uint32_t>{5, 6, 7}, 6);

  model.reset();
  std::vector<uint32_t> got = model.generate(prompt, 4);
  llm::BatchDecoder batch(model, 3);
  EXPECT_THROW(batch.release(1), Error);  // idle
  batch.adopt(1);
  batch.start(2, std::vector<uint32_t>{5, 6, 7});
  std::vector<uint32_t> beside;
  for (const auto& step : batch.steps(5)) {
    got.push_back(step[1]);
    beside.push_back(step[2]);
  }
  batch.begin(0, prompt);
  EXPECT_THROW(batch.release(1), Error);  // the model holds the joining prompt
  batch.stop(0);
  batch.release(1);
  EXPECT_FALSE(batch.active(1));
  EXPECT_EQ(model.length(), prompt.size() + got.size() - 1);
  const auto rest = model.generate({}, 5);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, single);
  beside.push_back(batch.step()[2]);  // the other slot goes on, alone in the batch
  EXPECT_EQ(beside, single_beside);
}

// Test that rounds submitted before the last is read back (two in flight) chain each slot's tokens
// and positions on the GPU: a stream's tokens across rounds are the single-sequence decoder's; a
// slot stopped while a round is in flight gets none of that round's tokens and takes a new prompt
// at once, begun and fed while the round runs, whose tokens are its own single run's; a third round,
// steps() or release() with rounds in flight, a slot without room for the steps in flight and a
// collect() with none are errors.
TEST(LlmBatchRun, RoundsInFlight) {
  const auto cfg = test::small_llm_config(false);
  const auto weights = llm::HostWeights::random(cfg, 77);
  constexpr uint32_t kCtx = 40;
  llm::Model model(context(), cfg, weights.lookup(),
                   {.dtype = WeightFormat::F32, .ctx = kCtx, .prefill_chunk = 8});
  auto prompt = [&](uint32_t n, uint32_t seed) {
    std::vector<uint32_t> p(n);
    for (uint32_t i = 0; i < n; ++i) p[i] = (i * 67 + seed * 31 + 9) % cfg.vocab_size;
    return p;
  };
  auto single = [&](const std::vector<uint32_t>& p, uint32_t n) {
    model.reset();
    return model.generate(p, n);
  };
  const auto a = prompt(5, 1), b = prompt(13, 2), c = prompt(11, 3);
  // a: 3 + 2 steps, then 5 rounds of 4 while c takes its 16 tokens (and one more round in flight).
  const auto single_a = single(a, 25), single_b = single(b, 3), single_c = single(c, 16);
  constexpr uint32_t kNo = llm::BatchDecoder::kNoToken;
  auto take = [](const llm::BatchDecoder::Round& r, uint32_t slot, std::vector<uint32_t>& into) {
    for (const auto& step : r.tokens)
      if (step[slot] != kNo) into.push_back(step[slot]);
  };

  llm::BatchDecoder batch(model, 3);
  batch.start(0, a);
  batch.start(2, b);
  batch.submit(3);
  batch.submit(2);  // before the first is read back
  EXPECT_EQ(batch.in_flight(), 2u);
  EXPECT_EQ(batch.position(0), a.size() - 1 + 5) << "positions count the steps submitted";
  EXPECT_THROW(batch.submit(1), Error);  // a third round
  EXPECT_THROW(batch.steps(1), Error);
  EXPECT_THROW(batch.release(0), Error);
  const auto r1 = batch.collect();
  ASSERT_EQ(r1.tokens.size(), 3u);
  EXPECT_EQ(r1.first[0], a.size() - 1);
  EXPECT_EQ(r1.first[2], b.size() - 1);
  std::vector<uint32_t> got_a, got_b, got_c;
  take(r1, 0, got_a);
  take(r1, 2, got_b);
  for (const auto& step : r1.tokens) EXPECT_EQ(step[1], kNo) << "an idle slot";
  EXPECT_EQ(got_b, single_b);
  // b is done: its slot stops while the second round (two more of its steps) is in flight, and c
  // takes it at once, fed in two parts while that round runs.
  batch.stop(2);
  batch.begin(2, c);
  EXPECT_EQ(batch.prefill(6), 6u);
  EXPECT_EQ(batch.prefill(6), 4u);
  ASSERT_TRUE(batch.active(2));
  batch.submit(4);
  const auto r2 = batch.collect();
  ASSERT_EQ(r2.tokens.size(), 2u);
  for (const auto& step : r2.tokens) EXPECT_EQ(step[2], kNo) << "a stopped slot's tokens in flight";
  take(r2, 0, got_a);
  while (got_c.size() < single_c.size()) {
    batch.submit(4);
    const auto r = batch.collect();  // the older of the two in flight
    take(r, 0, got_a);
    take(r, 2, got_c);
  }
  const auto last = batch.collect();
  take(last, 0, got_a);
  EXPECT_EQ(got_a, single_a);
  EXPECT_EQ(got_c, single_c);
  EXPECT_EQ(batch.in_flight(), 0u);
  EXPECT_THROW(batch.collect(), Error);

  // Room counts the steps in flight: positions 34..37 submitted, 38..40 do not fit.
  batch.stop(0);
  batch.stop(2);
  batch.start(1, prompt(35, 4));
  batch.submit(4);
  EXPECT_THROW(batch.submit(3), Error);
  batch.submit(2);
  EXPECT_EQ(batch.collect().tokens.size(), 4u);
  EXPECT_EQ(batch.collect().tokens.size(), 2u);
}

// Test that a slot that samples picks its tokens with its own sampler and seed: the same seed in
// another slot beside a greedy stream gives the same tokens; a slot at the end of its context and
// bad prompts are errors.
TEST(LlmBatchRun, SamplingPerSlotAndBadInput) {
  const auto cfg = test::small_llm_config(false);
  const auto weights = llm::HostWeights::random(cfg, 72);
  llm::Model model(context(), cfg, weights.lookup(), {.dtype = WeightFormat::F32, .ctx = 16});
  llm::BatchDecoder batch(model, 3);
  const std::vector<uint32_t> prompt = {3, 1, 4, 1, 5};
  const llm::SamplingParams sampled{.temperature = 1.5, .top_k = 40, .seed = 9};
  auto run = [&](uint32_t slot, bool beside) {
    if (beside) batch.start(0, std::vector<uint32_t>{8, 8});
    batch.start(slot, prompt, sampled);
    std::vector<uint32_t> tokens;
    for (int i = 0; i < 6; ++i) tokens.push_back(batch.step()[slot]);
    batch.stop(slot);
    batch.stop(0);
    return tokens;
  };
  const auto alone = run(1, false);
  EXPECT_EQ(run(2, true), alone);
  for (uint32_t t : alone) EXPECT_LT(t, cfg.vocab_size);

  EXPECT_THROW(batch.start(1, {}), Error);
  EXPECT_THROW(batch.start(1, std::vector<uint32_t>(17, 1)), Error);
  EXPECT_THROW(batch.start(1, std::vector<uint32_t>{cfg.vocab_size}), Error);
  EXPECT_THROW(batch.start(7, prompt), Error);
  batch.start(1, std::vector<uint32_t>(15, 2));
  EXPECT_THROW(batch.start(1, prompt), Error);  // busy
  EXPECT_THROW(batch.steps(3), Error);          // positions 14, 15 and 16 of 16
  EXPECT_THROW(batch.steps(0), Error);
  EXPECT_THROW(batch.steps(llm::BatchDecoder::kMaxStepsPerSubmit + 1), Error);
  batch.step();  // position 14 -> 15
  batch.step();  // position 15, the last
  EXPECT_THROW(batch.step(), Error);
  EXPECT_THROW(llm::BatchDecoder(model, 0), Error);
  EXPECT_THROW(llm::BatchDecoder(model, 17), Error);
}

}  // namespace
}  // namespace wgfuse
