// llm::Sampler (kernels/llm_sample.wgsl) against its CPU reference in double, token for token,
// and the distribution of its draws against the softmax.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>

#include "gpu/recorder.h"
#include "llm/generated_tokens.h"
#include "llm/sampler.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

using gpu::BufferUsage;
using llm::Sampler;
using llm::SamplingParams;
using test::context;

constexpr uint32_t kUnwritten = 0xdeadbeefu;

std::vector<float> random_logits(size_t n, uint32_t seed, float lo = -4.0f, float hi = 4.0f) {
  return test::random_floats(n, seed, lo, hi);
}

// `steps` sampling steps from position pos0 with tokens[0 ..= pos0] = prompt, `per_submit` steps
// to a command buffer. Returns the whole tokens buffer; checks the state advanced.
std::vector<uint32_t> run_steps(Sampler& sampler, const gpu::Buffer& logits,
                                const std::vector<uint32_t>& prompt, uint32_t steps, uint32_t per_submit) {
  auto& ctx = context();
  std::vector<uint32_t> init(prompt.size() + steps + 3, kUnwritten);
  std::copy(prompt.begin(), prompt.end(), init.begin());
  auto tokens = ctx.upload<uint32_t>(init, BufferUsage::StorageIO, "test.tokens");
  const uint32_t pos0 = uint32_t(prompt.size() - 1);
  auto state =
      ctx.upload<uint32_t>(std::vector<uint32_t>{pos0, kUnwritten}, BufferUsage::StorageIO, "test.state");
  auto plan = sampler.plan(logits, tokens, state);
  plan.build();
  EXPECT_EQ(plan.dispatches(), sampler.dispatches());
  gpu::Recorder rec(ctx);
  for (uint32_t s = 0; s < steps; ++s) {
    plan.encode(rec);
    if ((s + 1) % per_submit == 0 || s + 1 == steps) rec.submit();
  }
  const auto st = ctx.read_all<uint32_t>(state);
  EXPECT_EQ(st[0], pos0 + steps) << "state[0] advances by one per step";
  EXPECT_EQ(st[1], kUnwritten) << "only state[0] is written";
  auto out = ctx.read_all<uint32_t>(tokens);
  for (size_t i = prompt.size() + steps; i < out.size(); ++i)
    EXPECT_EQ(out[i], kUnwritten) << "tokens[" << i << "]";
  return out;
}

struct Agreement {
  size_t compared = 0, near = 0;
};

// Each GPU token against the reference given the GPU's own sequence before it.
Agreement compare_with_reference(const std::vector<float>& logits, const std::vector<uint32_t>& tokens,
                                 uint32_t pos0, uint32_t steps, const SamplingParams& p,
                                 const std::string& what) {
  Agreement a;
  for (uint32_t s = 0; s < steps; ++s) {
    const uint32_t pos = pos0 + s;
    const auto ref = llm::sample_reference(logits, tokens, pos, p);
    ++a.compared;
    if (ref.near_boundary) {
      ++a.near;
      continue;
    }
    EXPECT_EQ(tokens[pos + 1], ref.id) << what << ", step " << s << " (pos " << pos << ")";
    if (tokens[pos + 1] != ref.id) break;
  }
  return a;
}

std::vector<uint32_t> random_prompt(size_t n, uint32_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v(n);
  for (auto& t : v) t = uint32_t(rng() % vocab);
  return v;
}

