#include "llm/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>
#include <unordered_map>

#include "util/error.h"
#include "util/file.h"

namespace wgfuse::llm {

namespace {

using nlohmann::json;

// ---- UTF-8 ----

// One step of a UTF-8 decoder at s[i] (Unicode 3.9, table 3-7): a well-formed sequence, or the
// maximal subpart of an ill-formed one, which `truncated` marks when only the end of input cut
// a valid prefix short.
struct Utf8Step {
  size_t len;
  bool valid;
  bool truncated;
};

Utf8Step utf8_step(std::string_view s, size_t i) {
  const auto b0 = uint8_t(s[i]);
  if (b0 < 0x80) return {1, true, false};
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    need = 2;
  } else if (b0 == 0xED) {
    need = 2, hi = 0x9F;  // no surrogates
  } else if (b0 == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 3;
  } else if (b0 == 0xF4) {
    need = 3, hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {1, false, false};
  }
  for (size_t k = 1; k <= need; ++k) {
    if (i + k >= s.size()) return {k, false, true};
    const auto b = uint8_t(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return {k, false, false};
  }
  return {need + 1, true, false};
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Appends the lossy conversion of `bytes` to `out`; with `hold_truncated`, an incomplete
// sequence at the end is not converted: its length is returned so the caller can keep it.
size_t append_lossy(std::string_view bytes, std::string& out, bool hold_truncated) {
  size_t i = 0;
  while (i < bytes.size()) {
    const Utf8Step st = utf8_step(bytes, i);
    if (st.valid) {
      out.append(bytes.substr(i, st.len));
    } else if (st.truncated && hold_truncated) {
      return bytes.size() - i;
    } else {
      out.append(kReplacement);
    }
    i += st.len;
  }
  return 0;
}

// ICU's macros index with int32_t: decode within a window of at most 4 bytes around i.
char32_t next_codepoint(std::string_view s, size_t& i) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data()) + i;
  int32_t j = 0;
  UChar32 c;
  U8_NEXT(p, j, int32_t(std::min<size_t>(4, s.size() - i)), c);
  i += size_t(j);
  return char32_t(c);
}

char32_t prev_codepoint(std::string_view s, size_t& i) {
  const size_t base = i >= 4 ? i - 4 : 0;
  int32_t j = int32_t(i - base);
  UChar32 c;
  U8_PREV(reinterpret_cast<const uint8_t*>(s.data()) + base, 0, j, c);
  i = base + size_t(j);
  return char32_t(c);
}

// The reference's tests for the flags of added tokens: Rust regex \s (White_Space) for
// lstrip / rstrip, Rust regex \w for single_word.
bool is_whitespace(char32_t c) {
  return u_isUWhiteSpace(UChar32(c));
}
bool is_word_char(char32_t c) {
  const auto u = UChar32(c);
  // Join_Control is exactly U+200C and U+200D (PropList.txt). Asking ICU's u_hasBinaryProperty
  // instead would link its 30 MB data archive into the binary.
  return u_isUAlphabetic(u) || (U_GET_GC_MASK(u) & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0 ||
         u == 0x200C || u == 0x200D;
}

void append_utf8(std::string& out, char32_t c) {
  uint8_t buf[4];
  size_t n = 0;
  U8_APPEND_UNSAFE(buf, n, UChar32(c));  // c is a valid code point
  out.append(reinterpret_cast<const char*>(buf), n);
}

// ---- GPT-2's bytes-to-unicode: printable bytes stand for themselves, the other 68 become
// U+0100.. in byte order, so that every byte has a visible character. ----

struct ByteLevelTable {
  static constexpr char32_t kChars = 256 + 68;  // every character the table uses is below this
  std::array<char32_t, 256> byte_to_char{};
  std::array<int16_t, kChars> char_to_byte{};  // -1: not a byte-level character
  ByteLevelTable() {
    char_to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      byte_to_char[b] = printable ? char32_t(b) : next++;
      char_to_byte[byte_to_char[b]] = int16_t(b);
    }
  }
};

const ByteLevelTable& byte_level() {
  static const ByteLevelTable table;
  return table;
}

// A token's text to the bytes it stands for: every character through the table, or, when one
// is not in it, the text's own UTF-8 (as the reference's ByteLevel decoder does).
std::string byte_level_decode(std::string_view text) {
  const auto& table = byte_level().char_to_byte;
  std::string bytes;
  size_t i = 0;
  bytes.reserve(text.size());
  while (i < text.size()) {
    const char32_t c = next_codepoint(text, i);
    if (c >= ByteLevelTable::kChars || table[c] < 0) return std::string(text);
    bytes.push_back(char(table[c]));
  }
  return bytes;
}

// ---- PCRE2 ----

struct Regex {
  std::shared_ptr<pcre2_code> code;

