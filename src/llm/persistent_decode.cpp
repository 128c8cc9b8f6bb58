#include "llm/persistent_decode.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <set>

#include "gpu/recorder.h"
#include "llm/architecture.h"
#include "llm/generated_tokens.h"
#include "llm/model.h"
#include "llm/rope.h"
#include "llm/weight_loader.h"
#include "util/clock.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

using gpu::BufferUsage;

constexpr uint32_t kStagesPerLayer = 5;
constexpr uint32_t kFailedBase =
    0x10000;  // FAILED_BASE of the kernel: control word 1 = it - first failed barrier
constexpr uint32_t kLiveRegions = 10;   // the kernel's regions of `live` (region_of)
constexpr uint32_t kStaleByRegion = 8;  // the control word that counts region 0's stale reads
constexpr uint32_t kControlWords = kStaleByRegion + kLiveRegions;  // the kernel's ctl
constexpr uint32_t kMostRunsDiscarded = 8;  // of one batch, each for a stale read, before an Error
constexpr uint32_t kProbeWords = 5;         // those the grid probe sets: arrivals .. its spins
constexpr uint32_t kProbePos = 0xffffffff;  // PROBE_POS of the kernel: ctl[2] for the grid probe
constexpr const char* kStageNames[kStagesPerLayer] = {"Q/K/V", "attention", "o_proj", "gate/up", "down_proj"};

// What grid barrier k (0-based) ends, for the timeout message.
std::string barrier_name(uint32_t k, uint32_t layers) {
  if (k >= kStagesPerLayer * layers) return "the LM head";
  return "layer " + std::to_string(k / kStagesPerLayer) + " " + kStageNames[k % kStagesPerLayer];
}

void need(bool ok, const std::string& what) {
  if (!ok) throw Error("persistent decode: " + what);
}

}  // namespace

namespace {
// N of "<prefix>N" (1 to 8 digits), or 0.
uint32_t count_after(std::string_view part, std::string_view prefix) {
  if (!part.starts_with(prefix)) return 0;
  const std::string_view digits = part.substr(prefix.size());
  if (digits.empty() || digits.size() > 8 || digits.find_first_not_of("0123456789") != std::string_view::npos)
    return 0;
  return uint32_t(std::stoul(std::string(digits)));
}
}  // namespace

PersistentVariant parse_persistent_variant(std::string_view s) {
  PersistentVariant v{.split_auto = false, .down_auto = false, .attention_rounds = 1, .ahead_auto = false};
  if (s == "base") return v;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t end = std::min(s.find('+', at), s.size());
    const std::string_view part = s.substr(at, end - at);
    if (part == "split") {
      v.split_auto = true;
    } else if (const uint32_t n = count_after(part, "split="); n >= 1) {
      v.attention_blocks = n;
    } else if (part == "down") {
      v.down_auto = true;
    } else if (const uint32_t n = count_after(part, "down="); n >= 2) {
      v.down_split = n;
    } else if (const uint32_t n = count_after(part, "rounds="); n >= 1 && n <= 4) {
      v.attention_rounds = n;
    } else if (part == "ahead") {
      v.ahead = true;
    } else {
      throw Error("--persistent-variant '" + std::string(s) + "': unknown part '" + std::string(part) +
                  "'; expected base, or split, split=N (N >= 1), down, down=N (N >= 2), rounds=N (1 to 4), "
                  "ahead joined by '+'");
    }
    at = end + 1;
  }
  return v;
}

std::string to_string(const PersistentVariant& v) {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : "+") + part; };
  if (v.split_auto) add("split");
  if (v.attention_blocks) add("split=" + std::to_string(v.attention_blocks));
  if (v.down_auto) add("down");
  if (v.down_split) add("down=" + std::to_string(v.down_split));
  if (v.attention_rounds > 1) add("rounds=" + std::to_string(v.attention_rounds));
  if (v.ahead) add("ahead");
  return s.empty() ? "base" : s;
}

std::string persistent_unsupported(const ModelConfig& c) {
  if (architecture_of(c).qk_norm)
    return c.architecture +
           "'s per-head q/k norms are not implemented in the one-dispatch decoder (use --decode steps)";
  return "";
}

