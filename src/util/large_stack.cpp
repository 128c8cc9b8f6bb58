#include "util/large_stack.h"

#include <pthread.h>

#include <cstring>
#include <exception>
#include <string>

#include "util/error.h"

namespace wgfuse::util {
namespace {

struct Job {
  const std::function<void()>* fn;
  std::exception_ptr error;
};

void* run_job(void* arg) {
  auto* job = static_cast<Job*>(arg);
  try {
    (*job->fn)();
  } catch (...) {
    job->error = std::current_exception();
  }
  return nullptr;
}

}  // namespace

void run_with_stack(size_t stack_bytes, const std::function<void()>& fn) {
  Job job{&fn, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  int rc = pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t thread;
  if (rc == 0) rc = pthread_create(&thread, &attr, run_job, &job);
  pthread_attr_destroy(&attr);
  if (rc != 0)
    throw Error("cannot start a thread with a stack of " + std::to_string(stack_bytes >> 20) +
                " MiB: " + std::strerror(rc));
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace wgfuse::util
