#include "serve/kernel_index.h"

#include <openssl/evp.h>

#include <algorithm>

#include "util/error.h"

namespace wgfuse::serve {

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr))
    throw Error("SHA-256 failed (OpenSSL EVP_Digest)");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int k = 0; k < length; ++k) {
    out += hex[digest[k] >> 4];
    out += hex[digest[k] & 15];
  }
  return out;
}

const KernelFile* KernelIndex::find(std::string_view name) const {
  for (auto& f : files)
    if (f.name == name) return &f;
  return nullptr;
}

nlohmann::json KernelIndex::to_json() const {
  nlohmann::json kernels = nlohmann::json::array();
  for (auto& f : files) kernels.push_back({{"name", f.name}, {"sha256", f.sha256}, {"bytes", f.text.size()}});
  return {{"version", version}, {"kernels", kernels}};
}

KernelIndex make_kernel_index(std::vector<std::pair<std::string, std::string>> families) {
  std::sort(families.begin(), families.end());
  KernelIndex index;
  std::string listing;
  for (auto& [name, text] : families) {
    std::string digest = sha256_hex(text);
    listing += name + "\n" + digest + "\n";
    index.files.push_back({name, std::move(text), std::move(digest)});
  }
  index.version = sha256_hex(listing).substr(0, 16);
  return index;
}

}  // namespace wgfuse::serve
