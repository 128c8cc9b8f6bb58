// Output of the dispatch benchmark: terminal table, JSON (docs/bench.schema.json), CSV.
#include <cstdio>
#include <map>
#include <sstream>

#include "bench/dispatch_bench.h"

namespace wgfuse::bench {
namespace {

nlohmann::json summary_json(const Summary& s) {
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}};
}
nlohmann::json fit_json(const LinearFit& f) {
  return {{"slope_us", f.slope}, {"intercept_us", f.intercept}, {"r2", f.r2}, {"reliable", reliable(f)}};
}

const Series* find(const KernelReport& k, const std::string& variant, const std::string& api) {
  for (auto& s : k.series)
    if (s.variant == variant && s.api == api) return &s;
  return nullptr;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Bandwidth with three significant digits (a CPU adapter copies well under 1 GB/s), no exponent.
std::string gbs(double v) {
  return v >= 100 ? fmt("%.0f", v) : fmt("%.3g", v);
}

// A slope for the table, or its R² in parentheses where the fit is unreliable: no figure then.
std::string slope_cell(const LinearFit& f) {
  return reliable(f) ? fmt("%.3f", f.slope) : fmt("(R^2 %.2f)", f.r2);
}

// The achieved bandwidth divides by the GPU slope of the one-pass series.
bool achieved_bandwidth_reliable(const KernelReport& k) {
  const Series* s = find(k, "one_pass", "runtime");
  return s && s->has_gpu && reliable(s->gpu);
}

// naive slope / this slope, when both are reliable figures.
bool has_naive_ratio(const Series* naive, const Series& s) {
  return naive && reliable(naive->total_steady) && reliable(s.total_steady) && s.total_steady.slope > 0;
}

}  // namespace

