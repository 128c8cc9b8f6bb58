// Model folders: safetensors parsing, config.json / generation_config.json, sharding, and every
// bad input the loader must refuse with a message naming the file and the problem. Folders are
// written by src/llm/safetensors_writer (which shares no code with the reader) or byte by byte.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "llm/model.h"
#include "llm/model_files.h"
#include "llm/reference.h"
#include "llm/safetensors.h"
#include "llm/safetensors_writer.h"
#include "llm/weight_loader.h"
#include "llm_support.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::throws_error;

// Odd sizes, GQA: 4 query heads share 2 KV heads, head_dim 10.
ModelConfig small_config(bool tied) {
  return {.vocab_size = 300,
          .hidden_size = 40,
          .intermediate_size = 72,
          .num_layers = 3,
          .num_heads = 4,
          .num_kv_heads = 2,
          .head_dim = 10,
          .max_position_embeddings = 512,
          .rope_theta = 1e6,
          .rms_norm_eps = 1e-6,
          .tie_word_embeddings = tied};
}

// A safetensors file from its parts: 8-byte little-endian length, header text (padded with
// spaces so that the data starts 8-byte aligned), data bytes (nonzero filler).
std::vector<std::byte> raw_safetensors(std::string header, size_t data_bytes, uint64_t declared_len = 0) {
  header.append((8 - header.size() % 8) % 8, ' ');
  const uint64_t len = declared_len ? declared_len : header.size();
  std::vector<std::byte> f(8 + header.size() + data_bytes, std::byte{0x3c});
  for (int i = 0; i < 8; ++i) f[i] = std::byte((len >> (8 * i)) & 0xff);
  std::memcpy(f.data() + 8, header.data(), header.size());
  return f;
}

