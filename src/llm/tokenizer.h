// Tokenizer: byte-level BPE as Hugging Face `tokenizers` runs a Qwen2 (or Qwen3, Llama 3, GPT-2)
// tokenizer.json.
//
// encode: added tokens are matched on the raw text first (leftmost, longest; lstrip / rstrip /
// single_word as the file says); the text between them is NFC-normalized (ICU), split by the
// pre-tokenizer's regex (PCRE2 with Unicode properties, the pattern taken from the file), mapped
// byte-for-byte (GPT-2's bytes-to-unicode table is a bijection, so BPE here works on raw bytes
// and the vocabulary is converted once at load) and merged by rank.
//
// Input must be valid UTF-8: Hugging Face's Python API takes `str`, so invalid bytes never reach
// it; here they are an Error naming the byte offset (no silent replacement).
// decode: the bytes of each run of model tokens, as UTF-8 with every invalid or incomplete
// sequence replaced by U+FFFD, maximal subpart by maximal subpart (Rust's from_utf8_lossy in the
// reference's ByteLevel decoder); added tokens end a run and are appended as written, as the
// reference does. StreamDecoder gives the same text piecewise.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgfuse::llm {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;      // skipped by decode(skip_special = true)
  bool lstrip = false;       // swallows whitespace on its left
  bool rstrip = false;       // ... and on its right
  bool normalized = false;   // matched on the NFC text instead of the raw text
  bool single_word = false;  // only when not inside a word
};

// One step of the pre-tokenizer chain (tokenizer.json's "pre_tokenizer", a Sequence flattened).
struct PreTokenizerSpec {
  enum class Kind { Split, ByteLevel } kind = Kind::Split;
  std::string pattern;            // Split: a regex (PCRE2, Unicode properties), or a literal string
  bool literal = false;           // Split: `pattern` is a plain string
  bool invert = false;            // Split: the gaps are the pieces
  bool remove_matches = false;    // Split: behaviour "Removed" (else "Isolated")
  bool add_prefix_space = false;  // ByteLevel
  bool use_regex = false;         // ByteLevel: split by GPT-2's pattern first
  std::string where;              // names the step in errors
};

// A byte-level BPE tokenizer as data: what a tokenizer.json holds, or a GGUF file's tokenizer
// metadata (llm/gguf_model.h) says.
struct BpeSpec {
  std::vector<std::pair<std::string, int64_t>> vocab;       // token text (byte-level characters), id
  std::vector<std::pair<std::string, std::string>> merges;  // by rank
  std::vector<AddedToken> added;
  bool ignore_merges = false;  // a piece that is a whole token is that token
  bool nfc = false;            // text between added tokens is NFC-normalized
  std::vector<PreTokenizerSpec> pre;
  std::string encode_refused;  // why encode() cannot match the source (decode still can), or empty
};

// The spec as a Hugging Face tokenizer.json that from_json_text reads back to the same tokenizer:
// model BPE (vocab, merges as pairs, ignore_merges), the NFC normalizer where set, the
// pre-tokenizer chain (one step, or a Sequence), the ByteLevel decoder, the added tokens with
// their ids and flags. What `wgfuse serve` hands the page for a GGUF file. An Error with
// encode_refused's message where that is set (the file could not encode as its source does).
std::string tokenizer_json_text(const BpeSpec& spec);

class Tokenizer {
 public:
  // From its parts; `name` is what errors call it (the file). Checks the vocabulary is byte-level
  // (every byte has a token), ids are given once, every merge's tokens exist.
  static Tokenizer from_spec(BpeSpec spec, const std::string& name);
  // tokenizer.json: the "model" (BPE), "normalizer", "pre_tokenizer", "decoder", "added_tokens".
  // Anything it does not implement exactly is an Error naming the file and the field.
  static Tokenizer from_file(const std::filesystem::path& tokenizer_json);
  // The same from text already read; `name` is what errors call it.
  static Tokenizer from_json_text(std::string_view json_text, const std::string& name);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Error when the file's post_processor adds special tokens (Llama 3's BOS): not implemented, so
  // refused rather than encoded differently from Hugging Face; decode() still works.
  std::vector<int32_t> encode(std::string_view utf8) const;
  // Makes encode() an Error with this message (a tokenizer_config.json asking for a BOS).
  void refuse_encode(std::string why);
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  // Size of the id space: regular vocabulary and added tokens (the largest id + 1).
  size_t vocab_size() const;
  // The token's text as the file spells it (byte-level characters, e.g. "Ġthe"); Error if unknown.
  const std::string& token_text(int32_t id) const;
  // The bytes a token stands for (an added token's content as written); Error if unknown.
  const std::string& token_bytes(int32_t id) const;
  std::optional<int32_t> token_id(std::string_view token_text) const;
  const std::vector<AddedToken>& added_tokens() const;
  bool is_special(int32_t id) const;
  bool is_added(int32_t id) const;  // an added token (special or not), decoded as written

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Decodes ids one at a time. A token that ends inside a UTF-8 sequence yields nothing for those
// bytes until the rest arrives; the concatenation of every push() and finish() equals
// Tokenizer::decode of all the ids.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false)
      : tokenizer_(tokenizer), skip_special_(skip_special) {}
  std::string push(int32_t id);
  // Whatever is still held (an incomplete sequence becomes U+FFFD).
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::string pending_;  // bytes of an incomplete UTF-8 sequence
};

// The position of the first byte that is not part of valid UTF-8 (surrogates and overlongs
// included), or nullopt.
std::optional<size_t> first_invalid_utf8(std::string_view bytes);
// Valid UTF-8 from any bytes: each maximal invalid subpart becomes U+FFFD (from_utf8_lossy).
std::string utf8_lossy(std::string_view bytes);
// NFC (ICU). Input must be valid UTF-8.
std::string nfc(std::string_view utf8);

}  // namespace wgfuse::llm