nlohmann::json to_json(const BenchReport& r, const nlohmann::json& adapter) {
  nlohmann::json j;
  j["schema"] = "wgfuse.bench/1";
  j["wgfuse_version"] = WGFUSE_VERSION;
  j["date_utc"] = r.date_utc;
  j["adapter"] = adapter;
  const auto& c = r.config;
  j["config"] = {{"quick", c.quick},
                 {"reps", c.reps},
                 {"max_dispatches", c.max_dispatches},
                 {"point_budget_ms", c.point_budget_ms},
                 {"small_elements", c.small_elements},
                 {"large_elements", c.large_elements},
                 {"max_chain", c.max_chain},
                 {"all_chain_lengths", c.all_chain_lengths}};
  j["copy_bandwidth_gbs"] = r.copy_bandwidth_gbs;
  j["copy_command_bandwidth_gbs"] = r.copy_command_bandwidth_gbs;
  if (r.copy_command_gpu_bandwidth_gbs > 0)
    j["copy_command_gpu_bandwidth_gbs"] = r.copy_command_gpu_bandwidth_gbs;
  j["steady_max_n"] = kSteadyMaxN;
  j["plan_encode"] = {{"dispatches", r.plan_encode.dispatches},
                      {"passes", r.plan_encode.passes},
                      {"us_per_dispatch", summary_json(r.plan_encode.us_per_dispatch)}};
  j["min_reliable_r2"] = kMinReliableR2;
  j["wall_s"] = r.wall_s;
  j["kernels"] = nlohmann::json::array();
  for (auto& k : r.kernels) {
    nlohmann::json kj = {{"name", k.name},
                         {"description", k.description},
                         {"elements", k.elements},
                         {"bytes_per_dispatch", k.bytes_per_dispatch},
                         {"series", nlohmann::json::array()},
                         {"framework_overhead", nlohmann::json::array()}};
    if (k.achieved_bandwidth_gbs > 0 && achieved_bandwidth_reliable(k))
      kj["achieved_bandwidth_gbs"] = k.achieved_bandwidth_gbs;
    const Series* naive = find(k, "naive", "runtime");
    for (auto& s : k.series) {
      nlohmann::json sj = {{"variant", s.variant},
                           {"api", s.api},
                           {"description", s.description},
                           {"total", fit_json(s.total)},
                           {"cpu_issue", fit_json(s.issue)},
                           {"total_steady", fit_json(s.total_steady)},
                           {"cpu_issue_steady", fit_json(s.issue_steady)},
                           {"points", nlohmann::json::array()}};
      sj["gpu"] = s.has_gpu ? fit_json(s.gpu) : nlohmann::json(nullptr);
      sj["naive_ratio"] = has_naive_ratio(naive, s)
                              ? nlohmann::json(naive->total_steady.slope / s.total_steady.slope)
                              : nlohmann::json(nullptr);
      for (auto& p : s.points) {
        nlohmann::json pj = {
            {"n", p.n}, {"total_us", summary_json(p.total_us)}, {"cpu_issue_us", summary_json(p.issue_us)}};
        pj["gpu_us"] = p.gpu_us >= 0 ? nlohmann::json(p.gpu_us) : nlohmann::json(nullptr);
        sj["points"].push_back(pj);
      }
      kj["series"].push_back(sj);
    }
    for (const char* v : {"one_pass", "submit_per_dispatch"}) {
      const Series* rt = find(k, v, "runtime");
      const Series* raw = find(k, v, "raw");
      if (rt && raw)
        kj["framework_overhead"].push_back(
            {{"variant", v},
             {"runtime_slope_us", rt->total_steady.slope},
             {"raw_slope_us", raw->total_steady.slope},
             {"difference_us", rt->total_steady.slope - raw->total_steady.slope},
             {"runtime_issue_slope_us", rt->issue_steady.slope},
             {"raw_issue_slope_us", raw->issue_steady.slope},
             {"issue_difference_us", rt->issue_steady.slope - raw->issue_steady.slope},
             {"reliable", reliable(rt->total_steady) && reliable(raw->total_steady)},
             {"issue_reliable", reliable(rt->issue_steady) && reliable(raw->issue_steady)}});
    }
    j["kernels"].push_back(kj);
  }
  j["chain"] = nlohmann::json::array();
  for (auto& ch : r.chain) {
    nlohmann::json cj = {{"elements", ch.elements},
                         {"k", ch.k},
                         {"runs_per_sample", ch.runs_per_sample},
                         {"unfused",
                          {{"dispatches", ch.k},
                           {"wall_us", summary_json(ch.unfused_us)},
                           {"bytes", ch.unfused_bytes},
                           {"bound_us", ch.unfused_bound_us}}},
                         {"fused",
                          {{"dispatches", 1},
                           {"wall_us", summary_json(ch.fused_us)},
                           {"bytes", ch.fused_bytes},
                           {"bound_us", ch.fused_bound_us}}},
                         {"speedup", ch.unfused_us.median / ch.fused_us.median},
                         {"check",
                          {{"bitwise_equal", ch.bitwise_equal},
                           {"max_rel_diff_fused_unfused", ch.max_rel_diff},
                           {"max_rel_err_vs_cpu_double", ch.max_rel_err_cpu},
                           {"passed", ch.passed}}}};
    cj["unfused"]["gpu_us"] =
        ch.unfused_gpu_us >= 0 ? nlohmann::json(ch.unfused_gpu_us) : nlohmann::json(nullptr);
    cj["fused"]["gpu_us"] = ch.fused_gpu_us >= 0 ? nlohmann::json(ch.fused_gpu_us) : nlohmann::json(nullptr);
    j["chain"].push_back(cj);
  }
  return j;
}