PersistentDecoder::PersistentDecoder(gpu::Context& ctx, ModelConfig cfg, const WeightLookup& weights,
                                     PersistentOptions options)
    : Decoder(ctx), cfg_(std::move(cfg)), opt_(std::move(options)) {
  const auto& c = cfg_;
  const auto& lim = ctx.limits();
  check_config(c, "persistent decode");
  const std::string unsupported = persistent_unsupported(c);
  need(unsupported.empty(), unsupported);
  need(
      kStagesPerLayer * c.num_layers + 1 < kFailedBase,
      std::to_string(c.num_layers) + " layers: at most " + std::to_string(kFailedBase / kStagesPerLayer - 1));
  need(opt_.ctx >= 1 && (!c.max_position_embeddings || opt_.ctx <= c.max_position_embeddings),
       "--ctx " + std::to_string(opt_.ctx) + " must be 1 .. max_position_embeddings (" +
           std::to_string(c.max_position_embeddings) + ")");
  need(ctx.features().subgroups, "needs the WebGPU 'subgroups' feature, which adapter '" +
                                     ctx.adapter().description + "' does not offer");
  need(opt_.workgroups >= 1 && opt_.workgroups <= lim.max_compute_workgroups_per_dimension,
       "workgroups " + std::to_string(opt_.workgroups) +
           ", expected 1 .. maxComputeWorkgroupsPerDimension (" +
           std::to_string(lim.max_compute_workgroups_per_dimension) + ")");
  // A row's team covers whole subgroups (a subgroup sum never mixes rows).
  const uint32_t team =
      std::max<uint32_t>(32, std::bit_ceil(std::max<uint32_t>(1, ctx.adapter().subgroup_max_size)));
  const uint32_t wg = opt_.workgroup_size;
  need(std::has_single_bit(wg) && wg >= team && wg >= c.head_dim &&
           wg <= lim.max_compute_invocations_per_workgroup,
       "workgroup size " + std::to_string(wg) + " must be a power of two, >= " + std::to_string(team) +
           " (a row's team), >= head_dim (" + std::to_string(c.head_dim) +
           ") and <= maxComputeInvocationsPerWorkgroup (" +
           std::to_string(lim.max_compute_invocations_per_workgroup) + ")");
  PersistentVariant& var = opt_.variant;
  need(var.attention_rounds >= 1 && var.attention_rounds <= 4,
       "attention rounds " + std::to_string(var.attention_rounds) + ", expected 1 to 4");
  // Attention blocks per head: split_auto gives each (head, block) a workgroup; stage_attention
  // weighs a head's blocks in probs[WG].
  const bool blocks_auto = var.split_auto;
  auto auto_blocks = [&] {
    return c.head_dim % 4 ? 0 : std::max<uint32_t>(1, std::min(wg, opt_.workgroups) / c.num_heads);
  };
  if (blocks_auto) {
    var.attention_blocks = auto_blocks();
    var.split_auto = false;  // resolved: variant() names the blocks
  }
  if (!var.attention_blocks) var.attention_rounds = 1;  // rounds are the split attention's
  if (var.attention_blocks) {
    need(c.head_dim % 4 == 0, "attention split over positions needs head_dim (" + std::to_string(c.head_dim) +
                                  ") a multiple of 4 (--persistent-variant without split)");
    need(uint64_t(var.attention_blocks) * c.num_heads <= wg,
         "attention split into " + std::to_string(var.attention_blocks) + " blocks of " +
             std::to_string(c.num_heads) + " heads: at most the workgroup size (" + std::to_string(wg) +
             ") blocks in all");
  }

  // down_proj's chunks a row: as many (2 to 4) as let one pass of the grid's teams take every (row
  // pair, chunk) unit. At Qwen2.5-1.5B's hidden size a second pass cost more than longer chunks save
  // (2 chunks 10-16% faster than 4); at 0.5B's, 4 make one pass and 2 to 4 measured within 1%
  // (RESULTS, sessions 21 and 27). From the first grid: the regions and xs sized for it serve a
  // halved one.
  const uint32_t pairs = (c.hidden_size + 1) / 2;  // down_proj's row pairs (the kernel's)
  if (var.down_auto) {
    var.down_split = std::clamp<uint32_t>(opt_.workgroups * (wg / team) / pairs, 2, 4);
    var.down_auto = false;  // resolved: variant() names the chunks
  }

  const uint32_t q_rows = c.num_heads * c.head_dim;
  // xs stages each product's input: all of it, except that a split down_proj stages the chunks that
  // one iteration's units touch (a workgroup's wg / team consecutive units, row pairs of a chunk
  // and then of the next: the kernel's down_staged). It also holds the split attention's K-dot
  // quarters, up to rounds * wg floats (rounds resolved above).
  uint32_t down_input = c.intermediate_size;
  if (var.down_split >= 2) {
    const uint32_t units = pairs * var.down_split;
    const uint32_t chunk_groups = ((c.intermediate_size + 7) / 8 + var.down_split - 1) / var.down_split;
    uint32_t spanned = 1;
    for (uint32_t first = 0; first < units; first += wg / team)
      spanned = std::max(spanned, (std::min(first + wg / team, units) - 1) / pairs - first / pairs + 1);
    down_input = std::min(c.intermediate_size, 8 * chunk_groups * spanned);
  }
  const uint32_t xs_len = pad8(std::max({c.hidden_size, q_rows, down_input, var.attention_rounds * wg}));
  const uint64_t shared_bytes =
      4ull * (xs_len + 2 * wg + wg + wg + c.head_dim + 1);  // the kernel's var<workgroup>
  need(shared_bytes <= lim.max_compute_workgroup_storage_size,
       "a workgroup stages vectors of " + std::to_string(xs_len) +
           " floats: " + std::to_string(shared_bytes) +
           " bytes of workgroup memory, above maxComputeWorkgroupStorageSize (" +
           std::to_string(lim.max_compute_workgroup_storage_size) + ")");

  const auto t0 = SteadyClock::now();
  upload_weights(weights);
  stats_.upload_ms = ms_since(t0);

  // The live words: residual, q, attention output, act, logits, per-workgroup best logits.
  uint64_t words = 0;
  auto region = [&](const char* name, const char* what, uint64_t n) {
    layout_[name] = double(words);
    region_names_.push_back(what);
    if (opt_.drop_stores && opt_.drop_stores->region == name) {
      layout_["DROP_AT"] = double(words);
      layout_["DROP_END"] = double(words + n);
      layout_["DROP_LAYER"] = opt_.drop_stores->layer;
      layout_["DROP_ONCE"] = opt_.drop_stores->once ? 1.0 : 0.0;
    }
    words += pad8(n);
  };
  region("X_W", "residual", c.hidden_size);
  region("Q_W", "queries", q_rows);
  region("ATT_W", "attention output", q_rows);
  region("ACT_W", "mlp activation", c.intermediate_size);
  logits_word_ = uint32_t(words);
  region("LOGITS_W", "logits", c.vocab_size);
  region("BEST_W", "best logits", 2ull * opt_.workgroups);
  region("PART_W", "attention blocks", uint64_t(c.num_heads) * var.attention_blocks * (c.head_dim + 2));
  region("X2_W", "residual of odd layers", var.down_split ? c.hidden_size : 0);
  region("PDOWN_W", "down_proj partials", uint64_t(var.down_split) * pad8(c.hidden_size));
  region("CUR_W", "current K/V", 2ull * c.num_kv_heads * c.head_dim);
  need(region_names_.size() == kLiveRegions, "the live regions do not match the kernel's");
  need(!opt_.drop_stores || layout_.contains("DROP_AT"),
       "drop_stores: no live region '" + (opt_.drop_stores ? opt_.drop_stores->region : "") + "'");
  const uint64_t kv_words = 2ull * c.num_layers * c.num_kv_heads * opt_.ctx * c.head_dim;
  need(4 * kv_words <= lim.max_storage_buffer_binding_size,
       "the KV cache (" + std::to_string(4 * kv_words) + " bytes at --ctx " + std::to_string(opt_.ctx) +
           ") is one binding, above maxStorageBufferBindingSize (" +
           std::to_string(lim.max_storage_buffer_binding_size) + ")");
  live_ = ctx.buffer(4 * words, BufferUsage::StorageIO, "llm.persistent.live");
  kv_ = ctx.buffer(4 * kv_words, BufferUsage::StorageIO, "llm.persistent.kv");
  tokens_ = ctx.buffer(4ull * pad8(uint64_t(opt_.ctx) + 1), BufferUsage::StorageIO, "llm.persistent.tokens");
  control_ = ctx.buffer(4 * kControlWords, BufferUsage::StorageIO, "llm.persistent.control");
  const uint32_t zeros[4] = {0, 0, 0, 0};
  zero_ = ctx.upload<uint32_t>(zeros, BufferUsage::CopySrc, "llm.persistent.zero");
  stats_.kv_cache_bytes = kv_.size();
  stats_.gpu_memory_bytes = own_memory_bytes();
  stats_.dispatches_per_step = 1;

  auto& o = layout_;
  o[gpu::kWeightFormatConstant] = double(stats_.weight_format);
  o["WG"] = wg;
  o["TEAM"] = team;
  o["SPIN_LIMIT"] = opt_.spin_limit;
  o["HIDDEN"] = c.hidden_size;
  o["INTER"] = c.intermediate_size;
  o["LAYERS"] = c.num_layers;
  o["HEADS"] = c.num_heads;
  o["KV_HEADS"] = c.num_kv_heads;
  o["HEAD_DIM"] = c.head_dim;
  o["VOCAB"] = c.vocab_size;
  o["CTX"] = opt_.ctx;
  o["EPS"] = c.rms_norm_eps;
  o["SCALE"] = 1.0 / std::sqrt(double(c.head_dim));
  o["XS_LEN"] = xs_len;
  o["ATT_BLOCKS"] = var.attention_blocks;
  o["DOWN_SPLIT"] = var.down_split;
  o["K_ROUNDS"] = var.attention_rounds;
  // ahead holds a column group's stored words in one vec4 (group_words): every format but f32.
  const bool ahead_fits = stats_.weight_format != gpu::WeightFormat::F32;
  if (var.ahead_auto) {
    var.ahead = ahead_fits;
    var.ahead_auto = false;  // resolved: variant() says whether
  }
  need(!var.ahead || ahead_fits,
       "--persistent-variant ahead holds a column group's stored words in one vec4; f32 weights take two "
       "(store them in another --dtype, or name a variant without ahead)");
  o["AHEAD"] = var.ahead ? 1 : 0;
  // With fit_grid, halve the grid until this kernel's own workgroups are co-resident (the regions
  // sized by the first grid hold those of every smaller one).
  const uint32_t first_grid = opt_.workgroups;
  for (;;) {
    kernel_ = &ctx.kernel(gpu::embedded_kernel("llm_persistent_decode", "decode_token", layout_));
    group_ = ctx.bind(*kernel_, {weights_, vectors_, live_, kv_, tokens_, control_});
    if (!opt_.fit_grid || grid_fits(opt_.probe_spin)) break;
    need(opt_.workgroups > 1,
         "a grid barrier timed out in the dispatch's own grid probe at every grid from " +
             std::to_string(first_grid) + " workgroups down to 1 (" + std::to_string(opt_.probe_spin) +
             " spins); use --decode steps");
    opt_.workgroups /= 2;
    if (blocks_auto) {
      var.attention_blocks = auto_blocks();
      o["ATT_BLOCKS"] = var.attention_blocks;
    }
  }
}

