#include "report/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "core/log.hpp"

namespace tessera::report {

namespace {

constexpr double kLateSeconds = 3.0;        // auto on a terminal: show a run still going after this
constexpr double kBatchLineSeconds = 10.0;  // a batch log gets a work line this often
constexpr auto kTick = std::chrono::milliseconds(500);

struct Mode {
  std::string progress = "off";
  bool printer = false;
};
Mode& mode() {
  static Mode m;
  return m;
}

std::string duration_text(double s) {
  if (s < 60) return fmt::format("{:.0f} s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return fmt::format("{}h{:02d}m", static_cast<int>(s) / 3600, static_cast<int>(s) % 3600 / 60);
}

// Whether what this process writes to stderr reaches a terminal. Under a launcher the process's
// own stderr is a pipe to it (Open MPI's mpirun forwards it; it gives a rank a pty for stdout
// alone, whether or not mpirun's own stdout is a terminal), so the launcher's stderr decides: the
// parent process's (mpirun's for the ranks of its node; srun --pty gives the task a terminal
// itself). Linux /proc; elsewhere only the process's own stderr counts.
bool stderr_is_terminal() {
  if (::isatty(STDERR_FILENO)) return true;
  char target[256] = {};
  const std::string link = "/proc/" + std::to_string(::getppid()) + "/fd/2";
  const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0) return false;
  const std::string to(target, static_cast<std::size_t>(n));
  return to.rfind("/dev/pts/", 0) == 0 || to.rfind("/dev/tty", 0) == 0;
}

}  // namespace

void set_progress_mode(const std::string& m, bool printer) {
  mode().progress = m;
  mode().printer = printer;
}

Progress::Watch& Progress::Watch::operator=(Watch&& o) noexcept {
  if (this != &o) {
    if (p_) p_->stop_watch();
    p_ = o.p_;
    o.p_ = nullptr;
  }
  return *this;
}

Progress::Watch::~Watch() {
  if (p_) p_->stop_watch();
}

Progress::Progress(bool enabled) : enabled_(enabled) {
  tty_ = (enabled || mode().printer) && stderr_is_terminal();
  late_ = !enabled && tty_ && mode().printer && mode().progress == "auto";
  shown_ = enabled_;
  // The steps are log lines instead where the log asks for them.
  if (log::enabled(log::Level::info)) shown_ = late_ = false;
  if (shown_ || late_) ticker_ = std::thread([this] { run_ticker(); });
}

Progress::~Progress() { finish(); }

double Progress::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::step(const std::string& what) {
  if (log::enabled(log::Level::info) && (enabled_ || mode().printer))
    log::info(fmt::format("{:6.1f} s  {}", seconds(), what));
  const std::lock_guard<std::mutex> hold(mutex_);
  step_ = what;
  step_started_ = seconds();
  total_ = done_ = 0;
  unit_.clear();
  counter_ = nullptr;
  if (shown_) show_locked(step_started_, true);
}

void Progress::work(std::int64_t total, const std::string& unit) {
  const std::lock_guard<std::mutex> hold(mutex_);
  total_ = total;
  done_ = 0;
  unit_ = unit;
  work_started_ = seconds();
  last_batch_line_ = work_started_;
}

void Progress::advance(std::int64_t done) {
  const std::lock_guard<std::mutex> hold(mutex_);
  if (done > done_) done_ = done;
}

Progress::Watch Progress::watch(std::int64_t total, const std::string& unit, std::function<std::int64_t()> done) {
  if (!(shown_ || late_)) return Watch{};
  work(total, unit);
  const std::lock_guard<std::mutex> hold(mutex_);
  counter_ = std::move(done);
  return Watch(this);
}

void Progress::stop_watch() {
  const std::lock_guard<std::mutex> hold(mutex_);
  if (counter_) done_ = std::max(done_, counter_());
  counter_ = nullptr;
}

std::string Progress::line_locked(double now) const {
  std::string text = fmt::format("tessera: {:6.1f} s  {}", now, step_);
  if (total_ <= 0) return text;
  const std::int64_t done = std::min(done_, total_);
  text += fmt::format(": {:.0f}% ({}/{} {})", 100.0 * static_cast<double>(done) / static_cast<double>(total_), done,
                      total_, unit_);
  const double spent = now - work_started_;
  if (done > 0 && done < total_ && spent > 0)
    text += ", ETA " + duration_text(spent * static_cast<double>(total_ - done) / static_cast<double>(done));
  return text;
}

void Progress::show_locked(double now, bool step_changed) {
  if (finished_) return;
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", line_locked(now).c_str());
    open_line_ = true;
  } else if (step_changed || (total_ > 0 && now - last_batch_line_ >= kBatchLineSeconds)) {
    std::fprintf(stderr, "%s\n", line_locked(now).c_str());
    last_batch_line_ = now;
  }
  std::fflush(stderr);
}

void Progress::run_ticker() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!finished_) {
    wake_.wait_for(lock, kTick);
    if (finished_) break;
    const double now = seconds();
    if (counter_) done_ = std::max(done_, counter_());
    if (!shown_ && late_ && now >= kLateSeconds) shown_ = true;
    if (shown_) show_locked(now, false);
  }
}

void Progress::finish() {
  {
    const std::lock_guard<std::mutex> hold(mutex_);
    if (open_line_) std::fputs("\r\033[K", stderr);
    open_line_ = false;
    finished_ = true;
    counter_ = nullptr;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

}  // namespace tessera::report
