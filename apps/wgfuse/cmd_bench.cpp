#include "commands.h"

namespace wgfuse::cli {
void add_bench(CLI::App&, GlobalOptions&) {}
}  // namespace wgfuse::cli
