// The generation worker of `wgfuse serve --model` (serve::GenerationWorker) with --parallel > 1 on a
// small random Qwen2-architecture folder (untied: a tied random model repeats its last token) with
// the byte-level Qwen tokenizer of llm_support.h: a request that starts alone runs through the
// session's decoder, moves into the batch when another arrives (the newcomer's prompt fed in
// chunks between steps), and moves back out when it is left alone in the batch; several requests
// join together; every reply's text and token count equal the session's own generation of the
// same prompt, greedy and sampled with a seed, also when requests end, are cancelled or join while
// the batch's rounds are in flight. A batch refuses the persistent decoder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "llm/safetensors_writer.h"
#include "llm/session.h"
#include "llm_support.h"
#include "serve/generation_worker.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

namespace fs = std::filesystem;

// The folder, written once per test binary and removed at exit.
const fs::path& model_dir() {
  struct Folder {
    fs::path path = fs::temp_directory_path() / ("wgfuse_worker_" + std::to_string(getpid()));
    Folder() {
      llm::write_random_model(path, test::small_llm_config(false, 301), llm::DType::F32, 47);
      test::write_byte_level_qwen_tokenizer(path);
    }
    ~Folder() { fs::remove_all(path); }
  };
  static const Folder folder;
  return folder.path;
}

llm::SessionOptions options() {
  llm::SessionOptions o;
  o.model_dir = model_dir().string();
  o.dtype = gpu::WeightFormat::F32;
  o.ctx = 96;
  o.steps_per_submit = 3;
  o.prefill_chunk = 4;
  return o;
}

struct Outcome {
  std::string text;
  serve::FinishReason finish = serve::FinishReason::None;
  uint32_t completion_tokens = 0;
  std::string error;
};

Outcome collect(serve::Generation& g) {
  Outcome o;
  for (;;) {
    const auto n = g.take(std::chrono::milliseconds(100));
    o.text += n.text;
    if (n.finish != serve::FinishReason::None) {
      o.finish = n.finish;
      o.completion_tokens = n.completion_tokens;
      o.error = n.error;
      return o;
    }
  }
}

// The session's own generation of the request, as `wgfuse generate` runs it.
Outcome generated(llm::Session& s, const serve::GenerationRequest& r) {
  s.set_sampling(r.sampling);
  s.decoder().reset();
  const llm::Reply reply = s.generate(r.prompt, r.max_tokens);
  return {reply.text, reply.stopped_at_eos ? serve::FinishReason::Stop : serve::FinishReason::Length,
          uint32_t(reply.ids.size())};
}

// Takes the news until the request's first token (its time in the news), the text so far into
// `o`; the request must not end before.
void until_first_token(serve::Generation& g, Outcome& o) {
  for (;;) {
    const auto n = g.take(std::chrono::milliseconds(100));
    o.text += n.text;
    ASSERT_EQ(n.finish, serve::FinishReason::None) << "it ended before its first token was told";
    if (n.first_token_ms > 0) return;
  }
}

// The rest of a request begun with until_first_token().
void collect_rest(serve::Generation& g, Outcome& o) {
  const Outcome rest = collect(g);
  o.text += rest.text;
  o.finish = rest.finish;
  o.completion_tokens = rest.completion_tokens;
  o.error = rest.error;
}

serve::GenerationRequest request(uint32_t prompt_tokens, uint32_t seed, uint32_t max_tokens) {
  std::vector<uint32_t> prompt(prompt_tokens);
  for (uint32_t i = 0; i < prompt_tokens; ++i) prompt[i] = (i * 61 + seed * 37 + 13) % 256;
  return {.prompt = prompt, .max_tokens = max_tokens};
}

void expect_same(const Outcome& got, const Outcome& want, const char* what) {
  EXPECT_EQ(got.error, "") << what;
  EXPECT_EQ(got.text, want.text) << what;
  EXPECT_EQ(got.completion_tokens, want.completion_tokens) << what;
  EXPECT_EQ(int(got.finish), int(want.finish)) << what;
}

class ServeWorker : public ::testing::TestWithParam<double> {};  // the temperature