std::string to_table(const BenchReport& r, const gpu::AdapterInfo& a) {
  std::ostringstream o;
  o << "wgfuse " << WGFUSE_VERSION << " bench  " << r.date_utc << "  (" << fmt("%.1f", r.wall_s) << " s)\n";
  o << "adapter: " << a.device << " | " << a.backend << " | " << a.adapter_type << " | " << a.description
    << "\n";
  o << "device copy bandwidth: " << gbs(r.copy_bandwidth_gbs) << " GB/s by a copy kernel, "
    << gbs(r.copy_command_bandwidth_gbs) << " GB/s by copyBufferToBuffer (wall clock"
    << (r.copy_command_gpu_bandwidth_gbs > 0
            ? "; " + gbs(r.copy_command_gpu_bandwidth_gbs) + " by GPU timestamps"
            : "")
    << "; bytes read + written)\n\n";
  o << "Per-dispatch cost: slope of a least-squares fit of time against dispatch count N = 1, 2, 4, ...\n";
  o << "(median of " << r.config.reps
    << " repetitions per N; total = encode .. GPU done, fitted over N <= " << kSteadyMaxN
    << " and over all N;\n";
  o << " issue = CPU encode+submit (N <= " << kSteadyMaxN
    << "); GPU = timestamp queries; naive/this = naive slope / this slope, N <= " << kSteadyMaxN << ")\n\n";
  char line[256];
  const std::string steady_head = "us/d N<=" + std::to_string(kSteadyMaxN);
  std::snprintf(line, sizeof line, "%-6s %-20s %-7s %12s %7s %11s %11s %10s %10s %6s\n", "kernel", "variant",
                "api", steady_head.c_str(), "R^2", "us/d all N", "issue us/d", "GPU us/d", "naive/this",
                "max N");
  o << line;
  bool any_unreliable = false;
  for (auto& k : r.kernels) {
    const Series* naive = find(k, "naive", "runtime");
    for (auto& s : k.series) {
      std::string gpu = s.has_gpu ? slope_cell(s.gpu) : "-";
      std::string ratio =
          has_naive_ratio(naive, s) ? fmt("%.1fx", naive->total_steady.slope / s.total_steady.slope) : "-";
      std::snprintf(line, sizeof line, "%-6s %-20s %-7s %12s %7.4f %11s %11s %10s %10s %6u\n", k.name.c_str(),
                    s.variant.c_str(), s.api.c_str(), slope_cell(s.total_steady).c_str(), s.total_steady.r2,
                    slope_cell(s.total).c_str(), slope_cell(s.issue_steady).c_str(), gpu.c_str(),
                    ratio.c_str(), s.points.empty() ? 0 : s.points.back().n);
      o << line;
      any_unreliable |= !reliable(s.total_steady) || !reliable(s.total) || !reliable(s.issue_steady) ||
                        (s.has_gpu && !reliable(s.gpu));
    }
  }
  if (any_unreliable)
    o << "(R^2 x): no figure, the times do not lie on a line (R^2 < " << fmt("%.1f", kMinReliableR2)
      << ").\n";
  if (a.is_cpu)
    o << "CPU adapter: the \"GPU\" work runs in threads on the same CPU cores as the encoding "
         "and the clock, so times vary from run to run and slopes are noisy; only a GPU gives "
         "representative figures.\n";
  o << "\nFramework overhead, wgfuse runtime minus bare C API (us per dispatch, N <= " << kSteadyMaxN
    << ", total / CPU issue):\n";
  for (auto& k : r.kernels)
    for (const char* v : {"one_pass", "submit_per_dispatch"}) {
      const Series* rt = find(k, v, "runtime");
      const Series* raw = find(k, v, "raw");
      if (!rt || !raw) continue;
      auto difference = [](const LinearFit& a, const LinearFit& b) {
        return reliable(a) && reliable(b) ? fmt("%+.3f", a.slope - b.slope) : std::string("unreliable");
      };
      std::snprintf(line, sizeof line, "  %-6s %-20s runtime %10s  raw %10s  difference %s / %s\n",
                    k.name.c_str(), v, slope_cell(rt->total_steady).c_str(),
                    slope_cell(raw->total_steady).c_str(),
                    difference(rt->total_steady, raw->total_steady).c_str(),
                    difference(rt->issue_steady, raw->issue_steady).c_str());
      o << line;
    }
  for (auto& k : r.kernels)
    if (k.achieved_bandwidth_gbs > 0 && achieved_bandwidth_reliable(k))
      o << "\n"
        << k.name << " kernel (" << k.elements << " floats): " << gbs(k.achieved_bandwidth_gbs)
        << " GB/s by GPU timestamps = " << fmt("%.1f", 100 * k.achieved_bandwidth_gbs / r.copy_bandwidth_gbs)
        << "% of device copy\n";

  o << "\nElementwise chain of k ops (x = x * a_j): k dispatches (unfused) vs one dispatch (fused), us per "
       "chain\n";
  o << "(wall = median [min-max] per chain; GPU = timestamps; bound = bytes / copy bandwidth: 2k vs 2 "
       "passes)\n";
  std::snprintf(line, sizeof line, "%9s %3s %26s %26s %8s %17s %17s %6s\n", "floats", "k", "unfused wall",
                "fused wall", "speedup", "GPU unf/fused", "bound unf/fused", "check");
  o << line;
  for (auto& c : r.chain) {
    auto range = [](const Summary& s) {
      char b[64];
      std::snprintf(b, sizeof b, "%.2f [%.2f-%.2f]", s.median, s.min, s.max);
      return std::string(b);
    };
    std::string gpu =
        c.unfused_gpu_us >= 0 ? fmt("%.2f", c.unfused_gpu_us) + "/" + fmt("%.2f", c.fused_gpu_us) : "-";
    std::string bound = fmt("%.2f", c.unfused_bound_us) + "/" + fmt("%.2f", c.fused_bound_us);
    std::snprintf(line, sizeof line, "%9llu %3u %26s %26s %7.2fx %17s %17s %6s\n",
                  (unsigned long long)c.elements, c.k, range(c.unfused_us).c_str(), range(c.fused_us).c_str(),
                  c.unfused_us.median / c.fused_us.median, gpu.c_str(), bound.c_str(),
                  c.passed ? (c.bitwise_equal ? "exact" : "ok") : "FAIL");
    o << line;
  }
  const auto& pe = r.plan_encode;
  o << "\nPlan encode (CPU): " << pe.dispatches
    << " dispatches, two pipelines alternating, a bind group each: " << fmt("%.3f", pe.us_per_dispatch.median)
    << " us per dispatch [" << fmt("%.3f", pe.us_per_dispatch.min) << "-"
    << fmt("%.3f", pe.us_per_dispatch.max) << "]\n";
  return o.str();
}

