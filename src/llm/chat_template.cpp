#include "llm/chat_template.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "llm/gguf.h"
#include "llm/gguf_model.h"
#include "util/error.h"
#include "util/file.h"

namespace wgfuse::llm {

namespace {

using nlohmann::json;

constexpr std::string_view kStart = "<|im_start|>";
constexpr std::string_view kEnd = "<|im_end|>";

json read_json(const std::filesystem::path& path, const char* what) {
  const std::string text = read_file(path, what, kMaxTokenizerBytes);
  try {
    json j = json::parse(text);
    if (!j.is_object()) throw Error(path.string() + ": expected a JSON object at the top level");
    return j;
  } catch (const json::exception& e) {
    throw Error(path.string() + ": not valid JSON: " + e.what());
  }
}

// A Jinja string literal's escapes, as far as a literal system prompt uses them.
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
  }
  return out;
}

std::string_view strip(std::string_view s, bool left, bool right) {
  while (left && s.starts_with('\n')) s.remove_prefix(1);
  while (right && s.ends_with('\n')) s.remove_suffix(1);
  return s;
}

void append_turn(std::string& out, std::string_view role, std::string_view body) {
  out.append(kStart).append(role).append("\n").append(body).append(kEnd).append("\n");
}

// wgfuse renders ChatML's layout instead of executing the template, which is exact only while
// the template does nothing else: the Jinja statements, filters and methods Qwen's templates use
// (their tool branches included) pass; anything else, or a template that is not well formed, is an
// Error naming the construct, never a silent ChatML.
void check_constructs(std::string_view jinja, const std::string& name) {
  auto refuse = [&](size_t at, const std::string& what) {
    throw Error(name + ": the chat template " + what + " (at character " + std::to_string(at) +
                "); wgfuse renders Qwen's ChatML layout without executing Jinja, so it refuses templates "
                "that do more: give the prompt without --chat, formatted yourself");
  };
  static const std::set<std::string, std::less<>> statements = {"if",  "elif",   "else", "endif",
                                                                "for", "endfor", "set"};
  static const std::set<std::string, std::less<>> filters = {"length", "tojson"};
  static const std::set<std::string, std::less<>> methods = {"split",  "strip",      "lstrip",
                                                             "rstrip", "startswith", "endswith"};
  auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::vector<std::pair<std::string, size_t>> open;  // if / for blocks
  for (size_t at = jinja.find('{'); at != std::string_view::npos; at = jinja.find('{', at + 1)) {
    if (at + 1 >= jinja.size()) break;
    const char kind = jinja[at + 1];
    if (kind != '%' && kind != '{' && kind != '#') continue;
    const std::string_view close = kind == '%' ? "%}" : kind == '{' ? "}}" : "#}";
    // The tag's end, outside string literals.
    size_t i = at + 2, end = std::string_view::npos;
    std::string code;  // the tag's text, string literals as '_' (operands, never operators)
    for (char quote = 0; i < jinja.size(); ++i) {
      const char c = jinja[i];
      if (quote) {
        if (c == '\\')
          ++i;
        else if (c == quote)
          quote = 0;
        code += '_';
        continue;
      }
      if (kind != '#' && (c == '\'' || c == '"')) {
        quote = c;
        code += '_';
        continue;
      }
      if (jinja.substr(i, 2) == close) {
        end = i;
        break;
      }
      code += c;
    }
    if (end == std::string_view::npos)
      refuse(at, "opens \"{" + std::string(1, kind) + "\" and never closes it");
    at = end + 1;
    if (kind == '#') continue;
    // Whitespace control marks, then the statement's keyword and its expression.
    std::string_view body = code;
    while (!body.empty() &&
           (body.front() == '-' || body.front() == '+' || std::isspace(uint8_t(body.front()))))
      body.remove_prefix(1);
    while (!body.empty() && (body.back() == '-' || body.back() == '+' || std::isspace(uint8_t(body.back()))))
      body.remove_suffix(1);
    std::string_view expr = body;
    if (kind == '%') {
      size_t k = 0;
      while (k < body.size() && is_ident(body[k])) ++k;
      const std::string keyword(body.substr(0, k));
      expr = body.substr(k);
      if (!statements.contains(keyword)) refuse(at, "uses the Jinja statement \"{% " + keyword + " %}\"");
      const bool needs_expr = keyword == "if" || keyword == "elif" || keyword == "for" || keyword == "set";
      if (needs_expr && expr.find_first_not_of(" \t\n") == std::string_view::npos)
        refuse(at, "has a \"{% " + keyword + " %}\" without an expression");
      if (keyword == "if" || keyword == "for") open.emplace_back(keyword, at);
      if (keyword == "endif" || keyword == "endfor") {
        const std::string opener = keyword.substr(3);
        if (open.empty() || open.back().first != opener)
          refuse(at, "has a \"{% " + keyword + " %}\" that closes no \"{% " + opener + " %}\"");
        open.pop_back();
      }
      if ((keyword == "elif" || keyword == "else") && open.empty())
        refuse(at, "has a \"{% " + keyword + " %}\" outside any block");
    } else if (expr.find_first_not_of(" \t\n") == std::string_view::npos) {
      refuse(at, "has an empty \"{{ }}\"");
    }
    for (size_t j = 0; j < expr.size(); ++j) {
      if (expr[j] != '|' && expr[j] != '.') continue;
      size_t b = j + 1;
      while (b < expr.size() && expr[b] == ' ') ++b;
      size_t e = b;
      while (e < expr.size() && is_ident(expr[e])) ++e;
      const std::string word(expr.substr(b, e - b));
      if (expr[j] == '|' && !filters.contains(word))
        refuse(at, "applies the Jinja filter \"| " + word + "\"");
      if (expr[j] == '.' && e < expr.size() && expr[e] == '(' && !methods.contains(word))
        refuse(at, "calls the method \"." + word + "()\"");
    }
  }
  if (!open.empty()) refuse(open.back().second, "never closes its \"{% " + open.back().first + " %}\"");
}

}  // namespace

