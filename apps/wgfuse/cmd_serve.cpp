// wgfuse serve: runs wgfuse-serve, the program beside this one that holds the HTTP server and the
// database drivers (apps/serve), with the same arguments.
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "commands.h"
#include "submit.h"
#include "util/error.h"

namespace wgfuse::cli {

[[noreturn]] void run_serve(int argc, char** argv) {
  const std::string tool = serve_tool().string();
  std::vector<char*> args{const_cast<char*>(tool.c_str())};
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(tool.c_str(), args.data());
  throw Error("serve: cannot run " + tool + ": " + std::strerror(errno));
}

// Listed in `wgfuse --help`; main() hands `wgfuse serve ...` to run_serve before parsing, so that
// every option, --help included, is wgfuse-serve's. Reached only with a global option in front.
void add_serve(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "serve", "Serve the browser benchmark and collect results (`wgfuse serve --help`; docs/WEB_API.md)");
  cmd->prefix_command();
  cmd->set_help_flag();
  cmd->callback([] { throw Error("serve takes no global options: run `wgfuse serve [options]`"); });
}

}  // namespace wgfuse::cli