void write_bytes(const fs::path& p, const std::vector<std::byte>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct RoundTripCase {
  DType dtype;
  bool tied;
  int shards;
};

std::string case_name(const RoundTripCase& c) {
  return std::string(dtype_name(c.dtype)) + (c.tied ? "_tied_" : "_untied_") + std::to_string(c.shards) +
         "shard";
}
void PrintTo(const RoundTripCase& c, std::ostream* os) {
  *os << case_name(c);
}

class ModelFilesRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

// Test that a written folder reads back: config fields, every tensor's shape and every value
// bit-exact (the writer rounds to the dtype, the reader widens exactly).
TEST_P(ModelFilesRoundTrip, ValuesAndConfigExact) {
  const auto [dtype, tied, shards] = GetParam();
  TempDir dir;
  const ModelConfig want = small_config(tied);
  const auto written = write_random_model(dir.path, want, dtype, 1234, shards);

  // Moved after opening: the TensorRefs must stay valid (the mappings do not move).
  ModelFiles opened(dir.path);
  const ModelFiles files = std::move(opened);
  const ModelConfig& got = files.config();
  EXPECT_EQ(got.vocab_size, 300u);
  EXPECT_EQ(got.hidden_size, 40u);
  EXPECT_EQ(got.intermediate_size, 72u);
  EXPECT_EQ(got.num_layers, 3u);
  EXPECT_EQ(got.num_heads, 4u);
  EXPECT_EQ(got.num_kv_heads, 2u);
  EXPECT_EQ(got.head_dim, 10u);
  EXPECT_EQ(got.max_position_embeddings, 512u);
  EXPECT_EQ(got.rope_theta, 1e6);
  EXPECT_EQ(got.rms_norm_eps, 1e-6);
  EXPECT_EQ(got.tie_word_embeddings, tied);
  EXPECT_EQ(got.architecture, "Qwen2ForCausalLM");

  // Names and shapes spelled out here, independently of the architecture table.
  ASSERT_NE(files.find("model.layers.2.self_attn.k_proj.bias"), nullptr);
  EXPECT_EQ(files.find("model.layers.2.self_attn.k_proj.bias")->shape, (std::vector<uint64_t>{20}));
  EXPECT_EQ(files.find("model.layers.0.self_attn.o_proj.weight")->shape, (std::vector<uint64_t>{40, 40}));
  EXPECT_EQ(files.find("model.layers.1.mlp.down_proj.weight")->shape, (std::vector<uint64_t>{40, 72}));
  EXPECT_EQ(files.find("model.embed_tokens.weight")->shape, (std::vector<uint64_t>{300, 40}));
  EXPECT_EQ(files.find("lm_head.weight") != nullptr, !tied);
  EXPECT_EQ(files.find("model.layers.3.input_layernorm.weight"), nullptr);
  EXPECT_EQ(files.tensor_count(), 2 + 3 * 12 + (tied ? 0 : 1));

  uint64_t bytes = 0;
  for (const TensorData& t : written) {
    const TensorRef* ref = files.find(t.name);
    ASSERT_NE(ref, nullptr) << t.name;
    EXPECT_EQ(ref->dtype, dtype);
    EXPECT_EQ(ref->shape, t.shape) << t.name;
    const std::vector<float> values = to_f32(*ref);
    ASSERT_EQ(values.size(), t.values.size());
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(values[i], t.values[i]) << t.name << "[" << i << "]";
    bytes += ref->bytes.size();
  }
  EXPECT_EQ(files.total_bytes(), bytes);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ModelFilesRoundTrip,
                         ::testing::Values(RoundTripCase{DType::F32, true, 1},
                                           RoundTripCase{DType::F16, false, 1},
                                           RoundTripCase{DType::BF16, true, 1},
                                           RoundTripCase{DType::BF16, false, 3},
                                           RoundTripCase{DType::F16, true, 2}),
                         [](const auto& info) { return case_name(info.param); });

// Test that the writer rounds to nearest even and the reader widens exactly, on values whose
// stored form is known by hand (ties, subnormals, overflow).
TEST(ModelFiles, HalfAndBfloatRoundingKnownValues) {
  TempDir dir;
  const std::vector<float> in = {
      1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65519.0f, 65520.0f, 0x1p-24f,       1.5f * 0x1p-25f,
      0x1p-25f,        3 * 0x1p-25f,        -2.5f,    0.1f,     1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f};
  const std::vector<float> f16 = {1.0f,     1.0f + 0x1p-9f, 65504.0f,       INFINITY,
                                  0x1p-24f, 0x1p-24f,       0.0f,           0x1p-23f,
                                  -2.5f,    0x1.998p-4f,    1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f};
  const std::vector<float> bf16 = {1.0f,     1.0f,         65536.0f, 65536.0f,   0x1p-24f, 1.5f * 0x1p-25f,
                                   0x1p-25f, 3 * 0x1p-25f, -2.5f,    0x1.9ap-4f, 1.0f,     1.0f + 0x1p-6f};
  for (auto [dtype, want] : {std::pair{DType::F16, f16}, {DType::BF16, bf16}}) {
    const fs::path p = dir.path / "t.safetensors";
    write_safetensors(p, {{"x", {3, 4}, in}}, dtype);
    const SafetensorsFile f(p.string());
    ASSERT_EQ(f.tensors().size(), 1u);
    const std::vector<float> got = to_f32(f.tensors()[0]);
    for (size_t i = 0; i < in.size(); ++i) {
      EXPECT_EQ(got[i], want[i]) << dtype_name(dtype) << " of " << in[i];
      EXPECT_EQ(round_to_dtype(in[i], dtype), want[i]) << dtype_name(dtype) << " of " << in[i];
    }
    // Chunk by chunk (as an upload converts), and a chunk of the wrong length refused.
    std::vector<float> chunked(in.size());
    const auto bytes = f.tensors()[0].bytes;
    to_f32(dtype, bytes.first(5 * 2), std::span(chunked).first(5));
    to_f32(dtype, bytes.subspan(5 * 2), std::span(chunked).subspan(5));
    EXPECT_EQ(chunked, got);
    EXPECT_TRUE(throws_error([&] { to_f32(dtype, bytes.first(3), std::span(chunked).first(2)); },
                             {"3 bytes of", "for 2 values"}));
  }
}

struct BadHeader {
  const char* label;
  std::string header;
  size_t data_bytes;
  std::vector<std::string> message;  // parts the error must contain
  uint64_t declared_len = 0;         // the length field when it lies
};

void PrintTo(const BadHeader& c, std::ostream* os) {
  *os << c.label;
}

class SafetensorsBadHeader : public ::testing::TestWithParam<BadHeader> {};

// Test that each corrupt file is refused with a message naming the file, the tensor and the problem.
TEST_P(SafetensorsBadHeader, RefusedWithClearError) {
  const BadHeader& c = GetParam();
  const auto bytes = raw_safetensors(c.header, c.data_bytes, c.declared_len);
  std::vector<std::string> parts = c.message;
  parts.push_back("bad.safetensors");
  EXPECT_TRUE(throws_error([&] { parse_safetensors(bytes, "bad.safetensors"); }, parts));
}

const std::string kF32x4 = R"("dtype":"F32","shape":[4])";
INSTANTIATE_TEST_SUITE_P(
    Cases, SafetensorsBadHeader,
    ::testing::Values(
        BadHeader{"LengthPastFile", "{}", 0, {"header length 1000 runs past the end", "16 bytes"}, 1000},
        BadHeader{"InvalidJson", R"({"a":{"dtype":)", 0, {"not valid JSON"}},
        BadHeader{"NotAnObject", "[1, 2]", 0, {"does not start with '{'"}},
        BadHeader{"OutOfRange",
                  R"({"w":{)" + kF32x4 + R"(,"data_offsets":[0,64]}})",
                  16,
                  {"\"w\"", "[0, 64] out of range", "holds 16 bytes"}},
        BadHeader{"Overlap",
                  R"({"a":{)" + kF32x4 + R"(,"data_offsets":[0,16]},"b":{)" + kF32x4 +
                      R"(,"data_offsets":[8,24]}})",
                  24,
                  {"\"b\"", "overlap tensor \"a\""}},
        BadHeader{"Hole",
                  R"({"a":{)" + kF32x4 + R"(,"data_offsets":[0,16]},"b":{)" + kF32x4 +
                      R"(,"data_offsets":[20,36]}})",
                  36,
                  {"\"b\"", "[16, 20)", "no holes"}},
        BadHeader{"TrailingBytes",
                  R"({"a":{)" + kF32x4 + R"(,"data_offsets":[0,16]}})",
                  20,
                  {"holds 20 bytes", "cover only 16"}},
        BadHeader{"Unaligned",
                  R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},)"
                  R"("b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
                  6,
                  {"\"b\"", "unaligned", "element size 4"}},
        BadHeader{"UnknownDtype",
                  R"({"w":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})",
                  16,
                  {"\"w\"", "unsupported dtype \"I64\""}},
        BadHeader{"SizeMismatch",
                  R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})",
                  16,
                  {"\"w\"", "[3] x F32 is 12 bytes", "hold 16"}},
        BadHeader{"NegativeDim",
                  R"({"w":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})",
                  16,
                  {"\"w\"", "not a size"}},
        BadHeader{"ShapeOverflow",
                  R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}})",
                  16,
                  {"\"w\"", "overflows 64 bits"}},
        BadHeader{"MissingOffsets", R"({"w":{"dtype":"F32","shape":[4]}})", 16, {"\"w\"", "data_offsets"}},
        BadHeader{"DuplicateName",
                  R"({"a":{)" + kF32x4 + R"(,"data_offsets":[0,16]},"a":{)" + kF32x4 +
                      R"(,"data_offsets":[0,16]}})",
                  16,
                  {"\"a\"", "named twice"}}),
    [](const auto& info) { return std::string(info.param.label); });

