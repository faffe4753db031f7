#include "job/background_release.hpp"

#include <chrono>

namespace tessera::job {

BackgroundRelease::BackgroundRelease(const backend::Backend* be, std::function<void()> release)
    : thread_([this, be, release = std::move(release)] {
        const auto start = std::chrono::steady_clock::now();
        if (be) be->enter_thread();
        release();
        seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }) {}

BackgroundRelease::~BackgroundRelease() {
  if (thread_.joinable()) thread_.join();
}

double BackgroundRelease::wait() {
  if (thread_.joinable()) thread_.join();
  return seconds_;
}

}  // namespace tessera::job
