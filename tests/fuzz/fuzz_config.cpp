// libFuzzer target: config.json and generation_config.json parsing on arbitrary bytes. Any
// outcome but a result or a wgfuse::Error is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "llm/architecture.h"
#include "llm/model_files.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto c = wgfuse::llm::parse_model_config(text, "fuzz/config.json");
    // What the loader derives from an accepted config must be consistent.
    if (c.head_dim == 0 || c.num_kv_heads == 0 || c.num_heads % c.num_kv_heads != 0) __builtin_trap();
    (void)wgfuse::llm::expected_tensors(c).size();
  } catch (const wgfuse::Error&) {
  }
  try {
    wgfuse::llm::GenerationConfig g;
    wgfuse::llm::apply_generation_config(text, "fuzz/generation_config.json", g);
  } catch (const wgfuse::Error&) {
  }
  return 0;
}
