#pragma once
// Page-locked memory freed on a thread of its own while the job goes on.
#include <functional>
#include <thread>

#include "backend/backend.hpp"

namespace tessera::job {

// Runs `release` (freeing page-locked buffers: unregistering them takes time) on a thread while
// the caller goes on, e.g. with the gather or rank 0's commit; the thread first enters `be`'s
// device (Backend::enter_thread), if any. wait() joins it and returns the seconds it took; the
// destructor joins it too (on the way out of an exception). `release` must not throw and must
// not call MPI.
class BackgroundRelease {
 public:
  BackgroundRelease(const backend::Backend* be, std::function<void()> release);
  ~BackgroundRelease();
  BackgroundRelease(const BackgroundRelease&) = delete;
  BackgroundRelease& operator=(const BackgroundRelease&) = delete;
  double wait();

 private:
  double seconds_ = 0;  // before thread_: set before the thread starts
  std::thread thread_;
};

}  // namespace tessera::job
