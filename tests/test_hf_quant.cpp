// AWQ and GPTQ folders (llm/hf_quant.h): quantization_config read and refused by name, the packed
// integers read as each format defines them (hand-made words; the test writer's packing,
// llm/hf_quant_writer.h, read back bit for bit), the conversion to q4_zp rows keeping every value,
// tiny models on the GPU against the reference on the dequantized weights, and bad folders named.
// The q4_zp decode on the GPU is checked bit for bit with the other quantized formats
// (test_quant.cpp).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gpu/ggml_blocks.h"
#include "llm/architecture.h"
#include "llm/hf_quant.h"
#include "llm/hf_quant_writer.h"
#include "llm/model.h"
#include "llm/model_files.h"
#include "llm/safetensors_writer.h"
#include "llm_support.h"
#include "support.h"
#include "util/error.h"
#include "util/half.h"

namespace wgfuse::llm {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::throws_error;
using Method = HfQuantConfig::Method;

std::string config_with(const std::string& quantization_config) {
  return "{\"architectures\": [\"Qwen2ForCausalLM\"], \"quantization_config\": " + quantization_config + "}";
}

HfQuantConfig parse(const std::string& quantization_config) {
  return parse_quantization_config(config_with(quantization_config), "config.json").value();
}

// Test that the official checkpoints' quantization_config reads (Qwen2.5-*-Instruct-AWQ,
// -GPTQ-Int4 and -GPTQ-Int8, their runtime fields ignored) and that what is not supported is refused naming
// the field and its value.
TEST(HfQuantConfig, ReadsTheOfficialConfigsAndRefusesTheRest) {
  const HfQuantConfig awq = parse(
      R"({"bits": 4, "group_size": 128, "modules_to_not_convert": null, "quant_method": "awq", "version": "gemm", "zero_point": true})");
  EXPECT_EQ(awq.method, Method::Awq);
  EXPECT_EQ(awq.group_size, 128u);
  const HfQuantConfig gptq = parse(
      R"({"batch_size": 1, "bits": 4, "damp_percent": 0.01, "desc_act": false, "exllama_config": {"version": 1}, "group_size": 128, "quant_method": "gptq", "sym": true, "true_sequential": true, "use_exllama": true})");
  EXPECT_EQ(gptq.method, Method::Gptq);
  EXPECT_TRUE(gptq.zero_minus_one);  // no checkpoint_format: auto-gptq's v1
  EXPECT_FALSE(
      parse(R"({"bits": 4, "group_size": -1, "quant_method": "gptq", "checkpoint_format": "gptq_v2"})")
          .zero_minus_one);
  EXPECT_EQ(parse(R"({"bits": 4, "group_size": -1, "quant_method": "gptq"})").group_size, 0u);
  // -GPTQ-Int8's
  EXPECT_EQ(
      parse(
          R"({"bits": 8, "damp_percent": 0.01, "desc_act": false, "group_size": 128, "quant_method": "gptq", "sym": true})")
          .bits,
      8u);
  EXPECT_FALSE(parse_quantization_config(R"({"quantization_config": null})", "config.json"));

  const std::pair<const char*, std::vector<std::string>> bad[] = {
      {R"({"quant_method": "bitsandbytes", "bits": 4, "group_size": 128})", {"quant_method", "bitsandbytes"}},
      {R"({"quant_method": "awq", "version": "gemv", "bits": 4, "group_size": 128})", {"version", "gemv"}},
      {R"({"quant_method": "awq", "zero_point": false, "bits": 4, "group_size": 128})", {"zero_point false"}},
      {R"({"quant_method": "awq", "bits": 8, "group_size": 128})", {"bits 8"}},
      {R"({"quant_method": "gptq", "bits": 3, "group_size": 128})", {"bits 3"}},
      {R"({"quant_method": "awq", "bits": 4, "group_size": 48})", {"group_size 48", "multiple of 32"}},
      {R"({"quant_method": "awq", "bits": 4, "group_size": -1})", {"group_size -1"}},
      {R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "checkpoint_format": "marlin"})",
       {"checkpoint_format", "marlin"}},
      {R"({"quant_method": "gptq", "group_size": 128})", {"bits is missing"}},
      {R"("awq")", {"quantization_config", "expected an object"}},
  };
  for (const auto& [text, parts] : bad) EXPECT_TRUE(throws_error([&] { parse(text); }, parts)) << text;
}

