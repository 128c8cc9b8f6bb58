// wgfuse tiny: a tiny Qwen2-architecture transformer's whole greedy generation run eager (one
// dispatch per op), batched (one command buffer), per layer, and in one dispatch (one workgroup
// per sequence), checked against the double-precision reference (docs/TINY.md).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "tiny/report.h"
#include "util/error.h"

namespace wgfuse::cli {
namespace {

struct TinyCliOptions {
  tiny::Shape shape;
  tiny::TinyOptions run;
  std::string mode = "all";
  std::string json_path, model_dir, write_dir;
  std::string single_activations = "auto";
  bool sweep = false;
};

void run_tiny(const TinyCliOptions& o, const GlobalOptions& g) {
  tiny::TinyOptions r = o.run;
  if (o.mode != "all") r.strategies = {tiny::parse_strategy(o.mode)};
  using Act = tiny::Tuning::Activations;
  r.tuning.single_activations = o.single_activations == "workgroup" ? Act::Workgroup
                                : o.single_activations == "storage" ? Act::Storage
                                                                    : Act::Auto;
  if (!o.write_dir.empty()) {
    tiny::write_model(o.write_dir, tiny::tiny_config(o.shape), r.seed);
    std::printf("wrote the random model (seed %u) to %s\n", r.seed, o.write_dir.c_str());
  }
  // Everything about the model is checked before the device is created.
  const auto model = o.model_dir.empty() || o.sweep ? tiny::random_model(tiny::tiny_config(o.shape), r.seed)
                                                    : tiny::load_model(o.model_dir);
  gpu::Context ctx(g.context_options());
  const auto& a = ctx.adapter();
  std::printf("adapter: %s (%s, %s)\n", a.device.c_str(), a.backend.c_str(), a.adapter_type.c_str());
  auto j = o.sweep ? tiny::run_sweep(ctx, o.shape, r) : tiny::run_report(ctx, model, r);
  j["adapter"] = adapter_json(ctx);
  j["command"] = o.sweep ? "tiny --sweep" : "tiny";
  if (!o.json_path.empty()) {
    std::ofstream f(o.json_path);
    if (!f) throw Error("cannot write JSON to '" + o.json_path + "'");
    f << j.dump(2) << "\n";
  }
  if (r.check && !j["check"]["pass"].get<bool>()) throw Error("tiny --check failed (see the table)");
}

}  // namespace

void add_tiny(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand(
      "tiny", "A tiny transformer's whole generation: eager vs batched vs per-layer vs one dispatch");
  static TinyCliOptions o;
  cmd->add_option("--d", o.shape.d, "d_model (8 to 4096, a multiple of 4 and of --heads)")
      ->capture_default_str();
  cmd->add_option("--layers", o.shape.layers, "decoder layers")->capture_default_str();
  cmd->add_option("--heads", o.shape.heads, "attention heads (head_dim = d / heads)")->capture_default_str();
  cmd->add_option("--kv-heads", o.shape.kv_heads,
                  "key/value heads (grouped-query attention; default: --heads)");
  cmd->add_option("--seed", o.run.seed, "seed of the random weights")->capture_default_str();
  cmd->add_option("--prompt", o.run.prompt, "prompt (its bytes are the tokens)")->capture_default_str();
  cmd->add_option("--tokens", o.run.tokens, "tokens generated per sequence (up to 256)")
      ->capture_default_str();
  cmd->add_option("--sequences", o.run.sequences,
                  "independent sequences (sequence i's prompt bytes b -> (b + i) % 256)")
      ->capture_default_str();
  cmd->add_option("--repeats", o.run.repeats, "timed runs per strategy after the warm-up")
      ->capture_default_str();
  cmd->add_option("--mode", o.mode, "eager | batched | layer | single | all")
      ->check(CLI::IsMember({"eager", "batched", "layer", "single", "all"}))
      ->capture_default_str();
  cmd->add_flag(
      "--check", o.run.check,
      "compare every strategy's tokens (exactly) and logits (1e-4 relative) with the CPU reference");
  cmd->add_option("--json", o.json_path, "write the results as JSON to FILE");
  cmd->add_option("--model", o.model_dir, "a tiny Qwen2 safetensors folder instead of random weights");
  cmd->add_option("--write-model", o.write_dir,
                  "write the random model as a Qwen2 folder (config.json + model.safetensors, f32) to DIR");
  cmd->add_option("--threads", o.run.tuning.threads,
                  "threads per workgroup of layer and single (a multiple of 32; default: 131072 / "
                  "sequences as a power of two, 128 to 512)");
  cmd->add_option("--lanes", o.run.tuning.lanes,
                  "most threads sharing one row or score (a power of two up to the smallest subgroup; 1: "
                  "no subgroups; default: the smallest subgroup, at most 32)");
  cmd->add_option("--single-activations", o.single_activations,
                  "where single keeps one sequence's activations: auto (workgroup memory where they fit) "
                  "| workgroup | storage")
      ->check(CLI::IsMember({"auto", "workgroup", "storage"}))
      ->capture_default_str();
  cmd->add_flag("--sweep", o.sweep,
                "d (--sweep-d) x layers (--sweep-layers) x sequences (--sweep-sequences; 16384 only at "
                "d=64); past d=256 one layer, one sequence, head_dim 128, at most 8 tokens");
  cmd->add_option("--sweep-d", o.run.sweep_widths, "the sweep's widths")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--sweep-layers", o.run.sweep_layers, "the sweep's layer counts")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--sweep-sequences", o.run.sweep_sequences, "the sweep's sequence counts")
      ->delimiter(',')
      ->capture_default_str();
  cmd->callback([&g] { run_tiny(o, g); });
}

}  // namespace wgfuse::cli