// Test that the GPU picks the reference's token at every step, for vocabularies of 300 and 5,003
// (several workgroups, a partial last one), every combination of the features, many seeds.
TEST(Sampler, MatchesReference) {
  auto& ctx = context();
  const std::vector<SamplingParams> configs = {
      {.temperature = 1.0, .seed = 1},
      {.temperature = 0.7, .top_k = 40, .seed = 2},
      {.temperature = 1.3, .top_p = 0.9, .seed = 3},
      {.temperature = 0.8,
       .top_k = 50,
       .top_p = 0.8,
       .repetition_penalty = 1.3,
       .seed = 0x123456789abcdefull},
      {.temperature = 1.0, .top_k = 7, .repetition_penalty = 0.7, .seed = 5},
      {.temperature = 2.0, .top_p = 0.3, .repetition_penalty = 1.1, .seed = 6},
      {.temperature = 0.0, .repetition_penalty = 1.5},                 // greedy with a penalty
      {.temperature = 1.0, .top_k = 100000, .top_p = 1.0, .seed = 8},  // k >= vocab: off
  };
  for (uint32_t vocab : {300u, 5003u}) {
    Sampler sampler(ctx, vocab);
    const auto logits = random_logits(vocab, vocab);
    auto buf = ctx.upload<float>(logits, BufferUsage::StorageIO, "test.logits");
    Agreement total;
    for (size_t c = 0; c < configs.size(); ++c) {
      sampler.set_params(configs[c]);
      const auto prompt = random_prompt(37, vocab, uint32_t(c));
      const uint32_t steps = 12;
      const auto start = std::chrono::steady_clock::now();
      const auto tokens = run_steps(sampler, buf, prompt, steps, 6);
      std::printf(
          "vocab %u config %zu: %u dispatches a step, %.1f ms a step\n", vocab, c, sampler.dispatches(),
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
              steps);
      const auto a =
          compare_with_reference(logits, tokens, 36, steps, configs[c],
                                 "vocab " + std::to_string(vocab) + " config " + std::to_string(c));
      total.compared += a.compared;
      total.near += a.near;
    }
    std::printf("vocab %u: %zu tokens compared, %zu near a boundary (skipped)\n", vocab, total.compared,
                total.near);
    EXPECT_LT(total.near * 20, total.compared) << "too many ambiguous draws for the test to mean much";
  }
}

// Test the full Qwen vocabulary (151,936 ids, 60 workgroups): a peaked distribution as a language
// model gives, with top-k, top-p, both and neither.
TEST(Sampler, MatchesReferenceAtQwenVocabulary) {
  auto& ctx = context();
  const uint32_t vocab = 151936;
  auto logits = random_logits(vocab, 11, -6.0f, 2.0f);
  std::mt19937 rng(12);
  for (int i = 0; i < 30; ++i) logits[rng() % vocab] = 8.0f + float(i) * 0.37f;  // a few likely tokens
  Sampler sampler(ctx, vocab);
  auto buf = ctx.upload<float>(logits, BufferUsage::StorageIO, "test.logits");
  const std::vector<SamplingParams> configs = {
      {.temperature = 1.0, .seed = 21},
      {.temperature = 0.9, .top_k = 20, .seed = 22},
      {.temperature = 1.0, .top_p = 0.7, .repetition_penalty = 1.2, .seed = 23},
      {.temperature = 0.0},
  };
  size_t near = 0;
  for (size_t c = 0; c < configs.size(); ++c) {
    sampler.set_params(configs[c]);
    const auto prompt = random_prompt(50, vocab, 100 + uint32_t(c));
    const auto tokens = run_steps(sampler, buf, prompt, 2, 2);
    near += compare_with_reference(logits, tokens, 49, 2, configs[c], "config " + std::to_string(c)).near;
  }
  EXPECT_LE(near, 2u);
}