// Test that a well-formed header with metadata and an empty tensor parses, pointing into the bytes.
TEST(Safetensors, ValidHeaderPointsIntoTheFile) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[16,28]},)"
      R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"e":{"dtype":"F16","shape":[0,5],"data_offsets":[28,28]}})";
  const auto bytes = raw_safetensors(header, 28);
  const auto refs = parse_safetensors(bytes, "ok.safetensors");
  ASSERT_EQ(refs.size(), 3u);
  EXPECT_EQ(refs[0].name, "a");  // in file order
  EXPECT_EQ(refs[0].bytes.data(), bytes.data() + bytes.size() - 28);
  EXPECT_EQ(refs[1].name, "b");
  EXPECT_EQ(refs[1].dtype, DType::BF16);
  EXPECT_EQ(refs[1].shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(refs[1].bytes.size(), 12u);
  EXPECT_EQ(refs[2].elements(), 0u);
}

// Test that a file shorter than the length field, and one cut inside its data, are refused by
// name when opened from disk.
TEST(Safetensors, TruncatedFilesOnDisk) {
  TempDir dir;
  const fs::path p = dir.path / "model.safetensors";
  write_bytes(p, {std::byte{1}, std::byte{2}, std::byte{3}});
  EXPECT_TRUE(throws_error([&] { SafetensorsFile f(p.string()); }, {p.string(), "truncated: 3 bytes"}));
  write_bytes(p, {});
  EXPECT_TRUE(throws_error([&] { SafetensorsFile f(p.string()); }, {p.string(), "truncated: 0 bytes"}));

  write_safetensors(p, {{"w", {8}, std::vector<float>(8, 0.75f)}}, DType::F32);
  const std::string whole = slurp(p);
  fs::resize_file(p, whole.size() - 5);
  EXPECT_TRUE(throws_error([&] { SafetensorsFile f(p.string()); }, {p.string(), "\"w\"", "out of range"}));
  EXPECT_TRUE(
      throws_error([&] { SafetensorsFile f((dir.path / "none").string()); }, {"none", "cannot open"}));
}

// Test that a missing shard is named, with the index file and a tensor it should hold.
TEST(ModelFiles, MissingShardNamed) {
  TempDir dir;
  write_random_model(dir.path, small_config(false), DType::BF16, 7, 3);
  fs::remove(dir.path / "model-00002-of-00003.safetensors");
  EXPECT_TRUE(throws_error(
      [&] { ModelFiles f(dir.path); },
      {"model.safetensors.index.json", "shard \"model-00002-of-00003.safetensors\"", "missing"}));
}

// Test that an index naming the wrong shard for a tensor is refused.
TEST(ModelFiles, IndexDisagreeingWithShards) {
  TempDir dir;
  write_random_model(dir.path, small_config(true), DType::F16, 7, 2);
  auto index = nlohmann::json::parse(slurp(dir.path / "model.safetensors.index.json"));
  index["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors";
  std::ofstream(dir.path / "model.safetensors.index.json") << index.dump();
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); }, {"model.norm.weight", "does not hold it"}));
}

// Test that opening a folder names a tensor of the architecture's table that no file holds (the
// untied lm_head, a layer's MLP weight, a Qwen3 q_norm, a Qwen2 bias).
TEST(ModelFiles, MissingTensorNamed) {
  ModelConfig qwen3 = small_config(true);
  qwen3.architecture = "Qwen3ForCausalLM";
  const std::pair<ModelConfig, std::string> cases[] = {
      {small_config(false), "lm_head.weight"},
      {small_config(false), "model.layers.1.mlp.up_proj.weight"},
      {small_config(true), "model.layers.2.self_attn.v_proj.bias"},
      {qwen3, "model.layers.1.self_attn.q_norm.weight"},
      {qwen3, "model.layers.0.self_attn.k_norm.weight"}};
  for (const auto& [c, missing] : cases) {
    TempDir dir;
    auto tensors = write_random_model(dir.path, c, DType::F32, 3);
    std::erase_if(tensors, [&](const TensorData& t) { return t.name == missing; });
    write_model_folder(dir.path, model_config_json(c), tensors, DType::F32);
    EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); }, {"\"" + missing + "\"", "in none of"}));
  }
}

// Test that the table decides which tensors a folder holds: a Qwen3 folder has q/k norms of
// [head_dim] and no biases, a Llama one neither; a Qwen3 config over Qwen2 weights (biases, no
// norms) is refused naming the missing norm.
TEST(ModelFiles, ArchitectureTables) {
  for (const char* arch : {"Qwen3ForCausalLM", "LlamaForCausalLM"}) {
    TempDir dir;
    ModelConfig c = small_config(false);
    c.architecture = arch;
    write_random_model(dir.path, c, DType::F32, 5);
    const ModelFiles files(dir.path);
    EXPECT_EQ(files.config().architecture, arch);
    const bool qwen3 = std::string(arch) == "Qwen3ForCausalLM";
    ASSERT_EQ(files.find("model.layers.2.self_attn.q_norm.weight") != nullptr, qwen3);
    if (qwen3) {
      EXPECT_EQ(files.find("model.layers.2.self_attn.k_norm.weight")->shape, (std::vector<uint64_t>{10}));
    }
    EXPECT_EQ(files.find("model.layers.0.self_attn.v_proj.bias"), nullptr);
    EXPECT_EQ(files.tensor_count(), 3 + 3 * (qwen3 ? 11 : 9));
  }
  TempDir dir;
  write_random_model(dir.path, small_config(true), DType::F32, 5);
  ModelConfig qwen3 = small_config(true);
  qwen3.architecture = "Qwen3ForCausalLM";
  std::ofstream(dir.path / "config.json") << model_config_json(qwen3);
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); },
                           {"model.layers.0.self_attn.q_norm.weight", "in none of"}));
}

