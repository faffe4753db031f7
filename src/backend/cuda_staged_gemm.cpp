// The CUDA backend's staged GEMM (backend.hpp's StagedProblem): A, B and C never exist whole in
// host memory. B's rows, then each tile row of A's, are read by the caller straight into one of a
// few small page-locked buffers (the upload ring) and copied up; each tile of C comes back in
// pieces into another ring (the download ring), handed to the caller's take_c on a writer thread
// while the next tiles are read and multiplied. What the GPU holds: all of B, two tiles of A's
// rows and two of C's (DoubleBuffer, as the streamed GEMM). A float32 C stored as a 16-bit float
// (StagedProblem::c_rounded) is rounded on the GPU, into two more tiles of 2-byte values, and
// comes back so: half the bytes copied and written, no pass of the host's over them. Likewise A
// and B stored as that 16-bit float, for the kernel that rounds to it (cublas-f16 / cublas-bf16,
// where the rounding changes no value): asked for as stored (fill_a_half / fill_b_half), uploaded
// so and multiplied as they are, with no widening on the host and half the bytes copied up.
//
// Why: the whole-block path page-locks A, B and C (about 0.1 s per GiB to allocate and as much to
// free, docs/performance.md); here the page-locked memory is a few hundred MiB whatever the size.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/cuda_gemm.hpp"
#include "backend/double_buffer.hpp"
#include "backend/step_times.hpp"
#include "core/error.hpp"
#include "kernels/cuda_check.hpp"

namespace tessera::backend {
namespace {

constexpr int kUpSlots = 3;    // pieces of A or B on their way up
constexpr int kDownSlots = 6;  // pieces of C on their way to the caller
static_assert(kUpSlots + kDownSlots == kStagingSlots, "the footprint model counts the slots");
// A tile of A's rows is about kStagedTileBytes (at least kPipelineTiles tiles): the first C rows
// come back early, and the kernel still runs on large tiles.
constexpr std::int64_t kMinTileRows = 128;

// Whether C's tiles are rounded on the GPU before they come back (2 bytes an element).
bool rounds_c(const StagedProblem& p) {
  return p.dtype == DType::f32 && p.c_rounded != StagedProblem::Rounded::none && p.take_c_rounded != nullptr;
}

// Whether A and B come up as their stored 2-byte values: the kernel rounds to exactly that type.
bool takes_halves(const StagedProblem& p, const std::string& kernel) {
  if (p.dtype != DType::f32 || !p.fill_a_half || !p.fill_b_half) return false;
  return (p.operands == StagedProblem::Rounded::f16 && kernel == "cublas-f16") ||
         (p.operands == StagedProblem::Rounded::bf16 && kernel == "cublas-bf16");
}

// A and B counted at the dtype's size, what they take when not uploaded as halves; a float32 C's
// rounded tiles whether asked for or not, so that Backend::stages (which asks with the shape
// alone) and the run agree on the tile rows.
std::size_t need_bytes(const StagedProblem& p, std::int64_t mr) {
  const auto es = static_cast<std::size_t>(dtype_size(p.dtype));
  const std::size_t rounded = p.dtype == DType::f32 ? 2 * static_cast<std::size_t>(mr * p.n) * 2 : 0;
  return (static_cast<std::size_t>(p.k * p.n) + 2 * static_cast<std::size_t>(mr * (p.k + p.n))) * es + rounded;
}

}  // namespace

std::int64_t staged_tile_rows(const StagedProblem& p, std::size_t budget) {
  const std::size_t a_bytes = static_cast<std::size_t>(p.m * p.k) * dtype_size(p.dtype);
  const std::int64_t tiles = std::max<std::int64_t>(
      kPipelineTiles, static_cast<std::int64_t>((a_bytes + kStagedTileBytes - 1) / kStagedTileBytes));
  std::int64_t mr = std::max<std::int64_t>((p.m + tiles - 1) / tiles, std::min(p.m, kMinTileRows));
  mr = std::max<std::int64_t>(1, std::min(mr, p.m));
  while (mr > 1 && need_bytes(p, mr) > budget) mr = (mr + 1) / 2;
  return need_bytes(p, mr) <= budget ? mr : 0;
}

namespace {

class StagedRun : CopyStreams {
 public:
  StagedRun(Gpu& gpu, std::string kernel, const StagedProblem& p, std::int64_t mr)
      : CopyStreams(gpu),
        kernel_(std::move(kernel)),
        p_(p),
        es_(dtype_size(p.dtype)),
        mr_(mr),
        rounds_(rounds_c(p)),
        ces_(rounds_ ? 2 : es_),
        halves_(takes_halves(p, kernel_)),
        ies_(halves_ ? 2 : es_) {
    if (mr_ <= 0) throw std::logic_error("staged GEMM without room for a tile row (Backend::stages said yes)");
    const std::string what = " (staged, " + std::to_string(mr_) + "-row tiles)";
    b_ = kernels::DeviceBuffer(static_cast<std::size_t>(p.k * p.n) * ies_, "B" + what);
    for (int s = 0; s < DoubleBuffer::kSlots; ++s) {
      a_[s] = kernels::DeviceBuffer(static_cast<std::size_t>(mr_ * p.k) * ies_, "A rows" + what);
      c_[s] = kernels::DeviceBuffer(static_cast<std::size_t>(mr_ * p.n) * es_, "C tile" + what);
      if (rounds_)
        rounded_[s] = kernels::DeviceBuffer(static_cast<std::size_t>(mr_ * p.n) * ces_, "C tile, rounded" + what);
    }
    // Slots hold whole rows: a piece, or one row where a row is larger.
    const std::size_t widest = static_cast<std::size_t>(std::max(p.k, p.n)) * es_;
    slot_bytes_ = std::max(stage_piece_bytes() / widest * widest, widest);
    staging_ = gpu.staging_of(slot_bytes_ * (kUpSlots + kDownSlots));  // kept by the backend for the next
    for (int s = 0; s < kDownSlots; ++s) free_down_.push_back(s);
  }
  StagedRun(const StagedRun&) = delete;
  StagedRun& operator=(const StagedRun&) = delete;
  ~StagedRun() { stop_writer(); }