  Regex(const std::string& pattern, bool literal, const std::string& where) {
    int err = 0;
    PCRE2_SIZE offset = 0;
    const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK | (literal ? PCRE2_LITERAL : 0);
    pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err,
                                  &offset, nullptr);
    if (!c) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw Error(where + ": the regex does not compile (PCRE2, at offset " + std::to_string(offset) +
                  "): " + reinterpret_cast<const char*>(msg));
    }
    code.reset(c, pcre2_code_free);
    pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);  // falls back to the interpreter when JIT is absent
  }

  // Calls on_span(begin, end, is_match) for every gap and match of `text`, in order.
  template <typename F>
  void for_each_span(std::string_view text, F&& on_span) const {
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
        pcre2_match_data_create_from_pattern(code.get(), nullptr), pcre2_match_data_free);
    size_t pos = 0, last = 0;
    while (pos <= text.size()) {
      const int rc = pcre2_match(code.get(), reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos,
                                 PCRE2_NO_UTF_CHECK, md.get(), nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) throw Error("tokenizer: PCRE2 match failed with code " + std::to_string(rc));
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
      const size_t b = ov[0], e = ov[1];
      if (e == b) {  // an empty match splits nothing; step over one character
        if (b >= text.size()) break;
        size_t next = b;
        next_codepoint(text, next);
        pos = next;
        continue;
      }
      if (b > last) on_span(last, b, false);
      on_span(b, e, true);
      last = pos = e;
    }
    if (last < text.size()) on_span(last, text.size(), false);
  }
};

// The ByteLevel pre-tokenizer's own split when use_regex is true (GPT-2's pattern, built into
// the reference rather than given by the file).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct PreTokenizer {
  PreTokenizerSpec::Kind kind;
  std::optional<Regex> regex;
  bool invert = false;
  bool remove_matches = false;
  bool add_prefix_space = false;
};

const json& field(const json& obj, const char* key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key)) throw Error(where + ": missing field \"" + key + "\"");
  return obj.at(key);
}

bool bool_or(const json& obj, const char* key, bool fallback, const std::string& where) {
  if (!obj.contains(key) || obj.at(key).is_null()) return fallback;
  if (!obj.at(key).is_boolean()) throw Error(where + ": \"" + key + "\" must be true or false");
  return obj.at(key).get<bool>();
}

std::string string_of(const json& j, const std::string& where) {
  if (!j.is_string()) throw Error(where + " must be a string");
  return j.get<std::string>();
}

void parse_pre_tokenizer(const json& j, const std::string& where, std::vector<PreTokenizerSpec>& out) {
  if (j.is_null()) return;
  using Kind = PreTokenizerSpec::Kind;
  const std::string type = string_of(field(j, "type", where), where + ".type");
  if (type == "Sequence") {
    const json& list = field(j, "pretokenizers", where);
    if (!list.is_array()) throw Error(where + ".pretokenizers must be a list");
    for (size_t i = 0; i < list.size(); ++i)
      parse_pre_tokenizer(list[i], where + ".pretokenizers[" + std::to_string(i) + "]", out);
  } else if (type == "Split") {
    const json& pattern = field(j, "pattern", where);
    PreTokenizerSpec p{.kind = Kind::Split};
    if (pattern.contains("Regex")) {
      p.pattern = string_of(pattern.at("Regex"), where + ".pattern.Regex");
      p.where = where + ".pattern.Regex";
    } else if (pattern.contains("String")) {
      p.pattern = string_of(pattern.at("String"), where + ".pattern.String");
      p.literal = true;
      p.where = where + ".pattern.String";
    } else {
      throw Error(where + ".pattern: expected {\"Regex\": …} or {\"String\": …}");
    }
    const std::string behavior = string_of(field(j, "behavior", where), where + ".behavior");
    if (behavior != "Isolated" && behavior != "Removed")
      throw Error(where + ".behavior \"" + behavior + "\" is not supported (only Isolated and Removed)");
    p.remove_matches = behavior == "Removed";
    p.invert = bool_or(j, "invert", false, where);
    out.push_back(std::move(p));
  } else if (type == "Digits") {
    // Rust's char::is_numeric is \p{N}: each digit alone, or runs of them.
    const bool individual = bool_or(j, "individual_digits", false, where);
    out.push_back({.kind = Kind::Split, .pattern = individual ? "\\p{N}" : "\\p{N}+", .where = where});
  } else if (type == "ByteLevel") {
    out.push_back({.kind = Kind::ByteLevel,
                   .add_prefix_space = bool_or(j, "add_prefix_space", true, where),
                   .use_regex = bool_or(j, "use_regex", true, where),
                   .where = where});
  } else {
    throw Error(where + ".type \"" + type + "\" is not supported (Sequence, Split, Digits, ByteLevel)");
  }
}

