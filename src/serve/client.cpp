#include "serve/client.h"

#include <httplib.h>

#include "util/error.h"

namespace wgfuse::serve {

SubmitReply submit_results(const std::string& url, const nlohmann::json& submission) {
  const std::string where = "--submit " + url;
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos || (!url.starts_with("http://") && !url.starts_with("https://")))
    throw Error(where + ": expected http://HOST[:PORT] (the wgfuse serve address)");
  const auto path_at = url.find('/', scheme_end + 3);
  const std::string origin = url.substr(0, path_at);
  std::string prefix = path_at == std::string::npos ? "" : url.substr(path_at);
  while (prefix.ends_with('/')) prefix.pop_back();

  httplib::Client client(origin);
  if (!client.is_valid()) throw Error(where + ": not a valid server address");
  client.set_connection_timeout(10);
  client.set_read_timeout(60);
  auto res = client.Post(prefix + "/api/results", submission.dump(), "application/json");
  if (!res) throw Error(where + ": cannot reach the server (" + httplib::to_string(res.error()) + ")");
  auto reply = nlohmann::json::parse(res->body, nullptr, false);
  if (res->status != 201) {
    std::string reason = reply.is_object() && reply.contains("error") && reply["error"].is_string()
                             ? reply["error"].get<std::string>()
                             : res->body.substr(0, 300);
    throw Error(where + ": the server rejected the results (HTTP " + std::to_string(res->status) +
                "): " + reason);
  }
  if (!reply.is_object() || !reply.contains("id") || !reply["id"].is_number_integer())
    throw Error(where + ": the server answered 201 without a submission id: " + res->body.substr(0, 300));
  return {reply["id"].get<int64_t>(), reply.value("accepted", int64_t(0))};
}

}  // namespace wgfuse::serve
