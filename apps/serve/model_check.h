// `wgfuse serve --model`: what the benchmark page's llm suite (web/suites/llm.js) runs and is
// checked against, published as GET /model/check.json (docs/WEB_API.md, "Model"): a short greedy
// generation the native engine makes at start from a fixed prompt, which the page must reproduce
// token for token (the server compares a submitted result's tokens with these: serve::LlmCheck),
// and the prompt its prefill and decode rates are measured on.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "llm/decoder.h"
#include "llm/tokenizer.h"
#include "serve/submission.h"

namespace wgfuse::serve {

struct CheckGeneration {
  LlmCheck check;           // the model's name, the prompt's ids and the greedy tokens after them
  std::string prompt_text;  // what the prompt's ids encode ("" where the tokenizer cannot encode)
  std::string expected_text;
  std::vector<int64_t> bench_prompt_ids;  // the prefill benchmark's prompt
  uint32_t bench_decode_tokens = 0;       // tokens the decode benchmark generates after it
};

// Runs the check generation on `model` (greedy, no stop ids: exactly the tokens asked for) and
// leaves it reset. The sizes shrink to fit the model's context.
CheckGeneration native_check_generation(llm::Decoder& model, const llm::Tokenizer& tokenizer,
                                        const std::string& model_name);

nlohmann::json check_json(const CheckGeneration& c);

}  // namespace wgfuse::serve
