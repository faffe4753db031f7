#pragma once
// Timing the CUDA backend's steps: device time between CUDA events for asynchronous work, host
// time for what the host does itself (registering memory). Internal to the backend.
#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>
#include <vector>

#include "kernels/cuda_resources.hpp"

namespace tessera::backend {

// Host seconds of a step that is not device work (registering host memory).
template <class F>
double host_seconds(F&& step) {
  const auto start = std::chrono::steady_clock::now();
  step();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Device time of asynchronous steps, each between two events on its stream, summed per kind
// once the work is done. The steps may overlap (copies beside kernels), so the sums may exceed
// the wall time.
class StepTimes {
 public:
  template <class F>
  void time(double& total, cudaStream_t stream, F&& enqueue) {
    steps_.push_back(std::make_unique<Step>());
    steps_.back()->total = &total;
    steps_.back()->begin.record(stream);
    enqueue();
    steps_.back()->end.record(stream);
  }
  // After the streams are synchronized: adds each step's time to its total.
  void collect() {
    for (const auto& step : steps_) *step->total += step->end.seconds_since(step->begin);
    steps_.clear();
  }

 private:
  struct Step {
    double* total = nullptr;
    kernels::Event begin, end;
  };
  std::vector<std::unique_ptr<Step>> steps_;
};

}  // namespace tessera::backend
