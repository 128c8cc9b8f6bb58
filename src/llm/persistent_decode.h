// PersistentDecoder (issue 9, experimental): greedy decoding of a Qwen2 or Llama model with
// ONE dispatch per position (kernels/llm_persistent_decode.wgsl): its workgroups share every
// stage's work and meet at grid barriers between stages (5 per layer + 1), reading weights from
// one packed buffer. Beside llm::Model, which stays the reference: a grid barrier is only
// trustworthy where check_grid_sync (persistent.h) passed for the grid, and the results only
// where they were checked equal to Model's (`wgfuse generate --decode persistent`).
// A prompt goes through the same dispatch, one position at a time (a position whose next token is
// already known picks none), unless a step decoder takes it (take_prompts_from): then its prefill
// feeds every prompt position but the last, and their K/V are copied into this decoder's cache.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/context.h"
#include "llm/config.h"
#include "llm/decode_kernels.h"
#include "llm/decoder.h"
#include "llm/persistent.h"
#include "llm/reference.h"

namespace wgfuse::llm {

class Model;

// The decode's variants, chosen at run time (pipeline constants) so one build measures them against
// each other: `wgfuse generate --decode persistent --persistent-variant split+down=3`.
struct PersistentVariant {
  // Attention over (head, block of positions) units in up to this many blocks per head, combined
  // where o_proj stages its input; 0: a head per workgroup. split_auto (the default) picks it from
  // the grid, or 0 where head_dim is not a multiple of 4.
  uint32_t attention_blocks = 0;
  bool split_auto = true;
  // down_proj over (row pair, column chunk) units, this many chunks a row (>= 2; 0: whole rows),
  // the partial dots added to the residual where the next stage stages it. down_auto (the default)
  // picks 2 to 4: as many as let one pass of the grid's teams take every unit.
  uint32_t down_split = 0;
  bool down_auto = true;
  // The split attention's K dot over this many rounds of positions a tile (1 to 4), each thread's
  // rounds' loads in flight together: fewer tiles a block at long contexts, more registers.
  uint32_t attention_rounds = 4;
  // Each product's first weights loaded ahead of their use: while the workgroup waits at the grid
  // barrier before the stage, and each later unit's during the previous unit's dots (every
  // format but f32). ahead_auto (the default) turns it on where the format allows it.
  bool ahead = false;
  bool ahead_auto = true;
};
// "base" (a head per workgroup, whole rows), or '+'-joined "split", "split=N", "down", "down=N", "rounds=N",
// "ahead" (what is not named is off); throws Error naming the bad part. The default
// (PersistentVariant{}) is "split+down+rounds=4", plus "ahead" where the weights are not f32: the
// fastest measured (docs/RESULTS.md).
PersistentVariant parse_persistent_variant(std::string_view s);
std::string to_string(const PersistentVariant& v);

struct PersistentOptions {
  std::optional<gpu::WeightFormat> dtype;  // nullopt: the checkpoint's own 16-bit type
  uint32_t ctx = 4096;                     // KV-cache positions
  uint32_t workgroups = 1;                 // the grid: at most what check_grid_sync saw co-resident
  uint32_t workgroup_size = 256;  // a power of two, >= head_dim and >= the row team (32 or the subgroup)
  // Atomic loads a workgroup spends waiting at one grid barrier before the dispatch gives up (an
  // Error after the submit, not a hang).
  uint32_t spin_limit = 1u << 22;
  // Halve `workgroups` until the dispatch's own first grid barrier passes within probe_spin spins
  // (check_grid_sync's kernel is lighter than this one's registers and workgroup memory, so more
  // of its workgroups may be resident at once); throws Error ("timed out") when not even 1 does.
  bool fit_grid = false;
  uint32_t probe_spin = 1u << 20;
  PersistentVariant variant;
  std::function<void(uint64_t done, uint64_t total)> progress;  // upload bytes
  // A step decoder whose weight arena (one buffer) this decoder binds instead of uploading the
  // matrices again (their format is then the model's, dtype unused); the norms and biases still come
  // from the WeightLookup. It must outlive this decoder. nullptr: this decoder uploads its own.
  const Model* matrices_from = nullptr;
  // Tests only: the kernel leaves out its stores into one region of its live words (a name of its
  // layout: "Q_W", "X2_W", ...) in one layer, `layer` counting the layers of every dispatch since
  // the decoder was built or last restarted, so that the region's readers meet stale words and the
  // batch is discarded; `once`: only while no stale read has been counted (its second run is clean).
  struct DropStores {
    std::string region;
    uint32_t layer = 0;
    bool once = false;
  };
  std::optional<DropStores> drop_stores;
};

// Why the persistent decoder cannot run `c`'s architecture (its constructor refuses it with this),
// or empty: the session falls back to the step decoder instead.
std::string persistent_unsupported(const ModelConfig& c);

// Behind llm::Decoder: generate() as Model's (on_token, EOS ids, K = steps_per_submit dispatches
// per submit, on_logits after every step, then K = 1), greedy only (options.picker must be
// null); a batch whose dispatches read a stale word is discarded and run again (stats:
// stale_reads, batches_run_again). Throws Error when a grid barrier timed out or one batch was
// discarded 8 times in a row, and the decoder is then unusable. Its stats count one dispatch per token.
class PersistentDecoder : public Decoder {
 public:
  PersistentDecoder(gpu::Context& ctx, ModelConfig cfg, const WeightLookup& weights,
                    PersistentOptions options = {});

