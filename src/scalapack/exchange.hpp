#pragma once
// The one exchange of a libtessera_scalapack call: each grid process receives the parts of a
// stored operand its block of C needs (op(A)'s rows, op(B)'s columns, all of K) from the
// processes that hold them, point to point on the grid's communicator (docs/scalapack.md). All of
// the drop-in's communication is here and in the agreement (pgemm.cpp).
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "blacs.hpp"
#include "block_cyclic.hpp"

namespace tessera::scalapack {

// Buffers kept from call to call (an application calls p?gemm_ in loops: fresh pages cost a fault
// each; the 1024^3 exchange on two processes took 9.5 ms with new buffers, 2.4 ms with kept
// ones), left uninitialized; one above kKeepBytes is freed when the call ends, so that a large
// product leaves no memory behind.
constexpr std::size_t kKeepBytes = std::size_t{256} << 20;

class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();
  void* get(std::size_t bytes);  // at least `bytes`, its old contents gone; throws std::bad_alloc
  void trim();                   // freed if above kKeepBytes

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// The panels of A and B, and what one exchange sends and receives: one set per process
// (p?gemm_ is called by one thread of a process at a time, as ScaLAPACK is).
struct Buffers {
  Buffer panel[2], send, recv;
  void trim();
};
Buffers& buffers();

// A panel: the parts of one stored operand this process needs, column-major (`ld` apart), either
// in a buffer or, where this process already holds all of it in one piece, in its local array.
template <class T>
struct Panel {
  const T* data = nullptr;
  std::int64_t rows = 0, cols = 0, ld = 1;
};

// The exchange of one operand. Its stored rows and columns are cut into runs (block_cyclic.hpp);
// the dimension that is op(A)'s rows (for A) or op(B)'s columns (for B) carries the targets: the
// process row (A) or column (B) of C that needs each run; every process of that row (column)
// needs it. Both sides walk the pieces in the same order (row run, then column run), so a
// message is the concatenation of its pieces, each column-major.
template <class T>
struct Exchange {
  const T* local;  // this process's local array of the operand
  std::int64_t lld;
  std::vector<Run> row_runs, col_runs;
  bool rows_targeted;       // the stored rows are the targeted dimension (else the columns)
  bool target_is_row;       // targets are process rows of the grid (A), else process columns (B)
  std::int64_t need_count;  // how many of the targeted dimension this process needs
  Grid g;
  // The addresses this process's block of C spans ([begin, end); empty when it holds none): a
  // panel is read in place only where it shares none of them. ScaLAPACK lets A, B and C be
  // disjoint sub-matrices of one local array (PDGETRF's update calls PDGEMM so), whose address
  // ranges interleave: tessera::multiply refuses a C that shares its span with an operand.
  std::uintptr_t c_begin = 0, c_end = 0;
};

// The panel this process needs of one operand (in `own` unless read in place), after the
// exchange with every other process of `comm` (the grid's, ranked as Grid::rank_of).
template <class T>
Panel<T> exchange(const Exchange<T>& x, Buffer& own, MPI_Comm comm);

}  // namespace tessera::scalapack
