#include "backend/cuda_host_staging.hpp"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>

#include "backend/cuda_device.hpp"
#include "core/env.hpp"
#include "kernels/cuda_check.hpp"

namespace tessera::backend {
namespace {

// Each lane's two buffers: 8 MiB, a DMA of ~0.15 ms at the bus's speed, long enough that the
// lane's wait for it and the next memcpy's start are small beside it.
constexpr std::size_t kSlotBytes = std::size_t{8} << 20;
// A lane per 16 MiB of the copy, at most 8 (or half the cores): a memcpy thread moves 8-12 GB/s,
// four to five of them the bus's 53-55 GB/s.
constexpr std::size_t kBytesPerLane = std::size_t{16} << 20;

// Rows [r0, r1) of a copy, chunked to fit one buffer.
struct Rows {
  std::int64_t r0 = 0, r1 = 0, per_chunk = 1;
  std::int64_t chunks() const { return r1 <= r0 ? 0 : (r1 - r0 + per_chunk - 1) / per_chunk; }
  std::int64_t first(std::int64_t j) const { return r0 + j * per_chunk; }
  std::int64_t count(std::int64_t j) const { return std::min(per_chunk, r1 - first(j)); }
};

// Rows between a buffer (packed) and the caller's memory (ld_bytes apart): one memcpy where the
// caller's rows are packed too.
void copy_rows(unsigned char* to, std::size_t to_ld, const unsigned char* from, std::size_t from_ld, std::int64_t rows,
               std::size_t row_bytes) {
  if (to_ld == row_bytes && from_ld == row_bytes) {
    std::memcpy(to, from, static_cast<std::size_t>(rows) * row_bytes);
    return;
  }
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(to + static_cast<std::size_t>(r) * to_ld, from + static_cast<std::size_t>(r) * from_ld, row_bytes);
}

// Runs work(0..n-1) on n threads (0 on the caller's), each with `gpu` current; rethrows the first
// failure once all have finished. Where no more threads can be started, the caller's thread does
// the shares not started.
template <class Work>
void on_lanes(std::size_t n, int gpu, const Work& work) {
  std::vector<std::exception_ptr> failed(n);
  const auto run = [&](std::size_t i) {
    try {
      CUDA_CHECK(cudaSetDevice(gpu));
      work(i);
    } catch (...) {
      failed[i] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(n);
  try {
    for (std::size_t i = 1; i < n; ++i) pool.emplace_back(run, i);
  } catch (const std::system_error&) {
    for (std::size_t i = pool.size() + 1; i < n; ++i) run(i);
  }
  run(0);
  for (auto& t : pool) t.join();
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
}

// After a lane failed: waits for what every lane of the copy enqueued (their DMAs may still read
// or write the buffers), ignoring further errors, before the failure goes up.
template <class Lanes>
void settle(const Lanes& lanes, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) (void)cudaStreamSynchronize(lanes[i]->stream.get());
}

}  // namespace

// The cores this process may run on: its affinity (mpirun's binding, a Slurm task's cpuset), so
// that ranks sharing a node start no more copying threads than their share of its cores; the
// machine's count where the affinity cannot be read.
std::size_t usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<std::size_t>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::size_t stage_min_bytes() {
  static const auto bytes =
      static_cast<std::size_t>(env::whole("TESSERA_STAGE_MIN_BYTES").value_or(std::int64_t{32} << 20));
  return bytes;
}

struct HostStaging::Lane {
  HostBuffer slot[2];
  kernels::Stream stream;   // made on the GPU current when the lane is
  kernels::Event moved[2];  // the last DMA from or into slot[i]
  kernels::Event end;       // the lane's last DMA of a call
};

HostStaging::HostStaging()
    : max_lanes_(std::clamp<std::size_t>(
          std::min<std::size_t>(usable_cores(), std::max(1u, std::thread::hardware_concurrency()) / 2), 1, 8)) {}
HostStaging::~HostStaging() = default;

bool HostStaging::takes(std::int64_t rows, std::size_t row_bytes) {
  return rows > 0 && row_bytes > 0 && row_bytes <= kSlotBytes;
}

std::size_t HostStaging::bytes() const {
  std::size_t all = 0;
  for (const auto& l : lanes_) all += l->slot[0].size() + l->slot[1].size();
  return all;
}

std::size_t HostStaging::lanes_for(std::size_t bytes) const {
  return std::clamp<std::size_t>(bytes / kBytesPerLane, 1, max_lanes_);
}

HostStaging::Lane& HostStaging::lane(std::size_t i, int gpu) {
  while (lanes_.size() <= i) {
    CUDA_CHECK(cudaSetDevice(gpu));
    auto made = std::make_unique<Lane>();
    for (auto& slot : made->slot) slot = allocate_page_locked(kSlotBytes);
    lanes_.push_back(std::move(made));
  }
  return *lanes_[i];
}

void HostStaging::up(int gpu, const void* host, std::int64_t rows, std::size_t row_bytes, std::size_t ld_bytes,
                     void* device, cudaStream_t s, cudaEvent_t after) {
  if (!takes(rows, row_bytes)) return;
  const std::size_t n =
      std::min<std::size_t>(lanes_for(static_cast<std::size_t>(rows) * row_bytes), static_cast<std::size_t>(rows));
  for (std::size_t i = 0; i < n; ++i) lane(i, gpu);
  kernels::Event from;  // where `s` is: the lanes' DMAs start after it (the device buffer is free)
  if (!after) {
    from.record(s);
    after = from.get();
  }
  for (std::size_t i = 0; i < n; ++i) CUDA_CHECK(cudaStreamWaitEvent(lanes_[i]->stream.get(), after, 0));
  const auto per_chunk = static_cast<std::int64_t>(kSlotBytes / row_bytes);
  const auto* src = static_cast<const unsigned char*>(host);
  auto* dst = static_cast<unsigned char*>(device);
  try {
    on_lanes(n, gpu, [&](std::size_t i) {
      Lane& l = *lanes_[i];
      const Rows part{rows * static_cast<std::int64_t>(i) / static_cast<std::int64_t>(n),
                      rows * static_cast<std::int64_t>(i + 1) / static_cast<std::int64_t>(n), per_chunk};
      for (std::int64_t j = 0; j < part.chunks(); ++j) {
        const int b = static_cast<int>(j % 2);
        const std::int64_t r = part.first(j), count = part.count(j);
        CUDA_CHECK(cudaEventSynchronize(l.moved[b].get()));  // its previous DMA has read it
        copy_rows(l.slot[b].data(), row_bytes, src + static_cast<std::size_t>(r) * ld_bytes, ld_bytes, count,
                  row_bytes);
        CUDA_CHECK(cudaMemcpyAsync(dst + static_cast<std::size_t>(r) * row_bytes, l.slot[b].data(),
                                   static_cast<std::size_t>(count) * row_bytes, cudaMemcpyHostToDevice,
                                   l.stream.get()));
        l.moved[b].record(l.stream.get());
      }
      l.end.record(l.stream.get());
    });
  } catch (...) {
    settle(lanes_, n);
    throw;
  }
  for (std::size_t i = 0; i < n; ++i) CUDA_CHECK(cudaStreamWaitEvent(s, lanes_[i]->end.get(), 0));
}

void HostStaging::down(int gpu, const void* device, std::int64_t rows, std::size_t row_bytes, void* host,
                       std::size_t ld_bytes, cudaStream_t s) {
  if (!takes(rows, row_bytes)) return;
  const std::size_t n =
      std::min<std::size_t>(lanes_for(static_cast<std::size_t>(rows) * row_bytes), static_cast<std::size_t>(rows));
  for (std::size_t i = 0; i < n; ++i) lane(i, gpu);
  kernels::Event from;  // the work that makes the device rows
  from.record(s);
  for (std::size_t i = 0; i < n; ++i) CUDA_CHECK(cudaStreamWaitEvent(lanes_[i]->stream.get(), from.get(), 0));
  const auto per_chunk = static_cast<std::int64_t>(kSlotBytes / row_bytes);
  const auto* src = static_cast<const unsigned char*>(device);
  auto* dst = static_cast<unsigned char*>(host);
  try {
    on_lanes(n, gpu, [&](std::size_t i) {
      Lane& l = *lanes_[i];
      const Rows part{rows * static_cast<std::int64_t>(i) / static_cast<std::int64_t>(n),
                      rows * static_cast<std::int64_t>(i + 1) / static_cast<std::int64_t>(n), per_chunk};
      const auto fetch = [&](std::int64_t j) {  // chunk j's DMA into its buffer
        const int b = static_cast<int>(j % 2);
        CUDA_CHECK(cudaMemcpyAsync(l.slot[b].data(), src + static_cast<std::size_t>(part.first(j)) * row_bytes,
                                   static_cast<std::size_t>(part.count(j)) * row_bytes, cudaMemcpyDeviceToHost,
                                   l.stream.get()));
        l.moved[b].record(l.stream.get());
      };
      if (part.chunks() > 0) fetch(0);
      for (std::int64_t j = 0; j < part.chunks(); ++j) {
        if (j + 1 < part.chunks()) fetch(j + 1);  // its buffer was emptied by chunk j-1's copy below
        const int b = static_cast<int>(j % 2);
        CUDA_CHECK(cudaEventSynchronize(l.moved[b].get()));
        copy_rows(dst + static_cast<std::size_t>(part.first(j)) * ld_bytes, ld_bytes, l.slot[b].data(), row_bytes,
                  part.count(j), row_bytes);
      }
      l.end.record(l.stream.get());
    });
  } catch (...) {
    settle(lanes_, n);
    throw;
  }
  // Nothing of the lanes is left to wait for (each waited for its last DMA); `s` is ordered after
  // them all the same, for the next call's work on the device rows.
  for (std::size_t i = 0; i < n; ++i) CUDA_CHECK(cudaStreamWaitEvent(s, lanes_[i]->end.get(), 0));
}

}  // namespace tessera::backend
