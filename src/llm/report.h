// What a generation reports: the timing line, the --profile table and the run's JSON (the keys
// scripts and docs rely on: tests/test_generate_cli.cpp checks them).
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "llm/session.h"

namespace wgfuse::llm {

// Rates and per-token counts of the last generation.
nlohmann::json timing_json(const DecoderStats& st);
// "\n[N prompt tokens, prefill … tok/s, …, load … ms]\n", for stderr.
std::string timing_line(const DecoderStats& st, double load_ms);

// Prints a table per kernel of the profiled step to `out` (calls per token, µs, bytes, GB/s, % of
// the copy kernel's bandwidth, measured now on ctx) under a line naming the weights' formats and
// bytes per token (`st`); returns the same as JSON.
nlohmann::json report_profile(std::FILE* out, gpu::Context& ctx, const DecodeProfile& p, uint32_t reps,
                              const DecoderStats& st);

// The same for the prompt chunk: per kernel µs and achieved TFLOP/s (FMA counted as 2).
nlohmann::json report_prefill_profile(std::FILE* out, const PrefillProfile& p, uint32_t reps);

nlohmann::json decoder_json(const DecoderChoice& c);
// The run: timings and counts, the prompt and generated ids, the text, the model, the options and
// the decoder (without "adapter" and "profile", which the caller adds).
nlohmann::json run_json(Session& s, std::span<const uint32_t> prompt, const Reply& reply);

// A float32 .npy of shape [rows, cols] (NumPy format 1.0), for --dump-logits.
void write_npy(const std::string& path, const std::vector<float>& data, size_t rows, size_t cols);

}  // namespace wgfuse::llm