// The post-processor adds tokens around every encoded text in Hugging Face's encode() (Llama 3's
// TemplateProcessing puts <|begin_of_text|> first). Not implemented: the special tokens it would
// add, as text, or empty when it adds none (ByteLevel with trim_offsets only moves offsets).
std::string post_processor_tokens(const json& j, const std::string& where) {
  if (j.is_null()) return "";
  const std::string type = string_of(field(j, "type", where), where + ".type");
  if (type == "ByteLevel") return "";
  std::string added;
  if (type == "Sequence") {
    const json& list = field(j, "processors", where);
    for (size_t i = 0; i < list.size(); ++i)
      added += post_processor_tokens(list[i], where + ".processors[" + std::to_string(i) + "]");
    return added;
  }
  if (type != "TemplateProcessing") return type;
  for (const json& piece : field(j, "single", where))
    if (piece.contains("SpecialToken")) added += piece.at("SpecialToken").value("id", "?") + " ";
  return added;
}

// Only NFC (or nothing) is implemented; a Sequence of those is accepted.
bool parse_normalizer(const json& j, const std::string& where) {
  if (j.is_null()) return false;
  const std::string type = string_of(field(j, "type", where), where + ".type");
  if (type == "NFC") return true;
  if (type == "Sequence") {
    bool any = false;
    const json& list = field(j, "normalizers", where);
    for (size_t i = 0; i < list.size(); ++i)
      any |= parse_normalizer(list[i], where + ".normalizers[" + std::to_string(i) + "]");
    return any;
  }
  throw Error(where + ".type \"" + type + "\" is not supported (only NFC)");
}

// Lets the maps of token text be searched with a string_view, without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

uint64_t pair_key(int32_t a, int32_t b) {
  return (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
}

}  // namespace

// ---- the tokenizer ----

struct Tokenizer::Impl {
  std::string name;
  std::vector<std::string> id_text;   // as the file spells it
  std::vector<std::string> id_bytes;  // what it decodes to
  std::vector<uint8_t> id_known;
  std::vector<uint8_t> id_special;
  std::vector<uint8_t> id_added;
  StringMap<int32_t> text_to_id;
  StringMap<int32_t> bytes_to_id;  // the BPE model's vocabulary, in bytes
  std::array<int32_t, 256> byte_id{};
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  std::unordered_map<uint64_t, Merge> merges;
  bool ignore_merges = false;
  bool nfc = false;
  std::string encode_refused;  // why encode() cannot match the file (decode still can), or empty
  std::vector<PreTokenizer> pre;
  std::vector<AddedToken> added;
  std::array<std::vector<size_t>, 256> added_by_first_byte;  // indices into `added`, longest first

  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

  void bpe(std::string_view piece, std::vector<int32_t>& out) const;
  void encode_plain(std::string_view text, std::vector<int32_t>& out) const;
  void split_added(std::string_view text, bool normalized_pass,
                   const std::function<void(std::string_view, const AddedToken*)>& emit) const;
};

