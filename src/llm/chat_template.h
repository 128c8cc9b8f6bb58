// Qwen's chat format (ChatML), recognised from tokenizer_config.json's "chat_template" rather
// than executed: wgfuse has no Jinja interpreter, so it accepts a template only when it sees
// the ChatML markers and renders the one layout Qwen's templates produce:
//   <|im_start|>system\n…<|im_end|>\n<|im_start|>user\n…<|im_end|>\n<|im_start|>assistant\n
// Two variants are told apart by the template text:
//  - a default system prompt written literally in the template (Qwen2: "You are a helpful
//    assistant.", Qwen2.5: "You are Qwen, created by Alibaba Cloud. …") is used when the
//    conversation has no system message;
//  - a template with <think> (Qwen3) renders assistant turns after the last user turn with a
//    think block, drops reasoning from earlier ones, and has no default system prompt.
// Tool calls and tool roles are not rendered: a "tool" role is an Error.
#pragma once
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "llm/tokenizer.h"

namespace wgfuse::llm {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

class ChatTemplate {
 public:
  // tokenizer_config.json's chat_template (a string, or the entry named "default" of a list),
  // or chat_template.jinja beside it when the config has none. Errors name the file.
  static ChatTemplate from_file(const std::filesystem::path& tokenizer_config_json);
  // From the template's text; `name` is what errors call it.
  static ChatTemplate from_text(const std::string& jinja, const std::string& name);

  // add_generation_prompt appends "<|im_start|>assistant\n"; enable_thinking = false (Qwen3 only)
  // appends an empty think block after it, as the template does.
  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                     bool enable_thinking = true) const;

  const std::optional<std::string>& default_system() const { return default_system_; }
  bool thinking() const { return thinking_; }

 private:
  std::optional<std::string> default_system_;
  bool thinking_ = false;
};

// The chat template of a model folder (tokenizer_config.json, as from_file) or of a GGUF file
// (tokenizer.chat_template).
ChatTemplate load_chat_template(const std::filesystem::path& model);

// Reads tokenizer.json (and checks tokenizer_config.json) from a Hugging Face model folder, or
// the tokenizer of a GGUF file (llm/gguf_model.h).
// tokenizer_config.json asking for a BOS/EOS to be added makes encode() an Error (not
// implemented); decode and --prompt-ids still work.
Tokenizer load_tokenizer(const std::filesystem::path& model_dir);

// The ids that end generation (a GGUF file: gguf_stop_token_ids): tokenizer_config.json's eos_token,
// generation_config.json's eos_token_id (a number or a list) when the file exists, and <|im_end|> when the
// vocabulary has it. Sorted, without repeats.
std::vector<int32_t> stop_token_ids(const Tokenizer& tokenizer, const std::filesystem::path& model_dir);

}  // namespace wgfuse::llm