std::string to_csv(const BenchReport& r) {
  std::ostringstream o;
  o << "section,kernel,variant,api,n_or_k,elements,total_median_us,total_min_us,total_max_us,issue_median_us,"
       "gpu_us,"
       "fused_median_us,fused_min_us,fused_max_us,fused_gpu_us,check\n";
  for (auto& k : r.kernels)
    for (auto& s : k.series)
      for (auto& p : s.points)
        o << "dispatch," << k.name << ',' << s.variant << ',' << s.api << ',' << p.n << ',' << k.elements
          << ',' << p.total_us.median << ',' << p.total_us.min << ',' << p.total_us.max << ','
          << p.issue_us.median << ',' << (p.gpu_us >= 0 ? std::to_string(p.gpu_us) : "") << ",,,,,\n";
  for (auto& c : r.chain)
    o << "chain,elementwise,unfused_vs_fused,runtime," << c.k << ',' << c.elements << ','
      << c.unfused_us.median << ',' << c.unfused_us.min << ',' << c.unfused_us.max << ",,"
      << (c.unfused_gpu_us >= 0 ? std::to_string(c.unfused_gpu_us) : "") << ',' << c.fused_us.median << ','
      << c.fused_us.min << ',' << c.fused_us.max << ','
      << (c.fused_gpu_us >= 0 ? std::to_string(c.fused_gpu_us) : "") << ','
      << (c.passed ? "passed" : "failed") << '\n';
  return o.str();
}

}  // namespace wgfuse::bench
