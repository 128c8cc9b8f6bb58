// The kernel sources `wgfuse serve` hands the browser: every embedded family with its SHA-256,
// and a version over all of them, so that a result records exactly which kernels it ran.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace wgfuse::serve {

std::string sha256_hex(std::string_view data);

struct KernelFile {
  std::string name, text, sha256;
};

struct KernelIndex {
  // The first 16 hex digits of SHA-256 over "name\n" + sha256 + "\n" of every family, in name order.
  std::string version;
  std::vector<KernelFile> files;  // in name order

  const KernelFile* find(std::string_view name) const;
  nlohmann::json to_json() const;  // {"version", "kernels": [{"name", "sha256", "bytes"}]}
};

// `families` as (name, expanded text) pairs, in any order.
KernelIndex make_kernel_index(std::vector<std::pair<std::string, std::string>> families);

}  // namespace wgfuse::serve