void Tokenizer::Impl::bpe(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (piece.size() == 1) {
    out.push_back(byte_id[uint8_t(piece[0])]);
    return;
  }
  if (ignore_merges) {
    if (auto it = bytes_to_id.find(piece); it != bytes_to_id.end()) {
      out.push_back(it->second);
      return;
    }
  }
  // Small pieces repeat (words); caching them is what makes ordinary text fast. Long ones
  // (digit runs, base64) rarely repeat and would only grow the cache.
  const bool cacheable = piece.size() <= 64;
  std::string key;
  if (cacheable) {
    key.assign(piece);
    std::lock_guard lock(cache_mutex);
    if (auto it = cache.find(key); it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  // Symbols in a linked list; a min-heap of candidate merges (rank, then leftmost position),
  // each checked on pop against the current neighbours, as the reference merges.
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  std::vector<Symbol> sym(piece.size());
  for (size_t i = 0; i < piece.size(); ++i)
    sym[i] = {byte_id[uint8_t(piece[i])], int32_t(i) - 1, i + 1 < piece.size() ? int32_t(i + 1) : -1, true};
  struct Candidate {
    int32_t rank, pos, merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t left) {
    if (left < 0 || sym[left].next < 0) return;
    if (auto it = merges.find(pair_key(sym[left].id, sym[sym[left].next].id)); it != merges.end())
      heap.push({it->second.rank, left, it->second.merged});
  };
  for (int32_t i = 0; i + 1 < int32_t(piece.size()); ++i) consider(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& left = sym[c.pos];
    if (!left.alive || left.next < 0) continue;
    const auto it = merges.find(pair_key(left.id, sym[left.next].id));
    if (it == merges.end() || it->second.merged != c.merged) continue;  // stale
    Symbol& right = sym[left.next];
    left.id = c.merged;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) sym[left.next].prev = c.pos;
    consider(left.prev);
    consider(c.pos);
  }
  const size_t first = out.size();
  for (int32_t i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
  if (cacheable) {
    std::lock_guard lock(cache_mutex);
    if (cache.size() > 200000) cache.clear();  // bounded memory on adversarial input
    cache.emplace(std::move(key), std::vector<int32_t>(out.begin() + first, out.end()));
  }
}

// Text between added tokens, already normalized: pre-tokenizer chain, then BPE per piece.
void Tokenizer::Impl::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<std::string> pieces{std::string(text)};
  for (const PreTokenizer& p : pre) {
    std::vector<std::string> next;
    for (std::string& piece : pieces) {
      if (p.kind == PreTokenizerSpec::Kind::ByteLevel && p.add_prefix_space && !piece.starts_with(' '))
        piece = " " + piece;
      if (!p.regex) {
        next.push_back(std::move(piece));
        continue;
      }
      p.regex->for_each_span(piece, [&](size_t b, size_t e, bool is_match) {
        if (p.invert) is_match = !is_match;
        if (!(is_match && p.remove_matches)) next.emplace_back(piece.substr(b, e - b));
      });
    }
    pieces = std::move(next);
  }
  for (const std::string& piece : pieces) bpe(piece, out);
}

// Splits `text` around the added tokens of one pass (those matched on raw text, or those
// matched on normalized text), leftmost-longest, and applies their strip / single_word flags.
void Tokenizer::Impl::split_added(
    std::string_view text, bool normalized_pass,
    const std::function<void(std::string_view, const AddedToken*)>& emit) const {
  size_t start_offset = 0;  // end of the last emitted match
  size_t i = 0;
  while (i < text.size()) {
    const AddedToken* best = nullptr;
    for (size_t k : added_by_first_byte[uint8_t(text[i])]) {
      const AddedToken& t = added[k];
      if (t.normalized != normalized_pass || !text.substr(i).starts_with(t.content)) continue;
      best = &t;  // candidates are sorted longest first
      break;
    }
    if (!best) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + best->content.size();
    if (best->single_word) {
      size_t b = start, e = stop;
      const bool word_before = start > 0 && is_word_char(prev_codepoint(text, b));
      const bool word_after = stop < text.size() && is_word_char(next_codepoint(text, e));
      if (word_before || word_after) {
        ++i;
        continue;
      }
    }
    if (best->lstrip) {
      size_t b = start;
      while (b > start_offset) {
        size_t p = b;
        if (!is_whitespace(prev_codepoint(text, p))) break;
        b = p;
      }
      start = b;
    }
    if (best->rstrip) {
      while (stop < text.size()) {
        size_t e = stop;
        if (!is_whitespace(next_codepoint(text, e))) break;
        stop = e;
      }
    }
    if (start > start_offset) emit(text.substr(start_offset, start - start_offset), nullptr);
    emit(text.substr(start, stop - start), best);
    start_offset = i = stop;
  }
  if (start_offset < text.size()) emit(text.substr(start_offset), nullptr);
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_file(const std::filesystem::path& path) {
  return from_json_text(
      read_file(path, "the tokenizer (a Hugging Face tokenizer.json is needed)", kMaxTokenizerBytes),
      path.string());
}

namespace {

// model.vocab and model.merges (two thirds of a Qwen tokenizer.json, 300k entries) taken out
// of the parse as they stream by: a DOM of them would cost more to build and free than all the
// rest of the load.
struct VocabAndMerges {
  std::vector<std::pair<std::string, int64_t>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
};

json parse_tokenizer_json(std::string_view text, const std::string& name, VocabAndMerges& out) {
  const std::string where = name + ": model";
  std::array<std::string, 3> keys;  // the key at depth 1 and 2
  std::string vocab_key;
  bool have_key = false;
  auto in = [&](const char* field) { return keys[1] == "model" && keys[2] == field; };
  auto on_event = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    using E = json::parse_event_t;
    if (event == E::key && depth <= 2) {
      keys[depth] = parsed.get<std::string>();
      if (depth == 1) keys[2].clear();
      return true;
    }
    if (depth == 3 && in("vocab")) {
      if (event == E::key) {
        vocab_key = parsed.get<std::string>(), have_key = true;
        return false;  // keeps the key out of the DOM's object too
      }
      if (event != E::value || !have_key || !parsed.is_number_integer() || parsed.get<int64_t>() < 0 ||
          parsed.get<int64_t>() > INT32_MAX)
        throw Error(where + ".vocab must map each token to a non-negative integer id" +
                    (have_key ? " (at \"" + vocab_key + "\")" : ""));
      out.vocab.emplace_back(std::move(vocab_key), parsed.get<int64_t>());
      have_key = false;
      return false;
    }
    if (depth == 3 && in("merges") && (event == E::value || event == E::array_end)) {
      const std::string w = where + ".merges[" + std::to_string(out.merges.size()) + "]";
      if (parsed.is_array() && parsed.size() == 2 && parsed[0].is_string() && parsed[1].is_string()) {
        out.merges.emplace_back(std::move(parsed[0].get_ref<std::string&>()),
                                std::move(parsed[1].get_ref<std::string&>()));  // ["a", "b"]
      } else if (parsed.is_string()) {                                          // "a b" (older files)
        const std::string& s = parsed.get_ref<const std::string&>();
        const size_t sp = s.find(' ');
        if (sp == std::string::npos) throw Error(w + ": expected \"left right\"");
        out.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else {
        throw Error(w + ": expected [\"left\", \"right\"] or \"left right\"");
      }
      return false;
    }
    return true;
  };
  try {
    return json::parse(text, on_event);
  } catch (const json::exception& e) {
    throw Error(name + ": not valid JSON: " + e.what());
  }
}

}  // namespace

Tokenizer Tokenizer::from_json_text(std::string_view text, const std::string& name) {
  VocabAndMerges big;
  const json j = parse_tokenizer_json(text, name, big);
  if (!j.is_object()) throw Error(name + ": expected a JSON object at the top level");

  const json& model = field(j, "model", name);
  const std::string where = name + ": model";
  if (model.contains("type") && string_of(model.at("type"), where + ".type") != "BPE")
    throw Error(where + ".type \"" + model.at("type").get<std::string>() + "\" is not supported (only BPE)");
  if (model.contains("dropout") && !model.at("dropout").is_null())
    throw Error(where + ".dropout is set: BPE dropout is random and not supported");
  if (bool_or(model, "byte_fallback", false, where)) throw Error(where + ".byte_fallback is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && !model.at(key).is_null() &&
        !string_of(model.at(key), where + "." + key).empty())
      throw Error(where + "." + key + " is not supported (byte-level BPE has none)");
  if (!field(model, "vocab", where).is_object()) throw Error(where + ".vocab must be an object of token: id");
  if (!field(model, "merges", where).is_array()) throw Error(where + ".merges must be a list");
  BpeSpec spec;
  spec.ignore_merges = bool_or(model, "ignore_merges", false, where);
  spec.vocab = std::move(big.vocab);
  spec.merges = std::move(big.merges);

  const json& added = j.contains("added_tokens") ? j.at("added_tokens") : json::array();
  if (!added.is_array()) throw Error(name + ": added_tokens must be a list");
  for (size_t k = 0; k < added.size(); ++k) {
    const std::string w = name + ": added_tokens[" + std::to_string(k) + "]";
    AddedToken t;
    t.content = string_of(field(added[k], "content", w), w + ".content");
    const json& idj = field(added[k], "id", w);
    if (!idj.is_number_integer() || idj.get<int64_t>() < 0 || idj.get<int64_t>() > INT32_MAX)
      throw Error(w + ".id must be a non-negative integer");
    t.id = int32_t(idj.get<int64_t>());
    t.special = bool_or(added[k], "special", false, w);
    t.lstrip = bool_or(added[k], "lstrip", false, w);
    t.rstrip = bool_or(added[k], "rstrip", false, w);
    t.normalized = bool_or(added[k], "normalized", !t.special, w);
    t.single_word = bool_or(added[k], "single_word", false, w);
    spec.added.push_back(std::move(t));
  }

  spec.nfc = parse_normalizer(j.value("normalizer", json()), name + ": normalizer");
  parse_pre_tokenizer(j.value("pre_tokenizer", json()), name + ": pre_tokenizer", spec.pre);
  if (const std::string adds =
          post_processor_tokens(j.value("post_processor", json()), name + ": post_processor");
      !adds.empty())
    spec.encode_refused = name + ": post_processor adds special tokens to every encoded text (" + adds +
                          ") as Hugging Face's encode() does, which wgfuse's tokenizer does not implement: "
                          "give the prompt as token ids (--prompt-ids)";
  const json decoder = j.value("decoder", json());
  if (decoder.is_null() || decoder.value("type", "") != "ByteLevel")
    throw Error(name + ": decoder must be ByteLevel (the only decoder implemented)");
  return from_spec(std::move(spec), name);
}

std::string tokenizer_json_text(const BpeSpec& spec) {
  if (!spec.encode_refused.empty()) throw Error(spec.encode_refused);
  json pre = json::array();
  for (const PreTokenizerSpec& p : spec.pre) {
    if (p.kind == PreTokenizerSpec::Kind::ByteLevel) {
      pre.push_back({{"type", "ByteLevel"},
                     {"add_prefix_space", p.add_prefix_space},
                     {"trim_offsets", true},
                     {"use_regex", p.use_regex}});
    } else {
      pre.push_back({{"type", "Split"},
                     {"pattern", {{p.literal ? "String" : "Regex", p.pattern}}},
                     {"behavior", p.remove_matches ? "Removed" : "Isolated"},
                     {"invert", p.invert}});
    }
  }
  json vocab = json::object();
  for (const auto& [text, id] : spec.vocab) vocab[text] = id;
  json merges = json::array();
  for (const auto& [a, b] : spec.merges) merges.push_back({a, b});
  json added = json::array();
  for (const AddedToken& t : spec.added)
    added.push_back({{"id", t.id},
                     {"content", t.content},
                     {"single_word", t.single_word},
                     {"lstrip", t.lstrip},
                     {"rstrip", t.rstrip},
                     {"normalized", t.normalized},
                     {"special", t.special}});
  const json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  const json j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", std::move(added)},
      {"normalizer", spec.nfc ? json{{"type", "NFC"}} : json()},
      {"pre_tokenizer", pre.empty()       ? json()
                        : pre.size() == 1 ? pre[0]
                                          : json{{"type", "Sequence"}, {"pretokenizers", pre}}},
      {"post_processor", nullptr},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", spec.ignore_merges},
        {"vocab", std::move(vocab)},
        {"merges", std::move(merges)}}},
  };
  return j.dump();
}