  std::vector<PhaseTime> run() {
    writer_ = std::thread([this] { write_pieces(); });
    try {
      upload(halves_ ? p_.fill_b_half : p_.fill_b, 0, p_.k, static_cast<std::size_t>(p_.n) * ies_, b_.get());
      b_ready_.record(in());
      CUDA_CHECK(cudaStreamWaitEvent(gpu_.stream.get(), b_ready_.get(), 0));
      for (std::int64_t i0 = 0, row = 0; i0 < p_.m; i0 += mr_, ++row) tile_row(static_cast<int>(row % 2), i0);
      wait_all();
      finish_writer();
    } catch (...) {
      wait_all_quietly();
      stop_writer();
      throw;
    }
    std::vector<PhaseTime> times = phases();
    if (rounds_) times.push_back({"round C", round_s_});
    return times;
  }

 private:
  unsigned char* up_slot(int s) const { return staging_ + static_cast<std::size_t>(s) * slot_bytes_; }
  unsigned char* down_slot(int s) const { return staging_ + static_cast<std::size_t>(kUpSlots + s) * slot_bytes_; }

  // Rows [row0, row0 + rows) through the upload ring into `device` (contiguous rows of
  // `row_bytes`), on the copy-in stream: a slot is refilled once its last copy is done.
  template <class Fill>
  void upload(const Fill& fill, std::int64_t row0, std::int64_t rows, std::size_t row_bytes, void* device) {
    if (row_bytes == 0) return;
    const std::int64_t step = std::max<std::int64_t>(1, static_cast<std::int64_t>(slot_bytes_ / row_bytes));
    for (std::int64_t r = 0; r < rows; r += step) {
      const std::int64_t count = std::min(step, rows - r);
      const int s = next_up_;
      next_up_ = (next_up_ + 1) % kUpSlots;
      CUDA_CHECK(cudaEventSynchronize(up_copied_[s].get()));
      fill(row0 + r, count, up_slot(s));
      steps_.time(h2d_, in(), [&] {
        CUDA_CHECK(cudaMemcpyAsync(static_cast<unsigned char*>(device) + static_cast<std::size_t>(r) * row_bytes,
                                   up_slot(s), static_cast<std::size_t>(count) * row_bytes, cudaMemcpyHostToDevice,
                                   in()));
      });
      up_copied_[s].record(in());
    }
  }