bool PersistentDecoder::grid_fits(uint32_t spins) {
  const uint32_t probe[kProbeWords] = {0, 0, kProbePos, 0, spins};
  ctx_->write(control_, 0, std::as_bytes(std::span(probe)));
  gpu::Recorder rec(*ctx_);
  rec.dispatch(*kernel_, group_, opt_.workgroups);
  rec.submit();
  const bool met = ctx_->read<uint32_t>(control_, 1, 1).at(0) == 0;
  const uint32_t zeros[kProbeWords] = {};
  ctx_->write(control_, 0, std::as_bytes(std::span(zeros)));
  return met;
}

void PersistentDecoder::upload_weights(const WeightLookup& weights) {
  const auto& c = cfg_;
  const uint32_t hd = c.head_dim, q_rows = c.num_heads * hd, kv_rows = c.num_kv_heads * hd;
  const uint32_t qkv_rows = q_rows + 2 * kv_rows, H = c.hidden_size, I = c.intermediate_size;
  using enum TensorRole;
  const ModelTensors t(c, weights);  // every tensor found and shape-checked before anything is uploaded
  // The vectors: per layer the two norms and the Q/K/V bias (packed order), the final norm, the
  // RoPE table (llm/rope.h, as Model's).
  const uint32_t H8 = pad8(H), B8 = pad8(qkv_rows);
  layout_["IN_NORM_F"] = 0;
  layout_["POST_NORM_F"] = H8;
  layout_["BIAS_F"] = 2 * H8;
  layout_["LAYER_F"] = 2 * H8 + B8;
  layout_["FINAL_NORM_F"] = double(uint64_t(2 * H8 + B8) * c.num_layers);
  layout_["ROPE_F"] = double(uint64_t(2 * H8 + B8) * c.num_layers + H8);
  std::vector<float> vecs(uint64_t(2 * H8 + B8) * c.num_layers + H8 + uint64_t(opt_.ctx) * hd, 0.0f);
  auto put = [&](uint64_t at, const TensorRef& tr) {
    tensor_row(tr, 0, std::span(vecs).subspan(at, tr.elements()));
  };
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const uint64_t vbase = uint64_t(l) * (2 * H8 + B8);
    put(vbase, t(AttnNorm, l));
    put(vbase + H8, t(FfnNorm, l));
    const std::vector<float> bias = packed_qkv_bias(t, c, l);
    std::copy(bias.begin(), bias.end(), vecs.begin() + ptrdiff_t(vbase + 2 * H8));
  }

  // The matrices: the step decoder's arena, or one of this decoder's own (layer after layer, then
  // the embedding and the LM head), in one buffer (one binding); the kernel finds them by offsets
  // (in vec4s) as pipeline constants.
  Model::Matrices m;
  std::string split_why;  // why the matrices are not in one buffer (one binding), if they are not
  if (opt_.matrices_from) {
    const Model& model = *opt_.matrices_from;
    need(model.config() == c,
         "the step decoder whose matrices it would share has another model's configuration");
    m = model.matrices();
    stats_.weight_formats = model.stats().weight_formats;
    std::set<uint64_t> ids;
    for (const auto& l : m.layers)
      for (const gpu::TensorView* v : {&l.qkv, &l.o, &l.gate_up, &l.down}) ids.insert(v->buffer.id());
    ids.insert(m.embedding.buffer.id());
    ids.insert(m.lm_head.buffer.id());
    if (ids.size() > 1)
      split_why = "the step decoder's matrices lie in " + std::to_string(ids.size()) +
                  " buffers (its per-buffer cap: the device's binding limit or serve --limits')";
  } else {
    WeightLoader w(*ctx_, opt_.dtype, {.label = "llm.persistent.weights"});
    auto packed = [&](std::string name, const PackedMatrix& pm) {
      return w.matrix(std::move(name), pm.sources, pm.rows, H, pm.source_row);
    };
    std::vector<std::array<WeightLoader::TensorId, 4>> ids;
    for (uint32_t l = 0; l < c.num_layers; ++l) {
      const std::string name = "layer" + std::to_string(l) + ".";
      ids.push_back({packed(name + "qkv", packed_qkv(t, c, l)),
                     w.matrix(name + "o_proj", {&t(O, l)}, H, q_rows),
                     packed(name + "gate_up", packed_gate_up(t, c, l)),
                     w.matrix(name + "down_proj", {&t(Down, l)}, H, I)});
    }
    const auto embed_id = w.matrix("embedding", {&t(Embedding)}, c.vocab_size, H);
    const TensorRef* head = t.find(LmHead);
    const auto head_id = head ? w.matrix("lm_head", {head}, c.vocab_size, H) : embed_id;
    stats_.weight_formats = w.formats();
    if (w.arena().buffers() > 1)
      split_why = "the packed weights (" + std::to_string(w.arena().total_bytes()) +
                  " bytes) pass the per-buffer cap of " + std::to_string(w.arena().max_buffer_bytes()) +
                  " bytes (min of maxStorageBufferBindingSize and maxBufferSize)";
    if (stats_.weight_formats.size() == 1 && split_why.empty()) w.load(opt_.progress);  // else refused below
    for (const auto& l : ids) m.layers.push_back({w.view(l[0]), w.view(l[1]), w.view(l[2]), w.view(l[3])});
    m.embedding = w.view(embed_id);
    m.lm_head = w.view(head_id);
  }
  stats_.weight_format = stats_.weight_formats.at(0).format;
  need(stats_.weight_formats.size() == 1, "the matrices are stored in " +
                                              std::to_string(stats_.weight_formats.size()) +
                                              " formats (a GGUF file of mixed tensor types, or an AWQ/GPTQ "
                                              "folder's 4-bit layers beside its f16 embedding): the "
                                              "one-dispatch decoder decodes one; use --decode steps");
  need(split_why.empty(), split_why + ", and the one-dispatch decoder binds them as one; use --decode steps");
  // Offsets in vec4s; every layer's matrices lie at the same distances (the arena places equal
  // tensors alike), which the kernel's single LAYER_V4 stride relies on.
  auto v4 = [](const gpu::TensorView& v) { return v.offset / 16; };
  const auto& l0 = m.layers[0];
  const uint64_t layer_v4 = c.num_layers > 1 ? v4(m.layers[1].qkv) - v4(l0.qkv) : 0;
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const auto& ml = m.layers[l];
    const uint64_t shift = l * layer_v4;
    need(v4(ml.qkv) == v4(l0.qkv) + shift && v4(ml.o) == v4(l0.o) + shift &&
             v4(ml.gate_up) == v4(l0.gate_up) + shift && v4(ml.down) == v4(l0.down) + shift,
         "layer " + std::to_string(l) + "'s matrices are not placed like layer 0's");
    for (const gpu::TensorView* v : {&ml.qkv, &ml.o, &ml.gate_up, &ml.down})
      stats_.weight_bytes_per_token += v->bytes;
  }
  layout_["LAYER_V4"] = double(layer_v4);
  layout_["QKV_V4"] = double(v4(l0.qkv));  // layer 0's: the kernel adds l * LAYER_V4
  layout_["O_V4"] = double(v4(l0.o));
  layout_["GU_V4"] = double(v4(l0.gate_up));
  layout_["DOWN_V4"] = double(v4(l0.down));
  layout_["EMBED_V4"] = double(v4(m.embedding));
  layout_["HEAD_V4"] = double(v4(m.lm_head));
  stats_.weight_bytes_per_token += m.lm_head.bytes + m.embedding.row_bytes;
  weights_ = m.embedding.buffer;
  stats_.weight_bytes = weights_.size();
  const uint64_t final_at = uint64_t(2 * H8 + B8) * c.num_layers;
  put(final_at, t(FinalNorm));
  const std::vector<float> rope = rope_table(c, opt_.ctx);
  std::copy(rope.begin(), rope.end(), vecs.begin() + ptrdiff_t(final_at + H8));
  vectors_ = ctx_->upload<float>(vecs, BufferUsage::Storage, "llm.persistent.vectors");
  stats_.weight_bytes += vectors_.size();
}

