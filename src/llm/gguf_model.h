// A GGUF file as a model source: what llama.cpp's converter (convert_hf_to_gguf.py) writes,
// mapped back onto what a Hugging Face folder gives, so that a .gguf runs like the folder it
// came from:
//   general.architecture qwen2 | qwen3 | llama     -> the architecture (Architecture::gguf_name)
//   <arch>.context_length, embedding_length, block_count, feed_forward_length,
//     attention.head_count, head_count_kv, key_length, layer_norm_rms_epsilon, rope.freq_base,
//     rope.scaling.* (yarn), rope_freqs.weight (llama3)  -> ModelConfig
//   tensors by llama.cpp's names (architecture.h's gguf_name), tied when output.weight is absent
//   tokenizer.ggml.* (model "gpt2", pre, tokens, token_type, merges, special ids, add_bos)
//                                                  -> the byte-level BPE tokenizer, stop ids
//   tokenizer.chat_template                        -> the chat template
//   general.sampling.*                             -> sampling defaults (generation_config.json's)
// Every error names the file and the key or tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "llm/chat_template.h"
#include "llm/config.h"
#include "llm/gguf.h"
#include "llm/model_files.h"
#include "llm/tokenizer.h"

namespace wgfuse::llm {

ModelConfig gguf_model_config(const GgufFile& f);
GenerationConfig gguf_generation_config(const GgufFile& f);

// tokenizer.ggml.pre -> the pre-tokenizer of the tokenizer.json it was converted from.
BpeSpec gguf_tokenizer_spec(const GgufFile& f);
Tokenizer gguf_tokenizer(const GgufFile& f);
// tokenizer.chat_template; an Error naming the file when absent.
ChatTemplate gguf_chat_template(const GgufFile& f);
// The tokenizer_config.json the metadata stands for (beside tokenizer_json_text(gguf_tokenizer_spec)
// for the page's tokenizer library): tokenizer.chat_template, the bos, eos and pad tokens by text,
// add_bos_token / add_eos_token, and no clean-up of spaces on decode (byte-level BPE decodes as
// written).
std::string gguf_tokenizer_config_text(const Tokenizer& tokenizer, const GgufFile& f);
// eos, eot and eom ids, and the end-of-turn tokens llama.cpp recognises by text (<|im_end|>,
// <|endoftext|>, <|eot_id|>, <|end_of_text|>) where the vocabulary has them as special tokens.
std::vector<int32_t> gguf_stop_token_ids(const Tokenizer& tokenizer, const GgufFile& f);

// The rows of a q or k tensor (weight or bias) stored with each head's RoPE pairs adjacent
// (Architecture::gguf_rope_pairs_adjacent) back in Hugging Face's order, as bytes.
std::vector<std::byte> rope_rows_to_hf(const TensorRef& t, uint32_t head_dim);
// The inverse (what the converter does): for the test writer.
std::vector<std::byte> rope_rows_to_gguf(const TensorRef& t, uint32_t head_dim);

}  // namespace wgfuse::llm