// Test that a request begun alone (the step decoder) that gets company mid-stream (moved into the
// batch's slot with its cache, position and sampler) and, left alone in the batch when its
// companion ends, moved back to the step decoder, gives the tokens the session gives it alone, and
// so does its companion; a later lone request runs alone again.
TEST_P(ServeWorker, LoneRequestMovesIntoTheBatchAndKeepsItsTokens) {
  llm::Session session(options());
  session.load(test::context());
  llm::SamplingOverrides sampling;
  sampling.temperature = GetParam();
  sampling.top_k = 40;
  sampling.seed = 9;
  const serve::GenerationRequest first{
      .prompt = {7, 123, 42, 255, 0, 64, 5}, .max_tokens = 24, .sampling = sampling};
  // The second's prompt joins the batch 4 tokens between two steps (join_chunk).
  std::vector<uint32_t> long_prompt(17);
  for (size_t i = 0; i < long_prompt.size(); ++i) long_prompt[i] = uint32_t(i * 53 + 17) % 256;
  const serve::GenerationRequest second{.prompt = long_prompt, .max_tokens = 6, .sampling = sampling};
  const Outcome want_first = generated(session, first), want_second = generated(session, second);
  // The first runs its length (no stop id), so that it is still decoding when the second arrives.
  ASSERT_EQ(want_first.completion_tokens, first.max_tokens);

  std::mutex device;
  serve::GenerationWorker worker(session, 8, device, 3, /*join_chunk=*/4);
  const auto a = worker.submit(first);
  ASSERT_TRUE(a);
  Outcome got_a;
  until_first_token(*a, got_a);
  EXPECT_TRUE(worker.status().alone);
  const auto b = worker.submit(second);
  ASSERT_TRUE(b);
  const Outcome got_b = collect(*b);
  collect_rest(*a, got_a);
  expect_same(got_a, want_first, "the request moved into the batch");
  expect_same(got_b, want_second, "its companion");
  EXPECT_EQ(worker.status().moved, 1u);
  EXPECT_EQ(worker.status().moved_back, 1u);

  // Alone again: the step decoder serves it whole.
  expect_same(collect(*worker.submit(second)), want_second, "a later lone request");
  const serve::WorkerStatus st = worker.status();
  EXPECT_EQ(st.moved, 1u);
  EXPECT_EQ(st.moved_back, 1u);
  EXPECT_EQ(st.served, 3u);
  EXPECT_FALSE(st.alone);
}

// Test that requests arriving together fill the batch's free slots, their prompts fed one after
// another in rounds of 11 tokens, each with the tokens the session gives it alone, on the chunk
// plans the worker built beforehand; /health's join counters add up.
TEST_P(ServeWorker, RequestsJoinTogetherWithTheirOwnTokens) {
  llm::Session session(options());
  session.load(test::context());
  llm::SamplingOverrides sampling;
  sampling.temperature = GetParam();
  sampling.seed = 5;
  std::vector<serve::GenerationRequest> requests;
  std::vector<Outcome> want;
  for (uint32_t i = 0; i < 4; ++i) {
    std::vector<uint32_t> prompt(3 + 7 * i);
    for (size_t j = 0; j < prompt.size(); ++j) prompt[j] = uint32_t(j * 31 + i * 97 + 3) % 256;
    requests.push_back({.prompt = prompt, .max_tokens = 5 + 2 * i, .sampling = sampling});
    want.push_back(generated(session, requests.back()));
  }
  std::mutex device;
  serve::GenerationWorker worker(session, 8, device, 4, /*join_chunk=*/11);
  const size_t plans = worker.status().prompt_plans;
  std::vector<std::shared_ptr<serve::Generation>> gs;
  for (const auto& r : requests) gs.push_back(worker.submit(r));
  for (size_t i = 0; i < gs.size(); ++i) {
    ASSERT_TRUE(gs[i]);
    expect_same(collect(*gs[i]), want[i], ("request " + std::to_string(i)).c_str());
  }
  const serve::WorkerStatus st = worker.status();
  EXPECT_EQ(st.served, 4u);
  // The first may have begun alone (and moved in); the others joined.
  EXPECT_EQ(st.joined + st.moved, 4u);
  EXPECT_GE(st.joined, 3u);
  uint64_t tokens = 0;
  for (size_t i = 4 - st.joined; i < 4; ++i) tokens += requests[i].prompt.size() - 1;
  EXPECT_EQ(st.join_tokens, tokens);
  EXPECT_GE(st.join_rounds, 1u);
  EXPECT_GE(st.join_feeds, st.joined);  // every prompt has tokens to feed before its last
  EXPECT_GT(st.longest_join_round_ms, 0);
  EXPECT_EQ(st.prompt_plans, plans) << "a join built a prompt plan";
}

INSTANTIATE_TEST_SUITE_P(Sampling, ServeWorker, ::testing::Values(0.0, 1.5), [](const auto& info) {
  return std::string(info.param == 0 ? "greedy" : "sampled_seed");
});