Tokenizer Tokenizer::from_spec(BpeSpec spec, const std::string& name) {
  auto impl = std::make_unique<Impl>();
  impl->name = name;
  impl->ignore_merges = spec.ignore_merges;
  const std::string where = name + ": model";

  int32_t max_id = -1;
  std::string max_at;  // where the largest id is given, for the message
  for (const auto& [tok, id] : spec.vocab) {
    if (id < 0 || id > INT32_MAX)
      throw Error(where + ".vocab: \"" + tok + "\" has id " + std::to_string(id) + ", not in 0..2^31-1");
    if (id > max_id) max_id = int32_t(id), max_at = "model.vocab[\"" + tok + "\"]";
  }
  for (size_t k = 0; k < spec.added.size(); ++k) {
    const AddedToken& t = spec.added[k];
    const std::string w = name + ": added_tokens[" + std::to_string(k) + "]";
    if (t.id < 0) throw Error(w + ".id must be a non-negative integer");
    if (t.content.empty()) throw Error(w + ".content is empty");
    if (first_invalid_utf8(t.content)) throw Error(w + ".content is not valid UTF-8");
    if (t.id > max_id) max_id = t.id, max_at = "added_tokens[" + std::to_string(k) + "]";
  }
  impl->added = std::move(spec.added);
  // The id tables are as long as the largest id: bounded by the entries the file holds, so one
  // large id cannot size them (real vocabularies are dense, padded by a few reserved ids).
  const uint64_t entries = spec.vocab.size() + impl->added.size();
  if (uint64_t(max_id) >= 2 * entries + 1024)
    throw Error(name + ": " + max_at + " has id " + std::to_string(max_id) + ", far above the " +
                std::to_string(entries) +
                " tokens the file defines (ids must stay below 2 x tokens + 1024): a "
                "damaged tokenizer.json");
  const size_t n = size_t(max_id + 1);
  impl->id_text.resize(n);
  impl->id_bytes.resize(n);
  impl->id_known.assign(n, 0);
  impl->id_special.assign(n, 0);
  impl->id_added.assign(n, 0);
  impl->text_to_id.reserve(n);
  for (auto& [tok, id64] : spec.vocab) {
    const auto id = int32_t(id64);
    if (impl->id_known[id]) throw Error(where + ".vocab: id " + std::to_string(id) + " is given twice");
    impl->id_known[id] = 1;
    impl->id_bytes[id] = byte_level_decode(tok);
    impl->text_to_id.emplace(tok, id);
    impl->id_text[id] = std::move(tok);
  }
  if (impl->ignore_merges) {
    impl->bytes_to_id.reserve(n);
    for (size_t id = 0; id < n; ++id)
      if (impl->id_known[id]) impl->bytes_to_id.emplace(impl->id_bytes[id], int32_t(id));
  }
  for (int b = 0; b < 256; ++b) {
    std::string one;
    append_utf8(one, byte_level().byte_to_char[b]);
    const auto it = impl->text_to_id.find(one);
    if (it == impl->text_to_id.end())
      throw Error(where + ".vocab lacks the byte-level token \"" + one + "\" for byte " + std::to_string(b) +
                  ": not a byte-level BPE vocabulary");
    impl->byte_id[b] = it->second;
  }

  impl->merges.reserve(spec.merges.size());
  std::string joined;
  for (size_t r = 0; r < spec.merges.size(); ++r) {
    const auto& [a, b] = spec.merges[r];
    joined.assign(a).append(b);
    const auto ia = impl->text_to_id.find(a), ib = impl->text_to_id.find(b),
               im = impl->text_to_id.find(joined);
    if (ia == impl->text_to_id.end() || ib == impl->text_to_id.end() || im == impl->text_to_id.end())
      throw Error(where + ".merges[" + std::to_string(r) + "]: \"" + a + "\" + \"" + b +
                  "\" uses a token that is not in model.vocab");
    impl->merges.emplace(pair_key(ia->second, ib->second), Impl::Merge{int32_t(r), im->second});
  }

  for (const AddedToken& t : impl->added) {
    impl->id_known[t.id] = 1;
    impl->id_text[t.id] = t.content;
    impl->id_bytes[t.id] = t.content;  // decoded verbatim, not through the byte-level table
    impl->id_special[t.id] = t.special;
    impl->id_added[t.id] = 1;
    impl->text_to_id[t.content] = t.id;
  }
  for (size_t k = 0; k < impl->added.size(); ++k)
    impl->added_by_first_byte[uint8_t(impl->added[k].content[0])].push_back(k);
  for (auto& bucket : impl->added_by_first_byte)
    std::stable_sort(bucket.begin(), bucket.end(), [&](size_t x, size_t y) {
      return impl->added[x].content.size() > impl->added[y].content.size();
    });

  impl->nfc = spec.nfc;
  for (const PreTokenizerSpec& p : spec.pre) {
    PreTokenizer& out = impl->pre.emplace_back(PreTokenizer{p.kind});
    out.invert = p.invert;
    out.remove_matches = p.remove_matches;
    out.add_prefix_space = p.add_prefix_space;
    if (p.kind == PreTokenizerSpec::Kind::Split)
      out.regex.emplace(p.pattern, p.literal, p.where);
    else if (p.use_regex)
      out.regex.emplace(kGpt2Pattern, false, p.where + " (GPT-2 regex)");
  }
  impl->encode_refused = std::move(spec.encode_refused);
  return Tokenizer(std::move(impl));
}