// Test that top-k = 1 and temperature 0 give the argmax (the first of equal maxima), and a tiny
// temperature does too when the maximum is clear.
TEST(Sampler, TopOneAndTinyTemperatureAreArgmax) {
  auto& ctx = context();
  const uint32_t vocab = 5003;
  auto logits = random_logits(vocab, 31);
  const uint32_t argmax = 4321;
  logits[argmax] = 4.5f;
  logits[4999] = 4.5f;  // a tie after it: greedy takes the first (top-k 1 keeps both, as HF does)
  Sampler sampler(ctx, vocab);
  auto buf = ctx.upload<float>(logits, BufferUsage::StorageIO, "test.logits");
  sampler.set_params({.temperature = 0.0});
  auto tokens = run_steps(sampler, buf, {7, 8}, 4, 4);
  for (int s = 0; s < 4; ++s) EXPECT_EQ(tokens[2 + s], argmax) << "greedy, step " << s;
  logits[4999] = 4.4f;
  buf = ctx.upload<float>(logits, BufferUsage::StorageIO, "test.logits");
  // Top-k 1 at a high temperature; a tiny temperature: 0.1 / 1e-4 gives exp(-1000) to the runner-up.
  for (const SamplingParams& p : {SamplingParams{.temperature = 1.5, .top_k = 1, .seed = 8},
                                  SamplingParams{.temperature = 1e-4, .seed = 9}}) {
    sampler.set_params(p);
    tokens = run_steps(sampler, buf, {7, 8}, 4, 4);
    for (int s = 0; s < 4; ++s) EXPECT_EQ(tokens[2 + s], argmax) << "step " << s << ", top_k " << p.top_k;
  }
}

// Test that a repetition penalty turns the choice away from a token already in the sequence, as
// the reference does, and that without it the token is chosen.
TEST(Sampler, RepetitionPenaltyChangesTheChoice) {
  auto& ctx = context();
  const uint32_t vocab = 300;
  auto logits = random_logits(vocab, 41, -2.0f, 2.0f);
  logits[17] = 3.0f;   // the argmax, already in the prompt
  logits[200] = 2.5f;  // the runner-up: 3.0 / 1.5 = 2.0 < 2.5
  logits[90] = -3.0f;  // in the prompt too, negative: * 1.5
  Sampler sampler(ctx, vocab);
  auto buf = ctx.upload<float>(logits, BufferUsage::StorageIO, "test.logits");
  const std::vector<uint32_t> prompt = {5, 17, 90, 6};
  sampler.set_params({.temperature = 0.0});
  EXPECT_EQ(run_steps(sampler, buf, prompt, 1, 1)[4], 17u);
  const SamplingParams penalised{.temperature = 0.0, .repetition_penalty = 1.5};
  sampler.set_params(penalised);
  const auto tokens = run_steps(sampler, buf, prompt, 2, 2);
  EXPECT_EQ(tokens[4], 200u);
  EXPECT_EQ(llm::sample_reference(logits, tokens, 3, penalised).id, 200u);
  // 200 is now in the sequence too: 2.5 / 1.5 < 3.0 / 1.5 = 2.0, above every other logit (< 2).
  EXPECT_EQ(tokens[5], 17u);
  EXPECT_EQ(llm::sample_reference(logits, tokens, 4, penalised).id, tokens[5]);
}

// Test top-p's set on a constructed distribution: probabilities 0.5, 0.3, 0.2 (ids 3, 1, 2 in
// that order of size): top-p 0.6 keeps {3, 1}, 0.45 keeps {3} only, 0.85 keeps all three.
TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  auto& ctx = context();
  const std::vector<float> logits = {-30.0f, std::log(0.3f), std::log(0.2f), std::log(0.5f), -30.0f};
  Sampler sampler(ctx, 5);
  auto buf = ctx.upload<float>(logits, BufferUsage::StorageIO, "test.logits");
  const std::map<double, std::vector<uint32_t>> want = {{0.6, {1, 3}}, {0.45, {3}}, {0.85, {1, 2, 3}}};
  for (const auto& [top_p, ids] : want) {
    const SamplingParams p{.top_p = top_p, .seed = 77};
    sampler.set_params(p);
    const uint32_t steps = 40;
    const auto tokens = run_steps(sampler, buf, {0}, steps, steps);
    std::vector<uint32_t> seen(tokens.begin() + 1, tokens.begin() + 1 + steps);
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    EXPECT_EQ(seen, ids) << "top_p " << top_p;
    compare_with_reference(logits, tokens, 0, steps, p, "top_p " + std::to_string(top_p));
  }
}