  // One tile row (slot `t` of the A and C double buffers): its A rows up, the kernel, C down in
  // pieces for the writer.
  void tile_row(int t, std::int64_t i0) {
    const std::int64_t rows = std::min(mr_, p_.m - i0);
    a_ring_.before_fill(t, in());
    upload(halves_ ? p_.fill_a_half : p_.fill_a, i0, rows, static_cast<std::size_t>(p_.k) * ies_, a_[t].get());
    a_ring_.after_fill(t, in());
    const cudaStream_t run = gpu_.stream.get();
    a_ring_.before_use(t, run);
    c_ring_.before_fill(t, run);  // the tile two back has left this C buffer
    kernels::GpuGemm g{p_.dtype, rows, p_.n, p_.k, a_[t].get(), b_.get(), c_[t].get(), run};
    g.b_key = b_key_;  // B went up once: the same in every tile (f64-ozaki keeps its residues)
    steps_.time(kernel_s_, run, [&] {
      if (halves_)  // (cuBLAS made ready for kernel_ by the backend)
        kernels::gpu_cublas_half_stored(g, p_.operands == StagedProblem::Rounded::bf16, gpu_.context);
      else
        kernels::gpu_gemm(kernel_, g, gpu_.context);
    });
    if (rounds_)  // (behind the kernel on its stream: the C buffer is not reused before this is done)
      steps_.time(round_s_, run, [&] {
        const auto* from = c_[t].as<float>();
        if (p_.c_rounded == StagedProblem::Rounded::f16)
          kernels::gpu_round_to_f16(from, rounded_[t].get(), rows * p_.n, run);
        else
          kernels::gpu_round_to_bf16(from, rounded_[t].get(), rows * p_.n, run);
      });
    c_ring_.after_fill(t, run);
    a_ring_.after_use(t, run);
    c_ring_.before_use(t, out());
    const unsigned char* tile = rounds_ ? rounded_[t].as<unsigned char>() : c_[t].as<unsigned char>();
    const std::size_t row_bytes = static_cast<std::size_t>(p_.n) * ces_;
    const std::int64_t step = std::max<std::int64_t>(1, static_cast<std::int64_t>(slot_bytes_ / row_bytes));
    for (std::int64_t r = 0; r < rows; r += step) {
      const std::int64_t count = std::min(step, rows - r);
      const int s = take_down_slot();
      steps_.time(d2h_, out(), [&] {
        CUDA_CHECK(cudaMemcpyAsync(down_slot(s), tile + static_cast<std::size_t>(r) * row_bytes,
                                   static_cast<std::size_t>(count) * row_bytes, cudaMemcpyDeviceToHost, out()));
      });
      down_copied_[s].record(out());
      hand_to_writer({s, i0 + r, count});
    }
    c_ring_.after_use(t, out());
  }

  struct Piece {
    int slot = 0;
    std::int64_t row0 = 0, rows = 0;
  };

  // A free slot of the download ring; throws the writer's error once it failed.
  int take_down_slot() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !free_down_.empty() || write_error_; });
    if (write_error_) std::rethrow_exception(write_error_);
    const int s = free_down_.front();
    free_down_.pop_front();
    return s;
  }
  void hand_to_writer(Piece piece) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queued_.push_back(piece);
    }
    changed_.notify_all();
  }

  // The writer thread: each piece once its copy is done, to take_c, in order.
  void write_pieces() {
    (void)cudaSetDevice(gpu_.device);
    for (;;) {
      Piece piece;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return !queued_.empty() || no_more_ || stop_; });
        if (stop_ || queued_.empty()) return;
        piece = queued_.front();
        queued_.pop_front();
      }
      try {
        CUDA_CHECK(cudaEventSynchronize(down_copied_[piece.slot].get()));
        (rounds_ ? p_.take_c_rounded : p_.take_c)(piece.row0, piece.rows, down_slot(piece.slot));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        write_error_ = std::current_exception();
        changed_.notify_all();
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        free_down_.push_back(piece.slot);
      }
      changed_.notify_all();
    }
  }
  // Every piece handed over is taken; rethrows the writer's error.
  void finish_writer() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      no_more_ = true;
    }
    changed_.notify_all();
    if (writer_.joinable()) writer_.join();
    if (write_error_) std::rethrow_exception(write_error_);
  }
  // The writer stops without taking what is left (an error elsewhere).
  void stop_writer() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    if (writer_.joinable()) writer_.join();
  }

  std::string kernel_;
  const StagedProblem& p_;
  std::size_t es_;
  std::int64_t mr_;
  bool rounds_;      // C rounded to 16 bits on the GPU (rounded_), handed to take_c_rounded
  std::size_t ces_;  // bytes of an element of C as it comes back
  bool halves_;      // A and B uploaded as their stored 16-bit values (fill_a_half / fill_b_half)
  std::size_t ies_;  // bytes of an element of A and B as uploaded
  double round_s_ = 0;
  std::size_t slot_bytes_ = 0;
  kernels::DeviceBuffer b_, a_[DoubleBuffer::kSlots], c_[DoubleBuffer::kSlots], rounded_[DoubleBuffer::kSlots];
  const std::uint64_t b_key_ = kernels::new_operand_key();
  unsigned char* staging_ = nullptr;  // kUpSlots then kDownSlots slots of slot_bytes_, page-locked (gpu_.staging)
  kernels::Event b_ready_, up_copied_[kUpSlots], down_copied_[kDownSlots];
  DoubleBuffer a_ring_, c_ring_;
  int next_up_ = 0;
  // Between this thread and the writer:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<int> free_down_;
  std::deque<Piece> queued_;
  bool no_more_ = false, stop_ = false;
  std::exception_ptr write_error_;
  std::thread writer_;
};

}  // namespace

std::vector<PhaseTime> gemm_staged_on_gpu(Gpu& gpu, const std::string& kernel, const StagedProblem& p,
                                          std::int64_t tile_rows) {
  StagedRun staged(gpu, kernel, p, tile_rows);
  return staged.run();
}

}  // namespace tessera::backend
