// Writes Hugging Face model folders for tests: safetensors files (F32, F16 or BF16), sharded
// with an index when asked, config.json and generation_config.json. Written directly from the
// format description, sharing no code with the reader, so a test that writes and reads back
// checks one implementation against another.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "llm/config.h"
#include "llm/tensor.h"

namespace wgfuse::llm {

struct TensorData {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> values;  // shape's product of them, row-major
  // Or, with raw_dtype set ("I32", "F16": an AWQ or GPTQ tensor), the stored bytes as they are.
  std::string raw_dtype, raw;
};

// The value `v` reads back as once stored as `dtype` (round to nearest, ties to even).
float round_to_dtype(float v, DType dtype);

// The values stored as `dtype`, little-endian (rounded as round_to_dtype).
std::string encode_values(const std::vector<float>& values, DType dtype);

// One safetensors file with the tensors in the given order (values as `dtype`), contiguous, the header padded
// with spaces so that the data starts 8-byte aligned (as Hugging Face's writer does).
void write_safetensors(const std::filesystem::path& file, const std::vector<TensorData>& tensors,
                       DType dtype);

// config.json for a model of config `c` (its architecture, RoPE scaling), in the layout
// transformers writes.
std::string model_config_json(const ModelConfig& c);

// A model folder: config.json (`config_json` as given), generation_config.json when given, and
// the tensors as model.safetensors or, for shards > 1, as model-0000i-of-0000n.safetensors with
// model.safetensors.index.json.
void write_model_folder(const std::filesystem::path& dir, const std::string& config_json,
                        const std::vector<TensorData>& tensors, DType dtype, int shards = 1,
                        const std::string& generation_config_json = "");

// A random-weight model of config `c` (every tensor of its architecture's table) written to `dir` (created if
// needed). Weights are uniform in +-1/sqrt(fan_in), biases in +-0.1, norm weights in [0.5, 1.5], embeddings
// in +-1: never zero, activations of order one. Returns the tensors as stored (rounded to `dtype`).
std::vector<TensorData> write_random_model(const std::filesystem::path& dir, const ModelConfig& c,
                                           DType dtype, uint32_t seed, int shards = 1);

}  // namespace wgfuse::llm
