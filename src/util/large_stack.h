// Running a function on a thread of its own with a stack of a given size: for code whose recursion
// grows with its input, such as std::regex (libstdc++ matches by recursion, one frame per character
// a repetition consumes: tens of thousands of characters overflow a default 8 MiB stack).
#pragma once

#include <cstddef>
#include <functional>

namespace wgfuse::util {

// Runs `fn` on a new thread with a stack of `stack_bytes` (reserved, touched only as used), waits
// for it, and rethrows what it threw. Throws Error when the thread cannot be started.
void run_with_stack(size_t stack_bytes, const std::function<void()>& fn);

}  // namespace wgfuse::util
