#include "io/operand.hpp"

#include <algorithm>
#include <complex>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace tessera::io {

namespace {

// Tiles small enough that a tile of the input and one of the output stay in L1 together.
constexpr std::int64_t kTile = 32;
// Below this many elements one thread does it: starting threads costs more than it saves.
constexpr std::int64_t kThreadedElements = std::int64_t{1} << 20;

// Scratch for one piece of a transposed read.
constexpr std::size_t kPieceBytes = std::size_t{64} << 20;

// Output rows [c0, c1) (input columns) of out = in^T, out's rows `ld` apart.
template <typename T>
void transpose_stripe(const T* in, std::int64_t rows, std::int64_t cols, T* out, std::int64_t ld, std::int64_t c0,
                      std::int64_t c1) {
  for (std::int64_t cb = c0; cb < c1; cb += kTile) {
    const std::int64_t ce = std::min(cb + kTile, c1);
    for (std::int64_t rb = 0; rb < rows; rb += kTile) {
      const std::int64_t re = std::min(rb + kTile, rows);
      for (std::int64_t c = cb; c < ce; ++c)
        for (std::int64_t r = rb; r < re; ++r) out[c * ld + r] = in[r * cols + c];
    }
  }
}

template <typename T>
void transpose_typed(const T* in, std::int64_t rows, std::int64_t cols, T* out, std::int64_t ld) {
  const std::int64_t elements = rows * cols;
  const auto hw = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  const std::int64_t threads = elements < kThreadedElements ? 1 : std::min<std::int64_t>({hw, 16, cols});
  if (threads <= 1) {
    transpose_stripe(in, rows, cols, out, ld, 0, cols);
    return;
  }
  std::vector<std::thread> pool;
  for (std::int64_t t = 0; t < threads; ++t)
    pool.emplace_back(transpose_stripe<T>, in, rows, cols, out, ld, cols * t / threads, cols * (t + 1) / threads);
  for (auto& th : pool) th.join();
}

}  // namespace

void transpose(const void* in, std::int64_t rows, std::int64_t cols, std::size_t esize, void* out,
               std::int64_t ld_out) {
  if (rows <= 0 || cols <= 0) return;
  const std::int64_t ld = ld_out > 0 ? ld_out : rows;
  if ((rows == 1 || cols == 1) && ld == rows) {  // a vector into contiguous memory: the same bytes
    std::memcpy(out, in, static_cast<std::size_t>(rows * cols) * esize);
    return;
  }
  struct Pair {  // a complex128, moved as it is
    std::uint64_t re, im;
  };
  if (esize == 16)
    transpose_typed(static_cast<const Pair*>(in), rows, cols, static_cast<Pair*>(out), ld);
  else if (esize == 8)
    transpose_typed(static_cast<const std::uint64_t*>(in), rows, cols, static_cast<std::uint64_t*>(out), ld);
  else if (esize == 4)
    transpose_typed(static_cast<const std::uint32_t*>(in), rows, cols, static_cast<std::uint32_t*>(out), ld);
  else
    throw Error("transpose: unsupported element size " + std::to_string(esize));
}

DatasetInfo inspect_operand(const Operand& op) {
  DatasetInfo info = inspect(op.ref);
  if (op.transposed) std::swap(info.rows, info.cols);
  return info;
}

namespace {
template <typename R>
void conjugate(void* data, std::int64_t count) {
  auto* x = static_cast<std::complex<R>*>(data);
  for (std::int64_t i = 0; i < count; ++i) x[i] = std::conj(x[i]);
}
void read_plain_or_transposed(const Operand& op, std::int64_t row0, std::int64_t nrows, std::int64_t col0,
                              std::int64_t ncols, DType as, void* out);
}  // namespace

void read_operand_block(const Operand& op, std::int64_t row0, std::int64_t nrows, std::int64_t col0, std::int64_t ncols,
                        DType as, void* out) {
  read_plain_or_transposed(op, row0, nrows, col0, ncols, as, out);
  if (op.conjugated && as == DType::c64) conjugate<float>(out, nrows * ncols);
  if (op.conjugated && as == DType::c128) conjugate<double>(out, nrows * ncols);
}

namespace {
void read_plain_or_transposed(const Operand& op, std::int64_t row0, std::int64_t nrows, std::int64_t col0,
                              std::int64_t ncols, DType as, void* out) {
  if (!op.transposed) {
    read_block(op.ref, row0, nrows, col0, ncols, as, out);
    return;
  }
  if (nrows == 1 || ncols == 1) {  // a vector of the transpose is the same bytes as the stored one
    read_block(op.ref, col0, ncols, row0, nrows, as, out);
    return;
  }
  // Pieces of the operand's columns (the stored rows): each read whole, then transposed into
  // its columns of `out`.
  const std::size_t es = dtype_size(as);
  const std::size_t stored_row_bytes = static_cast<std::size_t>(nrows) * es;
  const std::int64_t step = std::max<std::int64_t>(1, static_cast<std::int64_t>(kPieceBytes / stored_row_bytes));
  std::vector<unsigned char> stored(static_cast<std::size_t>(std::min(step, ncols)) * stored_row_bytes);
  for (std::int64_t c = 0; c < ncols; c += step) {
    const std::int64_t width = std::min(step, ncols - c);
    read_block(op.ref, col0 + c, width, row0, nrows, as, stored.data());
    transpose(stored.data(), width, nrows, es, static_cast<unsigned char*>(out) + static_cast<std::size_t>(c) * es,
              ncols);
  }
}

}  // namespace

}  // namespace tessera::io
