// libtessera_scalapack: ScaLAPACK's psgemm_, pdgemm_, pcgemm_ and pzgemm_, with their exact signatures, over
// tessera's engine (issue 44; docs/scalapack.md). A program linked with -ltessera_scalapack before
// -lscalapack, or run with LD_PRELOAD=libtessera_scalapack.so, gets these instead of PBLAS's.
//
// A call, on every process of its BLACS grid:
//   1. the arguments checked as PBLAS checks them, and every reason to hand the call to the
//      system's ScaLAPACK agreed on by the grid (one MPI_Allreduce): all hand it over or none;
//   2. one exchange (exchange.hpp) brings the rows of op(A) and the columns of op(B) its block of
//      C needs; its block of C is one dense column-major block of its local array, whatever the
//      offsets (block_cyclic.hpp);
//   3. tessera::multiply computes that block in place, on the process's current CUDA device or
//      the CPU (multiply_block). Nothing else is synchronized: a process returns when its block
//      of C is complete.
// The files: block_cyclic (index math), blacs (the grid, its communicator, the system's p?gemm_),
// exchange (the one communication), environment (TESSERA_SCALAPACK*), and this one.
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <type_traits>

#include "blacs.hpp"
#include "block_cyclic.hpp"
#include "environment.hpp"
#include "exchange.hpp"
#include "tessera/tessera.hpp"

#define TESSERA_SCALAPACK_EXPORT extern "C" __attribute__((visibility("default")))