// Test that a request cancelled while its rounds are in flight ends as cancelled with a prefix of
// its text, and that the request taking its slot (joining while the other stream's rounds are in
// flight) gets none of its tokens still in flight: the other two give the session's own tokens. The
// batch submits rounds while others are in flight, and not only rounds of one step.
TEST(ServeWorkerRun, CancelledRequestFreesItsSlotWhileRoundsAreInFlight) {
  llm::Session session(options());
  session.load(test::context());
  const serve::GenerationRequest a = request(9, 1, 41), c = request(6, 2, 41), d = request(14, 3, 11);
  const Outcome want_a = generated(session, a), want_c = generated(session, c),
                want_d = generated(session, d);
  ASSERT_EQ(want_a.completion_tokens, a.max_tokens) << "a stop id: it may end before the others come";

  std::mutex device;
  serve::GenerationWorker worker(session, 8, device, 2, /*join_chunk=*/5);
  const auto ga = worker.submit(a), gc = worker.submit(c);
  ASSERT_TRUE(ga && gc);
  Outcome got_c;
  until_first_token(*gc, got_c);
  gc->cancel();
  const auto gd = worker.submit(d);  // it waits for the cancelled one's slot
  ASSERT_TRUE(gd);
  collect_rest(*gc, got_c);
  EXPECT_EQ(int(got_c.finish), int(serve::FinishReason::Cancelled));
  EXPECT_EQ(want_c.text.compare(0, got_c.text.size(), got_c.text), 0)
      << "a cancelled request's text is not a prefix of its own";
  expect_same(collect(*gd), want_d, "the request in the cancelled one's slot");
  expect_same(collect(*ga), want_a, "the request beside them");
  const serve::WorkerStatus st = worker.status();
  EXPECT_EQ(st.cancelled, 1u);
  EXPECT_EQ(st.served, 2u);
  EXPECT_GT(st.decode.overlapped, 0u) << "no round was submitted while another was in flight";
  EXPECT_GT(st.decode.steps, st.decode.rounds) << "every round took one step";
  EXPECT_LE(st.decode.overlapped, st.decode.rounds);
}

// Test that requests ending while rounds are in flight — at a stop string, at their max_tokens, at
// the end of the context — and one whose prompt joins in chunks while they run give what the
// sequential worker (--parallel 1: the session's own generation, as `wgfuse generate`) gives.
TEST(ServeWorkerRun, RequestsEndingWhileRoundsAreInFlightGiveTheSequentialTokens) {
  llm::Session session(options());
  session.load(test::context());
  std::vector<serve::GenerationRequest> requests = {request(7, 4, 23), request(10, 5, 30),
                                                    request(90, 6, 7),  // 90 + 7 - 1: the whole context
                                                    request(17, 7, 9)};
  std::mutex device;
  std::vector<Outcome> want;
  {
    serve::GenerationWorker sequential(session, 8, device, 1);
    // The second stops at two characters from the middle of its text.
    const Outcome whole = collect(*sequential.submit(requests[1]));
    ASSERT_GE(whole.text.size(), 8u);
    requests[1].stop = {whole.text.substr(whole.text.size() / 2, 2)};
    for (const auto& r : requests) want.push_back(collect(*sequential.submit(r)));
  }
  EXPECT_EQ(int(want[1].finish), int(serve::FinishReason::Stop));
  EXPECT_LT(want[1].completion_tokens, requests[1].max_tokens);
  EXPECT_EQ(int(want[2].finish), int(serve::FinishReason::Length));

  serve::GenerationWorker worker(session, 8, device, 3, /*join_chunk=*/4);
  std::vector<std::shared_ptr<serve::Generation>> gs;
  for (size_t i = 0; i < 3; ++i) gs.push_back(worker.submit(requests[i]));
  Outcome first;
  until_first_token(*gs[0], first);
  gs.push_back(worker.submit(requests[3]));  // joins when a slot frees, the others' rounds in flight
  collect_rest(*gs[0], first);
  expect_same(first, want[0], "request 0");
  for (size_t i = 1; i < gs.size(); ++i)
    expect_same(collect(*gs[i]), want[i], ("request " + std::to_string(i)).c_str());
  EXPECT_EQ(worker.status().served, 4u);
}

// Test that a batched worker refuses a session set to the persistent decoder, which releases the
// step decoder the batch runs on, saying what to do.
TEST(ServeWorkerRun, BatchRefusesThePersistentDecoder) {
  llm::SessionOptions o = options();
  o.decoder = llm::DecoderKind::Persistent;
  llm::Session session(o);  // (refused before the GPU is needed)
  std::mutex device;
  try {
    serve::GenerationWorker worker(session, 8, device, 3);
    ADD_FAILURE() << "a batch on the persistent decoder was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--decode persistent"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--parallel 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wgfuse
