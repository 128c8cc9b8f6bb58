// libFuzzer target: the safetensors header parser on arbitrary bytes. Any outcome but a result
// or a wgfuse::Error (a crash, a sanitizer report, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <span>

#include "llm/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto refs = wgfuse::llm::parse_safetensors(
        std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz.safetensors");
    // Every accepted tensor must lie inside the input and be as long as its shape says.
    for (const auto& t : refs) {
      const auto* begin = reinterpret_cast<const std::byte*>(data);
      if (t.bytes.size() && (t.bytes.data() < begin || t.bytes.data() + t.bytes.size() > begin + size))
        __builtin_trap();
      if (t.bytes.size() != t.expected_bytes()) __builtin_trap();
    }
  } catch (const wgfuse::Error&) {
  }
  return 0;
}