// Test that a top-p below 2^-32 keeps the most likely token instead of switching top-p off (its
// threshold in 2^-32 units would round to 0), on the GPU and in the reference.
TEST(Sampler, TinyTopPKeepsTheTopToken) {
  auto& ctx = context();
  const std::vector<float> logits = {0.1f, 0.4f, 0.2f, 0.45f, 0.3f, -0.2f, 0.0f};
  Sampler sampler(ctx, uint32_t(logits.size()));
  auto buf = ctx.upload<float>(logits, BufferUsage::StorageIO, "test.logits");
  for (double top_p : {1e-10, 1e-50}) {
    const SamplingParams p{.temperature = 0.8, .top_k = 40, .top_p = top_p, .seed = 5};
    sampler.set_params(p);
    const uint32_t steps = 12;
    const auto tokens = run_steps(sampler, buf, {0}, steps, steps);
    for (uint32_t i = 1; i <= steps; ++i) EXPECT_EQ(tokens[i], 3u) << "top_p " << top_p << " step " << i;
    EXPECT_EQ(llm::sample_reference(logits, tokens, 0, p).id, 3u);
  }
}

// Test that logits with no value above -inf (NaN weights make every logit NaN) stop sampling as
// they stop greedy: the pick is kNoFiniteLogit, outside the vocabulary, on the GPU and in the
// reference; one finite logit among NaNs is chosen by both.
TEST(Sampler, NoFiniteLogitPicksNoToken) {
  auto& ctx = context();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const uint32_t vocab = 301;
  Sampler sampler(ctx, vocab);
  for (const auto& fill : {std::vector<float>(vocab, nan), std::vector<float>(vocab, -inf)}) {
    std::vector<float> logits = fill;
    logits[17] = -inf;
    auto buf = ctx.upload<float>(logits, BufferUsage::StorageIO, "test.logits");
    for (const SamplingParams& p :
         {SamplingParams{.temperature = 0.8, .top_k = 40, .seed = 1},
          SamplingParams{.temperature = 1.0, .top_p = 0.9, .seed = 2}, SamplingParams{.temperature = 0}}) {
      sampler.set_params(p);
      const auto tokens = run_steps(sampler, buf, {4}, 2, 2);
      EXPECT_EQ(tokens[1], llm::kNoFiniteLogit) << "temperature " << p.temperature;
      EXPECT_EQ(tokens[2], llm::kNoFiniteLogit);
      EXPECT_EQ(llm::sample_reference(logits, tokens, 0, p).id, llm::kNoFiniteLogit);
    }
    logits[250] = 1.5f;
    buf = ctx.upload<float>(logits, BufferUsage::StorageIO, "test.logits");
    sampler.set_params({.temperature = 0.8, .top_k = 40, .seed = 1});
    EXPECT_EQ(run_steps(sampler, buf, {4}, 1, 1)[1], 250u);
  }
}

// Test that the host stops on the pickers' no-token id and names the step, rather than printing.
TEST(GeneratedTokens, NoFiniteLogitNamesTheStep) {
  std::vector<uint32_t> seq = {5, 6, 7};
  const std::function<bool(uint32_t)> on_token;
  const std::vector<uint32_t> eos;
  llm::GeneratedTokens out(100, 8, on_token, eos, seq);
  EXPECT_TRUE(out.take(9));
  EXPECT_TRUE(test::throws_error([&] { out.take(llm::kNoFiniteLogit); },
                                 {"generated token 2 (after position 3)", "NaN or -inf", "--dtype f32"}));
  EXPECT_TRUE(test::throws_error([&] { out.take(100); }, {"token id 100 outside the vocabulary"}));
}