uint32_t PersistentDecoder::barriers_per_token() const {
  return kStagesPerLayer * cfg_.num_layers + 1;
}

void PersistentDecoder::check(const GenerateOptions& opt) const {
  need(!broken_, "a grid barrier timed out earlier: this decoder's state is undefined");
  need(opt.picker == nullptr, "greedy decoding only (no --temp, --top-k, --top-p, --repeat-penalty)");
}

void PersistentDecoder::set_position() {
  write_position(fed_);
}

void PersistentDecoder::write_position(uint32_t pos) {
  const uint32_t words[2] = {pos, uint32_t(seq_.size())};  // ctl[2], ctl[3]: pos, tokens known
  ctx_->write(control_, 8, std::as_bytes(std::span(words)));
}

void PersistentDecoder::record_dispatches(gpu::Recorder& rec, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    rec.copy(zero_, 0, control_, 0, 4);  // the barrier arrivals start at zero in every dispatch
    rec.dispatch(*kernel_, group_, opt_.workgroups);
  }
}

void PersistentDecoder::reset() {
  Decoder::reset();
  model_level_ = 0;
}

void PersistentDecoder::take_prompts_from(Model* model) {
  if (model) {
    need(model->config() == cfg_,
         "the step decoder that takes the prompts has another model's configuration");
    need(model->capacity() == opt_.ctx, "the step decoder that takes the prompts holds " +
                                            std::to_string(model->capacity()) + " positions, this decoder " +
                                            std::to_string(opt_.ctx));
  }
  prompt_model_ = model;
  model_level_ = 0;
  stats_.gpu_memory_bytes = own_memory_bytes() + (model ? model->stats().gpu_memory_bytes : 0);
}

