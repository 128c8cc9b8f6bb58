// The pieces of `wgfuse serve` on their own: submission validation, the rate limiter, static path
// safety, the kernel index, and the results store on SQLite (the API end to end, PostgreSQL, load
// and faults are in tests/serve/, against a real server).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "gpu/kernel.h"
#include "serve/kernel_index.h"
#include "serve/rate_limiter.h"
#include "serve/results_store.h"
#include "serve/static_files.h"
#include "serve/submission.h"

namespace wgfuse::serve {
namespace {

using nlohmann::json;

json valid_submission(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(3.0, 40.0);
  json results = json::array();
  for (int k = 0; k < 3; ++k) {
    std::vector<double> samples(5 + k);
    for (auto& x : samples) x = d(rng);
    std::vector<double> sorted = samples;
    std::sort(sorted.begin(), sorted.end());
    results.push_back({{"suite", k == 0 ? "dispatch" : "sim"},
                       {"name", "variant " + std::to_string(k)},
                       {"kernel_version", "00ff00ff00ff00ff"},
                       {"sizes", {{"elements", 4097 + k}}},
                       {"unit", "us"},
                       {"samples", samples},
                       {"median", sorted[sorted.size() / 2]},
                       {"min", sorted.front()},
                       {"max", sorted.back()},
                       {"std", d(rng) / 10},
                       {"dispatches", 7 * k},
                       {"submits", 1},
                       {"speedup", k == 1 ? json(d(rng)) : json(nullptr)},
                       {"baseline", k == 1 ? json("naive") : json(nullptr)},
                       {"bandwidth_gbs", nullptr},
                       {"bound_gbs", nullptr},
                       {"equivalence",
                        {{"passed", true},
                         {"compared", "fused vs unfused"},
                         {"max_abs_diff", 3e-7},
                         {"tolerance", 1e-5}}}});
  }
  return {{"schema_version", 1},
          {"source", "native"},
          {"client_version", "wgfuse test"},
          {"adapter",
           {{"vendor", "google"},
            {"architecture", "swiftshader"},
            {"device", "d"},
            {"description", "SwiftShader"},
            {"backend", "vulkan"}}},
          {"browser", nullptr},
          {"os", "Linux x86_64"},
          {"results", results}};
}

// The reason a mutated submission is rejected with ("" when accepted).
std::string rejection(const std::function<void(json&)>& mutate) {
  json s = valid_submission(5);
  mutate(s);
  try {
    validate_submission(s);
    return "";
  } catch (const ValidationError& e) {
    return e.what();
  }
}

TEST(ServeSubmission, AcceptsValidAndNamesTheFieldOfEachRejection) {
  EXPECT_EQ(rejection([](json&) {}), "");
  EXPECT_EQ(
      rejection([](json& s) { s["results"][2]["median"] = s["results"][2]["min"].get<double>() - 0.25; }),
      "results[2].median: must be >= min");
  EXPECT_EQ(rejection([](json& s) { s["results"][0]["median"] = s["results"][0]["max"].get<double>() + 1; }),
            "results[0].median: must be <= max");
  EXPECT_EQ(rejection([](json& s) { s["results"][1]["std"] = -1e-9; }), "results[1].std: must be >= 0");
  EXPECT_EQ(rejection([](json& s) { s["results"][1]["speedup"] = 10000.5; }),
            "results[1].speedup: must be within 0.01..10000");
  EXPECT_EQ(rejection([](json& s) { s["results"][1]["speedup"] = 0.0099; }),
            "results[1].speedup: must be within 0.01..10000");
  EXPECT_EQ(rejection([](json& s) { s["results"][0].erase("equivalence"); }),
            "results[0].equivalence: missing");
  EXPECT_EQ(rejection([](json& s) { s["results"][0]["equivalence"]["passed"] = false; }),
            "results[0].equivalence.passed: the equivalence check failed; the result is not accepted");
  EXPECT_EQ(rejection([](json& s) { s["results"][0]["samples"].push_back(1e6); }),
            "results[0].samples[5]: outside [min, max]");
  EXPECT_EQ(rejection([](json& s) { s["results"][0]["dispatches"] = -3; }),
            "results[0].dispatches: must be >= 0");
  EXPECT_EQ(rejection([](json& s) { s["adapter"]["vendor"] = 12; }),
            "adapter.vendor: must be a string, not number");
  EXPECT_EQ(rejection([](json& s) { s["os"] = std::string(257, 'x'); }),
            "os: longer than 256 characters (257)");
  EXPECT_EQ(rejection([](json& s) {
              s["browser"] = {{"name", "x"}, {"version", "1"}};
            }),
            "browser: must be null when source is \"native\"");
  EXPECT_EQ(rejection([](json& s) { s.erase("results"); }), "results: missing");
  EXPECT_EQ(rejection([](json& s) {
              json one = s["results"][0];
              s["results"] = json::array();
              for (int k = 0; k < 257; ++k) s["results"].push_back(one);
            }),
            "results: more than 256 results (257)");
  EXPECT_EQ(rejection([](json& s) { s["results"][2]["suite"] = "mining"; }),
            "results[2].suite: 'mining' is not one of dispatch, chain, sim, sim-file, tiny, llm");
  EXPECT_EQ(rejection([](json& s) { s["results"][0]["sizes"]["elements"] = "many"; }),
            "results[0].sizes.elements: must be a number, not string");
  EXPECT_EQ(rejection([](json& s) { s["results"][1]["baseline"] = nullptr; }),
            "results[1].baseline: speedup and baseline are both null or both set");
}

TEST(ServeSubmission, CountersBeyondInt64AreRefusedNotWrapped) {
  EXPECT_EQ(rejection([](json& s) { s["results"][0]["dispatches"] = uint64_t(1) << 63; }),
            "results[0].dispatches: must be at most 9223372036854775807");
  EXPECT_EQ(rejection([](json& s) { s["results"][0]["submits"] = json::parse("18446744073709551615"); }),
            "results[0].submits: must be at most 9223372036854775807");
  EXPECT_EQ(rejection([](json& s) { s["results"][0]["dispatches"] = int64_t(INT64_MAX); }), "");
}

TEST(ServeSubmission, BodyDepthIsBoundedBeforeParsing) {
  const auto nested = [](int depth) {
    return R"({"schema_version": 1, "x": )" + std::string(size_t(depth), '[') +
           std::string(size_t(depth), ']') + "}";
  };
  EXPECT_NO_THROW(parse_submission_body(nested(7)));  // 8 levels with the outer object
  try {
    parse_submission_body(nested(75000));
    FAIL() << "75,000 levels accepted";
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(),
                 "body: nested deeper than 8 levels of arrays and objects (the submission needs 5)");
  }
  EXPECT_THROW(parse_submission_body(nested(8)), ValidationError);
  // Brackets inside strings (escaped quotes too) are text, not nesting.
  EXPECT_NO_THROW(parse_submission_body(R"({"a": "\"[[[[[[[[[[[[[[[[[[[[[[[[[[["})"));
  try {
    parse_submission_body("{\"a\": \"\xff\"}");
    FAIL() << "non-UTF-8 accepted";
  } catch (const ValidationError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("body: malformed JSON: ", 0), 0u) << e.what();
  }
}

