// The client side of POST /api/results, for `wgfuse bench --submit URL` and `wgfuse sim --submit URL`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace wgfuse::serve {

struct SubmitReply {
  int64_t id = 0;
  int64_t accepted = 0;
};

// POSTs `submission` to URL/api/results (URL: http[s]://host[:port][/prefix]). Throws Error
// naming --submit: the server's reason when it rejects, or why it could not be reached.
SubmitReply submit_results(const std::string& url, const nlohmann::json& submission);

}  // namespace wgfuse::serve
