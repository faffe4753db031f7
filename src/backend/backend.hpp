#pragma once
// The compute step as a backend: the pipeline hands a backend one local GEMM on host memory
// (its block of C) and gets back the time of each phase the backend went through. Backends
// know nothing of MPI or HDF5.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"

namespace tessera::backend {

// C = A * B, all row-major and contiguous on the host: A is m x k, B is k x n, C is m x n.
struct GemmProblem {
  DType dtype = DType::f64;
  std::int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
};

struct PhaseTime {
  std::string name;  // "compute" on the CPU; "h2d", "kernel", "d2h" on a GPU
  double seconds = 0;
};

// Where a rank sits on its node; a GPU backend picks its device from this.
struct Placement {
  int local_rank = 0;
  int local_size = 1;
  // GPU memory a rank's GEMM may use, in bytes (--gpu-memory); 0: what the GPU has free. A
  // block that does not fit is computed out of core, in tiles streamed through the GPU.
  std::size_t gpu_memory_limit = 0;
};

// Host memory for a rank's A, B and C. On a GPU backend it is page-locked, so the copies to and
// from the device run at full speed without registering the caller's memory on the fly; the
// pinning cost is paid once, where the memory is allocated (the read phase).
class HostBuffer {
 public:
  using Free = void (*)(void*);
  HostBuffer() = default;
  HostBuffer(void* data, std::size_t bytes, Free free) : data_(data), bytes_(bytes), free_(free) {}
  ~HostBuffer() {
    if (data_) free_(data_);
  }
  HostBuffer(HostBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), free_(o.free_) {}
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    std::swap(free_, o.free_);
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  unsigned char* data() const { return static_cast<unsigned char*>(data_); }
  std::size_t size() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Free free_ = nullptr;
};

// Plain (pageable) host memory; throws std::bad_alloc.
HostBuffer allocate_pageable(std::size_t bytes);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;    // "cpu" or "cuda"
  virtual std::string device() const = 0;  // e.g. "cpu (2 threads)" or "NVIDIA H200"
  virtual int device_id() const { return -1; }
  virtual std::vector<std::string> kernels() const = 0;  // selectable names, first is the default
  virtual std::string default_kernel() const { return kernels().front(); }
  // The kernel "auto" stands for on a problem of this type and shape (e.g. a tuned choice).
  virtual std::string resolve_kernel(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) const {
    (void)dtype, (void)m, (void)n, (void)k;
    return default_kernel();
  }
  // Throws InputError for an unknown kernel name, DeviceError for device failures.
  virtual std::vector<PhaseTime> gemm(const std::string& kernel, const GemmProblem& p) = 0;
  // Host memory for the problems this backend will compute (pinned on a GPU backend).
  virtual HostBuffer allocate_host(std::size_t bytes) { return allocate_pageable(bytes); }
  // Human-readable warnings raised while setting up (e.g. "2 ranks share GPU 0").
  virtual std::vector<std::string> warnings() const { return {}; }

  // --- ksplit (run/ksplit.hpp): partial products summed on the devices, without MPI here. The
  // caller gets a group id from one rank (new_reduce_group_id), hands its bytes to every rank,
  // and each joins (collective); then gemm_on_device keeps C on the device and reduce_to_host
  // sums it onto `root`. Backends that cannot (the CPU, CUDA without NCCL) keep these defaults
  // and the caller sums on the host instead.
  virtual bool supports_device_reduce() const { return false; }
  virtual std::vector<unsigned char> new_reduce_group_id();
  virtual void join_reduce_group(const std::vector<unsigned char>& id, int rank, int size);
  // C = A * B into a device buffer the backend keeps. p.c is not written: on the root it may name
  // the host C that reduce_to_host will fill (the backend may prepare it, e.g. page-lock it while
  // the kernel runs), elsewhere nullptr. Phases "h2d", "kernel".
  virtual std::vector<PhaseTime> gemm_on_device(const std::string& kernel, const GemmProblem& p);
  // Collective over the group: sums the kept C of every rank onto `root`, which copies the sum to
  // host_c (m x n of the last gemm_on_device); frees the kept C. Phases "reduce", and "d2h" on root.
  virtual std::vector<PhaseTime> reduce_to_host(int root, void* host_c);
};

// "cpu", "cuda" or "auto" (cuda when a GPU is visible and tessera was built with CUDA).
std::unique_ptr<Backend> make_backend(const std::string& name, const Placement& where);

// Backend names compiled into this build.
std::vector<std::string> compiled_backends();

// Whether this build can sum on the devices (the CUDA backend built with NCCL).
bool device_reduce_compiled();

// Number of visible GPUs (0 when built without CUDA or when none is visible).
int visible_gpu_count();

// Description of the visible GPUs, one line each (empty when none).
std::vector<std::string> describe_gpus();

}  // namespace tessera::backend
