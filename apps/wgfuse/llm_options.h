// Options every command that runs a model takes (generate, chat): the model, storage, context,
// sampling and decode settings, wired to an llm::Session (src/llm/session.h).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llm/session.h"

namespace wgfuse::cli {

// The session's options, with the flags that name an enum kept as given.
struct LlmOptions {
  llm::SessionOptions s;
  std::string dtype = "auto", fusion = "none", prefill_tile = "auto", prefill_attention = "auto";
};

void add_llm_options(CLI::App* c, LlmOptions& o);

// Reads and checks the folder and the options (no GPU yet); `decode` is --decode's value.
std::unique_ptr<llm::Session> open_session(LlmOptions lo, const std::string& decode);

// Generated text to stdout as it comes; the logits that chose each token into `logits` if given.
llm::Stream to_stdout(std::vector<float>* logits = nullptr);

// -n: a count of tokens, or -1 for "until EOS or the context is full" (llama.cpp's meaning).
void check_n(int64_t n);

}  // namespace wgfuse::cli
