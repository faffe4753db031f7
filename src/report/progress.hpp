#pragma once
// Progress of a run, on rank 0's stderr: the step it is in, and during the compute how much of the
// work is done, with the rate so far giving the time left (ETA). On a terminal one line is
// rewritten in place (twice a second); in a batch log (Slurm's .out) each step is a line and the
// work done a line every 10 s, so neither floods.
//
// When it shows (issue #17): `--progress on`; `auto` shows it from the start when the machine
// model predicts more than 5 s (the job decides that: `enabled`), and on a terminal also once the
// run has taken 3 s without finishing, whatever the model said (it was measured on another
// machine). `off` never. With --log-level info or debug, the steps are log lines instead.
//
// The work is what the job layer says it is: a count it advances (summa's panels of K) or one it
// reads from a counter (the rows of C the GEMM has finished, while streaming). A step without a
// count shows its elapsed time alone.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace tessera::report {

// How `auto` behaves in this process: the command line sets the --progress value it parsed and
// whether this process is the one that prints (rank 0). Library use keeps "off" beyond `enabled`.
void set_progress_mode(const std::string& mode, bool printer);

class Progress {
 public:
  // `enabled`: shown from the start (on, or auto with a long prediction; false on ranks but 0).
  explicit Progress(bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // A new step ("reading A and B"): shown with the time since the start. Ends the work of the
  // step before.
  void step(const std::string& what);

  // The work of the current step: `total` units of `unit` ("panels of K"), advanced by advance().
  void work(std::int64_t total, const std::string& unit);
  // `done` of them are done (from any thread; never goes back).
  void advance(std::int64_t done);

  // The work of the current step, read from `done()` (any thread may update what it reads) for as
  // long as the returned Watch lives: it stops reading when destroyed, so what `done` reads may go
  // right after it.
  class Watch {
   public:
    Watch() = default;
    explicit Watch(Progress* p) : p_(p) {}
    Watch(Watch&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
    Watch& operator=(Watch&& o) noexcept;
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    Progress* p_ = nullptr;
  };
  Watch watch(std::int64_t total, const std::string& unit, std::function<std::int64_t()> done);

  // Clears the rewritten line (the table follows); stops the display.
  void finish();

 private:
  std::string line_locked(double now) const;  // the step, the work done and the ETA
  void show_locked(double now, bool step_changed);
  void run_ticker();
  void stop_watch();
  double seconds() const;

  bool enabled_ = false;  // shown from the start
  bool late_ = false;     // may start showing after kLateSeconds (auto, on a terminal)
  bool tty_ = false;
  bool shown_ = false;  // showing now
  bool open_line_ = false;
  bool finished_ = false;
  std::string step_;
  double step_started_ = 0;
  std::int64_t total_ = 0, done_ = 0;
  std::string unit_;
  double work_started_ = 0;
  std::function<std::int64_t()> counter_;
  double last_batch_line_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;
};

}  // namespace tessera::report
