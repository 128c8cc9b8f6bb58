// libFuzzer target: the GGUF header parser on arbitrary bytes. Any outcome but a result or a
// wgfuse::Error (a crash, a sanitizer report, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <span>

#include "llm/gguf.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto* begin = reinterpret_cast<const std::byte*>(data);
    const auto c = wgfuse::llm::parse_gguf(std::span(begin, size), "fuzz.gguf");
    // Every accepted tensor lies inside the input, as long as its dims and type say.
    for (const auto& t : c.tensors) {
      if (t.bytes.size() && (t.bytes.data() < begin || t.bytes.data() + t.bytes.size() > begin + size))
        __builtin_trap();
      uint64_t elements = 1;
      for (uint64_t d : t.shape) elements *= d;
      if (t.bytes.size() != elements / t.type->block_elements * t.type->block_bytes) __builtin_trap();
    }
    for (const auto& [key, v] : c.metadata)
      for (std::string_view s : v.strings)
        if (s.size() && (reinterpret_cast<const std::byte*>(s.data()) < begin ||
                         reinterpret_cast<const std::byte*>(s.data()) + s.size() > begin + size))
          __builtin_trap();
  } catch (const wgfuse::Error&) {
  }
  return 0;
}
