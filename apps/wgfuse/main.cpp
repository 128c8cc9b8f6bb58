// wgfuse: WebGPU compute with fusion, measured. See README.md.
#include <cstdio>

#include "commands.h"
#include "util/error.h"
#include "webgpu/diagnostics.h"

namespace wgfuse::cli {

gpu::ContextOptions GlobalOptions::context_options() const {
  gpu::ContextOptions o;
  o.adapter = gpu::parse_adapter_choice(adapter);
  o.backend = gpu::parse_backend(backend);
  o.timeout = std::chrono::milliseconds(int64_t(timeout_s * 1000));
  return o;
}

}  // namespace wgfuse::cli

int main(int argc, char** argv) {
  using namespace wgfuse::cli;
  CLI::App app{"wgfuse " WGFUSE_VERSION
               ": GPU compute through WebGPU (Dawn), with kernel fusion measured against "
               "per-dispatch overhead"};
  app.require_subcommand(1);
  GlobalOptions g;
  app.add_option("--adapter", g.adapter, "auto | gpu | cpu (cpu = SwiftShader)")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}))
      ->capture_default_str();
  app.add_option("--backend", g.backend, "any | vulkan | opengl | opengles | null")
      ->check(CLI::IsMember({"any", "vulkan", "opengl", "opengles", "null"}))
      ->capture_default_str();
  app.add_option("--timeout", g.timeout_s, "seconds before any single wait on the GPU fails")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  // Before the subcommand's callback creates a Context, so that adapter probing is covered.
  app.add_flag_callback(
      "-v,--verbose", [] { wgfuse::webgpu::set_verbose(true); },
      "show Dawn's and the Vulkan loader's own messages (hidden by default)");
  app.fallthrough();  // global options may follow the subcommand
  app.set_version_flag("--version", "wgfuse " WGFUSE_VERSION);
  add_info(app, g);
  add_bench(app, g);
  add_sim(app, g);
  add_tokenize(app);
  add_generate(app, g);
  add_chat(app, g);
  add_tiny(app, g);
  add_serve(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const wgfuse::Error& e) {
    std::fprintf(stderr, "wgfuse: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wgfuse: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
