#pragma once
// Copies between a caller's pageable host matrix and packed device memory at the bus's speed,
// without page-locking the caller's memory: each of a few host threads (lanes) takes a share of
// the rows and passes it through two page-locked buffers of its own, copying one while the DMA of
// the other runs on its own stream. The buffers are kept from call to call (HeldScratch).
//
// Why: a pageable cudaMemcpy runs at ~7 GB/s on the H200 machine, and cudaHostRegister of the
// caller's memory costs about as much as it saves past a few tens of MiB (issue 44: 8192^3 f64 of
// host matrices, h2d 0.14 s for 1 GiB either way); page-locked copies run at 53-55 GB/s, and a
// few threads' memcpy keeps up with them. Internal to the backend.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.hpp"
#include "kernels/cuda_resources.hpp"

namespace tessera::backend {

// Host matrices of at least this many bytes are copied through the staging lanes (smaller ones
// as HostRegistration and held_pin_min_bytes decide): 32 MiB. TESSERA_STAGE_MIN_BYTES sets
// another threshold (a diagnostic, to measure one against the other).
std::size_t stage_min_bytes();

// The cores this process may run on (its CPU affinity). The lanes are at most as many, at most
// half of the machine's cores, and at most 8: 8 on the 16-core GPU machine as measured, and where
// a binding gives fewer cores, as many threads as can run at once.
std::size_t usable_cores();

class HostStaging {
 public:
  HostStaging();
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // `rows` rows of `row_bytes`, `ld_bytes` apart at `host`, into `device` packed (rows
  // `row_bytes` apart) on GPU `gpu`. The copies start once `s` has reached this call's place (or,
  // given `after`, once that event has: an earlier place on `s`, so the copy may overlap what `s`
  // runs since) and `s` waits for them: stream-ordered like a cudaMemcpy2DAsync on `s`. Returns
  // once the host's part is done (the caller's memory may then change); the last DMA may still run.
  void up(int gpu, const void* host, std::int64_t rows, std::size_t row_bytes, std::size_t ld_bytes, void* device,
          cudaStream_t s, cudaEvent_t after = nullptr);
  // `rows` packed rows at `device` into the host rows at `host` (`ld_bytes` apart), after the work
  // enqueued on `s` so far. Returns when the host holds them.
  void down(int gpu, const void* device, std::int64_t rows, std::size_t row_bytes, void* host, std::size_t ld_bytes,
            cudaStream_t s);

  // Whether a copy of this shape goes through the lanes (a row must fit one buffer).
  static bool takes(std::int64_t rows, std::size_t row_bytes);
  std::size_t bytes() const;  // page-locked bytes kept

 private:
  struct Lane;
  Lane& lane(std::size_t i, int gpu);
  std::size_t lanes_for(std::size_t bytes) const;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::size_t max_lanes_;
};

}  // namespace tessera::backend
