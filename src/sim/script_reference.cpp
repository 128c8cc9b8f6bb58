#include "sim/script_reference.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "util/error.h"

extern char** environ;

namespace wgfuse::sim {
namespace {

// One running `python3 SCRIPT`, spoken to line by line.
class ScriptProcess {
 public:
  explicit ScriptProcess(std::string path) : path_(std::move(path)) {}
  ~ScriptProcess() {
    if (to_) std::fclose(to_);  // the script sees end of input and exits
    if (from_) std::fclose(from_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  ScriptProcess(const ScriptProcess&) = delete;
  ScriptProcess& operator=(const ScriptProcess&) = delete;

  nlohmann::json ask(const nlohmann::json& request) {
    std::lock_guard lock(mutex_);
    if (!to_) start();
    const std::string line = request.dump() + "\n";
    if (std::fwrite(line.data(), 1, line.size(), to_) != line.size() || std::fflush(to_) != 0)
      throw Error("CPU reference script '" + path_ +
                  "' stopped reading its input (did it exit? its errors are above)");
    std::string answer;
    for (int c; (c = std::fgetc(from_)) != EOF && c != '\n';) answer += char(c);
    if (answer.empty())
      throw Error("CPU reference script '" + path_ +
                  "' answered nothing (did it exit? its errors are above)");
    try {
      return nlohmann::json::parse(answer);
    } catch (const nlohmann::json::exception&) {
      throw Error("CPU reference script '" + path_ + "' answered '" + answer.substr(0, 80) +
                  "', not a JSON line {\"fitness\": number}");
    }
  }

 private:
  void start() {
    std::signal(SIGPIPE, SIG_IGN);  // a script that exited: EPIPE, told below, not the end of wgfuse
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0)
      throw Error("CPU reference script: pipe: " + std::string(strerror(errno)));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    for (int fd : {in[0], in[1], out[0], out[1]}) posix_spawn_file_actions_addclose(&fa, fd);
    std::string python = "python3", script = path_;
    char* argv[] = {python.data(), script.data(), nullptr};
    const int rc = posix_spawnp(&pid_, "python3", &fa, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
      close(in[1]);
      close(out[0]);
      pid_ = -1;
      throw Error("CPU reference script '" + path_ + "': cannot start python3: " + strerror(rc));
    }
    fcntl(in[1], F_SETFD, FD_CLOEXEC);
    fcntl(out[0], F_SETFD, FD_CLOEXEC);
    to_ = fdopen(in[1], "w");
    from_ = fdopen(out[0], "r");
  }

  std::string path_;
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
  std::mutex mutex_;
};

}  // namespace

std::function<ReferenceRun(const Episode&)> script_reference(const std::string& path,
                                                             const std::string& where) {
  if (!std::filesystem::is_regular_file(path))
    throw Error(where + ": no script '" + path + "' (a path relative to the workload file)");
  auto process = std::make_shared<ScriptProcess>(path);
  // f32 values sent as doubles: every digit of them, exact.
  return [process, path](const Episode& e) {
    nlohmann::json request = {{"genome", std::vector<double>(e.genome.begin(), e.genome.end())},
                              {"steps", e.steps},
                              {"seed", e.seed},
                              {"generation", e.generation},
                              {"episode", e.episode},
                              {"individual", e.individual}};
    if (!e.data.empty()) request["data"] = std::vector<double>(e.data.begin(), e.data.end());
    const auto answer = process->ask(request);
    if (!answer.is_object() || !answer.contains("fitness") || !answer["fitness"].is_number())
      throw Error("CPU reference script '" + path + "' answered " + answer.dump().substr(0, 80) +
                  ", not {\"fitness\": number}");
    const double margin =
        answer.contains("margin") && answer["margin"].is_number() ? answer["margin"].get<double>() : INFINITY;
    return ReferenceRun{answer["fitness"].get<double>(), margin};
  };
}

}  // namespace wgfuse::sim
