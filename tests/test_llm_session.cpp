// llm::Session on a small random Qwen2-architecture folder (safetensors + config.json) whose
// tokenizer is Qwen's cut down to its 256 byte tokens and its special tokens (ids 256..281; the
// model's vocabulary of 301 rows is padded past them), so that text, chat templates and stop ids
// are real and the LM head stays small for SwiftShader. Tokens are compared with the
// double-precision reference (llm::ref::Decoder) and with direct decoder runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "llm/reference.h"
#include "llm/safetensors_writer.h"
#include "llm/session.h"
#include "llm_support.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kVocab = 301;

// The folder, written once per test binary and removed at exit. Its LM head is its own: with the
// head tied to the embedding a random model repeats the prompt's last token, and tests that compare
// tokens would compare nothing.
const fs::path& model_dir() {
  struct Folder {
    fs::path path = fs::temp_directory_path() / ("wgfuse_session_" + std::to_string(getpid()));
    Folder() {
      llm::write_random_model(path, test::small_llm_config(false, kVocab), llm::DType::F32, 41);
      test::write_byte_level_qwen_tokenizer(path);
    }
    ~Folder() { fs::remove_all(path); }
  };
  static const Folder folder;
  return folder.path;
}

llm::SessionOptions options(llm::DecoderKind decoder = llm::DecoderKind::Steps) {
  llm::SessionOptions o;
  o.model_dir = model_dir().string();
  o.dtype = gpu::WeightFormat::F32;
  o.ctx = 96;
  o.steps_per_submit = 3;
  o.decoder = decoder;
  o.persistent.workgroups = 1;  // one workgroup is always co-resident with itself
  return o;
}

// The reference's greedy tokens, cut after the first stop id as a generation stops there.
std::vector<uint32_t> reference_greedy(const llm::Session& s, std::span<const uint32_t> prompt, uint32_t n) {
  const auto& cfg = s.files().config();
  llm::ref::Decoder ref(
      cfg, llm::ref::Weights::load(cfg, [&](std::string_view name) { return s.files().find(name); }), 96);
  std::vector<uint32_t> want = ref.greedy(prompt, n);
  const auto stops = llm::stop_token_ids(s.tokenizer(), s.files().dir());
  for (size_t i = 0; i < want.size(); ++i)
    if (std::find(stops.begin(), stops.end(), int32_t(want[i])) != stops.end()) {
      want.resize(i + 1);
      break;
    }
  return want;
}

// Test generation from ids and from text: the reference's greedy tokens, the streamed text equal
// to the reply's, text and its ids giving the same reply.
TEST(LlmSession, GeneratesFromIdsAndText) {
  llm::Session s(options());
  s.load(test::context());
  const std::vector<uint32_t> prompt = {7, 123, 42, 255, 0, 64, 5};
  std::string streamed;
  const llm::Reply r = s.generate(prompt, 10, {.on_text = [&](std::string_view t) { streamed += t; }});
  const auto want = reference_greedy(s, prompt, 10);
  EXPECT_EQ(r.ids, want);
  EXPECT_EQ(r.stopped_at_eos, r.ids.size() < 10);
  EXPECT_EQ(streamed, r.text);
  EXPECT_EQ(s.decoder().sequence().size(), prompt.size() + r.ids.size());

  s.decoder().reset();
  const llm::Reply from_text = s.generate("Hello, wgfuse!", 6);
  EXPECT_EQ(s.encode("Hello, wgfuse!").size(), 14u);  // byte tokens
  s.decoder().reset();
  EXPECT_EQ(s.generate(s.encode("Hello, wgfuse!"), 6).ids, from_text.ids);
  EXPECT_EQ(from_text.ids, reference_greedy(s, s.encode("Hello, wgfuse!"), 6));

  // The stop flag ends the generation at the token being delivered.
  std::atomic<bool> stop{true};
  s.decoder().reset();
  EXPECT_EQ(s.generate(prompt, 10, {.stop = &stop}).ids,
            std::vector<uint32_t>(want.begin(), want.begin() + 1));
}

// Test a two-turn chat: the history keeps both exchanges, the second turn feeds only what the
// first did not leave in the cache, and the second reply equals a direct step decoder run on the
// whole rendered conversation; with the persistent decoder too, each turn's prompt through the
// step decoder's prefill (the caches' handing over across turns: LlmPersistentHandOver).
class LlmSessionChat : public ::testing::TestWithParam<llm::DecoderKind> {};

TEST_P(LlmSessionChat, ChatKeepsTheHistory) {
  llm::Session s(options(GetParam()));
  s.load(test::context());
  s.new_chat("Be brief.");
  const llm::Reply first = s.chat("Hi", 4);
  if (s.decoder_choice().kind != GetParam())
    GTEST_SKIP() << "the persistent decoder cannot run here: " << s.decoder_choice().fallback_reason;
  const llm::Reply second = s.chat("And then?", 4);
  ASSERT_EQ(s.history().size(), 5u);
  EXPECT_EQ(s.history()[0].content, "Be brief.");
  EXPECT_EQ(s.history()[2].content, first.text);
  EXPECT_EQ(s.history()[3].content, "And then?");
  EXPECT_EQ(s.history()[4].content, second.text);
  EXPECT_EQ(first.dropped_exchanges + second.dropped_exchanges, 0u);

  const auto tmpl = llm::ChatTemplate::from_file(model_dir() / "tokenizer_config.json");
  const std::vector<llm::ChatMessage> asked(s.history().begin(), s.history().begin() + 4);
  const auto ids = s.encode(tmpl.render(asked, true));
  const auto& files = s.files();
  llm::Model direct(test::context(), files.config(), [&](std::string_view n) { return files.find(n); },
                    {.dtype = gpu::WeightFormat::F32, .ctx = 96});
  llm::GenerateOptions go;
  for (int32_t id : llm::stop_token_ids(s.tokenizer(), model_dir())) go.eos_ids.push_back(uint32_t(id));
  EXPECT_EQ(direct.generate(ids, 4, {}, go), second.ids);
  // The first turn's positions that this render shares stay in the cache (here the first reply
  // holds a token that its text does not give back, so only part of it).
  EXPECT_LT(s.decoder().stats().prompt_tokens, ids.size()) << "the whole conversation was fed again";
}

