#pragma once
// The GPU side of the timing harness of `tessera bench` and `tessera tune` (bench_harness.hpp):
// CUDA builds only, and only for commands/ sources that link the CUDA kernels.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "commands/bench_harness.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/cuda_resources.hpp"

namespace tessera::commands::bench {

// The device seconds of each timed launch queued by `launch` on `stream`, CUDA events around
// each. The warm-up launches are finished before `before_timed` runs (telemetry starts there)
// and the timed ones when this returns.
std::vector<double> time_on_stream(const Timing& timing, const std::function<void()>& launch,
                                   const kernels::Stream& stream, const std::function<void()>& before_timed = {});

// Copies ordered on `stream`, finished on return.
template <class T>
std::vector<T> download(const kernels::DeviceBuffer& d, std::size_t count, const kernels::Stream& stream) {
  std::vector<T> x(count);
  CUDA_CHECK(cudaMemcpyAsync(x.data(), d.get(), count * sizeof(T), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  return x;
}
template <class T>
kernels::DeviceBuffer upload(const std::vector<T>& host, const std::string& what, const kernels::Stream& stream) {
  kernels::DeviceBuffer d(host.size() * sizeof(T), what);
  CUDA_CHECK(cudaMemcpyAsync(d.get(), host.data(), d.bytes(), cudaMemcpyHostToDevice, stream.get()));
  stream.synchronize();
  return d;
}

}  // namespace tessera::commands::bench
