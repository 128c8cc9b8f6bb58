// wgfuse tokenize: text on stdin to token ids (or, with --decode, ids to text), with the
// tokenizer of a Hugging Face model folder. No GPU is involved.
#include <cctype>
#include <climits>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "llm/chat_template.h"
#include "util/error.h"

namespace wgfuse::cli {

namespace {

std::string read_stdin() {
  std::string in((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  if (std::cin.bad()) throw Error("stdin: read failed");
  return in;
}

// Ids separated by whitespace, commas or JSON brackets ("1 2 3", "1,2,3", "[1, 2, 3]").
std::vector<int32_t> parse_ids(const std::string& text) {
  const auto separator = [](char c) { return std::isspace(uint8_t(c)) || c == ',' || c == '[' || c == ']'; };
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    if (separator(text[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && !separator(text[end])) ++end;
    const std::string word = text.substr(i, end - i);
    if (word.size() > 10 || word.find_first_not_of("0123456789") != std::string::npos ||
        std::stoll(word) > INT32_MAX)
      throw Error("stdin: \"" + llm::utf8_lossy(word.substr(0, 40)) + "\" at byte offset " +
                  std::to_string(i) +
                  " is not a token id (non-negative integers separated by spaces or commas)");
    ids.push_back(int32_t(std::stoll(word)));
    i = end;
  }
  return ids;
}

}  // namespace

void add_tokenize(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "tokenize",
      "Text on stdin to token ids (or ids to text with --decode), as Hugging Face tokenizers does");
  static std::string model_dir;
  static bool as_json = false, decode = false;
  cmd->add_option("-m,--model", model_dir,
                  "Hugging Face model folder (tokenizer.json, tokenizer_config.json)")
      ->required();
  cmd->add_flag("--json", as_json,
                "print {\"ids\": [...], \"tokens\": [...]} (with --decode: {\"text\": ...})");
  cmd->add_flag("--decode", decode, "read ids (separated by spaces or commas) and print the text");
  cmd->callback([] {
    const llm::Tokenizer tokenizer = llm::load_tokenizer(model_dir);
    const std::string input = read_stdin();
    if (decode) {
      const std::vector<int32_t> ids = parse_ids(input);
      const std::string text = tokenizer.decode(ids);
      if (as_json)
        std::printf("%s\n", nlohmann::json{{"ids", ids}, {"text", text}}.dump().c_str());
      else
        std::fwrite(text.data(), 1, text.size(), stdout);
      return;
    }
    std::vector<int32_t> ids;
    try {
      ids = tokenizer.encode(input);
    } catch (const Error& e) {
      throw Error(std::string("stdin: ") + e.what());
    }
    if (as_json) {
      nlohmann::json tokens = nlohmann::json::array();
      for (int32_t id : ids) tokens.push_back(tokenizer.token_text(id));
      std::printf("%s\n", nlohmann::json{{"ids", ids}, {"tokens", tokens}}.dump().c_str());
      return;
    }
    std::string line;
    for (int32_t id : ids) line += (line.empty() ? "" : " ") + std::to_string(id);
    std::printf("%s\n", line.c_str());
  });
}

}  // namespace wgfuse::cli