INSTANTIATE_TEST_SUITE_P(Decoders, LlmSessionChat,
                         ::testing::Values(llm::DecoderKind::Steps, llm::DecoderKind::Persistent),
                         [](const auto& info) {
                           return std::string(info.param == llm::DecoderKind::Steps ? "steps" : "persistent");
                         });

// Test that the step decoder and the persistent decoder, behind llm::Decoder and behind the
// session, give the reference's greedy tokens, and that their stats mean the same.
TEST(LlmSession, BothDecodersGiveTheReferenceTokens) {
  llm::Session steps(options());
  steps.load(test::context());
  const std::vector<uint32_t> prompt = {3, 141, 59, 265, 35, 89, 79, 32, 38};
  const uint32_t n = 9;
  const auto want = reference_greedy(steps, prompt, n);
  EXPECT_EQ(steps.generate(prompt, n).ids, want);

  llm::Session persistent(options(llm::DecoderKind::Persistent));
  persistent.load(test::context());
  const llm::Reply got = persistent.generate(prompt, n);
  if (persistent.decoder_choice().kind != llm::DecoderKind::Persistent) {
    GTEST_SKIP() << "the persistent decoder cannot run here: " << persistent.decoder_choice().fallback_reason;
  }
  EXPECT_EQ(got.ids, want);
  EXPECT_EQ(persistent.decoder_choice().checked_tokens, 8u);

  const auto& cfg = steps.files().config();
  const llm::WeightLookup lookup = [&](std::string_view name) { return steps.files().find(name); };
  std::vector<std::unique_ptr<llm::Decoder>> decoders;
  decoders.push_back(std::make_unique<llm::Model>(
      test::context(), cfg, lookup, llm::ModelOptions{.dtype = gpu::WeightFormat::F32, .ctx = 64}));
  decoders.push_back(std::make_unique<llm::PersistentDecoder>(
      test::context(), cfg, lookup, llm::PersistentOptions{.dtype = gpu::WeightFormat::F32, .ctx = 64}));
  llm::ref::Decoder ref(cfg, llm::ref::Weights::load(cfg, lookup), 64);
  const auto all = ref.greedy(prompt, n);
  for (auto& d : decoders) {
    llm::GenerateOptions go;
    go.steps_per_submit = 4;
    EXPECT_EQ(d->generate(prompt, n, {}, go), all);
    const llm::DecoderStats& st = d->stats();
    EXPECT_EQ(st.prompt_tokens, prompt.size());
    EXPECT_EQ(st.generated_tokens, n);
    EXPECT_EQ(st.decode_tokens, n - 1);
    EXPECT_EQ(st.decode_steps, n - 1);
    EXPECT_EQ(st.decode_dispatches, st.decode_steps * st.dispatches_per_step);
    EXPECT_EQ(st.decode_submits, 2u);  // ceil(8 / 4)
    EXPECT_EQ(st.decode_readbacks, 2u);
    EXPECT_EQ(d->sequence().size(), prompt.size() + n);
    EXPECT_EQ(d->length(), prompt.size() + n - 1);  // the last token is not fed
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

// Test that bad options and inputs are clear errors naming the option, the value and the limit.
TEST(LlmSession, BadOptionsAreClearErrors) {
  auto with = [](const std::function<void(llm::SessionOptions&)>& edit) {
    auto o = options();
    edit(o);
    return error_of([&] { llm::Session s(o); });
  };
  EXPECT_NE(with([](auto& o) { o.model_dir = "/nonexistent/model"; }).find("/nonexistent/model"),
            std::string::npos);
  EXPECT_NE(with([](auto& o) { o.ctx = 1000; }).find("max_position_embeddings (128"), std::string::npos);
  EXPECT_NE(with([](auto& o) { o.sampling.temperature = -1; }).find("--temp"), std::string::npos);
  EXPECT_NE(with([](auto& o) {
              o.decoder = llm::DecoderKind::Persistent;
              o.sampling.temperature = 0.7;
            }).find("greedily only"),
            std::string::npos);
  EXPECT_NE(with([](auto& o) { o.attention.heads_per_wg = 3; }).find("must divide the query heads"),
            std::string::npos);
  EXPECT_NE(error_of([] { llm::parse_decoder_kind("fast"); }).find("expected steps or persistent"),
            std::string::npos);

  auto o = options();
  o.ctx = 24;
  llm::Session s(o);
  EXPECT_NE(error_of([&] {
              s.generate(std::vector<uint32_t>{1, 2}, 1);
            }).find("not loaded"),
            std::string::npos);
  EXPECT_NE(error_of([&] { s.room(24); }).find("leaves no room"), std::string::npos);
  s.load(test::context());
  EXPECT_NE(error_of([&] {
              s.generate(std::vector<uint32_t>{1, 301}, 1);
            }).find("301 is outside the vocabulary"),
            std::string::npos);
  s.new_chat();
  EXPECT_NE(error_of([&] {
              s.chat("far too long a message for a context of 24 positions", 4);
            }).find("this message is"),
            std::string::npos);
  EXPECT_TRUE(s.history().empty());  // the refused message is not kept
}

}  // namespace
}  // namespace wgfuse
