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

// Test that each simulation family is one complete module: the RNG, the shared head, the MLP
// policy and the entry points each appear once, however many files include them, and no include
// directive is left unexpanded.
TEST(KernelIncludes, FamiliesAreExpandedOnce) {
  struct Expect {
    const char* family;
    std::vector<const char*> defined_once;
  };
  const std::vector<Expect> cases = {
      {"sim_cartpole", {"\nfn pcg_hash(", "\nfn gene(", "\nfn mlp_argmax(", "\nfn sim_fused_main("}},
      {"sim_acrobot", {"\nfn pcg_hash(", "\nfn gene(", "\nfn mlp_argmax(", "\nfn sim_fused_main("}},
      {"sim_mountaincar", {"\nfn pcg_hash(", "\nfn gene(", "\nfn mlp_argmax(", "\nfn sim_fused_main("}},
      {"sim_rastrigin", {"\nfn pcg_hash(", "\nfn gene(", "\nfn sim_fused_main("}},
      {"sim_market", {"\nfn pcg_hash(", "\nfn gene(", "\nfn sim_fused_main(", "\nfn sim_load("}},
      {"sim_evolve", {"\nfn pcg_hash(", "\nfn breed("}},
  };
  for (const auto& c : cases) {
    const std::string src(gpu::kernel_source(c.family));
    for (const char* fn : c.defined_once) EXPECT_EQ(test::occurrences(src, fn), 1u) << c.family << ": " << fn;
    // Every directive left in the text is one whose file was already expanded above it.
    EXPECT_EQ(test::occurrences(src, "// #include \""), test::occurrences(src, "\": already included above"))
        << c.family;
  }
  EXPECT_EQ(test::occurrences(std::string(gpu::kernel_source("sim_rastrigin")), "fn mlp_argmax("), 0u);
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
