#include "webgpu/api.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <vector>

#include "util/error.h"

namespace wgfuse::webgpu {
namespace {

constexpr const char* kLibraryName = "libwebgpu_wrapper.so";

std::filesystem::path executable_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path{} : exe.parent_path();
}

std::vector<std::string> candidate_paths() {
  if (const char* env = std::getenv("WGFUSE_WEBGPU_LIB"); env && *env) return {env};
  std::vector<std::string> paths;
  if (auto dir = executable_dir(); !dir.empty()) paths.push_back(dir / kLibraryName);  // package
#ifdef WGFUSE_DEFAULT_WEBGPU_LIB
  paths.push_back(WGFUSE_DEFAULT_WEBGPU_LIB);  // npm-installed Dawn of the source tree
#endif
  return paths;
}

Api load() {
  std::string tried;
  for (const auto& path : candidate_paths()) {
    if (!std::filesystem::exists(path)) {
      tried += "\n  " + path + ": no such file";
      continue;
    }
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open for the process
    if (!lib) {
      tried += "\n  " + path + ": " + dlerror();
      continue;
    }
    Api a;
    a.path = path;
    std::string missing;
#define WGFUSE_RESOLVE(name, ret, params)                             \
  a.name = reinterpret_cast<ret(*) params>(dlsym(lib, "wgpu" #name)); \
  if (!a.name) missing += std::string(missing.empty() ? "" : ", ") + "wgpu" #name;
    WGFUSE_WEBGPU_FUNCTIONS(WGFUSE_RESOLVE)
#undef WGFUSE_RESOLVE
    if (!missing.empty())
      throw Error("WebGPU library " + path + " does not export functions wgfuse needs: " + missing +
                  ". wgfuse is built for the ABI of Dawn from npm bun-webgpu-linux-x64 0.1.7; point "
                  "WGFUSE_WEBGPU_LIB at a build of that ABI.");
    return a;
  }
  throw Error("cannot load the WebGPU library (Dawn). Tried:" + tried +
              "\nRun scripts/setup (it installs npm bun-webgpu-linux-x64 0.1.7), or set "
              "WGFUSE_WEBGPU_LIB to the path of libwebgpu_wrapper.so.");
}

}  // namespace

const Api& api() {
  // Not std::call_once: libstdc++'s terminates when the function throws (GCC bug 66146).
  static std::mutex mutex;
  static std::atomic<const Api*> loaded{nullptr};
  if (const Api* a = loaded.load(std::memory_order_acquire)) return *a;
  std::lock_guard lock(mutex);
  if (!loaded.load(std::memory_order_relaxed)) {
    static Api table;
    table = load();  // throws, leaving nothing loaded, when the library is unusable
    loaded.store(&table, std::memory_order_release);
  }
  return *loaded.load(std::memory_order_relaxed);
}

std::string library_path() {
  return api().path;
}

}  // namespace wgfuse::webgpu
