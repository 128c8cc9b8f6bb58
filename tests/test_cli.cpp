// The command line as a user meets it: help, bad options, info --json.
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "support.h"

namespace wgfuse {
namespace {

test::CliRun run(const std::string& args) {
  return test::run_wgfuse(args);
}
test::CliRun run_stdout(const std::string& args) {
  return test::run_wgfuse(args, "", "/dev/null");
}

// Test that --help lists the commands.
TEST(Cli, HelpListsCommands) {
  auto r = run("--help");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("info"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bench"), std::string::npos) << r.out;
}

// Test that an unknown backend is refused with the valid choices, before any GPU work.
TEST(Cli, UnknownBackendIsAClearError) {
  auto r = run("--backend metal info");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("metal"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vulkan"), std::string::npos) << r.out;
}

// Test that an unknown option and an unknown command fail with non-zero exit.
TEST(Cli, UnknownOptionAndCommandFail) {
  auto a = run("info --frobnicate");
  EXPECT_NE(a.rc, 0);
  EXPECT_NE(a.out.find("frobnicate"), std::string::npos) << a.out;
  auto b = run("fly");
  EXPECT_NE(b.rc, 0);
}

// Test that info --json is valid JSON describing a usable Vulkan adapter with timestamp queries
// (what CI's SwiftShader and the GPU machine offer), the one the tests run on.
TEST(Cli, InfoJson) {
  const auto& ctx = test::context();
  if (ctx.adapter().backend != "Vulkan")
    GTEST_SKIP() << "the adapter under test runs on " << ctx.adapter().backend << ", not Vulkan";
  if (!ctx.features().timestamp_query) GTEST_SKIP() << "the adapter under test has no timestamp-query";
  const char* adapter = std::getenv("WGFUSE_TEST_ADAPTER");
  auto r = run_stdout(std::string("--adapter ") + (adapter && *adapter ? adapter : "auto") + " info --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("device"), ctx.adapter().device);
  EXPECT_EQ(j.at("backend"), "Vulkan");
  EXPECT_TRUE(j.at("features").at("timestamp_query").get<bool>());
  EXPECT_GE(j.at("limits").at("max_storage_buffer_binding_size").get<uint64_t>(), 128ull << 20);
  EXPECT_GT(j.at("device_creation_ms").get<double>(), 0.0);
}

}  // namespace
}  // namespace wgfuse
