// The model's prefill and decode plans written down (`wgfuse generate --write-plan FILE.json`):
// every dispatch (kernel family, entry point, override constants, grid, bindings as ranges of
// named buffers), the buffers to create and what they hold, the decode state's words and who
// writes them, and the sequences that run the plans, so that another host (the browser page) can
// replay the very same kernels without re-deriving anything. Format: docs/PLAN.md.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace wgfuse::llm {

class Model;
class Sampler;
struct ModelConfig;

constexpr int kPlanFormatVersion = 1;

// The plan of `model` as JSON. The prefill plans written are those of a prompt of
// `prompt_length` tokens (one per chunk length it uses) and of a whole chunk; `sampler` (when
// sampling) is the token picker, else greedy argmax.
nlohmann::json plan_json(Model& model, uint32_t prompt_length, Sampler* sampler = nullptr);
// The model's shape as JSON (the written plan's "model", `generate --json`'s "config").
nlohmann::json config_json(const ModelConfig& c);
// Writes `plan` to `path` (indented); throws Error naming the path when it cannot.
void write_plan(const std::string& path, const nlohmann::json& plan);

}  // namespace wgfuse::llm