// Test that weights written for another intermediate size disagree with config.json by name
// and shape.
TEST(ModelFiles, ShapeDisagreeingWithConfig) {
  TempDir dir;
  ModelConfig other = small_config(true);
  other.intermediate_size = 64;
  write_random_model(dir.path, other, DType::F32, 3);
  std::ofstream(dir.path / "config.json") << model_config_json(small_config(true));
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); },
                           {"model.safetensors", "model.layers.0.mlp.gate_proj.weight", "shape [64, 40]",
                            "expected [72, 40]", "config.json"}));
  std::ofstream(dir.path / "config.json") << model_config_json(other);
  const ModelFiles files(dir.path);
  EXPECT_TRUE(throws_error([&] { files.require("model.norm.weight", {41}); }, {"[40]", "expected [41]"}));
}

// Test that a corrupt weights file fails the folder with the file's path.
TEST(ModelFiles, CorruptWeightsFileNamed) {
  TempDir dir;
  write_random_model(dir.path, small_config(true), DType::F16, 3);
  const fs::path p = dir.path / "model.safetensors";
  std::string bytes = slurp(p);
  bytes[8] = '[';  // the header no longer starts with '{'
  std::ofstream(p, std::ios::binary) << bytes;
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); }, {p.string(), "does not start with '{'"}));
  fs::remove(p);
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); }, {"no model.safetensors"}));
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path / "nowhere"); }, {"nowhere", "no such directory"}));
}

nlohmann::json base_config() {
  return nlohmann::json::parse(model_config_json(small_config(false)));
}

ModelConfig parse(const nlohmann::json& j) {
  return parse_model_config(j.dump(), "dir/config.json");
}

// Test that each required field of config.json, when missing, is named.
TEST(ModelConfigJson, MissingRequiredFieldNamed) {
  for (const char* field : {"architectures", "vocab_size", "hidden_size", "intermediate_size",
                            "num_hidden_layers", "num_attention_heads", "max_position_embeddings"}) {
    auto j = base_config();
    j.erase(field);
    EXPECT_TRUE(
        throws_error([&] { parse(j); }, {"dir/config.json", std::string("\"") + field + "\"", "missing"}));
  }
}

// Test that other architectures and unsupported variants are refused by name and value.
TEST(ModelConfigJson, UnsupportedRefused) {
  auto j = base_config();
  for (const char* arch : {"MistralForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"}) {
    j["architectures"] = {arch};
    EXPECT_TRUE(throws_error([&] { parse(j); },
                             {"dir/config.json", "unsupported architecture \"" + std::string(arch) + "\"",
                              "Qwen2ForCausalLM", "Qwen3ForCausalLM", "LlamaForCausalLM"}));
  }
  j = base_config();
  j["num_experts"] = 8;
  EXPECT_TRUE(throws_error([&] { parse(j); }, {"\"num_experts\" 8", "mixture-of-experts"}));
  for (const char* type : {"dynamic", "linear", "longrope"}) {
    j = base_config();
    j["rope_scaling"] = {{"type", type}, {"factor", 4.0}};
    EXPECT_TRUE(throws_error([&] { parse(j); }, {"rope_scaling.rope_type \"" + std::string(type) + "\"",
                                                 "default, llama3 and yarn"}));
  }
  j = base_config();
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"original_max_position_embeddings", 8192}};
  EXPECT_TRUE(throws_error([&] { parse(j); }, {"rope_scaling.high_freq_factor is missing", "llama3"}));
  j["rope_scaling"]["high_freq_factor"] = 0.5;
  EXPECT_TRUE(throws_error([&] { parse(j); }, {"low_freq_factor (1)", "high_freq_factor (0.5)"}));
  j = base_config();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 256}};
  EXPECT_TRUE(throws_error([&] { parse(j); }, {"rope_scaling.factor 4.0", "max_position_embeddings"}));
  j = base_config();
  j["use_sliding_window"] = true;
  EXPECT_TRUE(throws_error([&] { parse(j); }, {"use_sliding_window"}));
  for (const char* arch : {"Qwen3ForCausalLM", "LlamaForCausalLM"}) {
    j = base_config();
    j["architectures"] = {arch};
    j["attention_bias"] = true;
    EXPECT_TRUE(throws_error([&] { parse(j); }, {"\"attention_bias\": true", arch}));
  }
  j = base_config();
  j["architectures"] = {"LlamaForCausalLM"};
  j["mlp_bias"] = true;
  EXPECT_TRUE(throws_error([&] { parse(j); }, {"\"mlp_bias\": true"}));
  j = base_config();
  j["num_key_value_heads"] = 3;
  EXPECT_TRUE(throws_error([&] { parse(j); }, {"num_attention_heads (4)", "num_key_value_heads (3)"}));
  j = base_config();
  j["hidden_size"] = 42;
  j.erase("head_dim");
  EXPECT_TRUE(throws_error([&] { parse(j); }, {"hidden_size 42", "head_dim"}));
  j = base_config();
  j["vocab_size"] = -5;
  EXPECT_TRUE(throws_error([&] { parse(j); }, {"\"vocab_size\" is -5"}));
  j = base_config();
  j["hidden_act"] = "gelu";
  EXPECT_TRUE(throws_error([&] { parse(j); }, {"hidden_act", "gelu"}));
  EXPECT_TRUE(throws_error([&] { parse_model_config("{\"vocab_size\": ", "dir/config.json"); },
                           {"dir/config.json", "not valid JSON"}));
}

