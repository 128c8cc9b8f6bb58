// The model options of generate and chat, and the session they open (llm_options.h).
#include "llm_options.h"

#include <unistd.h>

#include <cstdio>
#include <functional>

#include "gpu/weight_format.h"
#include "util/error.h"

namespace wgfuse::cli {
namespace {

// A progress bar on stderr while weights upload, when stderr is a terminal.
std::function<void(uint64_t, uint64_t)> progress_bar(std::string what) {
  if (!isatty(2)) return {};
  return [what = std::move(what), last = -1](uint64_t done, uint64_t total) mutable {
    const int pct = total ? int(100.0 * double(done) / double(total)) : 0;
    if (total == 0 || pct == last) return;
    last = pct;
    const int filled = pct * 30 / 100;
    std::fprintf(stderr, "\r%s [%s%s] %3d%% of %.2f GB", what.c_str(), std::string(filled, '#').c_str(),
                 std::string(30 - filled, ' ').c_str(), pct, double(total) / 1e9);
    if (done >= total) std::fputc('\n', stderr);
  };
}

}  // namespace

void add_llm_options(CLI::App* c, LlmOptions& o) {
  c->add_option("-m,--model", o.s.model_dir,
                "Hugging Face model folder (config.json, *.safetensors, tokenizer.json), or a GGUF file")
      ->required();
  c->add_option(
       "--dtype", o.dtype,
       "weight storage on the GPU: auto (the checkpoint's 16-bit type: bf16 stays bf16, f16 stays f16, "
       "f32 becomes f16; a quantized checkpoint keeps its type) | f32 | f16 | bf16 | q8_0 | q4_0 | q4_1 | "
       "q5_0 | "
       "q5_1 | q4_k | q5_k | q6_k (ggml's formats) | q4_zp (AWQ's and GPTQ's 4-bit groups), quantized at "
       "load: "
       "rows padded to whole blocks of 32, 256 for the k formats")
      ->check(CLI::IsMember({"auto", "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k",
                             "q5_k", "q6_k", "q4_zp"}))
      ->capture_default_str();
  c->add_option("--ctx", o.s.ctx,
                "KV-cache length in tokens (default 4096, or the model's max_position_embeddings if smaller)")
      ->check(CLI::Range(1u, UINT32_MAX));
  c->add_option("--temp", o.s.sampling.temperature,
                "temperature; 0 = greedy (default: generation_config.json, else greedy)");
  c->add_option("--top-k", o.s.sampling.top_k, "keep the k most likely tokens; 0 = off");
  c->add_option("--top-p", o.s.sampling.top_p,
                "keep the smallest set of tokens reaching this probability; 1 = off");
  c->add_option("--repeat-penalty", o.s.sampling.repetition_penalty,
                "repetition penalty over the whole sequence; 1 = off");
  c->add_option("--seed", o.s.sampling.seed, "random seed: the same seed gives the same text")
      ->check(CLI::Validator(
          [](const std::string& v) -> std::string {
            // Digits only, at most 2^64 - 1: CLI11 would turn -1, 1e23 and 2^64 into 2^64 - 1.
            const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
            if (digits && (v.size() < 20 || (v.size() == 20 && v <= "18446744073709551615"))) return {};
            return v + " is not an integer from 0 to 18446744073709551615";
          },
          "UINT64"))
      ->capture_default_str();
  c->add_option("--steps-per-submit", o.s.steps_per_submit, "decode steps recorded into one command buffer")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  c->add_option("--attn-chunk", o.s.attention.chunk,
                "decode attention: KV-cache positions per workgroup (a thread each, up to 256 threads)")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  c->add_option(
       "--attn-heads", o.s.attention.heads_per_wg,
       "decode attention: query heads per workgroup (a divisor of heads / kv heads; they share K/V reads)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  c->add_option("--fusion", o.fusion,
                "decode layers: none (split, 5 dispatches a layer: the fastest measured) | full (attention "
                "fused with o_proj, 4 a layer; slower on the H100, docs/RESULTS.md)")
      ->check(CLI::IsMember({"none", "full"}))
      ->capture_default_str();
  c->add_option(
       "--attn-short-max", o.s.attn_short_max,
       "with --fusion none: positions below which decode attention is one dispatch per layer "
       "(a workgroup per head; at most 16384 / head_dim: 256 at head_dim 64, 128 at 128, and 4096 by "
       "workgroup memory); 0 = always split along the cache")
      ->capture_default_str();
  c->add_option("--attn-long-from", o.s.attn_long_from,
                "positions from which decode attention takes chunks of twice --attn-chunk (fewer to "
                "combine; faster from ~2,000 positions on the H200 measured); 0 = never")
      ->capture_default_str();
  c->add_option("--attn-fuse-max", o.s.attn_fuse_max,
                "with --fusion full: positions from which decode attention is split along the cache again")
      ->capture_default_str();
  c->add_option("--prefill-chunk", o.s.prefill_chunk,
                "prompt tokens per prefill submit (tiled matrix-matrix kernels); 0 = one decode step per "
                "prompt token")
      ->capture_default_str();
  c->add_option("--prefill-short-max", o.s.prefill_short_max,
                "prompt chunks of up to this many tokens go through the batched decode's row products in "
                "passes of 16 tokens instead of the tiled kernels (short prompts: time to first token); 0 = "
                "never; at most 128")
      ->capture_default_str();
  c->add_option("--prefill-tile", o.prefill_tile,
                "tokens x rows of output per workgroup of every prefill product: auto (by the product's "
                "size) or TOKENSxROWS[xSPLIT[xGROUPS]], one of 32x64, 64x64, 64x128, 128x128 (8 tokens a "
                "thread) or 64x128x1x2 (the same); SPLIT: workgroups along K of the o and down products, "
                "1 to 8 (at most as many as their sums fit)")
      ->capture_default_str();
  c->add_option("--prefill-attention", o.prefill_attention,
                "prefill attention kernel: auto (tiled for chunks of 192 tokens or more, else blocks), "
                "blocks (16 queries x 16 keys a workgroup) or tiled (up to 64 queries x 32 keys)")
      ->capture_default_str();
  c->add_option("--prefill-attention-splits", o.s.prefill_attention_splits,
                "tiled prefill attention: workgroups that share out a tile's keys, their partials added "
                "by a second dispatch (short prompts fill the GPU); 0 = the rule (2 where the tiles "
                "make fewer than 512 workgroups, else 1)")
      ->check(CLI::Range(0u, llm::DecodeKernels::kPromptAttentionMaxSplits))
      ->capture_default_str();
}
std::unique_ptr<llm::Session> open_session(LlmOptions lo, const std::string& decode) {
  if (lo.dtype != "auto") lo.s.dtype = gpu::parse_weight_format(lo.dtype, "--dtype");
  lo.s.fusion = llm::parse_fusion(lo.fusion);
  lo.s.prefill_tile = llm::parse_prompt_tile(lo.prefill_tile, "--prefill-tile");
  lo.s.prefill_attention = llm::parse_prompt_attention(lo.prefill_attention, "--prefill-attention");
  lo.s.decoder = llm::parse_decoder_kind(decode);
  lo.s.progress = progress_bar("loading " + lo.s.model_dir);
  lo.s.notice = [](const std::string& s) { std::fprintf(stderr, "wgfuse: %s\n", s.c_str()); };
  return std::make_unique<llm::Session>(std::move(lo.s));
}
llm::Stream to_stdout(std::vector<float>* logits) {
  return {
      .on_text = [](std::string_view t) { std::fwrite(t.data(), 1, t.size(), stdout), std::fflush(stdout); },
      .logits = logits};
}
void check_n(int64_t n) {
  if (n == 0 || n < -1)
    throw Error("-n " + std::to_string(n) +
                ": the number of tokens to generate must be at least 1, or -1 (until EOS or --ctx is full)");
}

}  // namespace wgfuse::cli
