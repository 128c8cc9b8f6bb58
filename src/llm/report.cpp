#include "llm/report.h"

#include <algorithm>
#include <fstream>

#include "gpu/bandwidth.h"
#include "llm/plan_file.h"
#include "util/error.h"
#include "util/stats.h"

namespace wgfuse::llm {
namespace {

double rate(uint64_t tokens, double ms) {
  return ms > 0 ? 1e3 * double(tokens) / ms : 0;
}

// A profile's timed dispatches grouped by kernel name, in first-seen order: calls, the sum of each
// call's median µs, and the sum of `amount` over the calls (bytes moved, or FLOPs).
struct KernelRow {
  std::string name;
  uint32_t calls = 0;
  double us = 0;
  uint64_t amount = 0;
};
template <class Steps, class Amount>
std::vector<KernelRow> rows_by_kernel(const Steps& steps, Amount amount) {
  std::vector<KernelRow> rows;
  for (const auto& t : steps) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const KernelRow& r) { return r.name == t.name; });
    if (it == rows.end()) it = rows.insert(rows.end(), KernelRow{t.name});
    ++it->calls;
    it->us += summarize(t.us).median;
    it->amount += amount(t);
  }
  return rows;
}

// "q5_0 x 72, q8_0 x 26": the matrices' formats, most bytes first.
std::string formats_text(const DecoderStats& st) {
  std::string s;
  for (const auto& u : st.weight_formats)
    s += (s.empty() ? "" : ", ") + std::string(gpu::to_string(u.format)) + " x " + std::to_string(u.matrices);
  return s.empty() ? gpu::to_string(st.weight_format) : s;
}

}  // namespace

nlohmann::json timing_json(const DecoderStats& st) {
  const double per = st.decode_steps ? 1.0 / double(st.decode_steps) : 0;  // per token computed
  // The prompt phase: every prompt position and the first generated token, in one submit when
  // the prompt fits one prefill chunk.
  return {{"prefill_ms", st.prefill_ms},
          {"prefill_tok_s", rate(st.prompt_tokens, st.prefill_ms)},
          {"decode_tok_s", rate(st.decode_tokens, st.decode_ms)},
          {"dispatches_per_token", double(st.decode_dispatches) * per},
          {"submits_per_token", double(st.decode_submits) * per},
          {"readbacks_per_token", double(st.decode_readbacks) * per},
          {"gpu_memory_bytes", st.gpu_memory_bytes},
          {"weight_bytes", st.weight_bytes},
          {"kv_cache_bytes", st.kv_cache_bytes},
          {"weight_bytes_per_token", st.weight_bytes_per_token}};
}

std::string timing_line(const DecoderStats& st, double load_ms) {
  const auto t = timing_json(st);
  char line[1024];
  std::snprintf(
      line, sizeof line,
      "\n[%llu prompt tokens, prefill %.1f tok/s, %llu generated, decode %.1f tok/s, %.1f dispatches/token, "
      "%.2f submits/token, %.2f read-backs/token, GPU memory %.1f MB (weights %.1f + KV cache %.1f), load "
      "%.0f ms, weights %s uploaded in %.0f ms, %.1f MB of them read per token]\n",
      (unsigned long long)st.prompt_tokens, t["prefill_tok_s"].get<double>(),
      (unsigned long long)st.generated_tokens, t["decode_tok_s"].get<double>(),
      t["dispatches_per_token"].get<double>(), t["submits_per_token"].get<double>(),
      t["readbacks_per_token"].get<double>(), double(st.gpu_memory_bytes) / 1e6,
      double(st.weight_bytes) / 1e6, double(st.kv_cache_bytes) / 1e6, load_ms, formats_text(st).c_str(),
      st.upload_ms, double(st.weight_bytes_per_token) / 1e6);
  return line;
}