// Test the defaults of transformers' Qwen2Config and the transformers-5 layout (rope_parameters).
TEST(ModelConfigJson, DefaultsAndNewerLayout) {
  auto j = base_config();
  for (const char* k : {"num_key_value_heads", "rope_theta", "rms_norm_eps", "tie_word_embeddings"})
    j.erase(k);
  ModelConfig c = parse(j);
  EXPECT_EQ(c.num_kv_heads, 4u);
  EXPECT_EQ(c.head_dim, 10u);
  EXPECT_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_FALSE(c.tie_word_embeddings);

  j["rope_parameters"] = {{"rope_theta", 1000000.0}, {"rope_type", "default"}};
  j["head_dim"] = 16;
  j["layer_types"] = {"full_attention", "full_attention", "full_attention"};
  c = parse(j);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.head_dim, 16u);
  j["rope_parameters"]["rope_type"] = "linear";
  EXPECT_TRUE(throws_error([&] { parse(j); }, {"rope_parameters.rope_type \"linear\""}));
}

// Test that RoPE scaling is read from either layout with every parameter, and that a written
// config reads back the same (the writer states the architecture and the scaling).
TEST(ModelConfigJson, RopeScaling) {
  auto j = base_config();
  j["architectures"] = {"LlamaForCausalLM"};
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 32.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  ModelConfig c = parse(j);
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Llama3);
  EXPECT_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_EQ(c.rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192u);
  const ModelConfig back = parse(nlohmann::json::parse(model_config_json(c)));
  EXPECT_EQ(back.rope_scaling.type, RopeScaling::Type::Llama3);
  EXPECT_EQ(back.rope_scaling.low_freq_factor, 1.0);
  EXPECT_EQ(back.rope_scaling.original_max_position_embeddings, 8192u);

  j = base_config();
  j.erase("rope_theta");
  j.erase("rope_scaling");
  j["rope_parameters"] = {{"rope_type", "yarn"},  {"rope_theta", 5e5},
                          {"factor", 4.0},        {"beta_fast", 16.0},
                          {"beta_slow", nullptr}, {"attention_factor", 1.2},
                          {"truncate", false},    {"original_max_position_embeddings", 128}};
  c = parse(j);
  EXPECT_EQ(c.rope_theta, 5e5);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Yarn);
  EXPECT_EQ(c.rope_scaling.beta_fast, 16.0);
  EXPECT_EQ(c.rope_scaling.beta_slow, 1.0);
  EXPECT_EQ(c.rope_scaling.attention_factor, 1.2);
  EXPECT_FALSE(c.rope_scaling.truncate);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 128u);
}

// Test generation_config.json: EOS as a list or an int, sampling defaults, a bad value named;
// config.json's ids are used when there is no generation_config.json.
TEST(ModelFiles, GenerationConfig) {
  TempDir dir;
  const ModelConfig c = small_config(true);
  auto config = nlohmann::json::parse(model_config_json(c));
  config["eos_token_id"] = 299;
  config["bos_token_id"] = 298;
  const auto tensors = write_random_model(dir.path, c, DType::F32, 3);
  write_model_folder(dir.path, config.dump(), tensors, DType::F32);
  {
    const ModelFiles files(dir.path);
    EXPECT_EQ(files.generation().eos_token_ids, (std::vector<uint32_t>{299}));
    EXPECT_EQ(files.generation().bos_token_id, 298u);
    EXPECT_EQ(files.generation().temperature, 1.0);
    EXPECT_EQ(files.generation().top_k, 50u);
  }
  const std::string gen = R"({"bos_token_id": 297, "do_sample": true, "eos_token_id": [296, 299],
    "pad_token_id": 297, "repetition_penalty": 1.05, "temperature": 0.7, "top_k": 20, "top_p": 0.8})";
  write_model_folder(dir.path, config.dump(), tensors, DType::F32, 1, gen);
  {
    const ModelFiles files(dir.path);
    const GenerationConfig& g = files.generation();
    EXPECT_EQ(g.eos_token_ids, (std::vector<uint32_t>{296, 299}));
    EXPECT_EQ(g.bos_token_id, 297u);
    EXPECT_EQ(g.pad_token_id, 297u);
    EXPECT_TRUE(g.do_sample);
    EXPECT_EQ(g.temperature, 0.7);
    EXPECT_EQ(g.top_k, 20u);
    EXPECT_EQ(g.top_p, 0.8);
    EXPECT_EQ(g.repetition_penalty, 1.05);
  }
  write_model_folder(dir.path, config.dump(), tensors, DType::F32, 1, R"({"top_p": 2})");
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); }, {"generation_config.json", "top_p"}));
  write_model_folder(dir.path, config.dump(), tensors, DType::F32, 1, R"({"eos_token_id": [1, "x"]})");
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); }, {"generation_config.json", "eos_token_id"}));
}

// ---- Weights from the files onto the GPU (llm::WeightLoader) ----

