// wgfuse dequantize (hidden, a measurement tool): the quantized tensors of a model as wgfuse's CPU
// dequantizer reads them, each written as a float32 .npy, so that the check scripts can compare
// them with an independent implementation bit for bit. No GPU is involved.
//   a GGUF file: every tensor (gpu/ggml_blocks.h, rounded to f32 as the GPU decode computes
//     them) under its GGUF name and shape, in the file's own row order (no Hugging Face
//     reordering): bench/baselines/gguf_check.py against gguf-py;
//   an AWQ or GPTQ folder: every quantized linear layer as the loader stores it (q4_zp or q8_0,
//     read through llm/hf_quant.h) under its Hugging Face name, [out, in]:
//     bench/baselines/hf_quant_check.py against numpy.
#include <cstdio>
#include <filesystem>
#include <set>

#include "commands.h"
#include "gpu/weight_format.h"
#include "llm/architecture.h"
#include "llm/gguf.h"
#include "llm/model_files.h"
#include "llm/report.h"
#include "util/error.h"

namespace wgfuse::cli {

void add_dequantize(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("dequantize",
                         "Write a GGUF file's or an AWQ/GPTQ folder's quantized tensors as f32 .npy files "
                         "(a check tool)");
  cmd->group("");  // hidden from --help: a tool for bench/baselines' check scripts
  static std::string model, out;
  static std::vector<std::string> names;
  cmd->add_option("-m,--model", model, "the GGUF file, or the AWQ/GPTQ folder")->required();
  cmd->add_option("--out", out, "folder for NAME.npy files (created)")->required();
  cmd->add_option("--tensor", names,
                  "only these tensors (GGUF names, or the folder's NAME.weight; repeatable)");
  cmd->callback([] {
    std::filesystem::create_directories(out);
    const std::set<std::string> wanted(names.begin(), names.end());
    auto write = [&](const llm::TensorRef& ref, const std::string& name) {
      const uint64_t cols = ref.cols(), rows = ref.elements() / cols;
      llm::write_npy((std::filesystem::path(out) / (name + ".npy")).string(), llm::to_f32(ref), rows, cols);
      std::printf("%s %s [%llu, %llu]\n", name.c_str(), gpu::to_string(ref.dtype), (unsigned long long)rows,
                  (unsigned long long)cols);
    };
    if (llm::is_gguf_file(model)) {
      const llm::GgufFile f(model);
      for (const std::string& n : wanted)
        if (!f.find_tensor(n)) throw Error(model + ": no tensor \"" + n + "\"");
      for (const llm::GgufTensor& t : f.tensors())
        if (wanted.empty() || wanted.contains(t.name)) write(f.tensor_ref(t, t.name), t.name);
      return;
    }
    const llm::ModelFiles files(model);
    if (!files.quantization())
      throw Error(model +
                  ": not a GGUF file and config.json has no \"quantization_config\" (nothing is quantized)");
    for (const std::string& n : wanted)
      if (!files.find(n) || !gpu::is_quantized(files.find(n)->dtype))
        throw Error(model + ": no quantized layer \"" + n + "\"");
    for (const llm::ExpectedTensor& e : llm::expected_tensors(files.config())) {
      const llm::TensorRef* ref = files.find(e.name);
      if (gpu::is_quantized(ref->dtype) && (wanted.empty() || wanted.contains(e.name))) write(*ref, e.name);
    }
  });
}

}  // namespace wgfuse::cli
