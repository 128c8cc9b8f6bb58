// wgfuse chat: an interactive chat with a model (llm::Session::chat), each reply streamed.
#include <readline/history.h>
#include <readline/readline.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "commands.h"
#include "llm/report.h"
#include "llm_options.h"
#include "util/error.h"

namespace wgfuse::cli {
namespace {

// Ctrl-C during a reply ends the reply, not the chat: SIGINT sets this flag while a reply streams.
std::atomic<bool> g_reply_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);  // set from a signal handler

// SIGINT's handler for the lifetime of one reply; the previous one (the default: quit) after.
class InterruptReply {
 public:
  InterruptReply() {
    g_reply_interrupted = false;
    struct sigaction sa {};
    sa.sa_handler = [](int) { g_reply_interrupted = true; };
    sa.sa_flags = SA_RESTART;  // the GPU waits carry on; the flag is read after each token
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &previous_);
  }
  ~InterruptReply() { sigaction(SIGINT, &previous_, nullptr); }
  InterruptReply(const InterruptReply&) = delete;
  InterruptReply& operator=(const InterruptReply&) = delete;

 private:
  struct sigaction previous_ {};
};

// Interactive chat: each line a user turn, the reply streamed (llm::Session::chat). A turn that
// fails (a message longer than --ctx allows, a GPU error) is reported and the chat goes on with
// its history as before the turn.
void chat(const LlmOptions& lo, const std::string& system, int64_t n, const GlobalOptions& g) {
  check_n(n);
  std::optional<gpu::Context> ctx;  // declared first: the session's buffers go before the device
  auto s = open_session(lo, "steps");
  s->new_chat(system);  // checks the template and that --system leaves room, before the upload
  s->load(ctx.emplace(g.context_options()));
  std::fprintf(stderr, "wgfuse chat: %s on %s. Empty line or Ctrl-D to quit; Ctrl-C stops a reply.\n",
               lo.s.model_dir.c_str(), ctx->adapter().device.c_str());
  const uint32_t per_reply = n == -1 ? UINT32_MAX : uint32_t(std::min<int64_t>(n, UINT32_MAX));
  while (true) {
    char* line = readline("> ");
    if (!line) break;
    std::string text(line);
    std::free(line);
    if (text.empty()) break;
    add_history(text.c_str());
    try {
      InterruptReply interrupt;
      llm::Stream stream = to_stdout();
      stream.stop = &g_reply_interrupted;
      const llm::Reply r = s->chat(text, per_reply, stream);
      for (uint32_t i = 0; i < r.dropped_exchanges; ++i)
        std::fprintf(stderr, "[context full: dropped the oldest exchange]\n");
      std::fputc('\n', stdout);
      if (g_reply_interrupted) std::fprintf(stderr, "[interrupted]\n");
      std::fputs(llm::timing_line(s->decoder().stats(), s->load_ms()).c_str(), stderr);
    } catch (const Error& e) {
      std::fprintf(stderr, "wgfuse: error: %s\n[the chat goes on: the message was not added]\n", e.what());
    }
  }
}
}  // namespace

void add_chat(CLI::App& app, GlobalOptions& g) {
  auto* c = app.add_subcommand(
      "chat", "interactive chat with a Qwen2/Qwen3/Llama model (Hugging Face folder or GGUF file)");
  auto lo = std::make_shared<LlmOptions>();
  auto system = std::make_shared<std::string>();
  auto n = std::make_shared<int64_t>(512);
  add_llm_options(c, *lo);
  c->add_option("--system", *system, "system prompt (default: the template's own)");
  c->add_option("-n,--n-predict", *n, "at most this many tokens per reply; -1 = until EOS or --ctx is full")
      ->capture_default_str();
  c->callback([lo, system, n, &g] { chat(*lo, *system, *n, g); });
}

}  // namespace wgfuse::cli