// Test that `--dtype auto` keeps a checkpoint's 16-bit type (and a GGUF tensor's ggml type) and
// stores f32 checkpoints as f16.
TEST(WeightLoader, AutoStorageIsTheCheckpointsSixteenBitType) {
  EXPECT_EQ(storage_format(std::nullopt, DType::BF16), gpu::WeightFormat::BF16);
  EXPECT_EQ(storage_format(std::nullopt, DType::F16), gpu::WeightFormat::F16);
  EXPECT_EQ(storage_format(std::nullopt, DType::F32), gpu::WeightFormat::F16);
  EXPECT_EQ(storage_format(gpu::WeightFormat::F32, DType::BF16), gpu::WeightFormat::F32);
  EXPECT_EQ(storage_format(std::nullopt, DType::Q6_K), gpu::WeightFormat::Q6_K);
  // A fused matrix: its sources' own format where they agree, else one that holds each exactly.
  auto fused = [](std::vector<DType> types, std::optional<gpu::WeightFormat> asked = std::nullopt) {
    return storage_format(asked, std::span<const DType>(types));
  };
  EXPECT_EQ(fused({DType::Q4_K, DType::Q4_K}), gpu::WeightFormat::Q4_K);
  EXPECT_EQ(fused({DType::F32, DType::F16}), gpu::WeightFormat::F16);
  EXPECT_EQ(fused({DType::Q5_0, DType::Q5_0, DType::Q8_0}), gpu::WeightFormat::Q8_0);
  EXPECT_EQ(fused({DType::Q4_0, DType::Q8_0}), gpu::WeightFormat::Q8_0);
  EXPECT_EQ(fused({DType::Q4_K, DType::Q4_K, DType::Q6_K}), gpu::WeightFormat::F32);
  EXPECT_EQ(fused({DType::Q5_1, DType::Q8_0}), gpu::WeightFormat::F32);
  EXPECT_EQ(fused({DType::F16, DType::BF16}), gpu::WeightFormat::F32);
  EXPECT_EQ(fused({DType::Q4_K, DType::Q6_K}, gpu::WeightFormat::Q8_0), gpu::WeightFormat::Q8_0);
}

// Test that each tensor takes its path — straight from the mapping (stored layout = file layout),
// a copy per row (padded or permuted rows), a conversion per value (another encoding) — and that
// the GPU holds the same bytes whichever path: a bf16 (f16) file loaded as bf16 (f16) against an
// f32 file of the same values converted. Odd columns (13: padded) and gate/up interleaving.
TEST(WeightLoader, DirectRowCopyAndConversionGiveTheSameBytes) {
  TempDir dir;
  for (DType d : {DType::BF16, DType::F16}) {
    const gpu::WeightFormat f = d == DType::BF16 ? gpu::WeightFormat::BF16 : gpu::WeightFormat::F16;
    SCOPED_TRACE(gpu::to_string(f));
    std::vector<TensorData> tensors = {
        {"a", {5, 16}, {}}, {"b", {3, 13}, {}}, {"g", {4, 24}, {}}, {"u", {4, 24}, {}}};
    uint32_t seed = 70;
    for (auto& t : tensors) {
      t.values = test::random_floats(t.shape[0] * t.shape[1], seed++, -2, 2);
      for (float& v : t.values) v = round_to_dtype(v, d);  // exact in the f32 file too
    }
    write_safetensors(dir.path / "same.safetensors", tensors, d);
    write_safetensors(dir.path / "f32.safetensors", tensors, DType::F32);
    const SafetensorsFile same(dir.path / "same.safetensors"), wide(dir.path / "f32.safetensors");
    std::vector<std::vector<std::byte>> got[2];
    WeightLoader::Paths paths[2];
    for (int i = 0; i < 2; ++i) {
      const auto& refs = (i == 0 ? same : wide).tensors();
      WeightLoader w(test::context(), f, {.label = "test.loader"});
      const auto a = w.matrix("a", {&refs[0]}, 5, 16);
      const auto b = w.matrix("b", {&refs[1]}, 3, 13);
      const auto gu = w.matrix("gate_up", {&refs[2], &refs[3]}, 8, 24, gate_up_source_row);
      w.load({}, {.chunk_bytes = 64});  // several chunks per tensor
      for (auto id : {a, b, gu}) {
        const auto& v = w.view(id);
        got[i].push_back(test::context().read_bytes(v.buffer, v.offset, v.bytes));
      }
      paths[i] = w.paths();
      if (i == 0) {
        EXPECT_EQ(0, std::memcmp(got[0][0].data(), refs[0].bytes.data(), refs[0].bytes.size()));
      }
    }
    EXPECT_EQ(paths[0].direct, 5u * 32);          // a: straight from the mapping
    EXPECT_EQ(paths[0].rows, 3u * 32 + 8u * 48);  // b padded to 16 columns, gate/up permuted
    EXPECT_EQ(paths[0].convert, 0u);
    EXPECT_EQ(paths[1].direct + paths[1].rows, 0u);
    EXPECT_EQ(paths[1].convert, 5u * 32 + 3u * 32 + 8u * 48);
    for (size_t t = 0; t < 3; ++t) EXPECT_EQ(got[0][t], got[1][t]) << "tensor " << t;
  }
}

// Test a whole model from a bf16 folder with the storage left to auto: the weights stay bf16 on
// the GPU (from the mapping, no conversion), so the GPU computes with exactly the reference's
// weights: greedy tokens equal and logits within f32 rounding.
TEST(WeightLoader, Bf16FolderDecodesLikeTheReference) {
  TempDir dir;
  write_random_model(dir.path, test::small_llm_config(false), DType::BF16, 4321);
  const ModelFiles files(dir.path);
  const WeightLookup lookup = [&](std::string_view name) { return files.find(name); };
  Model model(test::context(), files.config(), lookup, {.ctx = 32, .prefill_chunk = 0});
  EXPECT_EQ(model.stats().weight_format, gpu::WeightFormat::BF16);
  const std::vector<uint32_t> prompt = {5, 77, 298, 1};
  const uint32_t n = 8;
  std::vector<std::vector<float>> logits;
  GenerateOptions opt;
  opt.on_logits = [&](std::span<const float> l) { logits.emplace_back(l.begin(), l.end()); };
  const auto tokens = model.generate(prompt, n, {}, opt);
  ref::Decoder reference(files.config(), ref::Weights::load(files.config(), lookup), 32);
  std::vector<std::vector<double>> want;
  EXPECT_EQ(tokens, reference.greedy(prompt, n, &want));
  ASSERT_EQ(logits.size(), want.size());
  for (size_t i = 0; i < n; ++i)
    EXPECT_LE(test::normalised_error<double>(logits[i], want[i]), 1e-4) << "step " << i;
}

