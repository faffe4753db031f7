#include "comm/watchdog.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace tessera::comm {

namespace {

std::atomic<long long> g_bound_ns{0};  // 0: off
std::atomic<long long> g_since_ns{0};  // the armed wait's start, 0: none
std::atomic<const char*> g_call{nullptr};
std::atomic<const char*> g_step{"start"};
std::mutex g_text_lock;  // the two texts below, read by the watchdog's thread when it acts
std::string g_who;       // "rank 3 on node2"
std::string g_why;       // where the bound came from

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// "MPI_Allreduce" of "MPI_Allreduce(&mine, ...)".
std::string call_name(const char* call) {
  const std::string text = call ? call : "MPI";
  return text.substr(0, text.find('('));
}

void end_this_rank(double waited, long long since) {
  std::string line;
  {
    const std::lock_guard<std::mutex> hold(g_text_lock);
    char text[1024];
    std::snprintf(text, sizeof text,
                  "tessera: error (%s): waited %.0f s in %s (step: %s) for other ranks, past the bound of %.0f s "
                  "(%s): they are gone or stuck; ending this rank\n",
                  g_who.c_str(), waited, call_name(g_call.load()).c_str(), g_step.load(),
                  static_cast<double>(g_bound_ns.load()) / 1e9, g_why.c_str());
    line = text;
  }
  (void)!::write(STDERR_FILENO, line.data(), line.size());
  // SIGTERM: the io layer's handler rolls back what this rank holds (the output's journal, its
  // temporary file), as for Slurm's or mpirun's SIGTERM, then the process ends by it.
  ::kill(::getpid(), SIGTERM);
  // Held (a write that must not be cut) or ignored: the process ends here, a little later, if it
  // is still in that same wait. One that came back from it meanwhile (its peers were slow, not
  // gone: a long fsync of the commit) goes on; the held signal then acts, or is forgiven after a
  // completed commit, as any other.
  std::this_thread::sleep_for(std::chrono::seconds(20));
  if (g_since_ns.load() == since) std::_Exit(1);
}

void watch() {
  for (;;) {
    const long long bound = g_bound_ns.load();
    // Looked at 20 times per bound, at most every second and at least every 50 ms.
    const long long period = std::clamp(bound / 20, 50'000'000LL, 1'000'000'000LL);
    std::this_thread::sleep_for(std::chrono::nanoseconds(period));
    const long long since = g_since_ns.load();
    if (bound <= 0 || since == 0) continue;
    const long long waited = now_ns() - since;
    if (waited > g_bound_ns.load() && g_since_ns.load() == since) end_this_rank(static_cast<double>(waited) / 1e9, since);
  }
}

}  // namespace

double wait_bound(const std::optional<int>& timeout, double predicted_seconds) {
  if (timeout) return std::max(0, *timeout);
  const double predicted = std::isfinite(predicted_seconds) ? std::max(0.0, predicted_seconds) : 0.0;
  return std::ceil(kWaitFloorSeconds + kWaitModelFactor * predicted);
}

void set_wait_bound(double seconds, const std::string& why, int rank, const std::string& host) {
  {
    const std::lock_guard<std::mutex> hold(g_text_lock);
    g_who = "rank " + std::to_string(rank) + " on " + host;
    g_why = why;
  }
  const bool on = seconds > 0 && std::isfinite(seconds);
  g_bound_ns.store(on ? static_cast<long long>(seconds * 1e9) : 0);
  static std::once_flag started;
  if (on) std::call_once(started, [] { std::thread(watch).detach(); });
}

double wait_bound_seconds() { return static_cast<double>(g_bound_ns.load()) / 1e9; }

void set_wait_step(const char* step) { g_step.store(step); }

MpiWait::MpiWait(const char* call) noexcept : call_(nullptr) {
  if (g_bound_ns.load(std::memory_order_relaxed) == 0) return;
  call_ = call;
  since_ = g_since_ns.load();
  outer_ = g_call.load();
  g_call.store(call);
  g_since_ns.store(now_ns());
}

MpiWait::~MpiWait() {
  if (call_ == nullptr) return;
  g_since_ns.store(0);
  g_call.store(outer_);
  g_since_ns.store(since_);
}

}  // namespace tessera::comm
