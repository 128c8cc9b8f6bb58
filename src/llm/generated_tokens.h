#pragma once
// The tokens a decoder hands back, in order, until the generation stops; shared by the step decoder
// (Model) and the persistent decoder so that both stop alike.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "llm/sampler.h"
#include "util/error.h"

namespace wgfuse::llm {

class GeneratedTokens {
 public:
  // `seq` is the decoder's whole sequence: every token taken is appended to it too.
  GeneratedTokens(uint32_t vocab_size, uint32_t n, const std::function<bool(uint32_t)>& on_token,
                  const std::vector<uint32_t>& eos_ids, std::vector<uint32_t>& seq)
      : vocab_size_(vocab_size), n_(n), on_token_(on_token), eos_ids_(eos_ids), seq_(seq) {}

  // Takes the next generated id. Generation stops after an EOS id (which is kept), after n tokens
  // or when on_token returns false; ids computed past that in the same batch are dropped (false).
  bool take(uint32_t id) {
    if (stopped_) return false;
    if (id == kNoFiniteLogit)
      throw Error("generated token " + std::to_string(ids_.size() + 1) + " (after position " +
                  std::to_string(seq_.size() - 1) +
                  "): every logit is NaN or -inf, so no token can be chosen; the weights hold "
                  "non-finite values or the arithmetic overflowed (the load names such tensors; "
                  "--dtype f32 keeps values above f16's 65504)");
    if (id >= vocab_size_)
      throw Error("the GPU picked token id " + std::to_string(id) + " outside the vocabulary (vocab_size " +
                  std::to_string(vocab_size_) + ")");
    ids_.push_back(id);
    seq_.push_back(id);
    const bool eos = std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
    if ((on_token_ && !on_token_(id)) || eos || ids_.size() == n_) stopped_ = true;
    return true;
  }
  bool stopped() const { return stopped_; }
  const std::vector<uint32_t>& ids() const { return ids_; }
  std::vector<uint32_t> release() { return std::move(ids_); }

 private:
  uint32_t vocab_size_;
  size_t n_;
  const std::function<bool(uint32_t)>& on_token_;
  const std::vector<uint32_t>& eos_ids_;
  std::vector<uint32_t>& seq_;
  std::vector<uint32_t> ids_;
  bool stopped_ = false;
};

}  // namespace wgfuse::llm
