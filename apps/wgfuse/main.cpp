// wgfuse: WebGPU compute with fusion, measured. See README.md.
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string_view>

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
  if (argc >= 2 && std::string_view(argv[1]) == "serve") try {
      run_serve(argc - 2, argv + 2);
    } catch (const wgfuse::Error& e) {
      std::fprintf(stderr, "wgfuse: error: %s\n", e.what());
      return kExitError;
    }
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
  add_dequantize(app);
  add_to_gguf(app);
  add_generate(app, g);
  add_chat(app, g);
  add_tiny(app, g);
  add_serve(app);
  app.footer(kExitCodes);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) sub->footer(kExitCodes);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and succeed; every other parse error is a usage error.
    const int cli = app.exit(e);
    return cli == 0 ? kExitOk : kExitUsage;
  } catch (const wgfuse::Error& e) {
    std::fprintf(stderr, "wgfuse: error: %s\n", e.what());
    return kExitError;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "wgfuse: error: out of host memory (the model, --ctx or an input file needs more memory "
                 "than this machine gave)\n");
    return kExitError;
  } catch (const std::length_error& e) {
    std::fprintf(stderr, "wgfuse: error: a size too large for host memory (%s)\n", e.what());
    return kExitError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wgfuse: internal error (a bug: please report it): %s\n", e.what());
    return kExitInternal;
  }
  return kExitOk;
}
