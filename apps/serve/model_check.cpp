#include "model_check.h"

#include <algorithm>

#include "util/error.h"

namespace wgfuse::serve {

namespace {

const char* const kPrompt = "The capital of France is";
constexpr uint32_t kCheckTokens = 16, kBenchPromptTokens = 128, kBenchDecodeTokens = 64;

}  // namespace

CheckGeneration native_check_generation(llm::Decoder& model, const llm::Tokenizer& tokenizer,
                                        const std::string& model_name) {
  const uint32_t vocab = model.config().vocab_size, capacity = model.capacity();
  CheckGeneration c;
  std::vector<uint32_t> prompt;
  try {
    for (int32_t id : tokenizer.encode(kPrompt))
      if (uint32_t(id) < vocab) prompt.push_back(uint32_t(id));
    if (!prompt.empty()) c.prompt_text = kPrompt;
  } catch (const Error&) {  // a tokenizer that adds a BOS refuses to encode: fixed ids instead
  }
  if (c.prompt_text.empty()) {
    prompt.clear();
    for (uint32_t i = 0; i < 6; ++i) prompt.push_back((i * 37 + 11) % vocab);
  }
  // The check and the benchmark (prompt, then its decode tokens) each fit the context.
  const uint32_t check_tokens =
      std::min(kCheckTokens, capacity - std::min(capacity, uint32_t(prompt.size())));
  if (check_tokens == 0)
    throw Error("--model: a context of " + std::to_string(capacity) +
                " positions cannot hold the check generation (--ctx)");
  const uint32_t bench_prompt = std::min(kBenchPromptTokens, capacity / 2);
  c.bench_decode_tokens = std::min(kBenchDecodeTokens, capacity - bench_prompt - 1);

  model.reset();
  const std::vector<uint32_t> out = model.generate(prompt, check_tokens);
  model.reset();
  c.check.model = model_name;
  c.check.prompt_ids.assign(prompt.begin(), prompt.end());
  c.check.expected_ids.assign(out.begin(), out.end());
  std::vector<int32_t> ids(out.begin(), out.end());
  try {
    c.expected_text = tokenizer.decode(ids);
  } catch (const Error&) {  // an id past the tokenizer's (a random model's larger vocabulary)
  }
  for (uint32_t i = 0; i < bench_prompt; ++i) c.bench_prompt_ids.push_back(prompt[i % prompt.size()]);
  return c;
}

nlohmann::json check_json(const CheckGeneration& c) {
  return {{"model", c.check.model},
          {"prompt_text", c.prompt_text},
          {"prompt_ids", c.check.prompt_ids},
          {"expected_ids", c.check.expected_ids},
          {"expected_text", c.expected_text},
          {"bench", {{"prompt_ids", c.bench_prompt_ids}, {"decode_tokens", c.bench_decode_tokens}}}};
}

}  // namespace wgfuse::serve