uint64_t PersistentDecoder::own_memory_bytes() const {
  return (opt_.matrices_from ? 0 : weights_.size()) + vectors_.size() + live_.size() + kv_.size() +
         tokens_.size();
}

void PersistentDecoder::copy_kv(gpu::Recorder& rec, uint32_t from, uint32_t to, CopyTo where) const {
  const uint64_t row = 4ull * cfg_.head_dim, bytes = row * (to - from);
  for (uint32_t l = 0; l < cfg_.num_layers; ++l) {
    const Model::LayerCache cache = prompt_model_->kv_cache(l);
    for (uint32_t which = 0; which < 2; ++which) {
      const gpu::Buffer& theirs = which == 0 ? cache.k : cache.v;
      for (uint32_t h = 0; h < cfg_.num_kv_heads; ++h) {
        // Both [kv heads][ctx][head_dim] per layer and K/V; here all layers' in one buffer.
        const uint64_t at_model = (uint64_t(h) * opt_.ctx + from) * row;
        const uint64_t at_here =
            (((uint64_t(l) * 2 + which) * cfg_.num_kv_heads + h) * opt_.ctx + from) * row;
        if (where == CopyTo::Model)
          rec.copy(kv_, at_here, theirs, at_model, bytes);
        else
          rec.copy(theirs, at_model, kv_, at_here, bytes);
      }
    }
  }
}

