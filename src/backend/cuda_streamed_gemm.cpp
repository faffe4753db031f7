// The CUDA backend's streamed GEMM (cuda_gemm.hpp): C in mr x nc tiles streamed through the GPU,
// double-buffered on three streams so the copies overlap the kernels: the A rows of the next tile
// row and the B columns of the next tile go up (copy-in stream) while the current tile multiplies
// (compute stream) and the last tile comes back into its place in the host C (copy-out stream).
// DoubleBuffers order them; the host only enqueues. B is uploaded once in all when nc = n, else
// once per tile.
//
// Out of core when the GEMM does not fit the budget; also the in-core path for large GEMMs (then
// at least `min_row_tiles` tiles of rows, for the overlap alone) and for streamed ones (A's rows
// arriving, C's rows awaited: RowProgress).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda_gemm.hpp"
#include "backend/double_buffer.hpp"
#include "backend/step_times.hpp"
#include "core/error.hpp"
#include "kernels/cuda_check.hpp"

namespace tessera::backend {
namespace {

struct Tiles {
  std::int64_t rows = 0, cols = 0;  // mr, nc
};

// Tile shape: tall and narrow (B, the part that is re-sent, costs (M / mr) K N words in all): nc
// is narrowed to 1024 columns first, then mr is halved, then both, until two of each buffer fit
// the budget. Then at least `min_row_tiles` tiles of rows.
Tiles choose_tiles(const GemmProblem& p, std::size_t budget, std::int64_t min_row_tiles, int device) {
  const std::size_t elem = dtype_size(p.dtype);
  const auto need = [&](std::int64_t mr, std::int64_t nc) {
    const double b_words = nc == p.n ? static_cast<double>(p.k * nc) : 2.0 * static_cast<double>(p.k * nc);
    return (2.0 * static_cast<double>(mr * p.k + mr * nc) + b_words) * static_cast<double>(elem);
  };
  std::int64_t mr = p.m, nc = p.n;
  const std::int64_t narrow = std::min<std::int64_t>(p.n, 1024), short_rows = std::min<std::int64_t>(p.m, 1024);
  while (need(mr, nc) > static_cast<double>(budget) && (mr > 1 || nc > 1)) {
    if (nc > narrow)
      nc = std::max(narrow, (nc + 1) / 2);
    else if (mr > short_rows)
      mr = std::max(short_rows, (mr + 1) / 2);
    else if (mr >= nc)
      mr = (mr + 1) / 2;
    else
      nc = (nc + 1) / 2;
  }
  if (need(mr, nc) > static_cast<double>(budget))
    throw DeviceError(
        "GPU " + std::to_string(device) + ": even one row of A and one column of B (K=" + std::to_string(p.k) +
        "), twice for double buffering, need " + kernels::format_bytes(need(1, 1)) + ", over the " +
        kernels::format_bytes(static_cast<double>(budget)) + " allowed: raise the memory allowed, or split K");
  if ((p.m + mr - 1) / mr < min_row_tiles) mr = (p.m + min_row_tiles - 1) / min_row_tiles;
  return {mr, nc};
}

class StreamedGemm : CopyStreams {
 public:
  StreamedGemm(Gpu& gpu, std::string kernel, const GemmProblem& p, Tiles tiles, bool out_of_core)
      : CopyStreams(gpu),
        kernel_(std::move(kernel)),
        p_(p),
        elem_(dtype_size(p.dtype)),
        t_(tiles),
        b_once_(tiles.cols == p.n),
        done_(static_cast<std::size_t>((p.m + tiles.rows - 1) / tiles.rows)) {
    const std::string what = std::string(out_of_core ? " (out of core, " : " (pipelined, ") + std::to_string(t_.rows) +
                             "x" + std::to_string(t_.cols) + " tiles)";
    for (int s = 0; s < DoubleBuffer::kSlots; ++s) {
      a_[s] = kernels::DeviceBuffer(static_cast<std::size_t>(t_.rows * p.k) * elem_, "A rows" + what);
      if (s == 0 || !b_once_)
        b_[s] = kernels::DeviceBuffer(static_cast<std::size_t>(p.k * t_.cols) * elem_, "B columns" + what);
      c_[s] = kernels::DeviceBuffer(static_cast<std::size_t>(t_.rows * t_.cols) * elem_, "C tile" + what);
    }
  }

  // Enqueues every tile, waits for them; on an error (the reader of A giving up, a fault reported
  // by a synchronize) the enqueued work is waited for before the buffers and done_ go.
  std::vector<PhaseTime> run() {
    try {
      if (b_once_)  // all of B, once
        b_ring_.fill(0, in(), [&] {
          steps_.time(h2d_, in(), [&] {
            CUDA_CHECK(cudaMemcpyAsync(b_[0].get(), p_.b, offset(p_.k * p_.n), cudaMemcpyHostToDevice, in()));
          });
        });
      std::int64_t tile = 0;
      for (std::int64_t i0 = 0, row = 0; i0 < p_.m; i0 += t_.rows, ++row) tile_row(row, i0, tile);
      wait_all();
    } catch (...) {
      wait_all_quietly();
      throw;
    }
    return phases();
  }