// Pearson's chi-square of `counts` against `probs` (cells with probability 0 must be empty).
double chi_square(const std::vector<size_t>& counts, const std::vector<double>& probs, size_t n) {
  double chi2 = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] == 0) {
      EXPECT_EQ(counts[i], 0u) << "token " << i << " has probability 0";
      continue;
    }
    const double e = probs[i] * double(n);
    chi2 += (double(counts[i]) - e) * (double(counts[i]) - e) / e;
  }
  return chi2;
}
// The chi-square quantile for `dof` degrees of freedom at normal quantile z (Wilson-Hilferty).
double chi_square_bound(size_t dof, double z) {
  const double k = double(dof), c = 2.0 / (9.0 * k);
  return k * std::pow(1.0 - c + z * std::sqrt(c), 3.0);
}
std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  std::vector<double> p(logits.size());
  const double m = *std::max_element(logits.begin(), logits.end());
  double s = 0;
  for (size_t i = 0; i < p.size(); ++i) s += p[i] = std::exp((logits[i] - m) / temperature);
  for (auto& v : p) v /= s;
  return p;
}

// Test that 1,000 draws (one seed, 1,000 positions, one submit) follow the softmax: chi-square
// below its 1-in-a-million bound, while the same counts against the softmax at another
// temperature are above it (the test has power); then 400 draws with top-k and top-p against the
// softmax renormalised over what they keep.
TEST(Sampler, DrawsFollowTheSoftmax) {
  auto& ctx = context();
  const uint32_t vocab = 10, steps = 1000;
  const auto logits = random_logits(vocab, 51, -2.0f, 2.0f);
  Sampler sampler(ctx, vocab);
  auto buf = ctx.upload<float>(logits, BufferUsage::StorageIO, "test.logits");
  const double bound = chi_square_bound(vocab - 1, 4.75);  // p ~ 1e-6
  sampler.set_params({.temperature = 1.3, .seed = 2024});
  auto tokens = run_steps(sampler, buf, {0}, steps, steps);
  std::vector<size_t> counts(vocab);
  for (uint32_t s = 1; s <= steps; ++s) counts.at(tokens[s])++;
  const double chi2 = chi_square(counts, softmax(logits, 1.3), steps);
  const double chi2_wrong_t = chi_square(counts, softmax(logits, 0.8), steps);
  std::printf("chi-square %.1f (bound %.1f); against temperature 0.8: %.1f\n", chi2, bound, chi2_wrong_t);
  EXPECT_LT(chi2, bound);
  EXPECT_GT(chi2_wrong_t, bound);

  // top-k 6 and top-p 0.6: the draws follow the renormalised softmax over what is kept.
  const SamplingParams p{.temperature = 1.3, .top_k = 6, .top_p = 0.6, .seed = 99};
  sampler.set_params(p);
  const uint32_t kept_steps = 400;
  tokens = run_steps(sampler, buf, {0}, kept_steps, kept_steps);
  std::fill(counts.begin(), counts.end(), 0);
  for (uint32_t s = 1; s <= kept_steps; ++s) counts.at(tokens[s])++;
  auto probs = softmax(logits, 1.3);
  std::vector<uint32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return probs[a] > probs[b]; });
  double top6 = 0;
  for (size_t r = 0; r < 6; ++r) top6 += probs[order[r]];
  double above = 0, kept = 0;  // mass of higher tokens among the top 6
  size_t kept_count = 0;
  for (size_t r = 0; r < vocab; ++r) {
    const uint32_t id = order[r];
    const double pr = probs[id];
    const bool keep = r < 6 && above < 0.6 * top6;
    above += pr;
    if (keep) {
      kept += pr, ++kept_count;
    } else {
      probs[id] = 0;
    }
  }
  for (auto& v : probs) v /= kept;
  const double chi2_kept = chi_square(counts, probs, kept_steps);
  const double bound_kept = chi_square_bound(kept_count - 1, 4.75);
  std::printf("top-k 6, top-p 0.6: %zu tokens kept, chi-square %.1f (bound %.1f)\n", kept_count, chi2_kept,
              bound_kept);
  EXPECT_GE(kept_count, 2u);
  EXPECT_LT(chi2_kept, bound_kept);
}