namespace tessera::scalapack {
namespace {

// One operand's sub-matrix as stored: `rows` x `cols` from 0-based (i0, j0) of the global matrix
// its descriptor describes, on a grid of nprow x npcol.
struct Sub {
  const int* desc;
  std::int64_t i0, j0, rows, cols;
  int nprow, npcol;
  Axis row_axis() const { return {desc[MB_], desc[RSRC_], nprow}; }
  Axis col_axis() const { return {desc[NB_], desc[CSRC_], npcol}; }
};

// Whether a scalar is finite (both parts of a complex one).
bool finite(float v) { return std::isfinite(v); }
bool finite(double v) { return std::isfinite(v); }
template <class R>
bool finite(std::complex<R> v) {
  return std::isfinite(v.real()) && std::isfinite(v.imag());
}

bool trans_ok(char t) { return t == 'N' || t == 'n' || t == 'T' || t == 't' || t == 'C' || t == 'c'; }
bool is_n(char t) { return t == 'N' || t == 'n'; }
bool is_c(char t) { return t == 'C' || t == 'c'; }

// Why this process cannot take the call as ScaLAPACK would ("": it can): the checks of PBLAS's
// argument checking that decide whether the call is valid.
std::string invalid(char ta, char tb, int m, int n, int k, const Sub& a, const Sub& b, const Sub& c, const Grid& g,
                    const int* const offsets[6]) {
  if (!trans_ok(ta)) return "TRANSA is not N, T or C";
  if (!trans_ok(tb)) return "TRANSB is not N, T or C";
  if (m < 0 || n < 0 || k < 0) return "M, N or K is negative";
  for (int i = 0; i < 6; ++i)
    if (*offsets[i] < 1) return "a sub-matrix index is below 1";
  const int context = c.desc[CTXT_];
  for (const Sub* s : {&a, &b, &c}) {
    const int* d = s->desc;
    if (d[DTYPE_] != kBlockCyclic2D) return "a descriptor is not BLOCK_CYCLIC_2D";
    if (d[CTXT_] != context) return "the descriptors name different BLACS contexts";
    if (d[M_] < 0 || d[N_] < 0 || d[MB_] < 1 || d[NB_] < 1) return "a descriptor's shape or block size is invalid";
    if (d[RSRC_] < 0 || d[RSRC_] >= g.nprow || d[CSRC_] < 0 || d[CSRC_] >= g.npcol)
      return "a descriptor's source process is outside the grid";
    const std::int64_t local_rows = s->row_axis().held_before(g.myrow, d[M_]);
    if (d[LLD_] < std::max<std::int64_t>(1, local_rows)) return "a descriptor's LLD is below its local rows";
    if (s->rows > 0 && s->cols > 0 && (s->i0 + s->rows > d[M_] || s->j0 + s->cols > d[N_]))
      return "a sub-matrix reaches past its matrix";
  }
  return "";
}

// Memory this machine has free now, in bytes (MemAvailable; 0 when unknown).
std::int64_t memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::int64_t kb = 0;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

// The reasons to hand a call over, as bits: each process's, then the grid's (MPI_BOR).
enum : int { kInvalid = 1, kTooBig = 2, kTooSmall = 4, kSwitchedOff = 8, kNonfinite = 16 };

const char* reason(int agreed, const std::string& why) {
  if (agreed & kInvalid) return why.empty() ? "an argument is invalid on another process" : why.c_str();
  if (agreed & kSwitchedOff) return "TESSERA_SCALAPACK=scalapack";
  if (agreed & kNonfinite) return "alpha or beta is NaN or Inf";
  if (agreed & kTooBig) return "its panels would not fit the memory free";
  return "too small to gain (TESSERA_SCALAPACK_MIN_FLOPS)";
}

// C = beta C on this process's block of C's sub-matrix (alpha = 0 or K = 0): beta = 0 sets it
// to zero without reading it, as ScaLAPACK does.
template <class T>
void scale_local(T* c, std::int64_t lld, const Span& rows, const Span& cols, T beta) {
  for (std::int64_t j = 0; j < cols.count; ++j) {
    T* col = c + rows.local0 + (cols.local0 + j) * lld;
    for (std::int64_t i = 0; i < rows.count; ++i) col[i] = beta == T(0) ? T(0) : beta * col[i];
  }
}

// This process's block of C (column-major, `ldc`) = alpha op(A) op(B) + beta C from its panels: as
// tessera's row-major matrices, C^T = op(B)^T op(A)^T with the panels read as their transposes.
// tessera leaves C as it was after a failure, so a backend that fails (a GPU out of memory) hands
// the block to the CPU; one the CPU cannot do either ends the job. Returns the backend that ran.
template <class T>
std::string multiply_block(const Panel<T>& pa, const Panel<T>& pb, T* cblock, std::int64_t rows, std::int64_t cols,
                           std::int64_t ldc, char ta, char tb, T alpha, T beta, const Grid& g, MPI_Comm comm) {
  const tessera::Matrix ea(pb.data, pb.cols, pb.rows, pb.ld);
  const tessera::Matrix eb(pa.data, pa.cols, pa.rows, pa.ld);
  const tessera::Matrix ec(cblock, cols, rows, ldc);
  std::string backend = backend_choice();
  for (;;) {
    try {
      // op(B)^T is the panel's row-major view (N), its transpose (T) or its conjugate transpose
      // (C: (B^H)^T = conj(B)); likewise op(A)^T.
      tessera::Options o;
      if constexpr (std::is_floating_point_v<T>)
        o.alpha(static_cast<double>(alpha)).beta(static_cast<double>(beta));
      else
        o.alpha(std::complex<double>(alpha)).beta(std::complex<double>(beta));
      o.transpose_a(!is_n(tb)).transpose_b(!is_n(ta)).conjugate_a(is_c(tb)).conjugate_b(is_c(ta));
      o.allow_nonfinite(true).backend(backend);
      const tessera::Result r = tessera::multiply(ea, eb, ec, o);
      if (!verbose()) return backend;
      std::string said = r.backend() + ", kernel " + r.kernel() + ";";  // (reading the report makes it: ~20 us)
      for (const std::string& phase : r.phase_names(0))
        said += " " + phase + " " + std::to_string(r.phase_seconds(0, phase)).substr(0, 6);
      return said;
    } catch (const std::exception& e) {
      if (backend != "cpu") {
        std::fprintf(stderr,
                     "tessera %s: the %s backend failed on grid process (%d,%d) (%s); the CPU takes its block\n",
                     routine_name<T>(), backend.c_str(), g.myrow, g.mycol, e.what());
        backend = "cpu";
        continue;
      }
      std::fprintf(stderr, "tessera %s: grid process (%d,%d) cannot multiply its block of C: %s\n", routine_name<T>(),
                   g.myrow, g.mycol, e.what());
      MPI_Abort(comm, 1);
      return "";
    }
  }
}

template <class T>
void pgemm(const char* transa, const char* transb, const int* m, const int* n, const int* k, const T* alpha, const T* a,
           const int* ia, const int* ja, const int* desca, const T* b, const int* ib, const int* jb, const int* descb,
           const T* beta, T* c, const int* ic, const int* jc, const int* descc) {
  auto hand_back = [&] {
    system_pgemm<T>()(transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc, descc);
  };
  const Grid g = grid_info(descc[CTXT_]);
  if (!g.inside()) return hand_back();  // outside the grid (or an invalid context): ScaLAPACK's answer

  // ---- 1. the arguments, and the grid's agreement ----------------------------------------------
  const auto t0 = std::chrono::steady_clock::now();
  const char ta = *transa, tb = *transb;
  const std::int64_t M = *m, N = *n, K = *k;
  const bool na = is_n(ta), nb = is_n(tb);
  const Sub sa{desca, std::int64_t{*ia} - 1, std::int64_t{*ja} - 1, na ? M : K, na ? K : M, g.nprow, g.npcol};
  const Sub sb{descb, std::int64_t{*ib} - 1, std::int64_t{*jb} - 1, nb ? K : N, nb ? N : K, g.nprow, g.npcol};
  const Sub sc{descc, std::int64_t{*ic} - 1, std::int64_t{*jc} - 1, M, N, g.nprow, g.npcol};
  const int* const offsets[6] = {ia, ja, ib, jb, ic, jc};
  std::string why = invalid(ta, tb, *m, *n, *k, sa, sb, sc, g, offsets);

  MPI_Comm comm = grid_comm(descc[CTXT_]);
  int rank = -1;
  MPI_Comm_rank(comm, &rank);
  if (why.empty() && rank != g.me()) why = "the grid's communicator does not number it row-major";

  // C's layout is looked at only once the arguments are valid (a block size of 0 divides by it).
  const Axis c_rows = sc.row_axis(), c_cols = sc.col_axis();
  const Span my_rows = why.empty() ? held_span(M, sc.i0, c_rows, g.myrow) : Span{};
  const Span my_cols = why.empty() ? held_span(N, sc.j0, c_cols, g.mycol) : Span{};
  // Every reason is agreed on, even those every process should see alike: an environment
  // variable a launcher set on some ranks only must not leave the others waiting.
  int code = 0;
  if (mode() == Mode::scalapack) code |= kSwitchedOff;
  if (!finite(*alpha) || !finite(*beta)) code |= kNonfinite;
  if (!why.empty()) {
    code |= kInvalid;
  } else {
    // Both panels and what this process sends must fit the memory free on its machine
    // (/proc/meminfo costs ~20 us a read: only for panels large enough to matter).
    const double bytes = (double(my_rows.count) + double(my_cols.count)) * double(K) * 2 * sizeof(T);
    const std::int64_t avail = bytes > double(kKeepBytes) ? memory_available() : 0;
    if (avail > 0 && bytes > 0.5 * double(avail)) code |= kTooBig;
    if (mode() == Mode::automatic && !worth_it(M, N, K)) code |= kTooSmall;
  }
  int agreed = 0;
  MPI_Allreduce(&code, &agreed, 1, MPI_INT, MPI_BOR, comm);
  const bool say = verbose() && rank == 0;
  if (agreed != 0) {
    if (say)
      std::fprintf(stderr, "tessera %s: %lldx%lldx%lld handed to ScaLAPACK: %s\n", routine_name<T>(), (long long)M,
                   (long long)N, (long long)K, reason(agreed, why));
    return hand_back();
  }

  // From here on every process works on its own: a failure it cannot recover from (memory for a
  // panel, a block of C no backend can multiply) ends the job rather than leave the others
  // waiting for its messages.
  try {
    // ScaLAPACK's quick returns.
    if (M == 0 || N == 0 || *alpha == T(0) || K == 0) {
      if (M > 0 && N > 0 && *beta != T(1)) scale_local(c, descc[LLD_], my_rows, my_cols, *beta);
      if (say)
        std::fprintf(stderr, "tessera %s: %lldx%lldx%lld %c%c on a %dx%d grid: tessera (nothing to multiply)\n",
                     routine_name<T>(), (long long)M, (long long)N, (long long)K, ta, tb, g.nprow, g.npcol);
      return;
    }

    // ---- 2. the exchange: A's panel, op(A)'s rows this process's C rows need, all K; B's,
    // op(B)'s columns, all K ---------------------------------------------------------------------
    const std::int64_t ldc = descc[LLD_];
    T* const cblock = c + my_rows.local0 + my_cols.local0 * ldc;
    const bool has_block = my_rows.count > 0 && my_cols.count > 0;
    const auto c_begin = reinterpret_cast<std::uintptr_t>(cblock);
    const auto c_end =
        has_block ? c_begin + static_cast<std::uintptr_t>((my_cols.count - 1) * ldc + my_rows.count) * sizeof(T)
                  : c_begin;
    const Exchange<T> xa{a,
                         desca[LLD_],
                         na ? runs(sa.rows, sa.i0, sa.row_axis(), sc.i0, c_rows) : runs(sa.rows, sa.i0, sa.row_axis()),
                         na ? runs(sa.cols, sa.j0, sa.col_axis()) : runs(sa.cols, sa.j0, sa.col_axis(), sc.i0, c_rows),
                         na,
                         true,
                         my_rows.count,
                         g,
                         c_begin,
                         c_end};
    const Exchange<T> xb{b,
                         descb[LLD_],
                         nb ? runs(sb.rows, sb.i0, sb.row_axis()) : runs(sb.rows, sb.i0, sb.row_axis(), sc.j0, c_cols),
                         nb ? runs(sb.cols, sb.j0, sb.col_axis(), sc.j0, c_cols) : runs(sb.cols, sb.j0, sb.col_axis()),
                         !nb,
                         false,
                         my_cols.count,
                         g,
                         c_begin,
                         c_end};
    struct Trim {
      ~Trim() { buffers().trim(); }
    } trim_at_return;
    const Panel<T> pa = exchange(xa, buffers().panel[0], comm);
    const Panel<T> pb = exchange(xb, buffers().panel[1], comm);
    const auto t1 = std::chrono::steady_clock::now();

    // ---- 3. this process's block of C ------------------------------------------------------------
    const std::string ran =
        has_block ? multiply_block(pa, pb, cblock, my_rows.count, my_cols.count, ldc, ta, tb, *alpha, *beta, g, comm)
                  : "nothing (no block of C here)";
    if (say) {
      const auto t2 = std::chrono::steady_clock::now();
      std::fprintf(stderr,
                   "tessera %s: %lldx%lldx%lld %c%c on a %dx%d grid: tessera (%s), exchange %.4f s, multiply %.4f s\n",
                   routine_name<T>(), (long long)M, (long long)N, (long long)K, ta, tb, g.nprow, g.npcol, ran.c_str(),
                   std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera %s: grid process (%d,%d) failed: %s\n", routine_name<T>(), g.myrow, g.mycol,
                 e.what());
    MPI_Abort(comm, 1);
  }
}

}  // namespace
}  // namespace tessera::scalapack

TESSERA_SCALAPACK_EXPORT void psgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                                      const float* alpha, const float* a, const int* ia, const int* ja,
                                      const int* desca, const float* b, const int* ib, const int* jb, const int* descb,
                                      const float* beta, float* c, const int* ic, const int* jc, const int* descc) {
  tessera::scalapack::pgemm<float>(transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc,
                                   descc);
}