// Test that num_hidden_layers is checked against the layers the files hold before anything is
// sized: 2 over a 3-layer file (a truncated model), 4 (a missing layer) and 50,000,000 (whose
// expected-tensor list alone would take gigabytes) are each refused naming the field and the count.
TEST(ModelFiles, LayerCountAgainstTheFiles) {
  TempDir dir;
  const ModelConfig c = small_config(false);
  write_random_model(dir.path, c, DType::F16, 9);
  for (uint32_t layers : {2u, 4u, 50'000'000u}) {
    ModelConfig wrong = c;
    wrong.num_layers = layers;
    std::ofstream(dir.path / "config.json") << model_config_json(wrong);
    EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); },
                             {"config.json", "\"num_hidden_layers\" is " + std::to_string(layers),
                              "hold 3 layers", "model.layers.2."}));
  }
}

// Test what a folder holds beyond the table: an unknown tensor is named in a warning (transformers
// warns and runs too); a tied model's lm_head is named only when it differs from the embedding;
// nothing is warned of for a clean folder.
TEST(ModelFiles, UnusedTensorsAreNamed) {
  TempDir dir;
  const ModelConfig tied = small_config(true);
  auto tensors = write_random_model(dir.path, tied, DType::F32, 5);
  EXPECT_TRUE(ModelFiles(dir.path).warnings().empty());
  const TensorData embedding = *std::find_if(tensors.begin(), tensors.end(), [](const TensorData& t) {
    return t.name == "model.embed_tokens.weight";
  });
  auto with = [&](std::vector<TensorData> extra) {
    auto all = tensors;
    all.insert(all.end(), extra.begin(), extra.end());
    write_model_folder(dir.path, model_config_json(tied), all, DType::F32);
    return ModelFiles(dir.path).warnings();
  };
  EXPECT_TRUE(with({{"lm_head.weight", embedding.shape, embedding.values}}).empty());
  TensorData head = embedding;
  head.name = "lm_head.weight";
  head.values[7] += 0.25f;
  auto w = with({head});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("\"lm_head.weight\" differs from the embedding"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("tie_word_embeddings"), std::string::npos) << w[0];
  w = with({{"model.layers.0.mlp.extra.weight", {3}, {1, 2, 3}}, {"rotary.inv_freq", {2}, {1, 2}}});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("2 tensors are not part of Qwen2ForCausalLM"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("\"model.layers.0.mlp.extra.weight\""), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("\"rotary.inv_freq\""), std::string::npos) << w[0];
}

// Test that a shard index that does not list a tensor a shard holds is refused, naming both
// (transformers would leave that tensor uninitialised).
TEST(ModelFiles, IndexMissingATensor) {
  TempDir dir;
  write_random_model(dir.path, small_config(false), DType::BF16, 7, 2);
  auto index = nlohmann::json::parse(slurp(dir.path / "model.safetensors.index.json"));
  index["weight_map"].erase("model.layers.1.mlp.down_proj.weight");
  std::ofstream(dir.path / "model.safetensors.index.json") << index.dump();
  EXPECT_TRUE(
      throws_error([&] { ModelFiles f(dir.path); },
                   {"model.safetensors.index.json", "does not list \"model.layers.1.mlp.down_proj.weight\"",
                    "-of-00002.safetensors"}));
}

// Test that the files of a folder are checked with stat() before they are opened: a FIFO (which
// open() would wait on forever), /dev/zero (endless), a directory, an oversized config and a
// folder that is a file or a symlink loop are each refused at once, naming the path.
TEST(ModelFiles, FilesCheckedBeforeOpening) {
  TempDir dir;
  write_random_model(dir.path, small_config(true), DType::F16, 3);
  const fs::path config = dir.path / "config.json", weights = dir.path / "model.safetensors";
  const std::string config_text = slurp(config);
  auto restore = [&] {
    fs::remove_all(config);
    std::ofstream(config) << config_text;
  };
  fs::remove(config);
  ASSERT_EQ(::mkfifo(config.c_str(), 0600), 0);
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); }, {config.string(), "not a regular file"}));
  fs::remove(config);
  fs::create_symlink("/dev/zero", config);
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); }, {config.string(), "not a regular file"}));
  fs::remove(config);
  fs::create_directory(config);
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); }, {config.string(), "is a directory"}));
  restore();
  fs::resize_file(config, (16u << 20) + 1);  // sparse: no disk used
  EXPECT_TRUE(
      throws_error([&] { ModelFiles f(dir.path); }, {config.string(), "16777217 bytes", "more than"}));
  restore();
  fs::rename(weights, dir.path / "moved");
  ASSERT_EQ(::mkfifo(weights.c_str(), 0600), 0);
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path); }, {weights.string(), "not a regular file"}));
  EXPECT_TRUE(throws_error([&] { ModelFiles f(config); }, {config.string(), "not a directory"}));
  const fs::path loop = dir.path / "loop";
  fs::create_symlink(loop, loop);
  EXPECT_TRUE(
      throws_error([&] { ModelFiles f(loop); }, {loop.string(), "not a model folder", "symbolic links"}));
}

