#include "llm/gguf_model.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "llm/architecture.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

// tokenizer.ggml.token_type (llama.cpp's llama_token_type).
enum TokenType : int64_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6
};

// The Split regexes of the tokenizer.json files llama.cpp names by tokenizer.ggml.pre (each
// checked in llama.cpp's llama-vocab.cpp against the same pre-tokenizer's).
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A pre-tokenizer name and what the tokenizer.json it stands for says (pre_tokenizer, normalizer,
// model.ignore_merges).
struct PreTokenizerEntry {
  const char* name;
  const char* split;  // a Split (Isolated) before the byte-level step, or nullptr
  bool gpt2_regex;    // the ByteLevel step splits by GPT-2's pattern (use_regex)
  bool nfc;
  bool ignore_merges;
};
constexpr PreTokenizerEntry kPreTokenizers[] = {
    {"qwen2", kQwen2Regex, false, true, false},       // Qwen2, Qwen2.5, Qwen3
    {"llama-bpe", kLlama3Regex, false, false, true},  // Llama 3.x
    {"smollm", R"(\p{N})", true, false, false},       // SmolLM2: Digits(individual), ByteLevel
    {"gpt-2", nullptr, true, false, false},           // GPT-2: ByteLevel with its regex
};

[[noreturn]] void fail(const GgufFile& f, const std::string& problem) {
  throw Error(f.path() + ": " + problem);
}

uint32_t positive_u32(const GgufFile& f, const std::string& key, uint64_t v) {
  if (v == 0 || v > std::numeric_limits<uint32_t>::max())
    fail(f, "metadata \"" + key + "\" is " + std::to_string(v) + ", expected a positive integer below 2^32");
  return uint32_t(v);
}

std::optional<uint32_t> optional_u32(const GgufFile& f, const std::string& key) {
  auto v = f.uint(key);
  if (!v) return std::nullopt;
  return positive_u32(f, key, *v);
}

uint32_t required_u32(const GgufFile& f, const std::string& key) {
  auto v = optional_u32(f, key);
  if (!v) fail(f, "required metadata \"" + key + "\" is missing");
  return *v;
}

void read_rope_scaling(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  RopeScaling& s = c.rope_scaling;
  const std::string k = arch + ".rope.scaling.";
  const std::string type(f.string(k + "type").value_or("none"));
  if (const GgufTensor* t = f.find_tensor("rope_freqs.weight")) {
    if (type != "none") fail(f, "rope_freqs.weight and rope scaling type \"" + type + "\" together");
    const TensorRef ref = f.tensor_ref(*t, t->name);
    if (t->shape.size() != 1 || t->shape[0] != c.head_dim / 2)
      fail(f, "tensor \"rope_freqs.weight\" has shape " + shape_text(t->shape) + ", expected [" +
                  std::to_string(c.head_dim / 2) + "] (head_dim / 2)");
    s.type = RopeScaling::Type::Factors;
    s.freq_factors = tensor_values(ref);
    return;
  }
  if (type == "none") return;
  if (type != "yarn")
    fail(f, "metadata \"" + k + "type\" \"" + type +
                "\" is not supported (wgfuse implements RoPE scaling none, yarn and llama3's rope_freqs)");
  s.type = RopeScaling::Type::Yarn;
  auto factor = f.number(k + "factor");
  if (!factor) fail(f, "metadata \"" + k + "factor\" is missing (rope scaling yarn)");
  s.factor = *factor;
  if (auto o = optional_u32(f, k + "original_context_length")) s.original_max_position_embeddings = *o;
  s.beta_fast = f.number(k + "yarn_beta_fast").value_or(32.0);
  s.beta_slow = f.number(k + "yarn_beta_slow").value_or(1.0);
  s.attention_factor = f.number(k + "yarn_attn_factor").value_or(0.0);
  s.truncate = f.boolean(k + "yarn_truncate").value_or(true);
  if (auto ext = f.number(k + "yarn_ext_factor"); ext && *ext != 1.0 && *ext >= 0)
    fail(f, "metadata \"" + k + "yarn_ext_factor\" " + std::to_string(*ext) +
                " is not supported (transformers' yarn has none: 1)");
}

// A token id from the metadata, or nullopt when absent or outside the vocabulary (llama.cpp
// ignores those too).
std::optional<int32_t> token_id_key(const GgufFile& f, const char* key, size_t vocab) {
  auto v = f.uint(key);
  if (!v || *v >= vocab) return std::nullopt;
  return int32_t(*v);
}

// Row r of a tensor of `rows` rows moves to order(r), within each head of hd rows.
std::vector<std::byte> permute_rows(const TensorRef& t, uint32_t hd, bool to_hf) {
  const uint64_t rows = t.shape.at(0);
  if (hd == 0 || hd % 2 || rows % hd)
    throw Error("tensor \"" + t.name + "\": " + std::to_string(rows) + " rows are not whole heads of " +
                std::to_string(hd));
  const uint64_t row_bytes = t.bytes.size() / rows, half = hd / 2;
  std::vector<std::byte> out(t.bytes.size());
  for (uint64_t h = 0; h < rows; ++h) {
    // Hugging Face row h of its head <-> GGUF row 2 (h mod hd/2) + h div hd/2.
    const uint64_t in_head = h % hd, base = h - in_head;
    const uint64_t g = base + 2 * (in_head % half) + in_head / half;
    const uint64_t from = to_hf ? g : h, to = to_hf ? h : g;
    std::memcpy(out.data() + to * row_bytes, t.bytes.data() + from * row_bytes, row_bytes);
  }
  return out;
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile& f) {
  const auto arch = f.string("general.architecture");
  if (!arch) fail(f, "required metadata \"general.architecture\" is missing");
  const Architecture& a = find_gguf_architecture(*arch, f.path());
  const std::string p = std::string(*arch) + ".";
  ModelConfig c;
  c.architecture = std::string(a.name);
  c.hidden_size = required_u32(f, p + "embedding_length");
  c.num_layers = required_u32(f, p + "block_count");
  c.intermediate_size = required_u32(f, p + "feed_forward_length");
  c.num_heads = required_u32(f, p + "attention.head_count");
  c.max_position_embeddings = required_u32(f, p + "context_length");
  c.num_kv_heads = optional_u32(f, p + "attention.head_count_kv").value_or(c.num_heads);
  if (auto hd = optional_u32(f, p + "attention.key_length")) {
    c.head_dim = *hd;
  } else {
    if (c.hidden_size % c.num_heads != 0)
      fail(f, p + "embedding_length " + std::to_string(c.hidden_size) + " is not a multiple of " + p +
                  "attention.head_count " + std::to_string(c.num_heads) + " and there is no " + p +
                  "attention.key_length");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  for (const char* key : {"attention.value_length", "rope.dimension_count"})
    if (auto v = optional_u32(f, p + key); v && *v != c.head_dim)
      fail(f, "metadata \"" + p + key + "\" is " + std::to_string(*v) + ", not the head size " +
                  std::to_string(c.head_dim) + " (wgfuse rotates and attends over whole heads)");
  const auto eps = f.number(p + "attention.layer_norm_rms_epsilon");
  if (!eps) fail(f, "required metadata \"" + p + "attention.layer_norm_rms_epsilon\" is missing");
  c.rms_norm_eps = *eps;
  c.rope_theta = f.number(p + "rope.freq_base").value_or(10000.0);
  if (auto experts = f.uint(p + "expert_count"); experts && *experts > 0)
    fail(f, "metadata \"" + p + "expert_count\" is " + std::to_string(*experts) +
                ": mixture-of-experts models are not supported");

  const GgufTensor* embedding = f.find_tensor(gguf_name(TensorRole::Embedding));
  if (!embedding || embedding->shape.size() != 2)
    fail(f, "tensor \"" + gguf_name(TensorRole::Embedding) + "\" (the token embedding, 2-D) is missing");
  c.vocab_size = positive_u32(f, gguf_name(TensorRole::Embedding) + " rows", embedding->shape[0]);
  c.tie_word_embeddings = f.find_tensor(gguf_name(TensorRole::LmHead)) == nullptr;
  read_rope_scaling(f, std::string(*arch), c);
  check_config(c, f.path());
  return c;
}

GenerationConfig gguf_generation_config(const GgufFile& f) {
  GenerationConfig g;
  const size_t vocab = std::numeric_limits<int32_t>::max();
  if (auto eos = token_id_key(f, "tokenizer.ggml.eos_token_id", vocab))
    g.eos_token_ids.push_back(uint32_t(*eos));
  if (auto bos = token_id_key(f, "tokenizer.ggml.bos_token_id", vocab)) g.bos_token_id = uint32_t(*bos);
  if (auto pad = token_id_key(f, "tokenizer.ggml.padding_token_id", vocab)) g.pad_token_id = uint32_t(*pad);
  // The converter copies generation_config.json's values but not do_sample: a temperature
  // above 0 is taken as asking for sampling, as llama.cpp does.
  if (auto t = f.number("general.sampling.temp")) {
    g.temperature = *t;
    g.do_sample = *t > 0;
  }
  if (auto k = f.uint("general.sampling.top_k")) g.top_k = uint32_t(std::min<uint64_t>(*k, UINT32_MAX));
  g.top_p = f.number("general.sampling.top_p").value_or(g.top_p);
  g.repetition_penalty = f.number("general.sampling.penalty_repeat").value_or(g.repetition_penalty);
  if (!(g.temperature >= 0) || !(g.top_p > 0 && g.top_p <= 1) || !(g.repetition_penalty > 0))
    fail(f,
         "general.sampling.temp, top_p or penalty_repeat out of range (temp >= 0, top_p in (0, 1], "
         "penalty_repeat > 0)");
  return g;
}

BpeSpec gguf_tokenizer_spec(const GgufFile& f) {
  const auto model = f.string("tokenizer.ggml.model");
  if (!model) fail(f, "required metadata \"tokenizer.ggml.model\" is missing (the file has no tokenizer)");
  if (*model != "gpt2")
    fail(f, "tokenizer.ggml.model \"" + std::string(*model) +
                "\" is not supported (wgfuse implements byte-level BPE, \"gpt2\")");
  const auto tokens = f.strings("tokenizer.ggml.tokens");
  if (!tokens) fail(f, "required metadata \"tokenizer.ggml.tokens\" is missing");
  const auto types = f.integers("tokenizer.ggml.token_type");
  if (types && types->size() != tokens->size())
    fail(f, "tokenizer.ggml.token_type has " + std::to_string(types->size()) +
                " entries, tokenizer.ggml.tokens " + std::to_string(tokens->size()));
  const auto merges = f.strings("tokenizer.ggml.merges");
  if (!merges) fail(f, "required metadata \"tokenizer.ggml.merges\" is missing (byte-level BPE needs them)");

  const std::string pre(f.string("tokenizer.ggml.pre").value_or("gpt-2"));
  const PreTokenizerEntry* entry = nullptr;
  std::string known;
  for (const PreTokenizerEntry& e : kPreTokenizers) {
    if (e.name == pre) entry = &e;
    known += (known.empty() ? "" : ", ") + std::string(e.name);
  }
  if (!entry) fail(f, "tokenizer.ggml.pre \"" + pre + "\" is not supported (wgfuse knows " + known + ")");

  BpeSpec spec;
  spec.nfc = entry->nfc;
  spec.ignore_merges = entry->ignore_merges;
  using Kind = PreTokenizerSpec::Kind;
  const std::string where = f.path() + ": tokenizer.ggml.pre \"" + pre + "\"";
  if (entry->split) spec.pre.push_back({.kind = Kind::Split, .pattern = entry->split, .where = where});
  spec.pre.push_back({.kind = Kind::ByteLevel, .use_regex = entry->gpt2_regex, .where = where});

  spec.vocab.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    const int64_t type = types ? (*types)[i] : kNormal;
    const std::string text((*tokens)[i]);
    switch (type) {
      case kNormal:
      case kUnknown:
      case kByte:
        spec.vocab.emplace_back(text, int64_t(i));
        break;
      case kControl:
      case kUserDefined:
        // The converter writes added tokens as they match raw text (pre-normalized), and marks
        // special ones (and those that look special, <|...|>) as control tokens.
        spec.added.push_back({.content = text, .id = int32_t(i), .special = type == kControl});
        break;
      case kUnused:  // the converter's [PAD<id>] rows past the tokenizer's vocabulary
        break;
      default:
        fail(f, "tokenizer.ggml.token_type[" + std::to_string(i) + "] is " + std::to_string(type) +
                    ", not a token type (1..6)");
    }
  }
  spec.merges.reserve(merges->size());
  for (size_t r = 0; r < merges->size(); ++r) {
    const std::string_view m = (*merges)[r];
    const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;  // as llama.cpp splits
    if (sp == std::string_view::npos)
      fail(f, "tokenizer.ggml.merges[" + std::to_string(r) + "] \"" + std::string(m) +
                  "\" is not \"left right\"");
    spec.merges.emplace_back(std::string(m.substr(0, sp)), std::string(m.substr(sp + 1)));
  }
  for (const char* key : {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token"})
    if (f.boolean(key).value_or(false))
      spec.encode_refused = f.path() + ": " + key +
                            " is true: adding it is not implemented (encoding would lack that token): give "
                            "the prompt as token ids (--prompt-ids)";
  return spec;
}

Tokenizer gguf_tokenizer(const GgufFile& f) {
  return Tokenizer::from_spec(gguf_tokenizer_spec(f), f.path() + " (tokenizer.ggml)");
}

ChatTemplate gguf_chat_template(const GgufFile& f) {
  const auto t = f.string("tokenizer.chat_template");
  if (!t) fail(f, "no tokenizer.chat_template in the file (needed to chat; generate takes a plain prompt)");
  return ChatTemplate::from_text(std::string(*t), f.path() + ": tokenizer.chat_template");
}

std::string gguf_tokenizer_config_text(const Tokenizer& tokenizer, const GgufFile& f) {
  nlohmann::json c = {{"clean_up_tokenization_spaces", false},
                      {"add_bos_token", f.boolean("tokenizer.ggml.add_bos_token").value_or(false)},
                      {"add_eos_token", f.boolean("tokenizer.ggml.add_eos_token").value_or(false)}};
  for (const auto& [key, name] : {std::pair{"tokenizer.ggml.bos_token_id", "bos_token"},
                                  {"tokenizer.ggml.eos_token_id", "eos_token"},
                                  {"tokenizer.ggml.padding_token_id", "pad_token"}})
    if (auto id = token_id_key(f, key, tokenizer.vocab_size())) try {
        c[name] = tokenizer.token_text(*id);
      } catch (const Error&) {  // an unused row's id names no token: the config leaves it out
      }
  if (const auto t = f.string("tokenizer.chat_template")) c["chat_template"] = std::string(*t);
  return c.dump();
}

std::vector<int32_t> gguf_stop_token_ids(const Tokenizer& tokenizer, const GgufFile& f) {
  std::vector<int32_t> ids;
  for (const char* key :
       {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (auto id = token_id_key(f, key, tokenizer.vocab_size())) ids.push_back(*id);
  for (const char* text : {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>"})
    if (auto id = tokenizer.token_id(text); id && tokenizer.is_special(*id)) ids.push_back(*id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::vector<std::byte> rope_rows_to_hf(const TensorRef& t, uint32_t head_dim) {
  return permute_rows(t, head_dim, true);
}

std::vector<std::byte> rope_rows_to_gguf(const TensorRef& t, uint32_t head_dim) {
  return permute_rows(t, head_dim, false);
}

}  // namespace wgfuse::llm