// One decode step after the generation, each dispatch timed in its own pass.
nlohmann::json report_profile(std::FILE* out, gpu::Context& ctx, const DecodeProfile& p, uint32_t reps,
                              const DecoderStats& st) {
  const double copy_gbs =
      gpu::copy_kernel_bandwidth_gbs(ctx, ctx.adapter().is_cpu ? 4u << 20 : 256u << 20, 5);
  const auto rows = rows_by_kernel(
      p.steps, [&](const auto& t) { return t.bytes + t.bytes_per_position * (uint64_t(p.position) + 1); });
  double sum_us = 0;
  uint64_t sum_bytes = 0;
  for (const auto& r : rows) sum_us += r.us, sum_bytes += r.amount;
  const Summary whole = summarize(p.whole_step_us);
  std::fprintf(out,
               "\ndecode step at position %u, %u repetitions, GPU timestamps; copy kernel %.1f GB/s; weights "
               "%s, %.2f MB of them per token\n"
               "%-18s %6s %10s %10s %8s %10s %8s %8s\n",
               p.position, reps, copy_gbs, formats_text(st).c_str(), double(st.weight_bytes_per_token) / 1e6,
               "kernel", "calls", "us/call", "us/token", "% step", "MB/token", "GB/s", "% copy");
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& r : rows) {
    const double gbs = r.us > 0 ? double(r.amount) / (r.us * 1e3) : 0;
    std::fprintf(out, "%-18s %6u %10.2f %10.1f %7.1f%% %10.2f %8.1f %7.1f%%\n", r.name.c_str(), r.calls,
                 r.us / r.calls, r.us, 100 * r.us / sum_us, double(r.amount) / 1e6, gbs,
                 100 * gbs / copy_gbs);
    kernels.push_back({{"kernel", r.name},
                       {"calls_per_token", r.calls},
                       {"us_per_token", r.us},
                       {"bytes_per_token", r.amount},
                       {"gb_s", gbs}});
  }
  const double all_gbs = double(sum_bytes) / (whole.median * 1e3);
  std::fprintf(out,
               "%-18s %6zu %10s %10.1f %8s %10.2f %8.0f %7.1f%%  (each dispatch in its own pass)\n"
               "%-18s %6zu %10s %10.1f %8s %10s %8.0f %7.1f%%  [%.1f-%.1f] = %.0f tok/s of GPU time\n",
               "sum", p.steps.size(), "", sum_us, "", double(sum_bytes) / 1e6,
               double(sum_bytes) / (sum_us * 1e3), 100 * double(sum_bytes) / (sum_us * 1e3) / copy_gbs,
               "one pass", p.steps.size(), "", whole.median, "", "", all_gbs, 100 * all_gbs / copy_gbs,
               whole.min, whole.max, 1e6 / whole.median);
  return {{"position", p.position},
          {"repetitions", reps},
          {"copy_kernel_gb_s", copy_gbs},
          {"kernels", kernels},
          {"sum_of_dispatches_us", sum_us},
          {"one_pass_us", {{"median", whole.median}, {"min", whole.min}, {"max", whole.max}}},
          {"bytes_per_token", sum_bytes},
          {"weight_bytes_per_token", st.weight_bytes_per_token}};
}

nlohmann::json report_prefill_profile(std::FILE* out, const PrefillProfile& p, uint32_t reps) {
  const auto rows = rows_by_kernel(p.steps, [](const auto& k) { return k.flops; });
  double sum_us = 0;
  uint64_t sum_flops = 0;
  for (const auto& r : rows) sum_us += r.us, sum_flops += r.amount;
  const Summary whole = summarize(p.whole_chunk_us);
  std::fprintf(out,
               "\nprefill chunk of %u tokens from position %u, %u repetitions, GPU timestamps\n"
               "%-20s %6s %10s %10s %8s %10s %8s\n",
               p.tokens, p.first, reps, "kernel", "calls", "us/call", "us/chunk", "% chunk", "GFLOP",
               "TFLOP/s");
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& r : rows) {
    const double tflops = r.us > 0 ? double(r.amount) / (r.us * 1e6) : 0;
    std::fprintf(out, "%-20s %6u %10.2f %10.1f %7.1f%% %10.3f %8.2f\n", r.name.c_str(), r.calls,
                 r.us / r.calls, r.us, 100 * r.us / sum_us, double(r.amount) / 1e9, tflops);
    kernels.push_back(
        {{"kernel", r.name}, {"calls", r.calls}, {"us", r.us}, {"flops", r.amount}, {"tflop_s", tflops}});
  }
  std::fprintf(out,
               "%-20s %6zu %10s %10.1f %8s %10.3f %8.2f  (each dispatch in its own pass)\n"
               "%-20s %6zu %10s %10.1f %8s %10s %8.2f  [%.1f-%.1f] = %.0f tok/s of GPU time\n",
               "sum", p.steps.size(), "", sum_us, "", double(sum_flops) / 1e9,
               double(sum_flops) / (sum_us * 1e6), "one pass", p.steps.size(), "", whole.median, "", "",
               double(sum_flops) / (whole.median * 1e6), whole.min, whole.max, 1e6 * p.tokens / whole.median);
  return {{"first", p.first},
          {"tokens", p.tokens},
          {"repetitions", reps},
          {"kernels", kernels},
          {"sum_of_dispatches_us", sum_us},
          {"one_pass_us", {{"median", whole.median}, {"min", whole.min}, {"max", whole.max}}},
          {"flops", sum_flops}};
}