ChatTemplate ChatTemplate::from_text(const std::string& jinja, const std::string& name) {
  if (jinja.find(kStart) == std::string::npos || jinja.find(kEnd) == std::string::npos)
    throw Error(name +
                ": the chat template is not ChatML (no <|im_start|> / <|im_end|>); wgfuse recognises "
                "Qwen's ChatML templates only and does not execute Jinja");
  check_constructs(jinja, name);
  ChatTemplate t;
  // A default system prompt is a literal right after "<|im_start|>system\n" up to "<|im_end|>";
  // where the template concatenates a variable there instead, a quote comes first.
  const std::string marker = std::string(kStart) + "system\\n";
  for (size_t at = jinja.find(marker); at != std::string::npos; at = jinja.find(marker, at + 1)) {
    const size_t begin = at + marker.size();
    const size_t end = jinja.find(kEnd, begin);
    if (end == std::string::npos) break;
    const std::string_view literal(jinja.data() + begin, end - begin);
    if (literal.find_first_of("'\"{}+") == std::string_view::npos) {
      t.default_system_ = unescape(literal);
      break;
    }
  }
  t.thinking_ = jinja.find("<think>") != std::string::npos;
  return t;
}

ChatTemplate ChatTemplate::from_file(const std::filesystem::path& config_path) {
  const json config = read_json(config_path, "tokenizer_config.json of a Hugging Face model folder");
  if (config.contains("chat_template") && !config.at("chat_template").is_null()) {
    const json& ct = config.at("chat_template");
    if (ct.is_string()) return from_text(ct.get<std::string>(), config_path.string());
    if (ct.is_array()) {  // [{"name": "default", "template": "…"}, …]
      for (const json& entry : ct)
        if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
            entry.at("template").is_string())
          return from_text(entry.at("template").get<std::string>(),
                           config_path.string() + ": chat_template[default]");
      throw Error(config_path.string() + ": chat_template is a list without a \"default\" entry");
    }
    throw Error(config_path.string() + ": chat_template must be a string");
  }
  const auto jinja_path = config_path.parent_path() / "chat_template.jinja";
  if (const auto text = read_file_if_exists(jinja_path, "the chat template", kMaxConfigBytes))
    return from_text(*text, jinja_path.string());
  throw Error(config_path.string() + ": no chat_template, and no " + jinja_path.string() +
              " beside it (a base model has none: use the prompt without --chat)");
}