// Test that weights are counted per tensor as they upload: NaN or infinite values in the file, and
// finite f32 values above 65504 that would become infinite stored as f16 (the default for f32
// checkpoints), are errors naming the tensor and the count (and --dtype f32 / bf16 for the
// overflow); with --dtype f32 the large values load.
TEST(WeightLoader, NonFiniteAndF16OverflowNamedPerTensor) {
  TempDir dir;
  const ModelConfig c = test::small_llm_config(false);
  const auto clean = write_random_model(dir.path, c, DType::F32, 11);
  auto load = [&](std::optional<gpu::WeightFormat> dtype) {
    const ModelFiles files(dir.path);
    Model m(test::context(), files.config(), [&](std::string_view n) { return files.find(n); },
            {.dtype = dtype, .ctx = 8, .prefill_chunk = 0});
  };
  auto with = [&](const std::string& name, std::vector<std::pair<size_t, float>> values) {
    auto tensors = clean;
    for (auto& t : tensors)
      if (t.name == name)
        for (auto [i, v] : values) t.values[i] = v;
    write_model_folder(dir.path, model_config_json(c), tensors, DType::F32);
  };
  const float inf = std::numeric_limits<float>::infinity();
  with("model.layers.1.mlp.down_proj.weight", {{3, 70000.0f}, {40, -65520.0f}, {41, 65519.0f}});
  EXPECT_TRUE(
      throws_error([&] { load(std::nullopt); }, {"\"model.layers.1.mlp.down_proj.weight\" (2 values)",
                                                 "above 65504", "f16", "--dtype f32", "--dtype bf16"}));
  EXPECT_NO_THROW(load(gpu::WeightFormat::F32));
  with("model.layers.0.self_attn.k_proj.weight", {{0, std::nanf("")}, {5, inf}, {6, -inf}});
  EXPECT_TRUE(throws_error([&] { load(gpu::WeightFormat::F32); },
                           {"NaN or infinite", "\"model.layers.0.self_attn.k_proj.weight\" (3 values)"}));
  with("lm_head.weight", {{9, std::nanf("")}});
  EXPECT_TRUE(throws_error([&] { load(std::nullopt); }, {"\"lm_head.weight\" (1 values)"}));
  with("model.layers.2.post_attention_layernorm.weight", {{1, inf}});
  EXPECT_TRUE(throws_error([&] { load(std::nullopt); }, {"NaN or infinite", "2.post_attention_norm"}));
}

// Test that every buffer the model binds is sized in 64 bits and checked against the device
// before any weight is read: the KV cache of head_dim 128 x 32 KV heads x --ctx 1,048,577
// (2^32 + 4,096 words, which 32-bit arithmetic made a 16 KB cache), and one case per buffer kind,
// each named with the fix. No weights are needed: the lookup is never called.
TEST(Model, BuffersPastTheDeviceLimitNamedBeforeLoading) {
  auto& ctx = test::context();
  const uint64_t cap = std::min(ctx.limits().max_buffer_size, ctx.limits().max_storage_buffer_binding_size);
  const WeightLookup none = [](std::string_view) -> const TensorRef* {
    ADD_FAILURE() << "weights were read before the sizes were checked";
    return nullptr;
  };
  auto config = [](uint32_t heads, uint32_t kv, uint32_t hd) {
    ModelConfig c = test::small_llm_config(true);
    c.num_heads = heads, c.num_kv_heads = kv, c.head_dim = hd, c.max_position_embeddings = UINT32_MAX;
    return c;
  };
  EXPECT_TRUE(
      throws_error([&] { Model m(ctx, config(32, 32, 128), none, {.ctx = 1'048'577}); },
                   {"'llm.k_cache'", "17179885568 bytes at --ctx 1048577", "lower --ctx to at most"}));
  // One kv head of head_dim 2: 2 words per position. The --ctx the message suggests must fit
  // (with the padding to 8 words) and be within a few positions of the cap.
  const uint32_t over = uint32_t(std::min<uint64_t>(cap / 8 + 1, UINT32_MAX - 1));
  std::string message;
  try {
    Model m(ctx, config(1, 1, 2), none, {.ctx = over});
  } catch (const Error& e) {
    message = e.what();
  }
  const size_t at = message.find("lower --ctx to at most ");
  ASSERT_NE(at, std::string::npos) << message;
  EXPECT_NE(message.find("'llm.k_cache'"), std::string::npos) << message;
  const uint64_t suggested = std::stoull(message.substr(at + 23));
  EXPECT_LE(4 * pad8(2 * suggested), cap) << message;
  EXPECT_GE(suggested + 16, std::min<uint64_t>(cap / 8, UINT32_MAX / 2)) << message;
  // 64 heads, chunks of one position: the partials (heads x positions x (hd + 2)) pass first.
  const uint32_t partials_ctx = uint32_t(std::min<uint64_t>(cap / (4 * 64 * 4) + 1, UINT32_MAX - 1));
  EXPECT_TRUE(throws_error(
      [&] { Model m(ctx, config(64, 1, 2), none, {.ctx = partials_ctx, .attention = {.chunk = 1}}); },
      {"'llm.attention_partials'", "lower --ctx"}));
  ModelConfig wide = config(4, 2, 12);
  wide.vocab_size = (1u << 31) - 1;
  EXPECT_TRUE(throws_error([&] { Model m(ctx, wide, none, {.ctx = 8}); },
                           {"'llm.logits'", "does not fit this device"}));
}

}  // namespace
}  // namespace wgfuse::llm
