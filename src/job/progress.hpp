#pragma once
// Progress of a long run, on rank 0, to stderr: one line rewritten in place on a terminal, plain
// lines in a batch log (Slurm's .out file), so neither gets flooded.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace tessera::job {

class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled), tty_(enabled && isatty(STDERR_FILENO)) {}
  ~Progress() { finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // A new step ("reading A and B"): shown with the time since the start.
  void step(const std::string& what) {
    if (!enabled_) return;
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (tty_) {
      std::fprintf(stderr, "\r\033[Ktessera: %6.1f s  %s", t, what.c_str());
      open_line_ = true;
    } else {
      std::fprintf(stderr, "tessera: %6.1f s  %s\n", t, what.c_str());
    }
    std::fflush(stderr);
  }

  void finish() {
    if (open_line_) std::fputs("\r\033[K", stderr);
    open_line_ = false;
  }

 private:
  bool enabled_;
  bool tty_;
  bool open_line_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace tessera::job
