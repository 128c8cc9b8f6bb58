// wgfuse dequantize (hidden, a measurement tool): the tensors of a GGUF file as wgfuse's CPU
// dequantizer reads them (gpu/ggml_blocks.h, rounded to f32 as the GPU decode computes them),
// each written as a float32 .npy of its GGUF shape under its GGUF name, in the file's own row
// order (no Hugging Face reordering), so that bench/baselines/gguf_check.py can compare them
// with llama.cpp's gguf-py dequantization bit for bit. No GPU is involved.
#include <cstdio>
#include <filesystem>
#include <set>

#include "commands.h"
#include "llm/gguf.h"
#include "llm/report.h"
#include "util/error.h"

namespace wgfuse::cli {

void add_dequantize(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("dequantize", "Write a GGUF file's tensors as f32 .npy files (a check tool)");
  cmd->group("");  // hidden from --help: a tool for bench/baselines/gguf_check.py
  static std::string model, out;
  static std::vector<std::string> names;
  cmd->add_option("-m,--model", model, "the GGUF file")->required();
  cmd->add_option("--out", out, "folder for NAME.npy files (created)")->required();
  cmd->add_option("--tensor", names, "only these tensors (GGUF names; repeatable)");
  cmd->callback([] {
    const llm::GgufFile f(model);
    std::filesystem::create_directories(out);
    std::set<std::string> wanted(names.begin(), names.end());
    for (const std::string& n : wanted)
      if (!f.find_tensor(n)) throw Error(model + ": no tensor \"" + n + "\"");
    for (const llm::GgufTensor& t : f.tensors()) {
      if (!wanted.empty() && !wanted.contains(t.name)) continue;
      const llm::TensorRef ref = f.tensor_ref(t, t.name);
      const uint64_t cols = ref.cols(), rows = ref.elements() / cols;
      llm::write_npy((std::filesystem::path(out) / (t.name + ".npy")).string(), llm::to_f32(ref), rows, cols);
      std::printf("%s %s [%llu, %llu]\n", t.name.c_str(), t.type->name, (unsigned long long)rows,
                  (unsigned long long)cols);
    }
  });
}

}  // namespace wgfuse::cli