void Tokenizer::refuse_encode(std::string why) {
  impl_->encode_refused = std::move(why);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  if (!impl_->encode_refused.empty()) throw Error(impl_->encode_refused);
  if (const auto bad = first_invalid_utf8(text)) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", unsigned(uint8_t(text[*bad])));
    throw Error("tokenizer: input is not valid UTF-8 at byte offset " + std::to_string(*bad) + " (byte " +
                byte + ")");
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  const Impl& m = *impl_;
  m.split_added(text, false, [&](std::string_view raw, const AddedToken* tok) {
    if (tok) {
      ids.push_back(tok->id);
      return;
    }
    const std::string normalized = m.nfc ? nfc(raw) : std::string(raw);
    m.split_added(normalized, true, [&](std::string_view part, const AddedToken* ntok) {
      if (ntok)
        ids.push_back(ntok->id);
      else
        m.encode_plain(part, ids);
    });
  });
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  // As the reference: runs of model tokens go through the byte-level decoder (lossy UTF-8);
  // an added token ends the run and is appended as written.
  std::string bytes, out;
  for (int32_t id : ids) {
    if (skip_special && is_special(id)) continue;
    if (is_added(id)) {
      append_lossy(bytes, out, false);
      bytes.clear();
      out += token_bytes(id);
    } else {
      bytes += token_bytes(id);
    }
  }
  append_lossy(bytes, out, false);
  return out;
}