void PersistentDecoder::record_prompt_phase(gpu::Recorder& rec, const GenerateOptions&) {
  const uint32_t unfed = uint32_t(seq_.size()) - fed_;
  if (prompt_model_ && unfed >= kHandOverPositions) {
    // The model's cache level with this one's (only what it lacks: a chat's later turns add the
    // positions this decoder generated), then its prefill of all but the last position, whose
    // K/V come back here; the last goes through this decoder's dispatch, which picks the token.
    Model& m = *prompt_model_;
    const auto& theirs = m.sequence();
    if (m.length() < model_level_ || !std::equal(seq_.begin(), seq_.begin() + model_level_, theirs.begin()))
      model_level_ = 0;  // someone else used the model since
    model_level_ = std::min(model_level_, fed_);
    if (model_level_ < fed_) {
      copy_kv(rec, model_level_, fed_, CopyTo::Model);
      rec.submit();  // before the model's prefill reads them
    }
    const uint32_t last = uint32_t(seq_.size()) - 1;
    m.resume(std::span(seq_).first(fed_), fed_);
    m.feed(std::span(seq_).subspan(fed_, last - fed_));
    copy_kv(rec, fed_, last, CopyTo::Here);  // submitted after the model's prefill
    model_level_ = last;
    fed_ = last;
    set_position();
  }
  record_dispatches(rec, uint32_t(seq_.size()) - fed_);  // the last position picks the first token
}

