// Architectures as data (llm/architecture.h) and RoPE scaling (llm/rope.h): the tables, the
// inverse frequencies against values written here from the formulas, and Qwen3 and Llama on the
// GPU against the double-precision reference at small odd sizes with random weights.
//   Qwen3: per-head q/k RMSNorm before RoPE, no biases, heads * head_dim (72) != hidden (45),
//          yarn RoPE (its attention factor scales cos and sin), tied head.
//   Llama: no biases, untied head, llama3 RoPE scaling whose wavelengths fall in all three bands.
// The decode path (prompt fed one decode step at a time) and the prefill paths (short passes of
// the row products, and the tiled matrix-matrix kernels); logits within 1e-4 (f32 storage), 1e-2 (f16) or
// 4e-2 (bf16; both against the unrounded weights) normalised; greedy tokens equal to the reference on the
// stored weights.
#include <cmath>
#include <numbers>
#include <ostream>

#include "llm/architecture.h"
#include "llm/model.h"
#include "llm/persistent_decode.h"
#include "llm/rope.h"
#include "llm_support.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

using gpu::WeightFormat;
using llm::RopeScaling;
using llm::TensorRole;
using test::as_stored;
using test::context;
using test::llama_config;
using test::normalised_error;
using test::qwen3_config;
using test::throws_error;

const std::vector<uint32_t> kPrompt = {7, 123, 42, 299, 0, 64, 5};

// ---- the tables ----

// Test that the registry holds the three architectures, refuses others listing them, and that the
// names are Hugging Face's and llama.cpp's for a layer.
TEST(LlmArchitecture, RegistryAndNames) {
  std::vector<std::string> names;
  for (const auto* a : llm::architectures()) names.emplace_back(a->name);
  EXPECT_EQ(names, (std::vector<std::string>{"Qwen2ForCausalLM", "Qwen3ForCausalLM", "LlamaForCausalLM"}));
  EXPECT_TRUE(throws_error([] { llm::find_architecture("GemmaForCausalLM", "x/config.json"); },
                           {"x/config.json", "\"GemmaForCausalLM\"", "Qwen2ForCausalLM (Qwen2 and Qwen2.5)",
                            "Qwen3ForCausalLM", "LlamaForCausalLM"}));
  EXPECT_EQ(llm::hf_name(TensorRole::KNorm, 3), "model.layers.3.self_attn.k_norm.weight");
  EXPECT_EQ(llm::gguf_name(TensorRole::KNorm, 3), "blk.3.attn_k_norm.weight");
  EXPECT_EQ(llm::hf_name(TensorRole::V, 11), "model.layers.11.self_attn.v_proj.weight");
  EXPECT_EQ(llm::gguf_name(TensorRole::O, 0), "blk.0.attn_output.weight");
  EXPECT_EQ(llm::gguf_name(TensorRole::LmHead), "output.weight");
  EXPECT_EQ(llm::gguf_name(TensorRole::Embedding), "token_embd.weight");
}

