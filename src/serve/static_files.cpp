#include "serve/static_files.h"

#include <map>

namespace wgfuse::serve {

namespace fs = std::filesystem;

std::string content_type_for(const std::string& path) {
  static const std::map<std::string, std::string> types = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".wgsl", "text/plain; charset=utf-8"},
      {".txt", "text/plain; charset=utf-8"},
      {".csv", "text/csv; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},
  };
  auto it = types.find(fs::path(path).extension().string());
  return it == types.end() ? "application/octet-stream" : it->second;
}

std::string cache_control_for(const std::string& path) {
  return fs::path(path).extension() == ".html" ? "no-cache" : "max-age=3600";
}

bool is_safe_relative_path(const std::string& url_path) {
  if (!url_path.starts_with('/') || url_path.size() < 2) return false;
  if (url_path.find_first_of(std::string("\\\0", 2)) != std::string::npos) return false;
  size_t start = 1;
  while (start <= url_path.size()) {
    size_t end = url_path.find('/', start);
    if (end == std::string::npos) end = url_path.size();
    const std::string segment = url_path.substr(start, end - start);
    // Hidden names too: a stray .git or .env under the root is not for the public.
    if (segment.empty() || segment.starts_with('.')) return false;
    start = end + 1;
  }
  return true;
}

std::optional<fs::path> resolve_static(const std::vector<fs::path>& roots, const std::string& url_path) {
  std::string path = url_path;
  if (path == "/") path = "/index.html";
  if (path == "/results") path = "/results.html";
  if (path == "/chat") path = "/chat.html";
  if (path == "/sim-playground") path = "/sim-playground.html";
  if (!is_safe_relative_path(path)) return std::nullopt;
  for (auto& root : roots) {
    fs::path candidate = root / path.substr(1);
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

}  // namespace wgfuse::serve