 private:
  // Tile row `row` (rows i0 ...): its A rows up, once they have arrived; then its tiles; then,
  // streaming, a host callback on the copy-out stream publishes the row once it is in host memory.
  void tile_row(std::int64_t row, std::int64_t i0, std::int64_t& tile) {
    const std::int64_t rows = std::min(t_.rows, p_.m - i0);
    const int sa = static_cast<int>(row % 2);
    if (p_.a_rows) p_.a_rows->wait_for(i0 + rows);
    a_ring_.fill(sa, in(), [&] {
      steps_.time(h2d_, in(), [&] {
        CUDA_CHECK(cudaMemcpyAsync(a_[sa].get(), static_cast<const unsigned char*>(p_.a) + offset(i0 * p_.k),
                                   static_cast<std::size_t>(rows * p_.k) * elem_, cudaMemcpyHostToDevice, in()));
      });
    });
    for (std::int64_t j0 = 0; j0 < p_.n; j0 += t_.cols, ++tile)
      multiply_tile(sa, i0, rows, j0, static_cast<int>(tile % 2));
    if (p_.c_rows) {
      RowsDone& d = done_[static_cast<std::size_t>(row)];
      d = {p_.c_rows, i0 + rows};
      CUDA_CHECK(cudaLaunchHostFunc(out(), publish, &d));
    }
  }

  // One C tile in slot `st`: its B columns up (unless B went up once), the kernel, the tile down.
  void multiply_tile(int sa, std::int64_t i0, std::int64_t rows, std::int64_t j0, int st) {
    const std::int64_t cols = std::min(t_.cols, p_.n - j0);
    const int sb = b_once_ ? 0 : st;
    if (!b_once_) b_ring_.fill(sb, in(), [&] { steps_.time(h2d_, in(), [&] { upload_b(sb, j0, cols); }); });
    const cudaStream_t run = gpu_.stream.get();
    a_ring_.before_use(sa, run);
    b_ring_.before_use(sb, run);
    c_ring_.before_fill(st, run);  // the tile two back has left this C buffer
    kernels::GpuGemm g{p_.dtype, rows, cols, p_.k, a_[sa].get(), b_[sb].get(), c_[st].get(), run};
    if (b_once_) g.b_key = b_key_;  // all of B went up once: the same in every tile
    steps_.time(kernel_s_, run, [&] { kernels::gpu_gemm(kernel_, g, gpu_.context); });
    c_ring_.after_fill(st, run);
    a_ring_.after_use(sa, run);
    if (!b_once_) b_ring_.after_use(sb, run);
    c_ring_.use(st, out(), [&] {
      steps_.time(d2h_, out(), [&] {
        CUDA_CHECK(cudaMemcpy2DAsync(static_cast<unsigned char*>(p_.c) + offset(i0 * p_.n + j0),
                                     static_cast<std::size_t>(p_.n) * elem_, c_[st].get(),
                                     static_cast<std::size_t>(cols) * elem_, static_cast<std::size_t>(cols) * elem_,
                                     static_cast<std::size_t>(rows), cudaMemcpyDeviceToHost, out()));
      });
    });
  }

  // Columns [j0, j0 + cols) of B (all K rows) into B buffer `sb`, on the copy-in stream.
  void upload_b(int sb, std::int64_t j0, std::int64_t cols) {
    CUDA_CHECK(cudaMemcpy2DAsync(b_[sb].get(), static_cast<std::size_t>(cols) * elem_,
                                 static_cast<const unsigned char*>(p_.b) + offset(j0),
                                 static_cast<std::size_t>(p_.n) * elem_, static_cast<std::size_t>(cols) * elem_,
                                 static_cast<std::size_t>(p_.k), cudaMemcpyHostToDevice, in()));
  }

  std::size_t offset(std::int64_t elements) const { return static_cast<std::size_t>(elements) * elem_; }

  // What a host callback publishes: C's rows up to `rows` are in host memory.
  struct RowsDone {
    RowProgress* progress = nullptr;
    std::int64_t rows = 0;
  };
  static void publish(void* what) {
    const auto* d = static_cast<const RowsDone*>(what);
    d->progress->publish(d->rows);
  }

  std::string kernel_;
  const GemmProblem& p_;
  std::size_t elem_;
  Tiles t_;
  bool b_once_;
  const std::uint64_t b_key_ = kernels::new_operand_key();  // (used where b_once_)
  std::vector<RowsDone> done_;                              // outlives the streams' work (run() waits for it)
  kernels::DeviceBuffer a_[DoubleBuffer::kSlots], b_[DoubleBuffer::kSlots], c_[DoubleBuffer::kSlots];
  DoubleBuffer a_ring_, b_ring_, c_ring_;
};

}  // namespace

std::vector<PhaseTime> gemm_streamed(Gpu& gpu, const std::string& kernel, const GemmProblem& p, std::size_t budget,
                                     std::int64_t min_row_tiles, bool out_of_core, std::string* note) {
  const Tiles tiles = choose_tiles(p, budget, min_row_tiles, gpu.device);
  StreamedGemm gemm(gpu, kernel, p, tiles, out_of_core);
  auto phases = gemm.run();
  if (out_of_core)
    *note = "out of core: C in " + std::to_string(tiles.rows) + "x" + std::to_string(tiles.cols) + " tiles within " +
            kernels::format_bytes(static_cast<double>(budget)) +
            " of GPU memory, copies overlapping the kernels (phase times overlap)";
  return phases;
}

}  // namespace tessera::backend
