// Each wgfuse subcommand registers itself on the CLI11 app; main() only wires them together.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "gpu/context.h"

namespace wgfuse::cli {

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
void add_generate(CLI::App& app, GlobalOptions& g);
void add_chat(CLI::App& app, GlobalOptions& g);
void add_tiny(CLI::App& app, GlobalOptions& g);
void add_serve(CLI::App& app);

}  // namespace wgfuse::cli