void PersistentDecoder::record_steps(gpu::Recorder& rec, uint32_t, uint32_t k, const GenerateOptions&) {
  record_dispatches(rec, k);
}

void PersistentDecoder::record_status(gpu::Recorder& rec, const gpu::Buffer& staging) {
  rec.copy(control_, 4, staging, 0, 4);   // the first barrier that timed out
  rec.copy(control_, 20, staging, 4, 8);  // reads that found a stale word; whether this batch's did
}

bool PersistentDecoder::check_status(std::span<const uint32_t, 4> words) {
  if (words[1] != stats_.stale_reads) {  // new ones: where (a read-back, rare)
    stats_.stale_reads = words[1];
    const auto by_region = ctx_->read<uint32_t>(control_, kStaleByRegion, kLiveRegions);
    for (uint32_t r = 0; r < kLiveRegions; ++r)
      if (by_region[r]) stats_.stale_reads_by_region[region_names_[r]] = by_region[r];
  }
  if (words[0] != 0) {
    broken_ = true;
    const uint32_t k = kFailedBase - words[0];
    throw Error("persistent decode: a grid barrier timed out (barrier " + std::to_string(k) + " of " +
                std::to_string(barriers_per_token()) + ", after " + barrier_name(k, cfg_.num_layers) +
                "): the " + std::to_string(opt_.workgroups) + " workgroups were not all resident within " +
                std::to_string(opt_.spin_limit) + " spins; use fewer workgroups or --decode steps");
  }
  if (words[2] == 0) {
    runs_discarded_in_a_row_ = 0;
    return true;
  }
  if (++runs_discarded_in_a_row_ == kMostRunsDiscarded) {
    broken_ = true;
    throw Error("persistent decode: the reads timed out: " + std::to_string(kMostRunsDiscarded) +
                " runs in a row of the same tokens read a word that another workgroup wrote before a grid "
                "barrier still holding its previous value; use --decode steps");
  }
  return false;
}

