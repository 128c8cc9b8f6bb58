// Each wgfuse subcommand registers itself on the CLI11 app; main() only wires them together.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "gpu/context.h"

namespace wgfuse::cli {

// The exit status of every command (listed under --help and in README.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;          // an error the message explains: input, options, files, GPU
inline constexpr int kExitUsage = 2;          // the command line does not parse (unknown option, bad value)
inline constexpr int kExitInternal = 3;       // a bug in wgfuse
inline constexpr int kExitInterrupted = 130;  // Ctrl-C (SIGINT) ended `generate`
inline constexpr const char* kExitCodes =
    "Exit status: 0 success; 1 error (the message names the input, option, file or GPU limit); 2 the "
    "command line does not parse; 3 internal error (a bug); 130 interrupted by Ctrl-C.";

// Options every command that touches the GPU takes.
struct GlobalOptions {
  std::string adapter = "auto";
  std::string backend = "any";
  double timeout_s = 120;
  gpu::ContextOptions context_options() const;
};

// The adapter, features and limits as JSON (info --json, and every report's "adapter").
nlohmann::json adapter_json(const gpu::Context& ctx);

void add_info(CLI::App& app, GlobalOptions& g);
void add_bench(CLI::App& app, GlobalOptions& g);
void add_sim(CLI::App& app, GlobalOptions& g);
void add_tokenize(CLI::App& app);
void add_dequantize(CLI::App& app);
void add_to_gguf(CLI::App& app);
void add_generate(CLI::App& app, GlobalOptions& g);
void add_chat(CLI::App& app, GlobalOptions& g);
void add_tiny(CLI::App& app, GlobalOptions& g);
void add_serve(CLI::App& app);
// Runs wgfuse-serve (beside this binary) with these arguments, in place of this process.
[[noreturn]] void run_serve(int argc, char** argv);

}  // namespace wgfuse::cli
