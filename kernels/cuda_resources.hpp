#pragma once
// RAII owners of CUDA resources: device buffers, registered (pinned) host ranges, streams and
// events. Each is released in its destructor, so error paths need no cleanup code. Move-only.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>

#include "kernels/cuda_check.hpp"

namespace tessera::kernels {

// "1.50 GiB", "12.0 MiB", "512 B": for messages.
inline std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return text;
}

// Device memory of `bytes` bytes on the current device. Running out of memory is the one
// failure users cause themselves, so it gets its own message: what was being allocated, how
// much the GPU has free, and what to do about it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t bytes, const std::string& what) : bytes_(bytes) {
    if (bytes == 0) return;
    const cudaError_t err = cudaMalloc(&ptr_, bytes);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky: clear it so later calls are not blamed
      std::size_t free_bytes = 0, total_bytes = 0;
      (void)cudaMemGetInfo(&free_bytes, &total_bytes);
      int device = -1;
      (void)cudaGetDevice(&device);
      throw DeviceError("out of GPU memory on GPU " + std::to_string(device) + " allocating " + what + " (" +
                        format_bytes(static_cast<double>(bytes)) + "); " +
                        format_bytes(static_cast<double>(free_bytes)) + " free of " +
                        format_bytes(static_cast<double>(total_bytes)) + ": use more ranks or a smaller problem");
    }
    if (err != cudaSuccess) throw_cuda_error(err, "cudaMalloc", __FILE__, __LINE__);
  }
  ~DeviceBuffer() {
    if (ptr_) (void)cudaFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A CUDA resource (a host registration, a stream, an event) that its owner releases with itself
// (Destroy::destroy). Move-only; the derived class creates it.
template <class Handle, class Destroy>
class OwnedHandle {
 public:
  OwnedHandle() = default;
  ~OwnedHandle() {
    if (handle_) Destroy::destroy(handle_);
  }
  OwnedHandle(OwnedHandle&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  OwnedHandle& operator=(OwnedHandle&& o) noexcept {
    std::swap(handle_, o.handle_);
    return *this;
  }
  OwnedHandle(const OwnedHandle&) = delete;
  OwnedHandle& operator=(const OwnedHandle&) = delete;

  Handle get() const { return handle_; }

 protected:
  Handle handle_ = nullptr;
};

struct Unregister {
  static void destroy(void* p) { (void)cudaHostUnregister(p); }
};
struct DestroyStream {
  static void destroy(cudaStream_t s) { (void)cudaStreamDestroy(s); }
};
struct DestroyEvent {
  static void destroy(cudaEvent_t e) { (void)cudaEventDestroy(e); }
};

// Page-locks a caller's host range (cudaHostRegister) for as long as this object lives, so
// copies from and to it run at full bus speed and asynchronously. Pinning is an optimisation:
// when the range is already pinned, too small to be worth it, or cannot be registered (it
// overlaps another registration, the system refuses), the copy simply goes through pageable
// memory and registered() says so.
class HostRegistration : public OwnedHandle<void*, Unregister> {
 public:
  HostRegistration() = default;
  HostRegistration(const void* ptr, std::size_t bytes, std::size_t min_bytes) {
    if (ptr == nullptr || bytes < min_bytes) return;
    cudaPointerAttributes attr{};
    if (cudaPointerGetAttributes(&attr, ptr) == cudaSuccess && attr.type != cudaMemoryTypeUnregistered) {
      return;  // already pinned (cudaHostAlloc, registered elsewhere) or not host memory at all
    }
    (void)cudaGetLastError();
    // Registering does not write the memory; the API just takes a non-const pointer.
    void* p = const_cast<void*>(ptr);
    if (cudaHostRegister(p, bytes, cudaHostRegisterDefault) == cudaSuccess) {
      handle_ = p;
    } else {
      (void)cudaGetLastError();  // fall back to a pageable copy
    }
  }

  bool registered() const { return handle_ != nullptr; }
};

// An ordinary (blocking) stream: work on the legacy default stream, such as a plain cudaMemcpy
// or cudaMemset, waits for the work queued here and the other way round, so mixing the two is
// safe. (A pageable cudaMemcpy may return before its DMA is done: a non-blocking stream could
// start reading the destination too early.)
class Stream : public OwnedHandle<cudaStream_t, DestroyStream> {
 public:
  Stream() { CUDA_CHECK(cudaStreamCreate(&handle_)); }
  // cudaStreamNonBlocking: a stream that work on the legacy default stream does not wait for,
  // nor it for that work (ordered only by the events it is given); `priority` in
  // cudaDeviceGetStreamPriorityRange's numbers, lower is sooner (0: the default).
  Stream(unsigned flags, int priority) { CUDA_CHECK(cudaStreamCreateWithPriority(&handle_, flags, priority)); }
  void synchronize() const { CUDA_CHECK(cudaStreamSynchronize(handle_)); }
};

// A timing event. seconds_since(start) waits for this event, then returns the device time
// between the two (resolution about half a microsecond).
class Event : public OwnedHandle<cudaEvent_t, DestroyEvent> {
 public:
  Event() { CUDA_CHECK(cudaEventCreate(&handle_)); }
  void record(cudaStream_t stream) const { CUDA_CHECK(cudaEventRecord(handle_, stream)); }
  double seconds_since(const Event& start) const {
    CUDA_CHECK(cudaEventSynchronize(handle_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start.handle_, handle_));
    return static_cast<double>(ms) * 1e-3;
  }
};

}  // namespace tessera::kernels
