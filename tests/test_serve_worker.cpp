// The generation worker of `wgfuse serve --model` (serve::GenerationWorker) with --parallel > 1 on a
// small random Qwen2-architecture folder (untied: a tied random model repeats its last token) with
// the byte-level Qwen tokenizer of llm_support.h: a request that starts alone runs through the
// session's decoder, moves into the batch when another arrives (the newcomer's prompt fed in
// chunks between steps), and ends alone in the batch; every reply's text and token count equal
// the session's own generation of the same prompt, greedy and sampled with a seed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "llm/safetensors_writer.h"
#include "llm/session.h"
#include "llm_support.h"
#include "serve/generation_worker.h"
#include "support.h"

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

void expect_same(const Outcome& got, const Outcome& want, const char* what) {
  EXPECT_EQ(got.error, "") << what;
  EXPECT_EQ(got.text, want.text) << what;
  EXPECT_EQ(got.completion_tokens, want.completion_tokens) << what;
  EXPECT_EQ(int(got.finish), int(want.finish)) << what;
}

class ServeWorker : public ::testing::TestWithParam<double> {};  // the temperature

// Test that a request begun alone (the step decoder) that gets company mid-stream (moved into the
// batch's slot with its cache, position and sampler) and ends alone in the batch gives the tokens
// the session gives it alone, and so does its companion; a later lone request runs alone again.
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
  for (;;) {  // until its first token
    const auto n = a->take(std::chrono::milliseconds(100));
    got_a.text += n.text;
    ASSERT_EQ(n.finish, serve::FinishReason::None) << "it ended before company came";
    if (n.first_token_ms > 0) break;
  }
  EXPECT_TRUE(worker.status().alone);
  const auto b = worker.submit(second);
  ASSERT_TRUE(b);
  const Outcome got_b = collect(*b);
  const Outcome rest = collect(*a);
  got_a.text += rest.text;
  got_a.finish = rest.finish;
  got_a.completion_tokens = rest.completion_tokens;
  expect_same(got_a, want_first, "the request moved into the batch");
  expect_same(got_b, want_second, "its companion");
  EXPECT_EQ(worker.status().moved, 1u);

  // Alone again: the step decoder serves it whole.
  expect_same(collect(*worker.submit(second)), want_second, "a later lone request");
  const serve::WorkerStatus st = worker.status();
  EXPECT_EQ(st.moved, 1u);
  EXPECT_EQ(st.served, 3u);
  EXPECT_FALSE(st.alone);
}

INSTANTIATE_TEST_SUITE_P(Sampling, ServeWorker, ::testing::Values(0.0, 1.5), [](const auto& info) {
  return std::string(info.param == 0 ? "greedy" : "sampled_seed");
});

}  // namespace
}  // namespace wgfuse