std::string ChatTemplate::render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                 bool enable_thinking) const {
  for (const ChatMessage& m : messages)
    if (m.role != "system" && m.role != "user" && m.role != "assistant")
      throw Error("chat: role \"" + m.role + "\" is not supported (system, user, assistant)");
  std::string out;
  const bool has_system = !messages.empty() && messages[0].role == "system";
  if (!has_system && default_system_) append_turn(out, "system", *default_system_);

  // Qwen3 keeps reasoning only for assistant turns after the last user turn (one that is not
  // a wrapped tool response).
  size_t last_query = messages.size() - 1;
  for (size_t i = messages.size(); i-- > 0;)
    if (messages[i].role == "user" && !(messages[i].content.starts_with("<tool_response>") &&
                                        messages[i].content.ends_with("</tool_response>"))) {
      last_query = i;
      break;
    }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role != "assistant" || !thinking_) {
      append_turn(out, m.role, m.content);
      continue;
    }
    std::string_view content = m.content, reasoning;
    if (const size_t close = content.find("</think>"); close != std::string_view::npos) {
      std::string_view before = strip(content.substr(0, close), false, true);
      if (const size_t open = before.rfind("<think>"); open != std::string_view::npos)
        before.remove_prefix(open + std::string_view("<think>").size());
      reasoning = strip(before, true, false);
      content =
          strip(content.substr(content.rfind("</think>") + std::string_view("</think>").size()), true, false);
    }
    const bool last = i + 1 == messages.size();
    std::string body;
    if (i > last_query && (last || !reasoning.empty()))
      body = "<think>\n" + std::string(strip(reasoning, true, true)) + "\n</think>\n\n" +
             std::string(strip(content, true, false));
    else
      body = std::string(content);
    append_turn(out, m.role, body);
  }
  if (add_generation_prompt) {
    out.append(kStart).append("assistant\n");
    if (thinking_ && !enable_thinking) out.append("<think>\n\n</think>\n\n");
  }
  return out;
}

Tokenizer load_tokenizer(const std::filesystem::path& dir) {
  if (is_gguf_file(dir.string())) return gguf_tokenizer(GgufFile(dir.string()));
  const auto config_path = dir / "tokenizer_config.json";
  const json config = read_json(config_path, "tokenizer_config.json of a Hugging Face model folder");
  Tokenizer tok = Tokenizer::from_file(dir / "tokenizer.json");
  for (const char* key : {"add_bos_token", "add_eos_token"})
    if (config.contains(key) && config.at(key).is_boolean() && config.at(key).get<bool>())
      tok.refuse_encode(
          config_path.string() + ": \"" + key +
          "\": true is not supported (encoding would lack that token): give the prompt as token "
          "ids (--prompt-ids)");
  return tok;
}

std::vector<int32_t> stop_token_ids(const Tokenizer& tokenizer, const std::filesystem::path& dir) {
  if (is_gguf_file(dir.string())) return gguf_stop_token_ids(tokenizer, GgufFile(dir.string()));
  std::vector<int32_t> ids;
  const auto config_path = dir / "tokenizer_config.json";
  const json config = read_json(config_path, "tokenizer_config.json of a Hugging Face model folder");
  if (config.contains("eos_token") && !config.at("eos_token").is_null()) {
    const json& eos = config.at("eos_token");
    const std::string text = eos.is_object()   ? eos.value("content", "")
                             : eos.is_string() ? eos.get<std::string>()
                                               : "";
    const auto id = tokenizer.token_id(text);
    if (!id)
      throw Error(config_path.string() + ": eos_token \"" + text + "\" is not in the tokenizer's vocabulary");
    ids.push_back(*id);
  }
  const auto gen_path = dir / "generation_config.json";
  if (std::filesystem::exists(gen_path)) {
    const json gen = read_json(gen_path, "generation_config.json");
    const json eos = gen.value("eos_token_id", json());
    for (const json& e : eos.is_array() ? eos : json::array({eos})) {
      if (e.is_null()) continue;
      if (!e.is_number_integer() || e.get<int64_t>() < 0 ||
          e.get<int64_t>() >= int64_t(tokenizer.vocab_size()))
        throw Error(gen_path.string() + ": eos_token_id " + e.dump() + " is not a token id (0.." +
                    std::to_string(tokenizer.vocab_size() - 1) + ")");
      ids.push_back(int32_t(e.get<int64_t>()));
    }
  }
  if (const auto im_end = tokenizer.token_id(kEnd)) ids.push_back(*im_end);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

ChatTemplate load_chat_template(const std::filesystem::path& model) {
  if (is_gguf_file(model.string())) return gguf_chat_template(GgufFile(model.string()));
  return ChatTemplate::from_file(model / "tokenizer_config.json");
}

}  // namespace wgfuse::llm