// Test that the tokens depend on the seed and positions only: one step per submit or all in one
// give the same sequence; another seed gives another.
TEST(Sampler, SameSeedSameTokensHoweverBatched) {
  auto& ctx = context();
  const uint32_t vocab = 5003;
  const auto logits = random_logits(vocab, 61, -1.0f, 1.0f);
  Sampler sampler(ctx, vocab);
  auto buf = ctx.upload<float>(logits, BufferUsage::StorageIO, "test.logits");
  sampler.set_params({.temperature = 1.0, .top_p = 0.95, .repetition_penalty = 1.1, .seed = 424242});
  const auto prompt = random_prompt(9, vocab, 3);
  const auto one_by_one = run_steps(sampler, buf, prompt, 8, 1);
  const auto all_at_once = run_steps(sampler, buf, prompt, 8, 8);
  EXPECT_EQ(one_by_one, all_at_once);
  sampler.set_params({.temperature = 1.0, .top_p = 0.95, .repetition_penalty = 1.1, .seed = 424243});
  EXPECT_NE(run_steps(sampler, buf, prompt, 8, 8), all_at_once);
}

// Test that bad parameters and buffers are refused with messages naming the flag or the size.
TEST(Sampler, BadParamsAreClearErrors) {
  auto expect_error = [](const SamplingParams& p, const std::string& flag) {
    try {
      llm::validate(p);
      FAIL() << flag << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
    }
  };
  expect_error({.temperature = -1}, "--temp");
  expect_error({.temperature = NAN}, "--temp");
  expect_error({.temperature = 1e-9}, "--temp");
  expect_error({.top_k = -3}, "--top-k");
  expect_error({.top_p = 0}, "--top-p");
  expect_error({.top_p = 1.5}, "--top-p");
  expect_error({.repetition_penalty = 0}, "--repeat-penalty");
  expect_error({.repetition_penalty = INFINITY}, "--repeat-penalty");
  EXPECT_NO_THROW(llm::validate({.temperature = 0, .top_k = 1, .top_p = 1, .repetition_penalty = 1}));

  auto& ctx = context();
  EXPECT_THROW(Sampler(ctx, 0), Error);
  try {
    Sampler(ctx, Sampler::kMaxVocab + 1);
    FAIL() << "an oversized vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("524288"), std::string::npos) << e.what();
  }
  Sampler sampler(ctx, 300);
  EXPECT_THROW(sampler.set_params({.top_p = 2}), Error);
  auto small = ctx.buffer(299 * 4, BufferUsage::StorageIO, "test.small");
  auto tokens = ctx.buffer(64, BufferUsage::StorageIO, "test.tokens");
  try {
    sampler.plan(small, tokens, tokens);
    FAIL() << "a short logits buffer was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("299 floats, the vocabulary 300"), std::string::npos) << e.what();
  }
}

// Test the dispatch count: 4, plus 3 for top-k, plus 4 for top-p.
TEST(Sampler, DispatchCount) {
  Sampler sampler(context(), 1000);
  EXPECT_EQ(sampler.dispatches(), 4u);
  sampler.set_params({.top_k = 10});
  EXPECT_EQ(sampler.dispatches(), 7u);
  sampler.set_params({.top_k = 10, .top_p = 0.5});
  EXPECT_EQ(sampler.dispatches(), 11u);
  sampler.set_params({.top_k = 1000, .top_p = 0.5});  // k = vocab keeps all
  EXPECT_EQ(sampler.dispatches(), 8u);
  sampler.set_params({.temperature = 0});
  EXPECT_EQ(sampler.dispatches(), 7u);
}

}  // namespace
}  // namespace wgfuse
