// wgfuse to-gguf (hidden, a measurement tool): a Hugging Face folder written as one GGUF file as
// llama.cpp's converter lays it out (llm/gguf_writer.h), its matrices in one type (q8_0, q4_0 or
// f16; norms and biases f32) and its tokenizer.json and chat template as GGUF tokenizer metadata,
// so that a GPU machine without llama.cpp can serve the same weights quantized to the chat page
// (bench/baselines/browser_gpu.sh). A BPE tokenizer only, as Qwen's.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "llm/architecture.h"
#include "llm/gguf_writer.h"
#include "llm/model_files.h"
#include "llm/safetensors_writer.h"
#include "llm/tensor.h"
#include "util/error.h"

namespace wgfuse::cli {

namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  if (!in)
    throw Error("to-gguf: cannot read " + file.string() + " (the folder's tokenizer files are needed)");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error("to-gguf: " + file.string() + ": " + e.what());
  }
}

// The folder's BPE tokenizer as the GGUF tokenizer keys llama.cpp's converter writes for Qwen2.
void add_tokenizer(llm::GgufWriter& w, const fs::path& dir, uint32_t vocab_size) {
  const nlohmann::json tok = read_json(dir / "tokenizer.json");
  const nlohmann::json cfg = read_json(dir / "tokenizer_config.json");
  if (tok.value("/model/type"_json_pointer, "") != "BPE")
    throw Error("to-gguf: " + (dir / "tokenizer.json").string() +
                ": model.type is not BPE (only BPE tokenizers are written)");
  std::vector<std::string> tokens(vocab_size), merges;
  std::vector<int32_t> types(vocab_size, 5);  // unused padding
  for (uint32_t i = 0; i < vocab_size; ++i) tokens[i] = "[PAD" + std::to_string(i) + "]";
  auto put = [&](size_t id, const std::string& text, int32_t type) {
    if (id >= vocab_size)
      throw Error("to-gguf: token id " + std::to_string(id) + " (" + text +
                  ") is past the model's vocabulary of " + std::to_string(vocab_size));
    tokens[id] = text;
    types[id] = type;
  };
  for (const auto& [text, id] : tok["model"]["vocab"].items()) put(id.get<size_t>(), text, 1);  // normal
  for (const auto& a : tok["added_tokens"])
    put(a["id"].get<size_t>(), a["content"].get<std::string>(), 3);  // control
  for (const auto& m : tok["model"]["merges"])
    merges.push_back(m.is_string() ? m.get<std::string>()
                                   : m[0].get<std::string>() + " " + m[1].get<std::string>());
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "qwen2");
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_strings("tokenizer.ggml.merges", merges);
  if (cfg.contains("chat_template") && cfg["chat_template"].is_string())
    w.add_string("tokenizer.chat_template", cfg["chat_template"].get<std::string>());
}

}  // namespace

void add_to_gguf(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("to-gguf", "Write a Hugging Face folder as a GGUF file (a measurement tool)");
  cmd->group("");  // hidden from --help: a tool for bench/baselines' scripts
  static std::string model, out, type = "q8_0";
  cmd->add_option("-m,--model", model, "the Hugging Face folder")->required();
  cmd->add_option("-o,--out", out, "the GGUF file to write")->required();
  cmd->add_option("--type", type, "the matrices' type")->check(CLI::IsMember({"q8_0", "q4_0", "f16"}));
  cmd->callback([] {
    const llm::ModelFiles files(model);
    const llm::ModelConfig& c = files.config();
    std::vector<llm::TensorData> tensors;
    for (const llm::ExpectedTensor& e : llm::expected_tensors(c)) {
      const llm::TensorRef& t = files.require(e.name, e.shape);
      llm::TensorData d{.name = e.name, .shape = e.shape, .values = std::vector<float>(t.elements())};
      const uint64_t cols = t.cols(), rows = t.shape.size() == 2 ? t.shape[0] : 1;
      for (uint64_t r = 0; r < rows; ++r) llm::tensor_row(t, r, std::span(d.values).subspan(r * cols, cols));
      tensors.push_back(std::move(d));
    }
    const llm::DType matrices = type == "q8_0"   ? llm::DType::Q8_0
                                : type == "q4_0" ? llm::DType::Q4_0
                                                 : llm::DType::F16;
    llm::GgufWriter w = llm::gguf_model_writer(c, tensors, [&](const llm::ExpectedTensor& e) {
      return e.shape.size() == 2 ? matrices : llm::DType::F32;
    });
    add_tokenizer(w, model, c.vocab_size);
    w.write(out);
    std::printf("to-gguf: %s (%zu tensors, matrices %s)\n", out.c_str(), tensors.size(), type.c_str());
  });
}

}  // namespace wgfuse::cli