nlohmann::json decoder_json(const DecoderChoice& c) {
  if (c.kind == DecoderKind::Steps) {
    nlohmann::json j = {{"mode", "steps"}};
    if (!c.fallback_reason.empty()) j["fallback_reason"] = c.fallback_reason;
    return j;
  }
  return {{"mode", "persistent"},
          {"workgroups", c.workgroups},
          {"workgroup_size", c.workgroup_size},
          {"barriers_per_token", c.barriers_per_token},
          {"checked_tokens", c.checked_tokens},
          {"variant", c.variant}};
}

nlohmann::json run_json(Session& s, std::span<const uint32_t> prompt, const Reply& reply) {
  const DecoderStats& st = s.decoder().stats();
  const SessionOptions& o = s.options();
  const SamplingParams& p = s.sampling();
  nlohmann::json j = timing_json(st);
  j["prompt_ids"] = prompt;
  j["generated_ids"] = reply.ids;
  j["stopped_at_eos"] = reply.stopped_at_eos;
  j["text"] = reply.text;
  j["load_ms"] = s.load_ms();
  j["upload_ms"] = st.upload_ms;
  j["prompt_tokens"] = st.prompt_tokens;
  j["decode_tokens"] = st.decode_tokens;
  j["decode_steps"] = st.decode_steps;
  j["dispatches_per_step"] = st.dispatches_per_step;
  j["dispatches_per_step_long"] = st.dispatches_per_step_long;
  j["dispatches_long_from"] = st.long_from;
  j["fusion"] = fusion_name(o.fusion);
  j["attn_fuse_max"] = o.attn_fuse_max;
  j["attn_short_max"] = o.attn_short_max;
  j["attn_long_from"] = o.attn_long_from;
  j["decode"] = decoder_json(s.decoder_choice());
  if (s.decoder_choice().kind == DecoderKind::Persistent) {
    j["decode"]["stale_reads"] = st.stale_reads;
    j["decode"]["stale_reads_by_region"] = st.stale_reads_by_region;
    j["decode"]["batches_run_again"] = st.batches_run_again;
  }
  j["steps_per_submit"] = o.steps_per_submit;
  j["dtype"] = o.dtype ? gpu::to_string(*o.dtype) : "auto";  // as asked
  j["weight_format"] = gpu::to_string(st.weight_format);     // as stored (most of the bytes)
  j["weight_formats"] = nlohmann::json::array();
  for (const auto& u : st.weight_formats)
    j["weight_formats"].push_back(
        {{"format", gpu::to_string(u.format)}, {"matrices", u.matrices}, {"bytes", u.bytes}});
  j["ctx"] = s.ctx_len();
  j["attention"] = {{"chunk", o.attention.chunk}, {"heads_per_wg", o.attention.heads_per_wg}};
  j["model"] = {{"dir", o.model_dir},
                {"format", s.files().gguf() ? "gguf" : "safetensors"},
                {"tensor_types", s.files().tensor_types()},
                {"config", config_json(s.files().config())}};
  j["sampling"] = {{"temperature", p.temperature},
                   {"top_k", p.top_k},
                   {"top_p", p.top_p},
                   {"repetition_penalty", p.repetition_penalty},
                   {"seed", p.seed}};
  return j;
}

void write_npy(const std::string& path, const std::vector<float>& data, size_t rows, size_t cols) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "), }";
  header.resize(((10 + header.size() + 1 + 63) / 64) * 64 - 10 - 1, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("--dump-logits: cannot write " + path);
  const uint16_t len = uint16_t(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * sizeof(float)));
  if (!f) throw Error("--dump-logits: writing " + path + " failed");
}

}  // namespace wgfuse::llm