// Host tensors by name, over a copy of their bytes.
struct Tensors {
  std::vector<TensorData> data;
  std::map<std::string, TensorRef> refs;
  explicit Tensors(std::vector<TensorData> tensors) : data(std::move(tensors)) {
    for (const TensorData& t : data) {
      const DType d = t.raw_dtype == "I32" ? DType::I32 : DType::F16;
      refs[t.name] = TensorRef{t.name, d, t.shape, std::as_bytes(std::span(t.raw))};
    }
  }
  Tensors(const Tensors&) = delete;
  WeightLookup lookup() const {
    return [this](std::string_view n) {
      auto it = refs.find(std::string(n));
      return it == refs.end() ? nullptr : &it->second;
    };
  }
};

std::string word_bytes(std::vector<uint32_t> w) {
  std::string s(4 * w.size(), '\0');
  std::memcpy(s.data(), w.data(), s.size());
  return s;
}

// Test each packing on hand-made words (scales 1, zero points 0): AWQ's word 0x76543210 puts the
// quant k at output column order[k] = [0, 2, 4, 6, 1, 3, 5, 7][k], GPTQ's at input row k (8-bit:
// 4 a word); a GPTQ v1 zero point is the stored one plus 1, modulo 2^bits.
TEST(HfQuantLayout, HandMadeWordsReadAsTheFormatsDefineThem) {
  const std::string ones = [] {
    std::string s;
    for (int i = 0; i < 8; ++i) s += std::string{'\x00', '\x3c'};  // f16 1.0
    return s;
  }();
  {  // AWQ: [out 8, in 32], one group; input row 0 is the word, the rest 0
    std::vector<uint32_t> qw(32, 0);
    qw[0] = 0x76543210;
    const Tensors t({{"p.qweight", {32, 1}, {}, "I32", word_bytes(qw)},
                     {"p.qzeros", {1, 1}, {}, "I32", word_bytes({0})},
                     {"p.scales", {1, 8}, {}, "F16", ones}});
    const HfQuantConfig q{.method = Method::Awq, .group_size = 32};
    const auto w = dequantize_linear(q, quantized_linear(q, t.lookup(), "p", 8, 32, "test"));
    const float want[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    for (int o = 0; o < 8; ++o) EXPECT_EQ(w[o * 32], want[o]) << "output " << o;
  }
  {  // GPTQ v1: [out 8, in 32]; output 3's column holds the word; stored zeros 0x000f0200 (z 1,
     // 1, 3, 1, 0 (15 + 1 mod 16), 1, 1, 1)
    std::vector<uint32_t> qw(4 * 8, 0);
    qw[3] = 0x76543210;
    const Tensors t({{"p.qweight", {4, 8}, {}, "I32", word_bytes(qw)},
                     {"p.qzeros", {1, 1}, {}, "I32", word_bytes({0x000f0200})},
                     {"p.scales", {1, 8}, {}, "F16", ones}});
    const HfQuantConfig q{.method = Method::Gptq, .group_size = 32, .zero_minus_one = true};
    const auto w = dequantize_linear(q, quantized_linear(q, t.lookup(), "p", 8, 32, "test"));
    for (int i = 0; i < 8; ++i) EXPECT_EQ(w[3 * 32 + i], float(i - 1)) << "input " << i;
    EXPECT_EQ(w[2 * 32], -3.0f);
    EXPECT_EQ(w[4 * 32], 0.0f);
    EXPECT_EQ(w[4 * 32 + 8], 0.0f);
  }
  {  // GPTQ v1, 8 bits: [out 4, in 32]; output 1's column holds 0x83828180 for inputs 0..3 (quants
     // 128..131), stored zeros 0x7f7f7f7f (z 128 each): inputs 0..3 are 0..3, the others -128
    std::vector<uint32_t> qw(8 * 4, 0);
    qw[1] = 0x83828180;
    const Tensors t({{"p.qweight", {8, 4}, {}, "I32", word_bytes(qw)},
                     {"p.qzeros", {1, 1}, {}, "I32", word_bytes({0x7f7f7f7f})},
                     {"p.scales", {1, 4}, {}, "F16", ones.substr(0, 8)}});
    const HfQuantConfig q{.method = Method::Gptq, .bits = 8, .group_size = 32, .zero_minus_one = true};
    const auto w = dequantize_linear(q, quantized_linear(q, t.lookup(), "p", 4, 32, "test"));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(w[1 * 32 + i], float(i)) << "input " << i;
    EXPECT_EQ(w[1 * 32 + 4], -128.0f);
    EXPECT_EQ(w[0], -128.0f);
  }
}

// Configs of the round-trip tests: each packing, v1 and v2 zero points, sym and asym, groups of
// 32 and 128 and whole rows, at odd layer sizes.
struct Case {
  const char* name;
  HfQuantConfig q;
  uint64_t out, in;
};
const Case kCases[] = {
    {"awq g128", {.method = Method::Awq, .group_size = 128}, 40, 384},
    {"awq g32", {.method = Method::Awq, .group_size = 32}, 24, 96},
    {"gptq v1 sym g128",
     {.method = Method::Gptq, .group_size = 128, .zero_minus_one = true, .sym = true},
     56,
     256},
    {"gptq v1 asym g32",
     {.method = Method::Gptq, .group_size = 32, .zero_minus_one = true, .sym = false},
     16,
     160},
    {"gptq v2 asym row",
     {.method = Method::Gptq, .group_size = 0, .zero_minus_one = false, .sym = false},
     8,
     224},
    {"gptq 8-bit v1 sym g128",
     {.method = Method::Gptq, .bits = 8, .group_size = 128, .zero_minus_one = true, .sym = true},
     12,
     384},
    {"gptq 8-bit v2 sym g32",
     {.method = Method::Gptq, .bits = 8, .group_size = 32, .zero_minus_one = false, .sym = true},
     4,
     96},
};

// Test that what the test writer packs reads back: the CPU dequantizer gives the writer's
// quantized values bit for bit (each within half a step of the float weight, a step where a
// zero point is rounded), and the q4_zp (4-bit) or q8_0 (8-bit) rows the loader uploads hold the
// same values.
TEST(HfQuantLayout, WriterPackingReadsBackAndConvertsExactly) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto w = test::random_floats(c.out * c.in, 5, -1.0f, 1.0f);
    const QuantizedLinearData d = quantize_linear(c.q, "model.layers.0.mlp.up_proj", w, c.out, c.in);
    const Tensors t(d.tensors);
    const QuantizedLinear layer =
        quantized_linear(c.q, t.lookup(), "model.layers.0.mlp.up_proj", c.out, c.in, "test");
    const auto got = dequantize_linear(c.q, layer);
    ASSERT_EQ(got.size(), d.dequantized.size());
    uint32_t wrong = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(d.dequantized[i]) && wrong++ < 5)
        ADD_FAILURE() << "element " << i << ": read " << got[i] << ", written " << d.dequantized[i];
    EXPECT_EQ(wrong, 0u);
    const uint64_t group = c.q.group_size ? c.q.group_size : c.in;
    for (uint64_t o = 0; o < c.out; ++o)
      for (uint64_t g = 0; g < c.in / group; ++g) {
        double lo = 0, hi = 0;
        for (uint64_t i = g * group; i < (g + 1) * group; ++i)
          lo = std::min<double>(lo, w[o * c.in + i]), hi = std::max<double>(hi, w[o * c.in + i]);
        const double step = (c.q.sym ? 2 * std::max(-lo, hi) : hi - lo) / ((1 << c.q.bits) - 1);
        for (uint64_t i = g * group; i < (g + 1) * group; ++i)
          ASSERT_LE(std::abs(got[o * c.in + i] - w[o * c.in + i]), 1.01 * step) << o << ", " << i;
      }
    const auto rows = quantized_linear_to_rows(c.q, layer);
    EXPECT_EQ(rows.type, c.q.bits == 8 ? DType::Q8_0 : DType::Q4_ZP);
    const uint64_t rb = gpu::source_row_bytes(rows.type, c.in);
    ASSERT_EQ(rows.bytes.size(), c.out * rb);
    for (uint64_t o = 0; o < c.out; ++o) {
      const auto v = gpu::dequantize_row(rows.type, std::span(rows.bytes).subspan(o * rb, rb), c.in);
      for (uint64_t i = 0; i < c.in; ++i) ASSERT_EQ(float(v[i]), got[o * c.in + i]) << o << ", " << i;
    }
  }
}

