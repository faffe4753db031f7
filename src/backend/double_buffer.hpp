#pragma once
// Two buffers used in turn, so that the next one fills while the current one is used: the events
// that order a producer stream and a consumer stream on them without the host waiting. A fill
// waits until the buffer's last use is done; a use waits until its fill is. Every pipeline of the
// CUDA backend runs on this one helper: the streamed GEMM (A rows, B columns, C tiles), the kept
// product's chunks of K, the panel product's slots. Internal to the backend.
#include <cuda_runtime_api.h>

#include "kernels/cuda_check.hpp"
#include "kernels/cuda_resources.hpp"

namespace tessera::backend {

class DoubleBuffer {
 public:
  static constexpr int kSlots = 2;

  // Enqueues on `stream`: a wait for the slot's last use, `enqueue()` (which fills it), the mark
  // that it is filled.
  template <class F>
  void fill(int slot, cudaStream_t stream, F&& enqueue) const {
    before_fill(slot, stream);
    enqueue();
    after_fill(slot, stream);
  }
  // Enqueues on `stream`: a wait for the slot's fill, `enqueue()` (which uses it), the mark that
  // it is free again.
  template <class F>
  void use(int slot, cudaStream_t stream, F&& enqueue) const {
    before_use(slot, stream);
    enqueue();
    after_use(slot, stream);
  }

  // The halves of fill() and use(), for a step that uses one buffer while it fills another (the
  // streamed GEMM's kernel reads A and B tiles and writes a C tile).
  void before_fill(int slot, cudaStream_t stream) const {
    CUDA_CHECK(cudaStreamWaitEvent(stream, used_[slot].get(), 0));
  }
  void after_fill(int slot, cudaStream_t stream) const { filled_[slot].record(stream); }
  void before_use(int slot, cudaStream_t stream) const {
    CUDA_CHECK(cudaStreamWaitEvent(stream, filled_[slot].get(), 0));
  }
  void after_use(int slot, cudaStream_t stream) const { used_[slot].record(stream); }

  // The host blocks until the slot's last fill (its last use) is done.
  void wait_filled(int slot) const { CUDA_CHECK(cudaEventSynchronize(filled_[slot].get())); }
  void wait_used(int slot) const { CUDA_CHECK(cudaEventSynchronize(used_[slot].get())); }

 private:
  // Recorded before they are waited for; an event never recorded counts as done, so a fresh
  // slot is free to fill.
  kernels::Event filled_[kSlots], used_[kSlots];
};

}  // namespace tessera::backend
