#pragma once
// The CUDA backend's ways of computing, one file each (cuda_backend.cpp picks among them):
// in core, streamed in tiles (out of core, or pipelined), the panel product and the
// product kept on the device. Internal to the backend.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cuda_device.hpp"
#include "backend/cuda_host_staging.hpp"
#include "backend/step_times.hpp"
#include "kernels/cuda_resources.hpp"

namespace tessera::backend {

// A, B up, one kernel, C down (cuda_gemm.cpp); `kernel` is a resolved name. Phases "h2d",
// "kernel", "d2h".
std::vector<PhaseTime> gemm_in_core(Gpu& gpu, const std::string& kernel, const GemmProblem& p);

// C in tiles streamed through the GPU within `budget` bytes, copies overlapping the kernels
// (cuda_streamed_gemm.cpp): out of core (`out_of_core`: the note on how is set in `note`), or in
// core with at least `min_row_tiles` tiles of rows for the overlap alone. Phases "h2d", "kernel",
// "d2h" (overlapping).
std::vector<PhaseTime> gemm_streamed(Gpu& gpu, const std::string& kernel, const GemmProblem& p, std::size_t budget,
                                     std::int64_t min_row_tiles, bool out_of_core, std::string* note);

// Rows per tile of a staged GEMM (cuda_staged_gemm.cpp) within `budget` bytes of the GPU: all of
// B and two tiles of A's rows and of C's; 0 when not even one row fits.
std::int64_t staged_tile_rows(const StagedProblem& p, std::size_t budget);

// backend.hpp's StagedProblem on the GPU, in tiles of `tile_rows` rows (cuda_staged_gemm.cpp);
// `kernel` is a resolved name. Phases "h2d", "kernel", "d2h" (overlapping).
std::vector<PhaseTime> gemm_staged_on_gpu(Gpu& gpu, const std::string& kernel, const StagedProblem& p,
                                          std::int64_t tile_rows);

// What the streamed and the staged GEMM share: a copy-in and a copy-out stream beside the GPU's
// compute stream, and the device time of the steps enqueued on them (h2d, kernel, d2h).
class CopyStreams {
 protected:
  explicit CopyStreams(Gpu& gpu) : gpu_(gpu) {}
  cudaStream_t in() const { return copy_in_.get(); }
  cudaStream_t out() const { return copy_out_.get(); }
  // Waits for the work of the three streams; reports a fault.
  void wait_all() const {
    copy_in_.synchronize();
    gpu_.stream.synchronize();
    copy_out_.synchronize();
  }
  // On an error: waits for the enqueued work, whatever it reports, before the buffers go.
  void wait_all_quietly() const { synchronize_quietly({in(), gpu_.stream.get(), out()}); }
  // After wait_all(): the GPU's peak memory noted, and the steps' times as the GEMM's phases.
  std::vector<PhaseTime> phases() {
    gpu_.note_peak();
    steps_.collect();
    return {{"h2d", h2d_}, {"kernel", kernel_s_}, {"d2h", d2h_}};
  }

  Gpu& gpu_;
  kernels::Stream copy_in_, copy_out_;
  StepTimes steps_;
  double h2d_ = 0, kernel_s_ = 0, d2h_ = 0;
};

// What gemm_held keeps from call to call (cuda_held_gemm.cpp): device scratch for the operands it
// packs or copies up, a scratch C, a scan's count, and an event after the last call's work, which
// the next call's stream waits for (the scratch is shared, the callers' streams may differ).
// cudaMalloc and cudaFree cost ~0.15 ms each: as much as a 1024^2 product's kernel.
struct HeldScratch {
  kernels::DeviceBuffer a, b, c, stored, found;
  kernels::Event done;
  bool used = false;
  // The NaN/Inf scan of a stream-ordered product of GPU memory runs beside its GEMM (made at its
  // first use, on the product's GPU): a non-blocking stream, and the event it starts from.
  std::optional<kernels::Stream> scan_stream;
  std::optional<kernels::Event> scan_from;
  // Host matrices of stage_min_bytes and more go up and down through these page-locked lanes
  // (cuda_host_staging.hpp), made at their first use and kept.
  std::unique_ptr<HostStaging> staging;
  std::size_t bytes() const { return a.bytes() + b.bytes() + c.bytes() + stored.bytes() + found.bytes(); }
};

// Device bytes gemm_held would add to what `scratch` holds for `p`.
std::size_t held_bytes_missing(const HeldScratch& scratch, const HeldProblem& p);

// backend.hpp's HeldProblem on the GPU (cuda_held_gemm.cpp); `kernel` is a resolved name.
std::vector<PhaseTime> gemm_held(Gpu& gpu, HeldScratch& scratch, const std::string& kernel, const HeldProblem& p);

// backend.hpp's PanelProduct on the GPU (cuda_panel_product.cpp); refuses one over `budget`.
std::unique_ptr<PanelProduct> make_cuda_panel_product(Gpu& gpu, const std::string& kernel, DType dtype, std::int64_t m,
                                                      std::int64_t n, std::int64_t max_w, void* host_c,
                                                      std::size_t budget, bool host_staging);

// backend.hpp's DeviceProduct on the GPU (cuda_device_product.cpp): K in chunks, uploads
// overlapping the kernels.
std::unique_ptr<DeviceProduct> gemm_kept_on_device(Gpu& gpu, const std::string& kernel, const GemmProblem& p);

}  // namespace tessera::backend
