#include "blacs.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

// BLACS, inside the system's ScaLAPACK (its C interface; Debian ships no header for it).
extern "C" {
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_get(int context, int what, int* value);
MPI_Comm Cblacs2sys_handle(int system_handle);
}

namespace tessera::scalapack {

namespace {

int comm_keyval = MPI_KEYVAL_INVALID;

int free_cached_comm(MPI_Comm, int, void* value, void*) {
  auto* dup = static_cast<MPI_Comm*>(value);
  MPI_Comm_free(dup);
  delete dup;
  return MPI_SUCCESS;
}

}  // namespace

Grid grid_info(int context) {
  Grid g;
  Cblacs_gridinfo(context, &g.nprow, &g.npcol, &g.myrow, &g.mycol);
  return g;
}

MPI_Comm grid_comm(int context) {
  int handle = -1;
  Cblacs_get(context, 10, &handle);  // the system handle of the grid's communicator
  MPI_Comm grid = Cblacs2sys_handle(handle);
  if (comm_keyval == MPI_KEYVAL_INVALID)
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_cached_comm, &comm_keyval, nullptr);
  void* value = nullptr;
  int found = 0;
  MPI_Comm_get_attr(grid, comm_keyval, &value, &found);
  if (found) return *static_cast<MPI_Comm*>(value);
  auto* dup = new MPI_Comm;
  MPI_Comm_dup(grid, dup);  // collective over the grid's processes, which all make this call
  MPI_Comm_set_attr(grid, comm_keyval, dup);
  return *dup;
}

template <class T>
Pgemm<T> system_pgemm() {
  static Pgemm<T> fn = [] {
    void* p = dlsym(RTLD_NEXT, routine_name<T>());
    if (!p) {
      if (void* h = dlopen(TESSERA_SCALAPACK_SYSTEM_LIBRARY, RTLD_NOW | RTLD_GLOBAL)) p = dlsym(h, routine_name<T>());
    }
    if (!p) {
      std::fprintf(stderr,
                   "tessera: %s: no system ScaLAPACK to hand this call to (none linked after "
                   "libtessera_scalapack, and %s could not be loaded: %s)\n",
                   routine_name<T>(), TESSERA_SCALAPACK_SYSTEM_LIBRARY, dlerror());
      std::abort();
    }
    return reinterpret_cast<Pgemm<T>>(p);
  }();
  return fn;
}

template Pgemm<float> system_pgemm<float>();
template Pgemm<double> system_pgemm<double>();
template Pgemm<std::complex<float>> system_pgemm<std::complex<float>>();
template Pgemm<std::complex<double>> system_pgemm<std::complex<double>>();

}  // namespace tessera::scalapack
