#include "tiny/check.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

namespace wgfuse::tiny {

std::vector<uint32_t> checked_sequences(uint32_t sequences) {
  std::vector<uint32_t> out;
  if (sequences <= 64) {
    for (uint32_t i = 0; i < sequences; ++i) out.push_back(i);
    return out;
  }
  out.push_back(0);
  for (uint32_t i = 0; i < 64; ++i) out.push_back(uint32_t(uint64_t(i) * sequences / 64 + sequences / 128));
  out.push_back(sequences - 1);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

ReferenceSet reference_set(const TinyModel& m, std::string_view prompt, uint32_t tokens, uint32_t sequences) {
  ReferenceSet r;
  r.sequences = checked_sequences(sequences);
  r.generations.resize(r.sequences.size());
  const size_t workers =
      std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), r.sequences.size()));
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (size_t i = w; i < r.sequences.size(); i += workers)
        r.generations[i] = reference_generation(m, sequence_prompt(prompt, r.sequences[i]), tokens);
    });
  for (auto& t : pool) t.join();
  return r;
}

CheckResult check_run(TinyRunner& runner, const ReferenceSet& ref) {
  CheckResult c;
  auto fail = [&](const std::string& what) {
    if (c.ok) c.first_failure = what;
    c.ok = false;
  };
  for (size_t k = 0; k < ref.sequences.size(); ++k) {
    const uint32_t seq = ref.sequences[k];
    const auto& g = ref.generations[k];
    const auto tokens = runner.tokens(seq);
    const auto logits = runner.logits(seq);
    ++c.sequences;
    for (size_t t = 0; t < g.tokens.size(); ++t) {
      const auto& want = g.logits[t];
      double scale = 0;
      for (double v : want) scale = std::max(scale, std::abs(v));
      for (uint32_t v = 0; v < kVocab; ++v) {
        const double got = logits[t * kVocab + v];
        const double err = std::abs(got - want[v]) / scale;
        if (!(err <= kLogitTolerance)) {
          std::ostringstream s;
          s << "sequence " << seq << ", step " << t << ", logit " << v << ": " << got << ", reference "
            << want[v] << " (relative error " << err << " > " << kLogitTolerance << ")";
          fail(s.str());
        }
        if (std::isnan(err))
          c.max_error = err;
        else if (!std::isnan(c.max_error))
          c.max_error = std::max(c.max_error, err);
      }
      if (tokens[t] != g.tokens[t]) {
        std::ostringstream s;
        s << "sequence " << seq << ", step " << t << ": token " << tokens[t] << ", reference " << g.tokens[t];
        if (tokens[t] < kVocab)
          s << " (reference logits " << want[tokens[t]] << " and " << want[g.tokens[t]]
            << (want[g.tokens[t]] - want[tokens[t]] <= kLogitTolerance * scale
                    ? ": a tie within the tolerance)"
                    : ")");
        fail(s.str());
      }
    }
  }
  return c;
}

}  // namespace wgfuse::tiny
