#include "io/test_hooks.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>

#include "io/cleanup.hpp"

namespace tessera::io {

int test_write_point() {
  struct Hook {
    long long kill_at = 0;
    int signal = SIGKILL;
    long long fail_at = 0;
  };
  static const Hook hook = [] {
    Hook h;
    if (const char* v = std::getenv("TESSERA_TEST_KILL_AT_WRITE"); v != nullptr && *v != '\0') {
      char* end = nullptr;
      h.kill_at = std::strtoll(v, &end, 10);
      const std::string name = end != nullptr && *end == ':' ? std::string(end + 1) : "KILL";
      h.signal = name == "TERM" ? SIGTERM : name == "INT" ? SIGINT : name == "HUP" ? SIGHUP : SIGKILL;
    }
    if (const char* v = std::getenv("TESSERA_TEST_FAIL_AT_WRITE"); v != nullptr && *v != '\0')
      h.fail_at = std::strtoll(v, nullptr, 10);
    return h;
  }();
  static std::atomic<long long> count{0};
  if (hook.kill_at <= 0 && hook.fail_at <= 0) return 0;
  const long long n = ++count;
  if (n == hook.kill_at) {
    if (hook.signal == SIGKILL)
      ::kill(::getpid(), SIGKILL);
    else
      ::raise(hook.signal);
  }
  return n == hook.fail_at ? ENOSPC : 0;
}

void test_pause_before_commit() {
  const char* v = std::getenv("TESSERA_TEST_PAUSE_BEFORE_COMMIT");
  if (v == nullptr || *v == '\0') return;
  const double seconds = std::strtod(v, nullptr);
  if (seconds > 0) ::usleep(static_cast<useconds_t>(seconds * 1e6));
}

void test_wait_in_commit() {
  const char* v = std::getenv("TESSERA_TEST_WAIT_IN_COMMIT");
  if (v == nullptr || *v == '\0') return;
  const double seconds = std::strtod(v, nullptr);
  for (double waited = 0; waited < seconds && !fatal_signal_pending(); waited += 0.05) ::usleep(50000);
}

}  // namespace tessera::io
