#include "tiny/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "util/error.h"

namespace wgfuse::tiny {
namespace {

constexpr uint32_t kOpsWorkgroup = 64;  // op dispatches: many small workgroups
constexpr uint32_t kMaxThreads = 1024;  // fused workgroups (where the device allows)
constexpr uint32_t kMaxLanes = 32;      // threads per item: a subgroup on NVIDIA
// Auto threads: the largest power of two in [128, 512] with sequences x threads at most
// kAutoThreadsTotal, so one sequence gets the most threads (shortest chains) and many sequences
// the least redundant work. Measured on the H100 (2026-11-22 session 4, d=64, 4 layers, 64
// tokens): one sequence 3.59 ms per generation at 512 threads, 3.87 at 1,024 (idle threads at
// every barrier), 4.23 at 256; 16,384 sequences 6.2 M tok/s at 128 threads, 5.2 M at 64 (each
// thread's share of a product's rows, scores and positions grows), 4.9 M at 256; 264 sequences
// 3.2 M at 256 against 2.8 M at 128.
constexpr uint64_t kAutoThreadsTotal = 131072;
constexpr uint32_t kAutoMinThreads = 128;
constexpr uint32_t kAutoMaxThreads = 512;
constexpr uint32_t kPoisonToken = 0xFFFFFFFFu;
constexpr uint32_t kEagerTimedChunk = 1024;  // passes timed between two read-backs

// The ops of one decode step, as `op` in kernels/tiny_ops.wgsl numbers them (its OP override).
enum class Op : uint32_t {
  Embed,
  NormIn,
  Qkv,
  RopeKv,
  Scores,
  Attend,
  OProj,
  Residual,
  NormPost,
  GateUp,
  SiluMul,
  Down,
  NormFinal,
  Head,
};

struct Params {  // tiny_common.wgsl Params, padded to 16 bytes
  uint32_t layer = 0, pad[3] = {};
};
static_assert(sizeof(Params) == 16);

uint32_t ceil_div(uint64_t a, uint64_t b) {
  return uint32_t((a + b - 1) / b);
}

bool power_of_two(uint32_t v) {
  return v && !(v & (v - 1));
}

uint32_t floor_power_of_two(uint32_t v) {
  uint32_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

// The lanes (a power of two, at most `cap`) of `items` items of `units` steps each: as many as let
// items x lanes fit `threads`, each lane keeping at least one step.
uint32_t lanes_for(uint64_t items, uint32_t units, uint32_t threads, uint32_t cap) {
  uint32_t p = 1;
  while (p * 2 <= cap && items * p * 2 <= threads && p * 2 <= units) p *= 2;
  return p;
}

Resolved resolve(const gpu::Context& ctx, const llm::ModelConfig& c, uint32_t cap, uint32_t sequences,
                 uint64_t act_bytes, const Tuning& t) {
  const auto& lim = ctx.limits();
  Resolved r;
  const uint32_t max_threads =
      std::min({kMaxThreads, lim.max_compute_invocations_per_workgroup, lim.max_compute_workgroup_size_x});
  if (t.threads) {
    if (t.threads % 32 || t.threads > max_threads)
      throw Error("tiny: --threads " + std::to_string(t.threads) + " must be a multiple of 32 from 32 to " +
                  std::to_string(max_threads) +
                  " (this device's maxComputeInvocationsPerWorkgroup / maxComputeWorkgroupSizeX, at most " +
                  std::to_string(kMaxThreads) + ")");
    r.threads = t.threads;
  } else {
    r.threads = std::min(kAutoMinThreads, max_threads);
    while (r.threads * 2 <= std::min(max_threads, kAutoMaxThreads) &&
           uint64_t(r.threads) * 2 * sequences <= kAutoThreadsTotal)
      r.threads *= 2;
  }
  const bool subgroups = ctx.features().subgroups && ctx.adapter().subgroup_min_size > 0;
  const uint32_t device_lanes =
      subgroups ? floor_power_of_two(std::min(kMaxLanes, ctx.adapter().subgroup_min_size)) : 1;
  if (t.lanes) {
    if (!power_of_two(t.lanes) || t.lanes > device_lanes)
      throw Error("tiny: --lanes " + std::to_string(t.lanes) + " must be a power of two from 1 to " +
                  std::to_string(device_lanes) +
                  (subgroups ? " (the adapter's smallest subgroup, at most 32)"
                             : " (this adapter has no subgroups, so every item has one thread)"));
    r.lanes = t.lanes;
  } else {
    r.lanes = device_lanes;
  }
  const uint32_t d = c.hidden_size, ff = c.intermediate_size, hd = c.head_dim, n = r.threads, l = r.lanes;
  const uint32_t qd = c.num_heads * hd, qkv = (c.num_heads + 2 * c.num_kv_heads) * hd;
  // A product's lane loads 4 column blocks (16 columns) per step: one step each is one round of
  // loads, and more lanes would only add shuffles.
  auto steps = [](uint32_t cols) { return std::max(1u, cols / 16); };
  r.qkv = lanes_for(qkv / 2, steps(d), n, l);  // a team per RoPE pair of rows
  r.o = lanes_for(d, steps(qd), n, l);
  r.gate_up = lanes_for(ff, steps(d), n, l);  // a team per (gate, up) pair
  r.down = lanes_for(d, steps(ff), n, l);
  r.head = lanes_for(kVocab, steps(d), n, l);
  r.scores = lanes_for(uint64_t(c.num_heads) * cap, hd, n, l);
  r.attend = lanes_for(qd, cap, n, l);

  const uint64_t wg_limit = lim.max_compute_workgroup_storage_size;
  r.single_in_workgroup =
      t.single_activations == Tuning::Activations::Storage ? false : act_bytes <= wg_limit;
  if (t.single_activations == Tuning::Activations::Workgroup && !r.single_in_workgroup)
    throw Error("tiny: one sequence's activations take " + std::to_string(act_bytes) +
                " bytes of workgroup memory at d=" + std::to_string(d) + " with " + std::to_string(cap) +
                " positions; this device's maxComputeWorkgroupStorageSize is " + std::to_string(wg_limit) +
                " (leave single's activations to auto or storage)");
  return r;
}

}  // namespace

std::string_view strategy_name(Strategy s) {
  switch (s) {
    case Strategy::Eager:
      return "eager";
    case Strategy::Batched:
      return "batched";
    case Strategy::Layer:
      return "layer";
    case Strategy::Single:
      return "single";
  }
  return "?";
}

Strategy parse_strategy(std::string_view name) {
  for (auto s : kStrategies)
    if (strategy_name(s) == name) return s;
  throw Error("unknown tiny strategy '" + std::string(name) + "' (eager, batched, layer, single)");
}

struct TinyRunner::Impl {
  gpu::Buffer weights, kv, tokens, logits, state, act;
  gpu::Plan position;  // eager and batched: the op dispatches of one position
  gpu::Plan layered;   // layer: embedding, one dispatch per layer, head
  gpu::Plan single;    // single: the whole generation
  gpu::Plan poison;    // NaN into every logit
  Impl(gpu::Context& ctx)
      : position(ctx, "tiny.position"),
        layered(ctx, "tiny.layer"),
        single(ctx, "tiny.single"),
        poison(ctx, "tiny.poison") {}
};

TinyRunner::TinyRunner(gpu::Context& ctx, const TinyModel& model, std::string_view prompt, uint32_t tokens,
                       uint32_t sequences, const Tuning& tuning)
    : ctx_(&ctx), prompt_len_(uint32_t(prompt.size())), tokens_(tokens), sequences_(sequences) {
  const auto& c = model.config;
  validate_config(c, model.source);
  if (prompt.empty() || prompt.size() > kMaxPrompt)
    throw Error("tiny: --prompt has " + std::to_string(prompt.size()) + " bytes; 1 to " +
                std::to_string(kMaxPrompt) + " are allowed");
  if (tokens < 1 || tokens > kMaxTokens)
    throw Error("tiny: --tokens " + std::to_string(tokens) + " is outside [1, " + std::to_string(kMaxTokens) +
                "]");
  const auto& lim = ctx.limits();
  if (sequences < 1 || sequences > lim.max_compute_workgroups_per_dimension)
    throw Error("tiny: --sequences " + std::to_string(sequences) +
                " is outside [1, maxComputeWorkgroupsPerDimension = " +
                std::to_string(lim.max_compute_workgroups_per_dimension) + "] (one workgroup per sequence)");
  const uint32_t cap = prompt_len_ + tokens;
  const uint64_t act_floats = activation_floats(c, cap);
  resolved_ = resolve(ctx, c, cap, sequences, act_floats * 4, tuning);
  const Resolved& rs = resolved_;
  const uint32_t fused_wg = rs.threads;
  // The lane reductions: subgroup shuffles, or teams of one thread.
  const std::string lanes_family = rs.lanes > 1 ? "tiny_team" : "tiny_solo";
  const std::string lanes_source(gpu::kernel_source(lanes_family));

  for (uint32_t i = 0; i < sequences; ++i) {
    auto p = sequence_prompt(prompt, i);
    initial_tokens_.insert(initial_tokens_.end(), p.begin(), p.end());
    initial_tokens_.insert(initial_tokens_.end(), tokens, kPoisonToken);
  }

  impl_ = std::make_unique<Impl>(ctx);
  auto& m = *impl_;
  auto require_binding = [&](const char* what, uint64_t floats) {
    const uint64_t bytes = floats * 4;
    const uint64_t limit = std::min(lim.max_storage_buffer_binding_size, lim.max_buffer_size);
    if (bytes > limit)
      throw Error("tiny: the " + std::string(what) + " take " + std::to_string(bytes) + " bytes for " +
                  std::to_string(sequences) + " sequence(s); this device binds at most " +
                  std::to_string(limit) + " (maxStorageBufferBindingSize / maxBufferSize)");
  };
  auto storage = [&](const char* what, uint64_t floats) {
    require_binding(what, floats);
    return ctx.buffer(floats * 4, gpu::BufferUsage::StorageIO, std::string("tiny.") + what);
  };
  const auto packed = pack_weights(c, model.weights, cap);
  require_binding("weights", packed.size());
  m.weights = ctx.upload<float>(packed, gpu::BufferUsage::Storage, "tiny.weights");
  m.kv = storage("KV cache", kv_floats(c, cap) * sequences);
  m.tokens = storage("tokens", uint64_t(cap) * sequences);
  m.logits = storage("logits", uint64_t(tokens) * kVocab * sequences);
  m.state = storage("positions", sequences);
  m.act = storage("activations", act_floats * sequences);

  auto kernel = [&](const char* family, const char* entry, uint32_t wg, int op = -1) -> gpu::Kernel& {
    std::map<std::string, double> o{{"D", c.hidden_size},
                                    {"H", c.num_heads},
                                    {"KVH", c.num_kv_heads},
                                    {"HD", c.head_dim},
                                    {"FF", c.intermediate_size},
                                    {"L", c.num_layers},
                                    {"P", prompt_len_},
                                    {"T", tokens},
                                    {"CAP", cap},
                                    {"EPS", c.rms_norm_eps},
                                    {"WG", wg},
                                    {"LN_QKV", rs.qkv},
                                    {"LN_O", rs.o},
                                    {"LN_GU", rs.gate_up},
                                    {"LN_DOWN", rs.down},
                                    {"LN_HEAD", rs.head},
                                    {"LN_SC", rs.scores},
                                    {"LN_AT", rs.attend},
                                    {"LN_RMS", rs.lanes}};
    if (op >= 0) o["OP"] = op;
    auto desc = gpu::embedded_kernel(family, entry, std::move(o));
    desc.name = lanes_family + "+" + desc.name;
    desc.source = lanes_source + desc.source;
    return ctx.kernel(desc);
  };
  auto bindings = [&](gpu::ParamsSlot p) -> std::vector<gpu::Binding> {
    return {p, m.weights, m.kv, m.tokens, m.logits, m.state, m.act};
  };
  auto op = [&](gpu::Plan& plan, gpu::ParamsSlot p, Op which, uint64_t items) {
    plan.dispatch(kernel("tiny_ops", "op", kOpsWorkgroup, int(which)), bindings(p),
                  {ceil_div(items, kOpsWorkgroup), sequences});
  };
  auto fused = [&](gpu::Plan& plan, gpu::ParamsSlot p, const char* entry) {
    plan.dispatch(kernel("tiny_ops", entry, fused_wg), bindings(p), {1, sequences});
  };

  // eager / batched: the ops of one position, in order
  std::vector<gpu::ParamsSlot> layer_params;
  for (uint32_t l = 0; l < c.num_layers; ++l) layer_params.push_back(m.position.params(Params{l}));
  const uint32_t d = c.hidden_size, ff = c.intermediate_size, qd = c.num_heads * c.head_dim;
  const uint32_t qkv_rows = (c.num_heads + 2 * c.num_kv_heads) * c.head_dim;
  op(m.position, layer_params[0], Op::Embed, d);
  for (auto p : layer_params) {
    op(m.position, p, Op::NormIn, d);
    op(m.position, p, Op::Qkv, uint64_t(qkv_rows) * rs.qkv);
    op(m.position, p, Op::RopeKv, qkv_rows / 2);
    op(m.position, p, Op::Scores, uint64_t(c.num_heads) * cap * rs.scores);
    op(m.position, p, Op::Attend, uint64_t(qd) * rs.attend);
    op(m.position, p, Op::OProj, uint64_t(d) * rs.o);
    op(m.position, p, Op::Residual, d);
    op(m.position, p, Op::NormPost, d);
    op(m.position, p, Op::GateUp, uint64_t(2) * ff * rs.gate_up);
    op(m.position, p, Op::SiluMul, ff);
    op(m.position, p, Op::Down, uint64_t(d) * rs.down);
    op(m.position, p, Op::Residual, d);
  }
  op(m.position, layer_params[0], Op::NormFinal, d);
  op(m.position, layer_params[0], Op::Head, uint64_t(kVocab) * rs.head);
  fused(m.position, layer_params[0], "op_emit");
  m.position.build();

  // layer
  std::vector<gpu::ParamsSlot> fused_params;
  for (uint32_t l = 0; l < c.num_layers; ++l) fused_params.push_back(m.layered.params(Params{l}));
  op(m.layered, fused_params[0], Op::Embed, d);
  for (auto p : fused_params) fused(m.layered, p, "layer_fused");
  fused(m.layered, fused_params[0], "head_fused");
  m.layered.build();

  // single
  if (rs.single_in_workgroup)
    m.single.dispatch(kernel("tiny_single", "generate", fused_wg),
                      {m.single.params(Params{}), m.weights, m.kv, m.tokens, m.logits, m.state}, {sequences});
  else
    fused(m.single, m.single.params(Params{}), "generate");
  m.single.build();

  // poison: a 2-D grid, as the logits of a large run need more than 65,535 workgroups
  const uint32_t groups = ceil_div(uint64_t(tokens) * kVocab * sequences, kOpsWorkgroup);
  const uint32_t gx = std::min(groups, lim.max_compute_workgroups_per_dimension);
  m.poison.dispatch(kernel("tiny_ops", "poison_logits", kOpsWorkgroup), bindings(m.poison.params(Params{})),
                    {gx, ceil_div(groups, gx)});
  m.poison.build();
}

TinyRunner::~TinyRunner() = default;

void TinyRunner::reset() {
  auto& m = *impl_;
  gpu::Recorder rec(*ctx_);
  m.poison.encode(rec);
  rec.submit();
  ctx_->write(m.tokens, 0, std::as_bytes(std::span<const uint32_t>(initial_tokens_)));
  const std::vector<uint32_t> zeros(sequences_, 0);
  ctx_->write(m.state, 0, std::as_bytes(std::span<const uint32_t>(zeros)));
  ctx_->wait();
}

RunStats TinyRunner::execute(Strategy s, gpu::Profiler* prof, double* gpu_ns) {
  auto& m = *impl_;
  reset();
  RunStats st;
  const uint32_t positions = prompt_len_ + tokens_ - 1;
  gpu::Recorder rec(*ctx_);
  const auto t0 = std::chrono::steady_clock::now();
  if (s == Strategy::Eager) {
    // Each dispatch its own pass (timed when profiling); timestamps read back in chunks that
    // fit the profiler.
    uint32_t timed = 0;
    for (uint32_t pos = 0; pos < positions; ++pos)
      for (size_t i = 0; i < m.position.steps(); ++i) {
        if (prof) rec.time_next_pass(*prof);
        m.position.encode(rec, i, 1);
        rec.end_pass();
        if (prof && ++timed == kEagerTimedChunk) {
          prof->resolve(rec);
          timed = 0;
        }
        rec.submit();
        ctx_->wait();
        if (prof && timed == 0)
          for (double ns : prof->read_ns()) *gpu_ns += ns;
      }
    if (prof && timed) {
      prof->resolve(rec);
      rec.submit();
      for (double ns : prof->read_ns()) *gpu_ns += ns;
    }
  } else {
    gpu::Plan& plan = s == Strategy::Single ? m.single : s == Strategy::Layer ? m.layered : m.position;
    if (prof) rec.time_next_pass(*prof);
    for (uint32_t pos = 0; pos < (s == Strategy::Single ? 1 : positions); ++pos) plan.encode(rec);
    if (prof) prof->resolve(rec);
    rec.submit();
    ctx_->wait();
    if (prof)
      for (double ns : prof->read_ns()) *gpu_ns += ns;
  }
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  st.dispatches = rec.dispatches();
  st.submits = rec.submits();
  return st;
}

RunStats TinyRunner::run(Strategy s) {
  return execute(s, nullptr, nullptr);
}

double TinyRunner::gpu_ns(Strategy s) {
  gpu::Profiler prof(*ctx_, kEagerTimedChunk);
  if (!prof.enabled()) return -1;
  double ns = 0;
  execute(s, &prof, &ns);
  return ns;
}

std::vector<uint32_t> TinyRunner::tokens(uint32_t seq) {
  const uint32_t cap = prompt_len_ + tokens_;
  return ctx_->read<uint32_t>(impl_->tokens, uint64_t(seq) * cap + prompt_len_, tokens_);
}

std::vector<float> TinyRunner::logits(uint32_t seq) {
  return ctx_->read<float>(impl_->logits, uint64_t(seq) * tokens_ * kVocab, uint64_t(tokens_) * kVocab);
}

}  // namespace wgfuse::tiny
