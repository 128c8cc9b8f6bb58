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
#include "llm/session.h"
#include "util/error.h"

namespace wgfuse::cli {

namespace {

std::string read_stdin() {
  std::string in((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  if (std::cin.bad()) throw Error("stdin: read failed");
  return in;
}

}  // namespace

void add_tokenize(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "tokenize",
      "Text on stdin to token ids (or ids to text with --decode), as Hugging Face tokenizers does");
  static std::string model_dir;
  static bool as_json = false, decode = false;
  cmd->add_option("-m,--model", model_dir,
                  "Hugging Face model folder (tokenizer.json, tokenizer_config.json), or a GGUF file")
      ->required();
  cmd->add_flag("--json", as_json,
                "print {\"ids\": [...], \"tokens\": [...]} (with --decode: {\"text\": ...})");
  cmd->add_flag("--decode", decode, "read ids (separated by spaces or commas) and print the text");
  cmd->callback([] {
    const llm::Tokenizer tokenizer = llm::load_tokenizer(model_dir);
    const std::string input = read_stdin();
    if (decode) {
      const std::vector<uint32_t> read = llm::parse_token_ids(input, uint64_t(INT32_MAX) + 1, "stdin");
      const std::vector<int32_t> ids(read.begin(), read.end());
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
