#pragma once
// tessera's log: lines on stderr, each written whole (one fputs), at four levels:
//   error  only the one line a failure prints (main)
//   warn   and warnings and notes (the default): "tessera: warning: ...", "tessera: note: ..."
//   info   and what each phase is doing, per rank: "tessera: info (rank 1): ..."
//   debug  and the details: files opened, offsets, leftovers looked at, the options given
// The command line sets the level (-v, -vv, --log-level) and the rank once, at start-up; library
// use (libtessera) keeps the default. Header-only, so that every layer can log.
#include <atomic>
#include <cstdio>
#include <string>

namespace tessera::log {

enum class Level { error = 0, warn = 1, info = 2, debug = 3 };

namespace detail {
inline std::atomic<int>& level() {
  static std::atomic<int> l{static_cast<int>(Level::warn)};
  return l;
}
inline std::atomic<int>& rank() {
  static std::atomic<int> r{-1};
  return r;
}
}  // namespace detail

// Sets the level and this process's rank (-1: not an MPI job; lines then carry no rank).
inline void configure(Level level, int rank) {
  detail::level() = static_cast<int>(level);
  detail::rank() = rank;
}
inline Level level() { return static_cast<Level>(detail::level().load()); }
inline int rank() { return detail::rank().load(); }
inline bool enabled(Level l) { return static_cast<int>(l) <= detail::level().load(); }

// "error", "warn" (or "warning"), "info", "debug"; false for anything else.
inline bool parse_level(const std::string& text, Level& out) {
  if (text == "error")
    out = Level::error;
  else if (text == "warn" || text == "warning")
    out = Level::warn;
  else if (text == "info")
    out = Level::info;
  else if (text == "debug")
    out = Level::debug;
  else
    return false;
  return true;
}

inline void write(Level l, const std::string& message) {
  if (!enabled(l)) return;
  static const char* const names[] = {"error", "warning", "info", "debug"};
  const int r = rank();
  std::string line = std::string("tessera: ") + names[static_cast<int>(l)];
  // Warnings and notes come from rank 0 on behalf of the job, as before; info and debug lines
  // come from every rank and say which.
  if (l >= Level::info && r >= 0) line += " (rank " + std::to_string(r) + ")";
  line += ": " + message + "\n";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

inline void warn(const std::string& m) { write(Level::warn, m); }
inline void info(const std::string& m) { write(Level::info, m); }
inline void debug(const std::string& m) { write(Level::debug, m); }
// A note: something the user should know that is not wrong ("removed a leftover"); at warn level.
inline void note(const std::string& m) {
  if (enabled(Level::warn)) std::fputs(("tessera: note: " + m + "\n").c_str(), stderr);
}

}  // namespace tessera::log
