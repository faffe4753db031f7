#include "io/cleanup.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

namespace tessera::io {

namespace {

// Fixed storage the signal handler can read without allocating.
constexpr std::size_t kSlots = 4;
constexpr std::size_t kPathMax = 4096;
char g_paths[kSlots][kPathMax];
volatile sig_atomic_t g_used[kSlots];
// Writes under way that a signal must not cut (journal.hpp's HoldSignals), and the signal that
// arrived meanwhile; lock-free atomics, so the handler may touch them.
std::atomic<int> g_hold{0};
std::atomic<int> g_pending{0};
std::atomic<void (*)() noexcept> g_rollback{nullptr};

extern "C" void on_fatal_signal(int sig) {
  if (g_hold.load() > 0) {  // acted on when the write ends (release_fatal_signals)
    g_pending.store(sig);
    return;
  }
  if (auto* rollback = g_rollback.load()) rollback();
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
    sigemptyset(&sa.sa_mask);  // a second fatal signal waits until the first one's rollback is done
    for (int other : {SIGTERM, SIGINT, SIGHUP, SIGXFSZ}) sigaddset(&sa.sa_mask, other);
    sa.sa_flags = 0;
    sigaction(sig, &sa, nullptr);
  }
}

// At most kHostMax characters, so a temporary name has a bounded suffix (see name_part).
constexpr std::size_t kHostMax = 64;
const char* const kMarker = ".tessera-partial-";

std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "host";
  std::string h(host);
  for (char& c : h)
    if (c == '-' || c == '/') c = '_';  // '-' separates host and pid in the name
  return h.substr(0, kHostMax);
}

// The part of a temporary name that comes from the target's own name. A file name may be 255
// bytes (NAME_MAX) and the suffix (marker, host, pid) adds up to 17 + 64 + 1 + 10 = 92, so a
// name longer than 255 - 92 keeps its first bytes and ends in a hash of the whole name: the same
// for every run writing that target, so leftovers are still found by their prefix.
std::string name_part(const std::string& name) {
  constexpr std::size_t kNameMax = 255, kSuffixMax = 17 + kHostMax + 1 + 10, kBudget = kNameMax - kSuffixMax;
  if (name.size() <= kBudget) return name;
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a, 64-bit
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return name.substr(0, kBudget - 17) + "~" + hex;
}

// "<dir>/<name part>.tessera-partial-": what every temporary file of `file` starts with.
std::filesystem::path temporary_prefix(const std::string& file) {
  const std::filesystem::path target(file);
  return target.parent_path() / (name_part(target.filename().string()) + kMarker);
}

}  // namespace

std::string sidecar_prefix(const std::string& file) {
  const std::filesystem::path target(file);
  return (target.parent_path() / (name_part(target.filename().string()) + ".tessera-")).string();
}

void hold_fatal_signals() {
  install_handlers();
  g_hold.fetch_add(1);
}

void release_fatal_signals() {
  if (g_hold.fetch_sub(1) != 1) return;
  const int sig = g_pending.exchange(0);
  if (sig != 0) ::raise(sig);  // the handler runs now, with nothing held
}

bool fatal_signal_pending() { return g_pending.load() != 0; }

int pending_fatal_signal() { return g_pending.load(); }

int take_pending_signal() { return g_pending.exchange(0); }

void set_signal_rollback(void (*fn)() noexcept) {
  install_handlers();
  g_rollback.store(fn);
}

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
  return temporary_prefix(file).string() + host_name() + "-" + std::to_string(::getpid());
}

bool left_by_dead_process(const std::string& name) {
  const auto at = name.rfind(kMarker);
  if (at == std::string::npos) return false;
  const std::string rest = name.substr(at + std::strlen(kMarker));  // host-pid
  const auto dash = rest.rfind('-');
  if (dash == std::string::npos) return false;
  long pid = 0;
  try {
    std::size_t used = 0;
    pid = std::stol(rest.substr(dash + 1), &used);
    if (used != rest.size() - dash - 1) return false;
  } catch (...) {
    return false;
  }
  return rest.substr(0, dash) == host_name() && pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

std::vector<std::string> clean_stale_temporaries(const std::string& file,
                                                 const std::function<bool(const std::string&)>& keep) {
  namespace fs = std::filesystem;
  std::vector<std::string> notes;
  const fs::path target(file);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = temporary_prefix(file).filename().string();
  // This process's own (the file or report of a launch's products, job/launch.hpp): in use.
  const std::string own = fs::path(temporary_name(file)).filename().string();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name == own) continue;
    if (keep && keep(entry.path().string())) {
      notes.push_back("found '" + entry.path().string() +
                      "', named like a partial output of an earlier run, but this run reads it; not touched");
      continue;
    }
    const bool dead = left_by_dead_process(name);
    if (dead && fs::remove(entry.path(), ec))
      notes.push_back("removed '" + entry.path().string() + "', a partial output left by an earlier run that died");
    else
      notes.push_back("found '" + entry.path().string() +
                      "', a partial output of another run (still running, or on another host); not touched");
  }
  return notes;
}

}  // namespace tessera::io