// Test the refusals of a layer's tensors: each names the layer, the tensor and what was expected.
TEST(HfQuantLayout, BadTensorsNamed) {
  const HfQuantConfig awq{.method = Method::Awq, .group_size = 32};
  const HfQuantConfig gptq{.method = Method::Gptq, .group_size = 32, .zero_minus_one = true};
  const auto w = test::random_floats(16 * 96, 6, -1.0f, 1.0f);
  auto layer = [&](const HfQuantConfig& q, const std::function<void(std::vector<TensorData>&)>& change,
                   uint64_t in = 96) {
    auto d = quantize_linear(q, "p", std::span(w).first(16 * in), 16, in).tensors;
    change(d);
    const Tensors t(d);
    quantized_linear(q, t.lookup(), "p", 16, in, "dir");
  };
  auto drop = [](const char* name) {
    return [name](std::vector<TensorData>& d) {
      std::erase_if(d, [&](const TensorData& t) { return t.name == name; });
    };
  };
  EXPECT_TRUE(
      throws_error([&] { layer(awq, drop("p.qzeros")); }, {"dir", "layer \"p\"", "\"p.qzeros\"", "missing"}));
  EXPECT_TRUE(throws_error([&] { layer(gptq, drop("p.scales")); }, {"\"p.scales\"", "missing"}));
  EXPECT_NO_THROW(layer(gptq, drop("p.g_idx")));  // optional: the groups in row order
  EXPECT_TRUE(throws_error(
      [&] {
        layer(awq, [](std::vector<TensorData>& d) {
          d[0].shape = {2, 96};  // GPTQ's layout in an AWQ folder
          d[0].raw.resize(4 * 2 * 96);
        });
      },
      {"\"p.qweight\"", "I32 [2, 96]", "expected I32 [96, 2]"}));
  EXPECT_TRUE(throws_error([&] { layer(awq, [](std::vector<TensorData>& d) { d[2].raw_dtype = "I32"; }); },
                           {"\"p.scales\"", "expected F16"}));
  EXPECT_TRUE(throws_error(
      [&] {
        layer(gptq, [](std::vector<TensorData>& d) {
          std::vector<int32_t> g(96);
          for (int i = 0; i < 96; ++i) g[i] = (95 - i) / 32;  // act-order: groups reordered
          std::memcpy(d[3].raw.data(), g.data(), d[3].raw.size());
        });
      },
      {"\"p.g_idx\"[0] is 2", "not 0", "desc_act false"}));
  const HfQuantConfig g64{.method = Method::Awq, .group_size = 64};
  EXPECT_TRUE(throws_error([&] { quantized_linear(g64, Tensors({}).lookup(), "p", 16, 96, "dir"); },
                           {"layer \"p\" [16, 96]", "group_size 64 does not divide its 96 inputs"}));
  EXPECT_TRUE(throws_error([&] { quantized_linear(awq, Tensors({}).lookup(), "p", 12, 96, "dir"); },
                           {"12 outputs", "words of 8"}));
  {  // 8-bit with zero points other than 128: q - z does not fit q8_0's int8
    const HfQuantConfig asym8{.method = Method::Gptq, .bits = 8, .group_size = 32, .sym = false};
    const auto positive = test::random_floats(16 * 96, 7, 0.1f, 1.0f);  // every group's zero point 0
    const Tensors t(quantize_linear(asym8, "p", positive, 16, 96).tensors);
    const QuantizedLinear l = quantized_linear(asym8, t.lookup(), "p", 16, 96, "dir");
    EXPECT_TRUE(throws_error([&] { quantized_linear_to_rows(asym8, l); },
                             {"dir: layer \"p\" [16, 96] (GPTQ)", "8-bit GPTQ zero point 0", "sym true"}));
  }
}

