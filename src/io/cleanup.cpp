#include "io/cleanup.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tessera::io {

namespace {

// Fixed storage the signal handler can read without allocating.
constexpr std::size_t kSlots = 4;
constexpr std::size_t kPathMax = 4096;
char g_paths[kSlots][kPathMax];
volatile sig_atomic_t g_used[kSlots];

extern "C" void on_fatal_signal(int sig) {
  for (std::size_t i = 0; i < kSlots; ++i)
    if (g_used[i]) ::unlink(g_paths[i]);  // async-signal-safe
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_handlers() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGXFSZ}) {
    struct sigaction sa {};
    sigaction(sig, nullptr, &sa);
    if (sa.sa_handler == SIG_IGN) continue;  // keep what the caller chose to ignore
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(sig, &sa, nullptr);
  }
}

std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "host";
  std::string h(host);
  for (char& c : h)
    if (c == '-' || c == '/') c = '_';  // '-' separates host and pid in the name
  return h;
}

}  // namespace

void register_temporary(const std::string& path) {
  install_handlers();
  if (path.size() >= kPathMax) return;
  for (std::size_t i = 0; i < kSlots; ++i)
    if (!g_used[i]) {
      std::memcpy(g_paths[i], path.c_str(), path.size() + 1);
      g_used[i] = 1;
      return;
    }
}

void forget_temporary(const std::string& path) {
  for (std::size_t i = 0; i < kSlots; ++i)
    if (g_used[i] && path == g_paths[i]) g_used[i] = 0;
}

std::string temporary_name(const std::string& file) {
  return file + ".tessera-partial-" + host_name() + "-" + std::to_string(::getpid());
}

std::vector<std::string> clean_stale_temporaries(const std::string& file) {
  namespace fs = std::filesystem;
  std::vector<std::string> notes;
  const fs::path target(file);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = target.filename().string() + ".tessera-partial-";
  const std::string me = host_name();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // host-pid
    const auto dash = rest.rfind('-');
    const std::string host = dash == std::string::npos ? "" : rest.substr(0, dash);
    long pid = 0;
    try {
      pid = dash == std::string::npos ? 0 : std::stol(rest.substr(dash + 1));
    } catch (...) {
      pid = 0;
    }
    const bool dead = host == me && pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
    if (dead && fs::remove(entry.path(), ec))
      notes.push_back("removed '" + entry.path().string() + "', a partial output left by an earlier run that died");
    else
      notes.push_back("found '" + entry.path().string() +
                      "', a partial output of another run (still running, or on another host); not touched");
  }
  return notes;
}

}  // namespace tessera::io
