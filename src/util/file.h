// Reading a small input file (JSON configs, tokenizers, prompts) whole, checked before it is
// opened: a FIFO or device (/dev/zero) would hang or fill memory, so only regular files up to a
// size the format allows are read. Every failure is a wgfuse::Error naming the file.
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.h"

namespace wgfuse {

// stat() of `path` (following links): its size when it is a regular file; an Error naming the
// file and what it is otherwise (no such file: nullopt when `missing_ok`).
inline std::optional<uint64_t> regular_file_size(const std::filesystem::path& path, std::string_view what,
                                                 bool missing_ok = false) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT && missing_ok) return std::nullopt;
    throw Error(path.string() + ": cannot open " + std::string(what) + ": " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode))
    throw Error(path.string() + ": " + std::string(what) + " is a directory, expected a file");
  if (!S_ISREG(st.st_mode))
    throw Error(path.string() + ": " + std::string(what) +
                " is not a regular file (a FIFO, socket or device)");
  return uint64_t(st.st_size);
}

// The whole file, at most `max_bytes` (else an Error naming the cap). nullopt when it does not
// exist and `missing_ok`.
inline std::optional<std::string> read_file_if_exists(const std::filesystem::path& path,
                                                      std::string_view what, uint64_t max_bytes,
                                                      bool missing_ok = true) {
  const auto size = regular_file_size(path, what, missing_ok);
  if (!size) return std::nullopt;
  if (*size > max_bytes)
    throw Error(path.string() + ": " + std::string(what) + " is " + std::to_string(*size) +
                " bytes, more than the " + std::to_string(max_bytes) + " such a file may have");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open " + std::string(what) + ": " + std::strerror(errno));
  std::string text(*size, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  if (in.gcount() != std::streamsize(text.size()))
    throw Error(path.string() + ": " + std::string(what) + ": read error (the file changed while read?)");
  return text;
}

inline std::string read_file(const std::filesystem::path& path, std::string_view what, uint64_t max_bytes) {
  return *read_file_if_exists(path, what, max_bytes, false);
}

// Caps for the JSON files of a model folder: far above any real one (Qwen's tokenizer.json is 7 MB,
// Gemma's 33 MB), far below what would exhaust memory.
inline constexpr uint64_t kMaxConfigBytes = 16ull << 20;
inline constexpr uint64_t kMaxTokenizerBytes = 512ull << 20;

}  // namespace wgfuse