ModelConfig quant_test_config(const char* arch) {
  ModelConfig c = test::small_llm_config(false, 301);
  c.architecture = arch;
  c.hidden_size = 96, c.head_dim = 24, c.intermediate_size = 160;  // rows of whole groups of 32
  return c;
}

// Test AWQ and GPTQ folders end to end: every linear layer reaches the GPU as q4_zp (8-bit: q8_0; the fused
// Q/K/V and gate/up matrices too), the tensors read back as the writer's dequantized weights, and
// the greedy tokens and every step's logits (two prefill chunks, then decode steps) equal the
// double-precision reference on those weights.
TEST(HfQuantModel, DecodesLikeTheDequantizedReference) {
  const std::pair<const char*, HfQuantConfig> cases[] = {
      {"Qwen2ForCausalLM", {.method = Method::Awq, .group_size = 32}},
      {"LlamaForCausalLM", {.method = Method::Gptq, .group_size = 32, .zero_minus_one = true, .sym = true}},
      {"Qwen3ForCausalLM", {.method = Method::Gptq, .group_size = 0, .zero_minus_one = false, .sym = false}},
      {"Qwen2ForCausalLM",
       {.method = Method::Gptq, .bits = 8, .group_size = 32, .zero_minus_one = true, .sym = true}},
  };
  for (const auto& [arch, q] : cases) {
    SCOPED_TRACE(arch);
    TempDir dir;
    const ModelConfig config = quant_test_config(arch);
    const auto written = write_random_quantized_model(dir.path, config, q, 23);
    const ModelFiles files(dir.path);
    ASSERT_NE(files.quantization(), nullptr);
    EXPECT_TRUE(files.warnings().empty()) << files.warnings()[0];
    const WeightLookup lookup = [&](std::string_view name) { return files.find(name); };
    for (const TensorData& t : written) {
      if (!t.name.ends_with("proj.weight")) continue;
      const TensorRef* ref = files.find(t.name);
      ASSERT_EQ(ref->dtype, q.bits == 8 ? DType::Q8_0 : DType::Q4_ZP) << t.name;
      const auto v = tensor_values(*ref);
      for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(float(v[i]), t.values[i]) << t.name << " " << i;
    }
    Model model(test::context(), files.config(), lookup, {.ctx = 32, .prefill_chunk = 8});
    std::map<std::string, uint32_t> stored;
    for (const auto& u : model.stats().weight_formats) stored[gpu::to_string(u.format)] = u.matrices;
    EXPECT_EQ(stored[q.bits == 8 ? "q8_0" : "q4_zp"], 4 * config.num_layers);       // Q/K/V, O, gate/up, down
    const std::vector<uint32_t> prompt = {5, 77, 298, 1, 300, 42, 9, 150, 3, 261};  // two prefill chunks
    test::expect_decodes_like_reference(model, files.config(), lookup, prompt, 5, 32);
  }
}