size_t Tokenizer::vocab_size() const {
  return impl_->id_text.size();
}

const std::string& Tokenizer::token_text(int32_t id) const {
  token_bytes(id);  // checks the id
  return impl_->id_text[id];
}

const std::string& Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || size_t(id) >= impl_->id_known.size() || !impl_->id_known[id])
    throw Error(impl_->name + ": token id " + std::to_string(id) + " is not in the vocabulary (ids 0.." +
                std::to_string(int64_t(impl_->id_known.size()) - 1) + ")");
  return impl_->id_bytes[id];
}

std::optional<int32_t> Tokenizer::token_id(std::string_view text) const {
  const auto it = impl_->text_to_id.find(text);
  if (it == impl_->text_to_id.end()) return std::nullopt;
  return it->second;
}

const std::vector<AddedToken>& Tokenizer::added_tokens() const {
  return impl_->added;
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->id_special.size() && impl_->id_special[id];
}

bool Tokenizer::is_added(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->id_added.size() && impl_->id_added[id];
}

std::string StreamDecoder::push(int32_t id) {
  if (skip_special_ && tokenizer_.is_special(id)) return {};
  if (tokenizer_.is_added(id)) return finish() + tokenizer_.token_bytes(id);
  pending_ += tokenizer_.token_bytes(id);
  std::string out;
  const size_t held = append_lossy(pending_, out, true);
  pending_.erase(0, pending_.size() - held);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out;
  append_lossy(pending_, out, false);
  pending_.clear();
  return out;
}

std::optional<size_t> first_invalid_utf8(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    if (uint8_t(bytes[i]) < 0x80) {  // ASCII runs dominate; skip the table walk
      ++i;
      continue;
    }
    const Utf8Step st = utf8_step(bytes, i);
    if (!st.valid) return i;
    i += st.len;
  }
  return std::nullopt;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  append_lossy(bytes, out, false);
  return out;
}

std::string nfc(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) throw Error(std::string("tokenizer: ICU has no NFC data: ") + u_errorName(status));
  const icu::StringPiece sp(text.data(), int32_t(text.size()));
  if (n->isNormalizedUTF8(sp, status) && U_SUCCESS(status)) return std::string(text);
  status = U_ZERO_ERROR;
  std::string out;
  icu::StringByteSink<std::string> sink(&out, int32_t(text.size()));
  n->normalizeUTF8(0, sp, sink, nullptr, status);
  if (U_FAILURE(status))
    throw Error(std::string("tokenizer: NFC normalization failed: ") + u_errorName(status));
  return out;
}

}  // namespace wgfuse::llm
