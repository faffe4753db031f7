#include "job/freivalds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

namespace tessera::job {

namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64: every rank draws the same x_q for column q
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Accumulated in float64, or complex float64 for complex matrices (x is a real sign vector in both).
template <class T>
struct Acc {
  using type = double;
};
template <class R>
struct Acc<std::complex<R>> {
  using type = std::complex<double>;
};

bool finite(double v) { return std::isfinite(v); }
bool finite(std::complex<double> v) { return std::isfinite(v.real()) && std::isfinite(v.imag()); }

// The communicator's sum of `v`'s elements in place (a complex one as its two parts).
void sum_in_place(const comm::Comm& row, std::vector<double>& v) { row.sum_in_place(v.data(), v.size()); }
void sum_in_place(const comm::Comm& row, std::vector<std::complex<double>>& v) {
  row.sum_in_place(reinterpret_cast<double*>(v.data()), 2 * v.size());
}

template <class A>
struct Sums {                  // one block's contributions for one vector
  std::vector<A> bx;           // K: B_j x_j
  std::vector<double> bx_abs;  // K: |B_j||x_j|
  std::vector<A> cx;           // rows_i: C_ij x_j
};

template <class T, class A = typename Acc<T>::type>
void local_products(const partition::Partition& part, int rank, const T* b, const T* c, const std::vector<double>& x,
                    Sums<A>& s, long long& nonfinite, bool count_nonfinite) {
  const auto cols = part.cols_of(rank), rows = part.rows_of(rank);
  const std::int64_t nc = cols.size(), k = part.k();
  s.bx.assign(static_cast<std::size_t>(k), A(0));
  s.bx_abs.assign(static_cast<std::size_t>(k), 0.0);
  s.cx.assign(static_cast<std::size_t>(rows.size()), A(0));
  for (std::int64_t p = 0; p < k; ++p) {
    A acc(0);
    double acc_abs = 0;
    const T* brow = b + p * nc;
    for (std::int64_t q = 0; q < nc; ++q) {
      const auto v = static_cast<A>(brow[q]);
      acc += v * x[static_cast<std::size_t>(q)];
      acc_abs += std::abs(v);
    }
    s.bx[static_cast<std::size_t>(p)] = acc;
    s.bx_abs[static_cast<std::size_t>(p)] = acc_abs;
  }
  for (std::int64_t i = 0; i < rows.size(); ++i) {
    A acc(0);
    const T* crow = c + i * nc;
    for (std::int64_t q = 0; q < nc; ++q) {
      const auto v = static_cast<A>(crow[q]);
      if (!finite(v)) {
        if (count_nonfinite) ++nonfinite;
        continue;
      }
      acc += v * x[static_cast<std::size_t>(q)];
    }
    s.cx[static_cast<std::size_t>(i)] = acc;
  }
}

template <class T, class A = typename Acc<T>::type>
void row_products(const partition::Partition& part, int rank, const T* a, const Sums<A>& s, std::vector<A>& abx,
                  std::vector<double>& abx_abs) {
  const auto rows = part.rows_of(rank);
  const std::int64_t k = part.k();
  abx.assign(static_cast<std::size_t>(rows.size()), A(0));
  abx_abs.assign(static_cast<std::size_t>(rows.size()), 0.0);
  for (std::int64_t i = 0; i < rows.size(); ++i) {
    A acc(0);
    double acc_abs = 0;
    const T* arow = a + i * k;
    for (std::int64_t p = 0; p < k; ++p) {
      const auto v = static_cast<A>(arow[p]);
      acc += v * s.bx[static_cast<std::size_t>(p)];
      acc_abs += std::abs(v) * s.bx_abs[static_cast<std::size_t>(p)];
    }
    abx[static_cast<std::size_t>(i)] = acc;
    abx_abs[static_cast<std::size_t>(i)] = acc_abs;
  }
}

template <class T>
FreivaldsResult run(const comm::Comm& comm, const partition::Partition& part, DType dtype, const T* a, const T* b,
                    const T* c, int vectors, double safety, std::uint64_t seed) {
  const int rank = comm.rank();
  const bool active = part.active(rank);
  // One communicator per block-row: the ranks whose partial sums add up to Bx and Cx.
  const comm::Comm row = comm.split(active ? part.block_row(rank) : -1);
  const double n = static_cast<double>(part.n());
  // A complex product's elements carry sqrt(2) gamma_(K+2) of |A||B| (Higham, sec. 3.6).
  const double scale = is_complex(dtype) ? safety * std::sqrt(2.0) * gamma_bound(dtype, part.k() + 2) / std::sqrt(n)
                                         : safety * gamma_bound(dtype, part.k()) / std::sqrt(n);
  // Our own float64 sums: A(Bx) and Cx each carry at most gamma_{K+N}(f64) of |A||B||x|.
  const double own = 4 * gamma_bound(DType::f64, part.k() + part.n());

  FreivaldsResult res;
  res.vectors = vectors;
  long long nonfinite = 0;
  double max_ratio = 0, max_rel = 0;
  using A = typename Acc<T>::type;
  Sums<A> s;
  std::vector<A> abx;
  std::vector<double> abx_abs, x;
  for (int v = 0; v < vectors; ++v) {
    if (!active) continue;
    const auto cols = part.cols_of(rank);
    x.resize(static_cast<std::size_t>(cols.size()));
    for (std::int64_t q = 0; q < cols.size(); ++q)
      x[static_cast<std::size_t>(q)] =
          (mix(seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(v) * 0x632be59bd9b4e019ULL +
               static_cast<std::uint64_t>(cols.begin + q)) &
           1)
              ? 1.0
              : -1.0;
    local_products(part, rank, b, c, x, s, nonfinite, v == 0);
    sum_in_place(row, s.bx);
    sum_in_place(row, s.bx_abs);
    sum_in_place(row, s.cx);
    if (part.block_col(rank) != 0) continue;  // one rank per block-row compares
    row_products(part, rank, a, s, abx, abx_abs);
    double r2 = 0, ref2 = 0;
    for (std::size_t i = 0; i < abx.size(); ++i) {
      const double r = std::abs(abx[i] - s.cx[i]);
      const double bound = (scale + own) * abx_abs[i];
      const double ratio = bound > 0 ? r / bound : (r > 0 ? INFINITY : 0.0);
      max_ratio = std::max(max_ratio, std::isnan(r) ? INFINITY : ratio);
      r2 += r * r;
      ref2 += std::norm(abx[i]);
    }
    max_rel = std::max(max_rel, ref2 > 0 ? std::sqrt(r2 / ref2) : std::sqrt(r2));
  }
  res.max_ratio = comm.max(max_ratio);
  res.max_relative = comm.max(max_rel);
  res.nonfinite = static_cast<long long>(comm.sum(static_cast<double>(nonfinite)));
  res.passed = res.nonfinite == 0 && res.max_ratio <= 1.0;
  res.summary = fmt::format(
      "Freivalds check {} ({} random sign vectors): max ||A(Bx) - Cx|| / ||A(Bx)|| = {:.3e}, worst row at {:.3g} of "
      "its bound ({} x gamma_K/sqrt(N), {}, K={}){}",
      res.passed ? "PASSED" : "FAILED", vectors, res.max_relative, res.max_ratio, safety, dtype_name(dtype), part.k(),
      res.nonfinite ? fmt::format("; C has {} non-finite elements", res.nonfinite) : "");
  return res;
}

}  // namespace

FreivaldsResult freivalds(const comm::Comm& comm, const partition::Partition& part, DType storage, DType dtype,
                          const void* a, const void* b, const void* c, int vectors, double safety, std::uint64_t seed) {
  if (storage == DType::c64)
    return run(comm, part, dtype, static_cast<const std::complex<float>*>(a),
               static_cast<const std::complex<float>*>(b), static_cast<const std::complex<float>*>(c), vectors, safety,
               seed);
  if (storage == DType::c128)
    return run(comm, part, dtype, static_cast<const std::complex<double>*>(a),
               static_cast<const std::complex<double>*>(b), static_cast<const std::complex<double>*>(c), vectors,
               safety, seed);
  if (storage == DType::f32)
    return run(comm, part, dtype, static_cast<const float*>(a), static_cast<const float*>(b),
               static_cast<const float*>(c), vectors, safety, seed);
  return run(comm, part, dtype, static_cast<const double*>(a), static_cast<const double*>(b),
             static_cast<const double*>(c), vectors, safety, seed);
}

}  // namespace tessera::job