// Test the folder-level refusals: a quantized layer without quantization_config, a config the
// folder's tensors do not match, each naming the file and the tensor or field.
TEST(HfQuantModel, BadFoldersNamed) {
  const ModelConfig config = quant_test_config("Qwen2ForCausalLM");
  const HfQuantConfig awq{.method = Method::Awq, .group_size = 32};
  TempDir dir;
  write_random_quantized_model(dir.path, config, awq, 4);
  const fs::path cfg = dir.path / "config.json";
  std::string text;
  {
    std::ifstream in(cfg);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto with_config = [&](const std::string& t) { std::ofstream(cfg, std::ios::trunc) << t; };
  const size_t at = text.find(",\n  \"quantization_config\"");
  ASSERT_NE(at, std::string::npos);
  with_config(text.substr(0, at) + "\n}\n");
  EXPECT_TRUE(
      throws_error([&] { ModelFiles f(dir.path); },
                   {"model.safetensors", "qweight\" is a quantized layer", "no \"quantization_config\""}));
  std::string gptq = text;
  gptq.replace(gptq.find("\"awq\""), 5, "\"gptq\"");
  with_config(gptq);  // GPTQ's layout expected: qweight [in/8, out]
  EXPECT_TRUE(
      throws_error([&] { ModelFiles f(dir.path); }, {"model.safetensors", "(GPTQ)", "qweight\" is I32"}));
  std::string eight = text;
  eight.replace(eight.find("\"bits\": 4"), 9, "\"bits\": 8");
  with_config(eight);
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); }, {"config.json", "quantization_config.bits 8"}));
}

}  // namespace
}  // namespace wgfuse::llm
