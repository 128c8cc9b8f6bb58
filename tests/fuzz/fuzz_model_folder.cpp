// libFuzzer target: a whole model folder from one input, opened as `wgfuse generate` opens one
// (ModelFiles, then the tokenizer and the chat template). The input is cut at "\n#--\n" into
// config.json, model.safetensors, tokenizer.json and tokenizer_config.json, so that a mutation
// can make the parts disagree (layers, shapes, ids) as well as break one. Any outcome but a
// result or a wgfuse::Error is a finding, and so is an accepted folder whose tensors disagree with
// its config.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "llm/architecture.h"
#include "llm/chat_template.h"
#include "llm/model_files.h"
#include "util/error.h"

namespace {

namespace fs = std::filesystem;

const fs::path& folder() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() / ("wgfuse_fuzz_folder_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kCut = "\n#--\n";
  const char* names[] = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"};
  size_t at = 0;
  for (const char* name : names) {
    const size_t end = std::min(input.find(kCut, at), input.size());
    std::ofstream(folder() / name, std::ios::binary | std::ios::trunc)
        .write(input.data() + at, std::streamsize(end - at));
    at = std::min(end + kCut.size(), input.size());
  }
  try {
    const wgfuse::llm::ModelFiles files(folder());
    for (const auto& e : wgfuse::llm::expected_tensors(files.config()))
      if (!files.find(e.name) || files.find(e.name)->shape != e.shape) __builtin_trap();
  } catch (const wgfuse::Error&) {
  }
  try {
    const auto tokenizer = wgfuse::llm::load_tokenizer(folder());
    const auto ids = tokenizer.encode("Hello, world! 12 ünï");
    (void)tokenizer.decode(ids);
    const auto chat = wgfuse::llm::ChatTemplate::from_file(folder() / "tokenizer_config.json");
    (void)chat.render(std::vector<wgfuse::llm::ChatMessage>{{"user", "hi"}}, true);
  } catch (const wgfuse::Error&) {
  }
  return 0;
}
