#pragma once
// BLACS and the system's ScaLAPACK as libtessera_scalapack meets them: a call's grid, the grid's
// communicator, and the system's p?gemm_ that a call is handed to (docs/scalapack.md).
#include <mpi.h>

#include <complex>
#include <type_traits>

namespace tessera::scalapack {

// ScaLAPACK's array descriptor (DESC_ of length 9; block-cyclic only).
enum { DTYPE_ = 0, CTXT_, M_, N_, MB_, NB_, RSRC_, CSRC_, LLD_ };
constexpr int kBlockCyclic2D = 1;

// A BLACS grid as this process sees it (myrow, mycol -1: outside it).
struct Grid {
  int nprow = 0, npcol = 0, myrow = -1, mycol = -1;
  bool inside() const { return nprow > 0 && npcol > 0 && myrow >= 0 && mycol >= 0; }
  int size() const { return nprow * npcol; }
  int rank_of(int r, int c) const { return r * npcol + c; }  // in grid_comm: row-major, as BLACS numbers
  int me() const { return rank_of(myrow, mycol); }
};
Grid grid_info(int context);

// A duplicate of the BLACS grid's own communicator, made at the grid's first call (collective
// over its processes) and cached as an attribute of BLACS's communicator: freed with it when the
// grid is exited, so a context number BLACS reuses later never finds a stale one.
MPI_Comm grid_comm(int context);

// psgemm_ / pdgemm_ / pcgemm_ / pzgemm_ as ScaLAPACK declares them (its COMPLEX and COMPLEX*16 are
// laid out as std::complex<float> and std::complex<double>).
template <class T>
using Pgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const T*, const T*, const int*,
                       const int*, const int*, const T*, const int*, const int*, const int*, const T*, T*, const int*,
                       const int*, const int*);

template <class T>
const char* routine_name() {
  if constexpr (std::is_same_v<T, float>) return "psgemm_";
  if constexpr (std::is_same_v<T, double>) return "pdgemm_";
  if constexpr (std::is_same_v<T, std::complex<float>>) return "pcgemm_";
  return "pzgemm_";
}

// The system's p?gemm_: the next definition after this library in the process's lookup order
// (the -lscalapack an application links after -ltessera_scalapack, or the program's own under
// LD_PRELOAD), else the ScaLAPACK this library was built against, loaded now. None: the process
// ends, naming both.
template <class T>
Pgemm<T> system_pgemm();

}  // namespace tessera::scalapack