TEST(ServeSubmission, StringsLoseControlCharactersAndCountCharacters) {
  EXPECT_EQ(without_control_characters("GPU\u202e1337\u2066x\u200f\ty\x01z\u00e9"), "GPU1337xyz\u00e9");
  EXPECT_EQ(utf8_length("\u00e9\u00e9\u65e5"), 3u);
  EXPECT_TRUE(is_utf8("na\u00efve \u65e5 \U0001f600"));
  for (const char* bad : {"\xff", "\xc3\x28", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"})
    EXPECT_FALSE(is_utf8(bad)) << bad;
  json s = valid_submission(5);
  s["adapter"]["device"] = "Evil\u202eGPU";
  validate_submission(s);
  EXPECT_EQ(s["adapter"]["device"], "EvilGPU");
  // A browser's adapter without a device name is named by vendor and architecture.
  s["adapter"]["device"] = "";
  s["adapter"]["vendor"] = "nvidia";
  s["adapter"]["architecture"] = "blackwell";
  validate_submission(s);
  EXPECT_EQ(s["adapter"]["device"], "nvidia blackwell");
  // 256 two-byte characters are 512 bytes and within the limit; 257 are not.
  std::string e256;
  for (int k = 0; k < 256; ++k) e256 += "\u00e9";
  EXPECT_EQ(rejection([&](json& s) { s["adapter"]["device"] = e256; }), "");
  EXPECT_EQ(rejection([&](json& s) { s["adapter"]["device"] = e256 + "\u00e9"; }),
            "adapter.device: longer than 256 characters (257)");
}

// Every implausible case is flagged with a reason naming the field, and none of the plausible ones.
TEST(ServeSubmission, FlagsEveryImplausibleResultAndNoPlausibleOne) {
  const std::string version = "00ff00ff00ff00ff";
  for (uint32_t seed = 1; seed < 40; ++seed) {
    json s = valid_submission(seed);
    validate_submission(s);
    flag_implausible(s, version);
    for (auto& r : s["results"]) EXPECT_EQ(r["flags"], json::array()) << "seed " << seed << ": " << r;
  }
  const auto flags = [&](const std::function<void(json&)>& lie) {
    json s = valid_submission(7);
    lie(s["results"][1]);
    validate_submission(s);
    flag_implausible(s, version);
    EXPECT_EQ(s["results"][0]["flags"], json::array());
    return s["results"][1]["flags"].dump();
  };
  const auto flagged = [&](const std::function<void(json&)>& lie, const std::string& field) {
    const std::string reasons = flags(lie);
    EXPECT_NE(reasons.find("\"" + field), std::string::npos)
        << "expected a flag on " << field << ": " << reasons;
  };
  const auto set_samples = [](json& r, std::vector<double> v) {
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    r["samples"] = v;
    r["min"] = sorted.front();
    r["max"] = sorted.back();
    r["median"] = sorted[sorted.size() / 2];
  };
  flagged([](json& r) { r["kernel_version"] = "0123456789abcdef"; }, "kernel_version: 0123456789abcdef");
  flagged([](json& r) { r["bandwidth_gbs"] = 1e12, r["bound_gbs"] = 1.0; },
          "bandwidth_gbs: 1000000000000.0 GB/s is above 20000");
  flagged([](json& r) { r["bandwidth_gbs"] = 1.6, r["bound_gbs"] = 1.0; },
          "bandwidth_gbs: 1.6 GB/s is above the adapter's copy bound");
  flagged([](json& r) { r["bound_gbs"] = 3e4; }, "bound_gbs");
  flagged([&](json& r) { r["unit"] = "tok/s", set_samples(r, {1e15, 2e15, 3e15}); }, "samples: 3e+15 tok/s");
  flagged([&](json& r) { r["unit"] = "gen/s", set_samples(r, {0.0, 2.0, 3.0}); }, "samples: a rate of 0");
  flagged([&](json& r) { set_samples(r, {1e-5, 2.0, 3.0}); }, "samples: a repetition");
  flagged(
      [](json& r) {
        r["min"] = r["min"].get<double>() / 2;
        r["median"] = r["min"];
      },
      "min:");
  flagged([](json& r) { r["max"] = r["max"].get<double>() * 2; }, "max:");
  flagged(
      [](json& r) {  // within [min, max], yet not the samples' median
        r["median"] = r["min"].get<double>() + 1e-3 * (r["max"].get<double>() - r["min"].get<double>());
      },
      "median:");
  flagged([](json& r) { r["equivalence"]["max_abs_diff"] = 0.5; },
          "equivalence: passed with max_abs_diff 0.5");
  flagged([](json& r) { r["sizes"]["elements"] = -1; }, "sizes.elements: -1");
  flagged([](json& r) { r["sizes"]["elements"] = 2.5; }, "sizes.elements: 2.5");
  flagged([](json& r) { r["dispatches"] = int64_t(1e12); }, "dispatches: 1000000000000");
  // A mixed absolute/relative check declares its relative tolerance; its diff may pass atol then.
  EXPECT_EQ(flags([](json& r) {
              r["equivalence"]["max_abs_diff"] = 0.5;
              r["equivalence"]["relative_tolerance"] = 1e-3;
            }),
            "[]");
  // An even count's median may be either middle sample or between them.
  EXPECT_EQ(flags([&](json& r) { set_samples(r, {4.0, 1.0, 3.0, 2.0}), r["median"] = 2.0; }), "[]");
  EXPECT_EQ(flags([&](json& r) { set_samples(r, {4.0, 1.0, 3.0, 2.0}), r["median"] = 2.5; }), "[]");
}

// llm results are checked by the server against its own native run (LlmCheck): a lie about the
// tokens is refused, an honest failure is stored flagged, and a server serving no model refuses them.
TEST(ServeSubmission, LlmResultsAreCheckedAgainstTheServersNativeRun) {
  const LlmCheck check{"tiny-qwen", {5, 17, 301}, {44, 9, 230, 7, 7}};
  const auto llm_submission = [&](const std::function<void(json&)>& mutate) {
    json s = valid_submission(3);
    json& r = s["results"][1];
    r["suite"] = "llm";
    r["name"] = "tiny-qwen decode";
    r["unit"] = "tok/s";
    r["speedup"] = nullptr;
    r["baseline"] = nullptr;
    r["equivalence"] = {{"passed", true},
                        {"compared", "greedy tokens vs the server's native run"},
                        {"max_abs_diff", 0},
                        {"tolerance", 0},
                        {"tokens", check.expected_ids}};
    mutate(r);
    return s;
  };
  const auto reason = [&](const std::function<void(json&)>& mutate, const LlmCheck* with = nullptr) {
    json s = llm_submission(mutate);
    try {
      validate_submission(s, with);
      return std::string();
    } catch (const ValidationError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(reason([](json&) {}, &check), "");
  EXPECT_EQ(reason([](json&) {}),
            "results[1].suite: llm results are checked against the model this server serves, and it serves "
            "none (start wgfuse serve with --model)");
  EXPECT_EQ(reason([](json& r) { r["name"] = "other decode"; }, &check),
            "results[1].name: 'other decode' is not a variant of the served model (tiny-qwen prefill, "
            "tiny-qwen decode)");
  EXPECT_EQ(
      reason([](json& r) { r["equivalence"]["tokens"][3] = 8; }, &check),
      "results[1].equivalence.passed: true, but the tokens differ from the server's native run (1 of 5, "
      "from position 3)");
  EXPECT_EQ(reason([](json& r) { r["equivalence"]["passed"] = false; }, &check),
            "results[1].equivalence.passed: false, but the tokens equal the server's native run");
  EXPECT_EQ(reason([](json& r) { r["equivalence"]["tokens"].erase(4); }, &check),
            "results[1].equivalence.tokens: 4 tokens; the check generates 5 (GET /model/check.json)");
  EXPECT_EQ(reason([](json& r) { r["equivalence"].erase("tokens"); }, &check),
            "results[1].equivalence.tokens: missing");
  EXPECT_EQ(reason([](json& r) { r["equivalence"]["tolerance"] = 2; }, &check),
            "results[1].equivalence.tolerance: must be 0 (every token must equal the native run's)");
  const auto failed = [](json& r) {
    r["equivalence"]["tokens"][1] = 10, r["equivalence"]["tokens"][2] = 11;
    r["equivalence"]["passed"] = false;
    r["equivalence"]["max_abs_diff"] = 2;
  };
  EXPECT_EQ(reason(
                [&](json& r) {
                  failed(r);
                  r["equivalence"]["max_abs_diff"] = 1;
                },
                &check),
            "results[1].equivalence.max_abs_diff: must count the tokens that differ from the server's native "
            "run (2 of 5)");
  // An honest failure is accepted, and flagged: kept as evidence, out of the medians.
  json s = llm_submission(failed);
  validate_submission(s, &check);
  flag_implausible(s, "00ff00ff00ff00ff");
  EXPECT_EQ(s["results"][0]["flags"], json::array());
  EXPECT_NE(s["results"][1]["flags"].dump().find("equivalence.passed: the check failed"), std::string::npos)
      << s["results"][1]["flags"];
  // Other suites' failed checks are still refused (the server cannot redo them).
  EXPECT_EQ(reason([](json& r) { r["suite"] = "sim", r["equivalence"]["passed"] = false; }, &check),
            "results[1].equivalence.passed: the equivalence check failed; the result is not accepted");
}

TEST(ServeRateLimit, BucketEmptiesRefillsAndKeepsClientsApart) {
  RateLimiter limiter(RateLimit::parse("6/min"));  // a token every 10 s, a burst of 6
  auto t0 = RateLimiter::Clock::time_point{} + std::chrono::hours(1);
  double retry = 0;
  for (int k = 0; k < 6; ++k) EXPECT_TRUE(limiter.admit("10.0.0.1", retry, t0)) << k;
  EXPECT_FALSE(limiter.admit("10.0.0.1", retry, t0));
  EXPECT_NEAR(retry, 10.0, 1e-9);
  EXPECT_TRUE(limiter.admit("10.0.0.2", retry, t0));  // another client has its own bucket
  EXPECT_FALSE(limiter.admit("10.0.0.1", retry, t0 + std::chrono::seconds(9)));
  EXPECT_NEAR(retry, 1.0, 1e-9);
  EXPECT_TRUE(limiter.admit("10.0.0.1", retry, t0 + std::chrono::seconds(10)));
  EXPECT_FALSE(limiter.admit("10.0.0.1", retry, t0 + std::chrono::seconds(10)));
  // Refill is capped at the burst.
  for (int k = 0; k < 6; ++k) EXPECT_TRUE(limiter.admit("10.0.0.1", retry, t0 + std::chrono::hours(5))) << k;
  EXPECT_FALSE(limiter.admit("10.0.0.1", retry, t0 + std::chrono::hours(5)));
}

TEST(ServeRateLimit, ParsesTheOptionAndRejectsNonsense) {
  EXPECT_DOUBLE_EQ(RateLimit::parse("10/s").per_window, 10);
  EXPECT_DOUBLE_EQ(RateLimit::parse("1000/hour").window.count(), 3600);
  EXPECT_DOUBLE_EQ(RateLimit::parse("off").per_window, 0);
  for (const char* bad : {"", "60", "60/day", "-5/min", "0/s", "x/min", "5/"})
    EXPECT_THROW(RateLimit::parse(bad), Error) << bad;
}

TEST(ServeStaticFiles, RefusesTraversalAndTypesFiles) {
  for (const char* bad : {"/../x", "/a/../../x", "/./x", "/a//b", "/.git/config", "/a\\..\\b", "", "x", "/"})
    EXPECT_FALSE(is_safe_relative_path(bad)) << bad;
  for (const char* good : {"/index.html", "/app/main.js", "/vendor/uplot/uPlot.iife.min.js", "/a..b"})
    EXPECT_TRUE(is_safe_relative_path(good)) << good;
  EXPECT_EQ(content_type_for("app/x.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(content_type_for("k.wgsl"), "text/plain; charset=utf-8");
  EXPECT_EQ(content_type_for("blob"), "application/octet-stream");
  EXPECT_EQ(cache_control_for("index.html"), "no-cache");
  EXPECT_EQ(cache_control_for("style.css"), "max-age=3600");

  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("wgfuse-static-" + std::to_string(::getpid()));
  fs::create_directories(dir / "page");
  fs::create_directories(dir / "generated" / "vendor");
  std::ofstream(dir / "page" / "index.html") << "i";
  std::ofstream(dir / "page" / "chat.html") << "c";
  std::ofstream(dir / "generated" / "vendor" / "lib.js") << "v";
  std::ofstream(dir / "secret.txt") << "s";
  const std::vector<fs::path> roots{dir / "page", dir / "generated"};
  EXPECT_EQ(resolve_static(roots, "/"), dir / "page" / "index.html");
  EXPECT_EQ(resolve_static(roots, "/chat"), dir / "page" / "chat.html");
  EXPECT_EQ(resolve_static(roots, "/vendor/lib.js"), dir / "generated" / "vendor" / "lib.js");
  EXPECT_EQ(resolve_static(roots, "/../secret.txt"), std::nullopt);
  EXPECT_EQ(resolve_static(roots, "/vendor"), std::nullopt);  // a directory is not a file
  fs::remove_all(dir);
}

TEST(ServeKernelIndex, HashesMatchKnownVectorsAndTheEmbeddedTable) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::vector<std::pair<std::string, std::string>> families;
  for (auto& f : gpu::embedded_kernel_families())
    families.emplace_back(std::string(f.name), std::string(f.source));
  ASSERT_GT(families.size(), 5u);
  auto index = make_kernel_index(families);
  ASSERT_EQ(index.files.size(), families.size());
  std::string listing;
  for (auto& f : index.files) {
    EXPECT_EQ(f.text, gpu::kernel_source(f.name)) << f.name;
    listing += f.name + "\n" + sha256_hex(f.text) + "\n";
  }
  EXPECT_EQ(index.version, sha256_hex(listing).substr(0, 16));
  std::reverse(families.begin(), families.end());  // the order given does not matter
  EXPECT_EQ(make_kernel_index(families).version, index.version);
  families.front().second += " ";  // any edit changes the version
  EXPECT_NE(make_kernel_index(families).version, index.version);
}

TEST(ServeResultsStore, SqliteMigratesStoresVerbatimAndSummarises) {
  namespace fs = std::filesystem;
  const fs::path file =
      fs::temp_directory_path() / ("wgfuse-store-" + std::to_string(::getpid()) + ".sqlite");
  fs::remove(file);
  {
    ResultsStore store(open_sqlite(file.string()));
    EXPECT_EQ(store.schema_version(), 2);
    json a = valid_submission(1), b = valid_submission(2);
    b["adapter"]["vendor"] = "x'); DROP TABLE results; --";
    const int64_t ida = store.insert(a, "2026-11-22T00:00:00.000Z");
    const int64_t idb = store.insert(b, "2026-11-22T00:00:01.000Z");
    EXPECT_LT(ida, idb);
    json all = store.query({});
    ASSERT_EQ(all["total"], 6);
    EXPECT_EQ(all["rows"][3]["vendor"], b["adapter"]["vendor"]);
    EXPECT_EQ(all["rows"][4]["samples"], b["results"][1]["samples"]);
    EXPECT_EQ(all["rows"][4]["speedup"], b["results"][1]["speedup"]);
    json filtered = store.query({{{"vendor", b["adapter"]["vendor"].get<std::string>()}, {"suite", "sim"}}});
    EXPECT_EQ(filtered["total"], 2);
    json summary = store.summary("vendor", {{{"suite", "dispatch"}}});
    ASSERT_EQ(summary["groups"].size(), 2u);
    for (auto& g : summary["groups"]) {
      EXPECT_EQ(g["count"], 1);
      EXPECT_TRUE(g["ci"].is_null()) << g;  // one row: no interval
    }
    // The summary honours every filter, leaves flagged results out and keeps problem sizes apart.
    json c = valid_submission(3);
    flag_implausible(c, "00ff00ff00ff00ff");
    c["results"][1]["flags"] = {"made up"};
    c["results"][2]["sizes"]["elements"] = 999;
    store.insert(c, "2026-11-22T00:00:02.000Z");
    json sims = store.summary("vendor", {{{"suite", "sim"}, {"vendor", "google"}}});
    ASSERT_EQ(sims["groups"].size(), 3u);  // sizes 4098 (a's), 4099 (a's), 999 (c's); c's 4098 flagged
    for (auto& g : sims["groups"]) {
      EXPECT_EQ(g["count"], 1) << g;
      EXPECT_EQ(g["key"], "google");
    }
    EXPECT_EQ(store.query({{}, Flagged::yes})["total"], 1);
    EXPECT_EQ(store.query({{}, Flagged::yes})["rows"][0]["flags"], json({"made up"}));
    EXPECT_EQ(store.query({{}, Flagged::no})["total"], 8);
    // A cell a spreadsheet would run as a formula is defused.
    json d = valid_submission(4);
    d["adapter"]["device"] = "=HYPERLINK(\"http://x\",\"y\")";
    d["adapter"]["description"] = "+1";
    store.insert(d, "2026-11-22T00:00:03.000Z");
    ResultQuery google;
    google.equals = {{"vendor", "google"}};
    google.limit = 1000;
    const std::string csv = store.query_csv(google);
    EXPECT_NE(csv.find(",\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\","), std::string::npos) << csv;
    EXPECT_NE(csv.find(",'+1,"), std::string::npos);
    EXPECT_EQ(csv.find(",=HYPERLINK"), std::string::npos);
  }
  // Reopening applies no migration twice and keeps the rows.
  ResultsStore again(open_sqlite(file.string()));
  EXPECT_EQ(again.schema_version(), 2);
  EXPECT_EQ(again.query({})["total"], 12);
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(file.string() + suffix);
}

}  // namespace
}  // namespace wgfuse::serve
