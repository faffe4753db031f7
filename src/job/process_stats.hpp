#pragma once
// What this process knows of itself: its peak memory and when it started.
#include <cstdint>

namespace tessera::job {

// Peak resident memory of this process so far, in bytes (the report's peak_host_bytes).
std::int64_t peak_rss_bytes();

// Seconds since this process was started (exec), from the kernel's record of its start time
// (10 ms resolution); -1 where unknown. The report's start-up is this less the job's own time.
double seconds_since_process_start();

// Cores this process may run on (its CPU affinity); 0 where unknown.
int cpus_in_use();

}  // namespace tessera::job
