#include "job/reads.hpp"

#include <mpi.h>

#include <algorithm>
#include <complex>
#include <functional>
#include <vector>

#include "io/hdf5_io.hpp"
#include "io/operand.hpp"
#include "job/plan.hpp"
#include "job/refusals.hpp"
#include "partition/partition.hpp"

namespace tessera::job {

namespace {

template <typename R>
void scale_complex(void* data, std::int64_t count, std::complex<double> factor) {
  auto* x = static_cast<std::complex<R>*>(data);
  const auto f = static_cast<std::complex<R>>(factor);
  for (std::int64_t i = 0; i < count; ++i) x[i] *= f;
}

// x *= factor over `count` elements of `dtype` (a real dtype: the factor's real part).
void scale(void* data, DType dtype, std::int64_t count, std::complex<double> factor) {
  if (dtype == DType::c64) {
    scale_complex<float>(data, count, factor);
  } else if (dtype == DType::c128) {
    scale_complex<double>(data, count, factor);
  } else if (dtype == DType::f32) {
    auto* x = static_cast<float*>(data);
    const auto f = static_cast<float>(factor.real());
    for (std::int64_t i = 0; i < count; ++i) x[i] *= f;
  } else {
    auto* x = static_cast<double*>(data);
    for (std::int64_t i = 0; i < count; ++i) x[i] *= factor.real();
  }
}

// Rows [row0, row0 + rows) of one operand's block (`rows` x `cols` of the file's matrix) read as
// stored, 16-bit (`half`); their NaN/Inf counted into `seen` where this rank counts them (`count`),
// positions in a matrix `width` columns wide; the time added to `seconds`. Pointers into the
// rank's Share and ReadTally, which outlive the reads.
std::function<void(std::int64_t, std::int64_t, void*)> half_rows(const io::DatasetRef& ref,
                                                                 const partition::Range* rows,
                                                                 const partition::Range* cols, const bool* count,
                                                                 io::NonfiniteCount* seen, double* seconds,
                                                                 io::Stored half, std::int64_t width) {
  return [=](std::int64_t row0, std::int64_t n, void* into) {
    const double t = MPI_Wtime();
    io::read_block_half(ref, rows->begin + row0, n, cols->begin, cols->size(), half, into);
    if (*count) seen->add_half(into, half == io::Stored::bf16, n, cols->size(), rows->begin + row0, cols->begin, width);
    *seconds += MPI_Wtime() - t;
  };
}

}  // namespace

algorithms::StagedReads rank_reads(const JobOptions& o, const algorithms::Share& share, const algorithms::Problem& p,
                                   ReadTally& tally, const std::string& kernel) {
  const algorithms::Share* s = &share;
  const DType dtype = p.dtype;
  algorithms::StagedReads reads;
  reads.a = [s, &tally, dtype, k = p.k, op = o.a](std::int64_t row0, std::int64_t rows, void* into) {
    const double t = MPI_Wtime();
    const std::int64_t cols = s->a_cols.size();
    io::read_operand_block(op, s->a_rows.begin + row0, rows, s->a_cols.begin, cols, dtype, into);
    if (s->count_a) tally.a.merge(scan_nonfinite(into, dtype, rows, cols, s->a_rows.begin + row0, s->a_cols.begin, k));
    tally.seconds += MPI_Wtime() - t;
  };
  reads.b = [s, &tally, dtype, n = p.n, alpha = std::complex<double>(o.alpha, o.alpha_imag), op = o.b](
                std::int64_t row0, std::int64_t rows, void* into) {
    const double t = MPI_Wtime();
    const std::int64_t cols = s->b_cols.size();
    io::read_operand_block(op, s->b_rows.begin + row0, rows, s->b_cols.begin, cols, dtype, into);
    if (s->count_b) tally.b.merge(scan_nonfinite(into, dtype, rows, cols, s->b_rows.begin + row0, s->b_cols.begin, n));
    if (alpha != 1.0) scale(into, dtype, rows * cols, alpha);  // B's block is the smaller
    tally.seconds += MPI_Wtime() - t;
  };
  // As stored: half_inputs means float32, alpha 1 and both operands of that one type.
  const io::Stored half = p.half_inputs == "f16"    ? io::Stored::f16
                          : p.half_inputs == "bf16" ? io::Stored::bf16
                                                    : io::Stored::same;
  if (half == io::Stored::same || o.a.transposed || o.b.transposed || kernel != "cublas-" + p.half_inputs)
    return reads;
  reads.half = half;
  reads.a_half = half_rows(o.a.ref, &share.a_rows, &share.a_cols, &share.count_a, &tally.a, &tally.seconds, half, p.k);
  reads.b_half = half_rows(o.b.ref, &share.b_rows, &share.b_cols, &share.count_b, &tally.b, &tally.seconds, half, p.n);
  return reads;
}

io::NonfiniteCount scan_old_c(const JobOptions& o, int rank, int ranks, const algorithms::Problem& p) {
  io::NonfiniteCount found;
  const partition::Range rows = partition::split(p.m, ranks, rank);
  const std::size_t row_bytes = static_cast<std::size_t>(p.n) * dtype_size(p.dtype);
  const std::int64_t step = std::max<std::int64_t>(1, static_cast<std::int64_t>((std::size_t{64} << 20) / row_bytes));
  std::vector<unsigned char> old(static_cast<std::size_t>(std::min(step, rows.size())) * row_bytes);
  const io::DatasetRef& ref = o.c;
  for (std::int64_t r = rows.begin; r < rows.end; r += step) {
    const std::int64_t count = std::min(step, rows.end - r);
    io::read_block(ref, r, count, 0, p.n, p.dtype, old.data());
    found.merge(scan_nonfinite(old.data(), p.dtype, count, p.n, r, 0, p.n));
  }
  return found;
}

}  // namespace tessera::job
