// libFuzzer target: tokenizer.json loading on arbitrary bytes, then, for a file it accepts, an
// encode and decode of a fixed text. Any outcome but a tokenizer or a wgfuse::Error is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "llm/tokenizer.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto tok = wgfuse::llm::Tokenizer::from_json_text(text, "fuzz/tokenizer.json");
    const auto ids = tok.encode("Hello, wörld 123 <|im_start|> \xf0\x9f\x91\x8d");
    (void)tok.decode(ids);
  } catch (const wgfuse::Error&) {
  }
  return 0;
}