TESSERA_SCALAPACK_EXPORT void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                                      const double* alpha, const double* a, const int* ia, const int* ja,
                                      const int* desca, const double* b, const int* ib, const int* jb, const int* descb,
                                      const double* beta, double* c, const int* ic, const int* jc, const int* descc) {
  tessera::scalapack::pgemm<double>(transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc,
                                    descc);
}

TESSERA_SCALAPACK_EXPORT void pcgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                                      const std::complex<float>* alpha, const std::complex<float>* a, const int* ia,
                                      const int* ja, const int* desca, const std::complex<float>* b, const int* ib,
                                      const int* jb, const int* descb, const std::complex<float>* beta,
                                      std::complex<float>* c, const int* ic, const int* jc, const int* descc) {
  tessera::scalapack::pgemm<std::complex<float>>(transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb,
                                                 beta, c, ic, jc, descc);
}

TESSERA_SCALAPACK_EXPORT void pzgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                                      const std::complex<double>* alpha, const std::complex<double>* a, const int* ia,
                                      const int* ja, const int* desca, const std::complex<double>* b, const int* ib,
                                      const int* jb, const int* descb, const std::complex<double>* beta,
                                      std::complex<double>* c, const int* ic, const int* jc, const int* descc) {
  tessera::scalapack::pgemm<std::complex<double>>(transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb,
                                                  beta, c, ic, jc, descc);
}
