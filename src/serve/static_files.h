// The page's files: a request path resolved inside the web roots (never outside them), and the
// Content-Type and Cache-Control each kind of file is served with.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace wgfuse::serve {

// "text/javascript; charset=utf-8" for "app/main.js"; application/octet-stream when unknown.
std::string content_type_for(const std::string& path);
// "no-cache" for HTML (it names the other files), max-age=3600 for the rest.
std::string cache_control_for(const std::string& path);

// The file a URL path names under the first root that has it. Empty when the path is not a
// plain relative path ("..", ".", empty or hidden segments, backslashes, NUL: traversal) or no
// root has a regular file there. "/" names index.html, "/results" results.html, "/chat" chat.html.
std::optional<std::filesystem::path> resolve_static(const std::vector<std::filesystem::path>& roots,
                                                    const std::string& url_path);

// Whether a decoded URL path is safe to look up under a root (see resolve_static).
bool is_safe_relative_path(const std::string& url_path);

}  // namespace wgfuse::serve