void PersistentDecoder::restart(uint32_t pos) {
  ++stats_.batches_run_again;
  // The tags' numbers start again as at the buffer's creation: live zero, no dispatch run.
  const std::vector<uint32_t> zero(live_.size() / 4);
  ctx_->write(live_, 0, std::as_bytes(std::span(zero)));
  write_position(pos);
  const uint32_t fresh[2] = {0, 0};  // ctl[6] (a stale read), ctl[7] (dispatches)
  ctx_->write(control_, 24, std::as_bytes(std::span(fresh)));
}

std::vector<float> PersistentDecoder::read_logits() {
  ++stats_.debug_readbacks;
  return ctx_->read<float>(live_, logits_word_, cfg_.vocab_size);
}

GridChoice choose_grid(gpu::Context& ctx, uint32_t requested, uint32_t workgroup_size, uint32_t spin_limit,
                       uint32_t most) {
  GridChoice out;
  for (uint32_t g = requested ? requested : std::bit_floor(std::max<uint32_t>(1, most)); g >= 1; g /= 2) {
    const GridSyncCheck r = check_grid_sync(ctx, g, workgroup_size, 4, spin_limit);
    if (r.ok()) return {g, ""};
    out.reason = std::to_string(g) + " workgroups: " + r.message;
    if (requested) break;
  }
  return out;
}

std::string compare_with_steps(Decoder& steps, Decoder& persistent, std::span<const uint32_t> prompt,
                               uint32_t n, double tol) {
  struct Run {
    std::vector<uint32_t> tokens;
    std::vector<std::vector<float>> logits;
  };
  auto run = [&](Decoder& decoder) {
    Run r;
    GenerateOptions opt;
    opt.on_logits = [&](std::span<const float> l) { r.logits.emplace_back(l.begin(), l.end()); };
    decoder.reset();
    r.tokens = decoder.generate(prompt, n, {}, opt);
    decoder.reset();
    return r;
  };
  const Run want = run(steps);
  Run got;
  try {
    got = run(persistent);
  } catch (const Error& e) {
    // A timeout stays an Error (the caller's fallback); anything else the dispatch got wrong (e.g.
    // no finite logit) is a difference from the step decoder.
    if (std::string(e.what()).find("timed out") != std::string::npos) throw;
    persistent.reset();
    return std::string("the persistent decoder's run: ") + e.what();
  }
  for (size_t i = 0; i < std::min(want.tokens.size(), got.tokens.size()); ++i) {
    double scale = 0, err = 0;
    for (size_t j = 0; j < want.logits[i].size(); ++j) {
      scale = std::max(scale, std::abs(double(want.logits[i][j])));
      const double e = std::abs(double(got.logits[i][j]) - double(want.logits[i][j]));
      if (!(e <= err)) err = e;  // NaN wins
    }
    if (!(err <= tol * scale))
      return "step " + std::to_string(i) + ": logits differ from the step decoder's by " +
             std::to_string(scale > 0 ? err / scale : err) + " of their largest magnitude (tolerance " +
             std::to_string(tol) + ")";
    if (got.tokens[i] != want.tokens[i])
      return "step " + std::to_string(i) + ": token " + std::to_string(got.tokens[i]) +
             ", the step decoder picked " + std::to_string(want.tokens[i]);
  }
  if (got.tokens.size() != want.tokens.size())
    return std::to_string(got.tokens.size()) + " tokens, the step decoder gave " +
           std::to_string(want.tokens.size());
  return "";
}

}  // namespace wgfuse::llm