// Test each architecture's expected tensors: count, presence of biases and norms, shapes with
// heads * head_dim != hidden, and the head only when untied.
TEST(LlmArchitecture, ExpectedTensors) {
  auto count = [](const llm::ModelConfig& c, TensorRole r) {
    size_t n = 0;
    for (const auto& e : llm::expected_tensors(c)) n += e.role == r;
    return n;
  };
  llm::ModelConfig q3 = qwen3_config();
  EXPECT_EQ(llm::expected_tensors(q3).size(), 2 + 2 * 11u);
  EXPECT_EQ(count(q3, TensorRole::QNorm), 2u);
  EXPECT_EQ(count(q3, TensorRole::QBias), 0u);
  EXPECT_EQ(count(q3, TensorRole::LmHead), 0u);
  EXPECT_EQ(llm::tensor_shape(TensorRole::Q, q3), (std::vector<uint64_t>{72, 45}));
  EXPECT_EQ(llm::tensor_shape(TensorRole::O, q3), (std::vector<uint64_t>{45, 72}));
  EXPECT_EQ(llm::tensor_shape(TensorRole::KNorm, q3), (std::vector<uint64_t>{12}));
  const llm::ModelConfig ll = llama_config();
  EXPECT_EQ(llm::expected_tensors(ll).size(), 3 + 2 * 9u);
  EXPECT_EQ(count(ll, TensorRole::LmHead), 1u);
  EXPECT_EQ(count(ll, TensorRole::QNorm) + count(ll, TensorRole::VBias), 0u);
  llm::ModelConfig q2 = test::small_llm_config(false);
  const auto t = llm::expected_tensors(q2);
  EXPECT_EQ(t.size(), 3 + 3 * 12u);
  EXPECT_EQ(t.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(t[1].name, "model.layers.0.input_layernorm.weight");
  EXPECT_EQ(t.back().name, "lm_head.weight");
}

// Test that the config checks (one definition for every runner) name what is wrong.
TEST(LlmArchitecture, ConfigChecks) {
  auto c = llama_config();
  c.num_kv_heads = 3;
  EXPECT_TRUE(throws_error([&] { llm::check_config(c, "src"); }, {"src:", "num_attention_heads (4)", "(3)"}));
  c = llama_config();
  c.head_dim = 7;
  EXPECT_TRUE(throws_error([&] { llm::check_config(c, "src"); }, {"head_dim (7)", "even"}));
  c = llama_config();
  c.rope_scaling.factor = 0.5;
  EXPECT_TRUE(throws_error([&] { llm::check_config(c, "src"); }, {"rope_scaling.factor (0.5)"}));
  c = llama_config();
  c.architecture = "Qwen2MoeForCausalLM";
  EXPECT_TRUE(throws_error([&] { llm::check_config(c, "src"); }, {"unsupported architecture"}));
}

// ---- RoPE ----

// Test default RoPE: theta^(-2i/d), and the table (cos, sin) of pos * that, rounded once.
TEST(LlmRope, DefaultFrequenciesAndTable) {
  llm::ModelConfig c = llama_config();
  c.rope_scaling = {};
  const auto f = llm::rope_frequencies(c);
  ASSERT_EQ(f.inv_freq.size(), 6u);
  for (uint32_t i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(f.inv_freq[i], 1.0 / std::pow(10000.0, i / 6.0));
  EXPECT_EQ(f.attention_factor, 1.0);
  const auto t = llm::rope_table(c, 9);
  ASSERT_EQ(t.size(), 9u * 12);
  EXPECT_EQ(t[2 * (8 * 6 + 2)], float(std::cos(8 / std::pow(10000.0, 2 / 6.0))));
  EXPECT_EQ(t[2 * (8 * 6 + 2) + 1], float(std::sin(8 / std::pow(10000.0, 2 / 6.0))));
}

// Test llama3 scaling against the rule written out here: a dimension's wavelength 2 pi theta^(2i/d)
// below original / high keeps its frequency, above original / low divides it by factor, between
// them blends the two by s = (original / wavelength - low) / (high - low). Llama-3.2-1B's RoPE
// (head_dim 64, theta 500000, factor 32, low 1, high 4, original 8192) has dimensions in each band.
TEST(LlmRope, Llama3Scaling) {
  llm::ModelConfig c = llama_config();
  c.head_dim = 64;
  c.rope_theta = 500000;
  c.rope_scaling.factor = 32;
  c.rope_scaling.original_max_position_embeddings = 8192;
  const auto f = llm::rope_frequencies(c);
  int bands[3] = {0, 0, 0};
  for (uint32_t i = 0; i < 32; ++i) {
    const double base = std::pow(500000.0, -2.0 * i / 64), wavelength = 2 * std::numbers::pi / base;
    double want;
    if (wavelength < 8192.0 / 4) {
      want = base, ++bands[0];
    } else if (wavelength > 8192.0 / 1) {
      want = base / 32, ++bands[2];
    } else {
      const double s = (8192.0 / wavelength - 1) / (4 - 1);
      want = (1 - s) * base / 32 + s * base, ++bands[1];
    }
    EXPECT_NEAR(f.inv_freq[i], want, 1e-15 * base) << "dim " << i;
  }
  EXPECT_GT(bands[0], 0);
  EXPECT_GT(bands[1], 0);
  EXPECT_GT(bands[2], 0);
  EXPECT_EQ(f.attention_factor, 1.0);

  // One value by hand: d = 4, theta 10^4 (inv_freq 1, 1/100), original 1000, factor 8: dim 1's
  // wavelength 200 pi lies between 250 and 1000, s = (1000 / (200 pi) - 1) / 3.
  c.head_dim = 4;
  c.rope_theta = 1e4;
  c.rope_scaling.factor = 8;
  c.rope_scaling.original_max_position_embeddings = 1000;
  const auto g = llm::rope_frequencies(c);
  const double s = (5 / std::numbers::pi - 1) / 3;
  EXPECT_DOUBLE_EQ(g.inv_freq[0], 1.0);
  EXPECT_NEAR(g.inv_freq[1], 0.01 * ((1 - s) / 8 + s), 1e-17);
}

// Test yarn against its formulas written out here: the correction range [floor(low), ceil(high)]
// of the dims where beta_fast and beta_slow rotations fit the original context, dim(r) =
// d ln(original / (2 pi r)) / (2 ln theta); a linear ramp over it blends theta^(-2i/d) (below)
// into theta^(-2i/d) / factor (above); cos and sin scale by 0.1 ln(factor) + 1, or by the given
// attention_factor; without truncation the range keeps its fractions.
TEST(LlmRope, YarnScaling) {
  llm::ModelConfig c = qwen3_config();
  c.head_dim = 128;
  c.rope_theta = 1e6;
  c.max_position_embeddings = 131072;
  c.rope_scaling = {.type = RopeScaling::Type::Yarn, .factor = 4, .original_max_position_embeddings = 32768};
  for (bool truncate : {true, false}) {
    c.rope_scaling.truncate = truncate;
    const auto f = llm::rope_frequencies(c);
    auto dim = [](double r) {
      return 128 * std::log(32768 / (2 * std::numbers::pi * r)) / (2 * std::log(1e6));
    };
    double low = dim(32), high = dim(1);
    if (truncate) low = std::floor(low), high = std::ceil(high);
    int ramped = 0;
    for (uint32_t i = 0; i < 64; ++i) {
      const double base = std::pow(1e6, -2.0 * i / 128);
      const double ramp = std::min(1.0, std::max(0.0, (i - low) / (high - low)));
      ramped += ramp > 0 && ramp < 1;
      EXPECT_NEAR(f.inv_freq[i], base * (1 - ramp) + base / 4 * ramp, 1e-15 * base) << "dim " << i;
    }
    EXPECT_GT(ramped, 10);
    EXPECT_DOUBLE_EQ(f.attention_factor, 0.1 * std::log(4.0) + 1);
  }
  c.rope_scaling.attention_factor = 0.75;
  EXPECT_EQ(llm::rope_frequencies(c).attention_factor, 0.75);
  const auto t = llm::rope_table(c, 3);
  const double a = 2 * llm::rope_frequencies(c).inv_freq[5];
  EXPECT_EQ(t[2 * (2 * 64 + 5)], float(std::cos(a) * 0.75));
  EXPECT_EQ(t[2 * (2 * 64 + 5) + 1], float(std::sin(a) * 0.75));
}

// ---- on the GPU ----

struct Case {
  const char* arch;
  WeightFormat dtype;
  uint32_t prefill_chunk;                                              // 0: the prompt through decode steps
  uint32_t prefill_short_max = llm::ModelOptions{}.prefill_short_max;  // 0: the tiled products
};
std::string name_of(const Case& c) {
  return std::string(c.arch) + "_" + gpu::to_string(c.dtype) +
         (!c.prefill_chunk      ? "_decode"
          : c.prefill_short_max ? "_prefill"
                                : "_prefill_tiled");
}
void PrintTo(const Case& c, std::ostream* os) {
  *os << name_of(c);
}
class LlmArchitectureModel : public ::testing::TestWithParam<Case> {};

llm::ModelConfig config_of(const std::string& arch) {
  return arch == "qwen3" ? qwen3_config() : llama_config();
}

// Test 20 greedy tokens and every step's logits against the reference (decode attention in one
// pass below position 16, in chunks of 16 from there).
TEST_P(LlmArchitectureModel, LogitsAndGreedyTokensMatchTheReference) {
  const auto [arch, dtype, chunk, short_max] = GetParam();
  const auto cfg = config_of(arch);
  const auto weights = llm::HostWeights::random(cfg, 71);
  const uint32_t n = 20;
  llm::Model model(context(), cfg, weights.lookup(),
                   {.dtype = dtype,
                    .attn_short_max = 16,
                    .ctx = 48,
                    .prefill_chunk = chunk,
                    .prefill_short_max = short_max,
                    .attention = {.chunk = 16}});
  std::vector<std::vector<float>> logits;
  llm::GenerateOptions opt;
  opt.on_logits = [&](std::span<const float> l) { logits.emplace_back(l.begin(), l.end()); };
  const auto tokens = model.generate(kPrompt, n, {}, opt);
  ASSERT_EQ(logits.size(), n);

  const auto stored = as_stored(weights, dtype);
  llm::ref::Decoder on_stored(cfg, llm::ref::Weights::load(cfg, stored.lookup()), 48);
  EXPECT_EQ(tokens, on_stored.greedy(kPrompt, n)) << "greedy tokens differ from the reference";
  llm::ref::Decoder exact(cfg, llm::ref::Weights::load(cfg, weights.lookup()), 48);
  auto want = exact.prefill(kPrompt);
  const double tol = dtype == WeightFormat::F32 ? 1e-4 : dtype == WeightFormat::F16 ? 1e-2 : 4e-2;
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_LE(normalised_error(logits[i], want), tol) << "step " << i;
    if (i + 1 < n) want = exact.forward(tokens[i]);
  }
  // Qwen3 pays one dispatch per layer for its q/k norms, Llama none.
  const uint32_t per_layer = std::string(arch) == "qwen3" ? 6 : 5;
  EXPECT_EQ(model.stats().dispatches_per_step, 1 + per_layer * cfg.num_layers + 1 + 2);
}

INSTANTIATE_TEST_SUITE_P(
    QwenAndLlama, LlmArchitectureModel,
    ::testing::Values(Case{"qwen3", WeightFormat::F32, 512}, Case{"qwen3", WeightFormat::F32, 512, 0},
                      Case{"qwen3", WeightFormat::F32, 0}, Case{"qwen3", WeightFormat::F16, 512},
                      Case{"qwen3", WeightFormat::BF16, 512}, Case{"llama", WeightFormat::F32, 512},
                      Case{"llama", WeightFormat::F32, 512, 0}, Case{"llama", WeightFormat::F32, 0},
                      Case{"llama", WeightFormat::F16, 0}),
    [](const auto& info) { return name_of(info.param); });

// Test that the one-dispatch decoder runs Llama (its RoPE table scaled) to the reference's tokens,
// and refuses Qwen3's per-head norms by name.
TEST(LlmArchitecturePersistent, LlamaRunsQwen3Refused) {
  const auto cfg = llama_config();
  const auto weights = llm::HostWeights::random(cfg, 72);
  llm::PersistentDecoder d(context(), cfg, weights.lookup(), {.dtype = WeightFormat::F32, .ctx = 48});
  const auto tokens = d.generate(kPrompt, 12);
  llm::ref::Decoder ref(cfg, llm::ref::Weights::load(cfg, weights.lookup()), 48);
  EXPECT_EQ(tokens, ref.greedy(kPrompt, 12));
  const auto q3 = qwen3_config();
  const auto w3 = llm::HostWeights::random(q3, 73);
  EXPECT_TRUE(throws_error([&] { llm::PersistentDecoder p(context(), q3, w3.lookup(), {.ctx = 48}); },
                           {"persistent decode", "Qwen3ForCausalLM", "q/k norms", "--decode steps"}));
}

}  // namespace
}  // namespace wgfuse
