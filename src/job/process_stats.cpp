#include "job/process_stats.hpp"

#include <sched.h>

#include <sys/resource.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace tessera::job {

std::int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

double seconds_since_process_start() {
  // Field 22 of /proc/self/stat: the start time in clock ticks after boot; the fields before it
  // follow the command name in parentheses, which may hold spaces.
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int i = 3; i < 22 && (fields >> field); ++i) {
  }
  unsigned long long start_ticks = 0;
  timespec boot{};
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (!(fields >> start_ticks) || hz <= 0 || ::clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return -1;
  const double now = static_cast<double>(boot.tv_sec) + static_cast<double>(boot.tv_nsec) * 1e-9;
  return now - static_cast<double>(start_ticks) / static_cast<double>(hz);
}

int cpus_in_use() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

}  // namespace tessera::job