  const ModelConfig& config() const override { return cfg_; }
  uint32_t capacity() const override { return opt_.ctx; }
  uint32_t workgroups() const { return opt_.workgroups; }
  const PersistentVariant& variant() const { return opt_.variant; }  // split_auto resolved into blocks
  uint32_t barriers_per_token() const;        // grid barriers inside one dispatch: 5 per layer + 1
  std::vector<float> read_logits() override;  // the logits of the last position computed
  void reset() override;
  // From now on a prompt phase of at least kHandOverPositions unfed positions feeds all of them but
  // the last through `model`'s prefill (tiled products instead of one dispatch a position), its KV
  // cache first brought level with this decoder's; the positions' K/V are then copied here. The
  // model must have this decoder's configuration and capacity and stay alive while attached; its
  // sequence is this decoder's to set. nullptr: every position through this decoder's dispatch.
  void take_prompts_from(Model* model);
  // A short prefill pass costs about as much as a few of this decoder's positions (docs/RESULTS.md).
  static constexpr uint32_t kHandOverPositions = 4;

 private:
  void upload_weights(const WeightLookup& weights);
  // This decoder's buffers, shared matrices not counted (its stats add an attached model's).
  uint64_t own_memory_bytes() const;
  // One dispatch of the grid probe (the kernel's PROBE_POS): whether every workgroup met at one
  // barrier within `spins`. Leaves the control words zero.
  bool grid_fits(uint32_t spins);
  // Decoder's hooks: the device position and the tokens known are control words 2 and 3; every
  // dispatch decodes the next position, and picks a token where the next is not known yet.
  void check(const GenerateOptions& opt) const override;
  const gpu::Buffer& tokens_buffer() const override { return tokens_; }
  void set_position() override;
  void write_position(uint32_t pos);  // control words 2, 3: the position to decode, the tokens known
  void record_prompt_phase(gpu::Recorder& rec, const GenerateOptions& opt) override;
  void record_steps(gpu::Recorder& rec, uint32_t pos, uint32_t k, const GenerateOptions& opt) override;
  void record_dispatches(gpu::Recorder& rec, uint32_t count);
  // Records copies of positions [from, to) of every layer's K and V between this decoder's cache
  // and prompt_model_'s.
  enum class CopyTo { Model, Here };
  void copy_kv(gpu::Recorder& rec, uint32_t from, uint32_t to, CopyTo where) const;
  // Control word 1 names the first barrier that timed out (Error); 6 says that a read found a
  // stale word, which discards the batch (Error after kMostRunsDiscarded in a row); 5 counts the
  // stale reads (stats().stale_reads), 8.. each live region's.
  void record_status(gpu::Recorder& rec, const gpu::Buffer& staging) override;
  bool check_status(std::span<const uint32_t, 4> words) override;
  void restart(uint32_t pos) override;

  ModelConfig cfg_;
  PersistentOptions opt_;
  std::map<std::string, double> layout_;   // the kernel's offsets and shapes
  std::vector<std::string> region_names_;  // the live regions in the kernel's order, for users
  gpu::Buffer weights_, vectors_, live_, kv_, tokens_, control_, zero_;
  const gpu::Kernel* kernel_ = nullptr;
  gpu::BindGroup group_;
  uint32_t logits_word_ = 0;
  bool broken_ = false;
  uint32_t runs_discarded_in_a_row_ = 0;
  Model* prompt_model_ = nullptr;
  uint32_t model_level_ = 0;  // positions 0.. of prompt_model_'s cache that equal this decoder's
};

// The grid of a persistent decode: `requested` workgroups if check_grid_sync passes for them, or
// with requested = 0 the largest power of two up to `most` that passes; workgroups = 0 and the
// last failure's message when none does (the caller falls back to the step decoder).
// `spin_limit`: the probe's wait per barrier (0 makes it fail, to exercise the fallback).
struct GridChoice {
  uint32_t workgroups = 0;
  std::string reason;
};
GridChoice choose_grid(gpu::Context& ctx, uint32_t requested, uint32_t workgroup_size, uint32_t spin_limit,
                       uint32_t most = 1024);

// The check before a persistent decode is trusted: n greedy tokens after `prompt` from both
// decoders (each is reset before and after), every step's logits compared (max |a - b| / max |b|
// <= tol). Returns what differs (an Error of the persistent run, e.g. no finite logit, included), or
// empty when they agree. Throws what the step decoder throws, and a grid barrier's timeout.
std::string compare_with_steps(Decoder& steps, Decoder& persistent, std::span<const uint32_t> prompt,
                               uint32_t n, double tol);

}  // namespace wgfuse::llm
