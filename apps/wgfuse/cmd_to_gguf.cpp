// wgfuse to-gguf (hidden, a measurement tool): a Hugging Face folder written as one GGUF file as
// llama.cpp's converter lays it out (llm/gguf_writer.h), its matrices in one type (q8_0, q4_0 or
// f16; norms and biases f32) and its tokenizer.json and chat template as GGUF tokenizer metadata,
// so that a GPU machine without llama.cpp can serve the same weights quantized to the chat page
// (bench/baselines/browser_gpu.sh). A BPE tokenizer only, as Qwen's (llm::add_hf_tokenizer).
#include <cstdio>

#include "commands.h"
#include "llm/architecture.h"
#include "llm/gguf_writer.h"
#include "llm/model_files.h"
#include "llm/safetensors_writer.h"
#include "llm/tensor.h"
#include "util/error.h"

namespace wgfuse::cli {

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
    add_hf_tokenizer(w, model, c.vocab_size);
    w.write(out);
    std::printf("to-gguf: %s (%zu tensors, matrices %s)\n", out.c_str(), tensors.size(), type.c_str());
  });
}

}  // namespace wgfuse::cli
