// The embedded kernels: `// #include "file.wgsl"` expanded at build time (cmake/embed_kernels.cmake),
// each file at most once per family, and the same expanded text written beside the build for the
// browser page. The refusal of a missing file and of a cycle is tested by ctest (EmbedInclude*).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/kernel.h"
#include "support.h"

namespace wgfuse {
namespace {

// Test that the simulations' shared head and the GA module each hold the RNG once, however many
// files include it, and no include directive is left unexpanded (a workload's whole module is
// composed at run time: tests/test_sim_team.cpp).
TEST(KernelIncludes, FamiliesAreExpandedOnce) {
  struct Expect {
    const char* family;
    std::vector<const char*> defined_once;
  };
  const std::vector<Expect> cases = {
      {"sim_common", {"\nfn pcg_hash(", "\nfn gene(", "\nfn init_uniform("}},
      {"sim_evolve", {"\nfn pcg_hash(", "\nfn breed("}},
  };
  for (const auto& c : cases) {
    const std::string src(gpu::kernel_source(c.family));
    for (const char* fn : c.defined_once) EXPECT_EQ(test::occurrences(src, fn), 1u) << c.family << ": " << fn;
    // Every directive left in the text is one whose file was already expanded above it.
    EXPECT_EQ(test::occurrences(src, "// #include \""), test::occurrences(src, "\": already included above"))
        << c.family;
  }
}

// Test that the expanded sources on disk (what the browser page will be served) are the embedded ones.
TEST(KernelIncludes, ExpandedSourcesAreWrittenBesideTheBuild) {
  for (const char* family : {"sim_market", "sim_evolve", "elementwise"}) {
    std::ifstream f(std::string(WGFUSE_BUILD_DIR) + "/generated/kernels/" + family + ".wgsl");
    ASSERT_TRUE(f) << family;
    std::stringstream text;
    text << f.rdbuf();
    EXPECT_EQ(text.str(), gpu::kernel_source(family)) << family;
  }
}

}  // namespace
}  // namespace wgfuse
