#include "webgpu/diagnostics.h"

#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <sstream>

#include "webgpu/api.h"
#include "webgpu/strings.h"

namespace wgfuse::webgpu {
namespace {

std::atomic<bool> verbose_flag{false};
std::mutex capture_mutex;  // fd 2 is process-wide: one capture at a time

void on_device_log(WGPULoggingType type, WGPUStringView message, void*, void*) {
  const char* kind = type == WGPULoggingType_Error     ? "error: "
                     : type == WGPULoggingType_Warning ? "warning: "
                                                       : "";
  library_message(kind + str(message));
}

}  // namespace

void set_verbose(bool on) {
  verbose_flag = on;
}
bool verbose() {
  return verbose_flag;
}

void library_message(std::string_view text) {
  if (!verbose() || text.find_first_not_of(" \t\n") == std::string_view::npos) return;
  std::fprintf(stderr, "wgfuse: dawn: %.*s\n", int(text.size()), text.data());
}

void route_device_logging(WGPUDevice device) {
  WGPULoggingCallbackInfo info{};
  info.callback = on_device_log;
  api().DeviceSetLoggingCallback(device, info);
}

CapturedStderr::CapturedStderr() {
  capture_mutex.lock();
  std::fflush(stderr);
  FILE* file = std::tmpfile();
  if (file) {
    capture_fd_ = dup(fileno(file));
    std::fclose(file);  // the duplicate keeps the unlinked file alive
  }
  if (capture_fd_ >= 0) saved_fd_ = dup(2);
  if (saved_fd_ < 0 || dup2(capture_fd_, 2) < 0) {  // nothing captured: messages stay on stderr
    if (capture_fd_ >= 0) close(capture_fd_);
    if (saved_fd_ >= 0) close(saved_fd_);
    capture_fd_ = saved_fd_ = -1;
  }
}

CapturedStderr::~CapturedStderr() {
  if (saved_fd_ >= 0) {
    std::fflush(stderr);
    dup2(saved_fd_, 2);
    close(saved_fd_);
    std::string text;
    char buf[4096];
    lseek(capture_fd_, 0, SEEK_SET);
    for (ssize_t n; (n = read(capture_fd_, buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
    close(capture_fd_);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) library_message(line);
  }
  capture_mutex.unlock();
}

}  // namespace wgfuse::webgpu
