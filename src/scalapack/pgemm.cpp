// libtessera_scalapack: ScaLAPACK's psgemm_ and pdgemm_, with their exact signatures, over
// tessera's engine (issue 44; docs/scalapack.md). A program linked with -ltessera_scalapack before
// -lscalapack, or run with LD_PRELOAD=libtessera_scalapack.so, gets these instead of PBLAS's.
//
// How a call runs: every process of the BLACS grid works out, from the descriptors alone, which
// parts of op(A)'s rows and op(B)'s columns its block of C needs (block_cyclic.hpp), sends the
// parts it holds to the processes that need them (one exchange, point to point on a communicator
// of its own), and multiplies its block of C in place with tessera::multiply on its current
// CUDA device (or the CPU): its local C is one dense column-major block of its local storage, whatever the
// offsets. Nothing else is synchronized: a process returns when its block of C is complete.
//
// What it does not take it hands to the system's ScaLAPACK (the next pdgemm_ in the link order,
// or the library found at build time, loaded at the first hand-back), all processes of the grid
// together: a call with an invalid argument (ScaLAPACK then reports it as it always does), panels
// that would not fit this process's memory, TESSERA_SCALAPACK=scalapack, and the products too small
// to gain from it (TESSERA_SCALAPACK=auto's rule, docs/scalapack.md). Processes outside the grid
// hand their call over too (ScaLAPACK returns at once there).
#include <dlfcn.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <new>
#include <string>
#include <vector>

#include "block_cyclic.hpp"
#include "tessera/tessera.hpp"

// BLACS, inside the system's ScaLAPACK (its C interface; Debian ships no header for it).
extern "C" {
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_get(int context, int what, int* value);
MPI_Comm Cblacs2sys_handle(int system_handle);
}

#define TESSERA_SCALAPACK_EXPORT extern "C" __attribute__((visibility("default")))

namespace tessera::scalapack {
namespace {

// ScaLAPACK's array descriptor (DESC_ of length 9, block-cyclic only).
enum { DTYPE_ = 0, CTXT_, M_, N_, MB_, NB_, RSRC_, CSRC_, LLD_ };
constexpr int kBlockCyclic2D = 1;

template <class T>
using Pgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const T*, const T*, const int*,
                       const int*, const int*, const T*, const int*, const int*, const int*, const T*, T*, const int*,
                       const int*, const int*);

template <class T>
const char* routine_name() {
  return sizeof(T) == 4 ? "psgemm_" : "pdgemm_";
}

enum class Mode { automatic, tessera, scalapack };

Mode mode() {
  static const Mode m = [] {
    const char* v = std::getenv("TESSERA_SCALAPACK");
    if (!v || !*v || std::strcmp(v, "auto") == 0) return Mode::automatic;
    if (std::strcmp(v, "tessera") == 0) return Mode::tessera;
    if (std::strcmp(v, "scalapack") == 0) return Mode::scalapack;
    std::fprintf(stderr, "tessera: TESSERA_SCALAPACK=%s is not one of auto, tessera, scalapack; using auto\n", v);
    return Mode::automatic;
  }();
  return m;
}

bool verbose() {
  static const bool on = [] {
    const char* v = std::getenv("TESSERA_SCALAPACK_VERBOSE");  // 0 or 1
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

// The system's p?gemm_: the next definition after this library in the process's lookup order
// (the -lscalapack an application links after -ltessera_scalapack), else the ScaLAPACK this
// library was built against, loaded now.
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

// ---- the grid's communicator ------------------------------------------------------------------
// A duplicate of the BLACS grid's own communicator (ranks row-major over the grid, as BLACS
// numbers them), cached as an attribute of that communicator: freed with it when the grid is
// exited, so a context number BLACS reuses later never finds a stale one.
int comm_keyval = MPI_KEYVAL_INVALID;

int free_cached_comm(MPI_Comm, int, void* value, void*) {
  auto* dup = static_cast<MPI_Comm*>(value);
  MPI_Comm_free(dup);
  delete dup;
  return MPI_SUCCESS;
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

// ---- the call's arguments ---------------------------------------------------------------------
struct Grid {
  int nprow = 0, npcol = 0, myrow = -1, mycol = -1;
};

// One operand's sub-matrix as stored: `rows` x `cols` from 0-based (i0, j0) of the global matrix
// its descriptor describes.
struct Sub {
  const int* desc;
  std::int64_t i0, j0, rows, cols;
  Axis row_axis() const { return {desc[MB_], desc[RSRC_], nprow}; }
  Axis col_axis() const { return {desc[NB_], desc[CSRC_], npcol}; }
  int nprow, npcol;
};

bool trans_ok(char t) { return std::strchr("NnTtCc", t) != nullptr && t != 0; }
bool is_n(char t) { return t == 'N' || t == 'n'; }

// Why this process cannot take the call as ScaLAPACK would ("": it can): the checks of PBLAS's
// argument checking that decide whether the call is valid.
std::string invalid(char ta, char tb, int m, int n, int k, const Sub& a, const Sub& b, const Sub& c, const Grid& g,
                    int ia, int ja, int ib, int jb, int ic, int jc) {
  if (!trans_ok(ta)) return "TRANSA is not N, T or C";
  if (!trans_ok(tb)) return "TRANSB is not N, T or C";
  if (m < 0 || n < 0 || k < 0) return "M, N or K is negative";
  if (ia < 1 || ja < 1 || ib < 1 || jb < 1 || ic < 1 || jc < 1) return "a sub-matrix index is below 1";
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
  std::string key;
  std::int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

// ---- moving the panels ------------------------------------------------------------------------
// Buffers kept from call to call (an application calls p?gemm_ in loops: new pages cost a fault
// each, ~10% of a 1024^3 product's exchange on two processes), left uninitialized; one above
// kKeepBytes is freed when the call ends, so that a large product leaves no memory behind.
constexpr std::size_t kKeepBytes = std::size_t{256} << 20;

class Buffer {
 public:
  ~Buffer() { std::free(data_); }
  void* get(std::size_t bytes) {
    if (bytes > size_) {
      std::free(data_);
      data_ = std::malloc(bytes);
      size_ = data_ ? bytes : 0;
      if (!data_) throw std::bad_alloc();
    }
    return data_;
  }
  void trim() {
    if (size_ > kKeepBytes) {
      std::free(data_);
      data_ = nullptr;
      size_ = 0;
    }
  }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// The panels of A and B, and what one exchange sends and receives.
struct Buffers {
  Buffer panel[2], send, recv;
  void trim() {
    for (Buffer* b : {&panel[0], &panel[1], &send, &recv}) b->trim();
  }
};

Buffers& buffers() {
  static Buffers b;  // p?gemm_ is called by one thread of a process at a time, as ScaLAPACK is
  return b;
}

// A panel: the parts of one stored operand this process needs, column-major (`ld` apart), either
// in a buffer of its own or, where this process already holds all of it in one piece, in its
// local storage.
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
  const T* local;
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

  int rank_of(int r, int c) const { return r * g.npcol + c; }

  bool needed_run(const Run& r, bool targeted) const {
    return !targeted || r.target == (target_is_row ? g.myrow : g.mycol);
  }

  // Every process this piece goes to.
  template <class F>
  void for_each_target(const Run& r, const Run& c, F f) const {
    const int t = rows_targeted ? r.target : c.target;
    if (target_is_row)
      for (int q = 0; q < g.npcol; ++q) f(rank_of(t, q));
    else
      for (int q = 0; q < g.nprow; ++q) f(rank_of(q, t));
  }
};

constexpr std::int64_t kChunkBytes = std::int64_t{1} << 30;  // an MPI message at most (1 GiB)

template <class T>
MPI_Datatype mpi_type() {
  return sizeof(T) == 4 ? MPI_FLOAT : MPI_DOUBLE;
}

template <class T>
void post(std::vector<MPI_Request>& reqs, bool send, T* data, std::int64_t count, int peer, MPI_Comm comm) {
  const std::int64_t chunk = kChunkBytes / static_cast<std::int64_t>(sizeof(T));
  for (std::int64_t off = 0; off < count; off += chunk) {
    const int n = static_cast<int>(std::min(chunk, count - off));
    reqs.emplace_back();
    if (send)
      MPI_Isend(data + off, n, mpi_type<T>(), peer, 0, comm, &reqs.back());
    else
      MPI_Irecv(data + off, n, mpi_type<T>(), peer, 0, comm, &reqs.back());
  }
}

// The panel this process needs of one operand, after the exchange with every other process.
template <class T>
Panel<T> exchange(const Exchange<T>& x, Buffer& own, MPI_Comm comm) {
  const Grid& g = x.g;
  const int size = g.nprow * g.npcol;
  const int me = x.rank_of(g.myrow, g.mycol);
  Panel<T> p;
  p.rows = x.rows_targeted ? x.need_count : (x.row_runs.empty() ? 0 : x.row_runs.back().x0 + x.row_runs.back().len);
  p.cols = x.rows_targeted ? (x.col_runs.empty() ? 0 : x.col_runs.back().x0 + x.col_runs.back().len) : x.need_count;

  // What this process needs, and whether it already holds all of it in one piece.
  std::vector<const Run*> need_rows, need_cols;
  for (const Run& r : x.row_runs)
    if (x.needed_run(r, x.rows_targeted)) need_rows.push_back(&r);
  for (const Run& c : x.col_runs)
    if (x.needed_run(c, !x.rows_targeted)) need_cols.push_back(&c);
  auto in_one_piece = [](const std::vector<const Run*>& runs, int mine) {
    for (const Run* r : runs)
      if (r->src != mine || r->src_local - r->target_pos != runs.front()->src_local - runs.front()->target_pos)
        return false;
    return true;
  };
  T* panel = nullptr;
  bool in_place =
      !need_rows.empty() && !need_cols.empty() && in_one_piece(need_rows, g.myrow) && in_one_piece(need_cols, g.mycol);
  if (in_place) {
    p.data = x.local + (need_rows.front()->src_local - need_rows.front()->target_pos) +
             (need_cols.front()->src_local - need_cols.front()->target_pos) * x.lld;
    p.ld = x.lld;
    const auto begin = reinterpret_cast<std::uintptr_t>(p.data);
    const auto end = begin + static_cast<std::uintptr_t>((p.cols - 1) * p.ld + p.rows) * sizeof(T);
    in_place = !(begin < x.c_end && x.c_begin < end);
  }
  if (!in_place) {
    panel = static_cast<T*>(own.get(static_cast<std::size_t>(p.rows * p.cols) * sizeof(T)));
    p.data = panel;
    p.ld = std::max<std::int64_t>(1, p.rows);
  }

  // The pieces this process holds, and where each goes: counted, then packed.
  std::vector<const Run*> my_rows, my_cols;
  for (const Run& r : x.row_runs)
    if (r.src == g.myrow) my_rows.push_back(&r);
  for (const Run& c : x.col_runs)
    if (c.src == g.mycol) my_cols.push_back(&c);
  std::vector<std::int64_t> send_count(size, 0), send_off(size + 1, 0);
  for (const Run* r : my_rows)
    for (const Run* c : my_cols)
      x.for_each_target(*r, *c, [&](int q) {
        if (q != me) send_count[q] += r->len * c->len;
      });
  for (int q = 0; q < size; ++q) send_off[q + 1] = send_off[q] + send_count[q];
  T* sendbuf = static_cast<T*>(buffers().send.get(static_cast<std::size_t>(send_off[size]) * sizeof(T)));
  std::vector<std::int64_t> fill(send_off.begin(), send_off.end() - 1);
  for (const Run* r : my_rows)
    for (const Run* c : my_cols)
      x.for_each_target(*r, *c, [&](int q) {
        for (std::int64_t j = 0; j < c->len; ++j) {
          const T* src = x.local + r->src_local + (c->src_local + j) * x.lld;
          if (q == me) {
            if (!in_place) std::copy(src, src + r->len, panel + r->target_pos + (c->target_pos + j) * p.ld);
          } else {
            std::copy(src, src + r->len, sendbuf + fill[q]);
            fill[q] += r->len;
          }
        }
      });

  // What comes from each other process: counted from the same runs.
  std::vector<std::int64_t> recv_count(size, 0), recv_off(size + 1, 0);
  for (const Run* r : need_rows)
    for (const Run* c : need_cols) {
      const int s = x.rank_of(r->src, c->src);
      if (s != me) recv_count[s] += r->len * c->len;
    }
  for (int q = 0; q < size; ++q) recv_off[q + 1] = recv_off[q] + recv_count[q];
  T* recvbuf = static_cast<T*>(buffers().recv.get(static_cast<std::size_t>(recv_off[size]) * sizeof(T)));
  std::vector<MPI_Request> reqs;
  for (int q = 0; q < size; ++q)
    if (recv_count[q] > 0) post(reqs, false, recvbuf + recv_off[q], recv_count[q], q, comm);
  for (int q = 0; q < size; ++q)
    if (send_count[q] > 0) post(reqs, true, sendbuf + send_off[q], send_count[q], q, comm);
  MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);

  std::vector<std::int64_t> take(recv_off.begin(), recv_off.end() - 1);
  for (const Run* r : need_rows)
    for (const Run* c : need_cols) {
      const int s = x.rank_of(r->src, c->src);
      if (s == me) continue;
      for (std::int64_t j = 0; j < c->len; ++j) {
        const T* src = recvbuf + take[s];
        std::copy(src, src + r->len, panel + r->target_pos + (c->target_pos + j) * p.ld);
        take[s] += r->len;
      }
    }
  return p;
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

// TESSERA_SCALAPACK=auto's rule: tessera takes a product of at least TESSERA_SCALAPACK_MIN_FLOPS
// (2 M N K, a whole number; default 10000000, about 170^3). Below it the ~8 us a call costs of its
// own (the plan, the options, a tessera::multiply) outweigh one GEMM instead of ScaLAPACK's
// panels: on 2 cores (docs/scalapack.md) 1x1 grids broke even at 192^3-256^3 (128^3: 9% slower,
// 64^3: 17 us against 9 us), 1x2 grids at about 110^3.
constexpr double kDefaultMinFlops = 1e7;

bool worth_it(std::int64_t m, std::int64_t n, std::int64_t k) {
  static const double min_flops = [] {
    const char* v = std::getenv("TESSERA_SCALAPACK_MIN_FLOPS");
    if (!v || !*v) return kDefaultMinFlops;
    char* end = nullptr;
    const long long flops = std::strtoll(v, &end, 10);
    if (*end != '\0' || flops < 0 || std::strchr(v, '-')) {
      std::fprintf(stderr, "tessera: TESSERA_SCALAPACK_MIN_FLOPS=%s is not a whole number of flops; using %.0f\n", v,
                   kDefaultMinFlops);
      return kDefaultMinFlops;
    }
    return static_cast<double>(flops);
  }();
  return 2.0 * double(m) * double(n) * double(k) >= min_flops;
}

std::string backend_choice() {
  static const std::string choice = [] {
    const char* v = std::getenv("TESSERA_SCALAPACK_BACKEND");
    if (!v || !*v) return std::string("auto");
    for (const char* ok : {"auto", "cpu", "cuda"})
      if (std::strcmp(v, ok) == 0) return std::string(v);
    std::fprintf(stderr, "tessera: TESSERA_SCALAPACK_BACKEND=%s is not one of auto, cpu, cuda; using auto\n", v);
    return std::string("auto");
  }();
  return choice;
}

template <class T>
void pgemm(const char* transa, const char* transb, const int* m, const int* n, const int* k, const T* alpha, const T* a,
           const int* ia, const int* ja, const int* desca, const T* b, const int* ib, const int* jb, const int* descb,
           const T* beta, T* c, const int* ic, const int* jc, const int* descc) {
  auto hand_back = [&] {
    system_pgemm<T>()(transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc, descc);
  };
  Grid g;
  Cblacs_gridinfo(descc[CTXT_], &g.nprow, &g.npcol, &g.myrow, &g.mycol);
  // Outside the grid (or an invalid context): ScaLAPACK's own answer.
  if (g.nprow < 1 || g.npcol < 1 || g.myrow < 0 || g.mycol < 0) return hand_back();

  const auto t0 = std::chrono::steady_clock::now();
  const char ta = *transa, tb = *transb;
  const std::int64_t M = *m, N = *n, K = *k;
  const bool na = is_n(ta), nb = is_n(tb);
  Sub sa{desca, std::int64_t{*ia} - 1, std::int64_t{*ja} - 1, na ? M : K, na ? K : M, g.nprow, g.npcol};
  Sub sb{descb, std::int64_t{*ib} - 1, std::int64_t{*jb} - 1, nb ? K : N, nb ? N : K, g.nprow, g.npcol};
  Sub sc{descc, std::int64_t{*ic} - 1, std::int64_t{*jc} - 1, M, N, g.nprow, g.npcol};
  std::string why = invalid(ta, tb, *m, *n, *k, sa, sb, sc, g, *ia, *ja, *ib, *jb, *ic, *jc);

  MPI_Comm comm = grid_comm(descc[CTXT_]);
  int rank = -1;
  MPI_Comm_rank(comm, &rank);
  if (why.empty() && rank != g.myrow * g.npcol + g.mycol) why = "the grid's communicator does not number it row-major";

  // Both panels and what this process sends must fit the memory free on its machine.
  // (C's layout is looked at only once the arguments are valid: a block size of 0 divides by it)
  const Axis c_rows = sc.row_axis(), c_cols = sc.col_axis();
  const Span my_c_rows = why.empty() ? held_span(M, sc.i0, c_rows, g.myrow) : Span{};
  const Span my_c_cols = why.empty() ? held_span(N, sc.j0, c_cols, g.mycol) : Span{};
  // Every reason to hand the call over is agreed on, even those every process should see alike
  // (an environment variable a launcher set on some ranks only must not leave the others waiting).
  int code = 0;  // 1: invalid here, 2: does not fit here, 4: too small, 8: switched off, 16: alpha/beta
  if (mode() == Mode::scalapack) code |= 8;
  if (!std::isfinite(static_cast<double>(*alpha)) || !std::isfinite(static_cast<double>(*beta))) code |= 16;
  if (!why.empty()) {
    code |= 1;
  } else {
    const double elems = double(my_c_rows.count) * double(K) * 2 + double(K) * double(my_c_cols.count) * 2;
    // (/proc/meminfo costs ~20 us a read: only for panels large enough to matter)
    const double bytes = elems * sizeof(T);
    const std::int64_t avail = bytes > double(kKeepBytes) ? memory_available() : 0;
    if (avail > 0 && bytes > 0.5 * double(avail)) code |= 2;
    if (mode() == Mode::automatic && !worth_it(M, N, K)) code |= 4;
  }
  int agreed = 0;
  MPI_Allreduce(&code, &agreed, 1, MPI_INT, MPI_BOR, comm);
  if (agreed != 0) {
    if (verbose() && rank == 0)
      std::fprintf(stderr, "tessera %s: %lldx%lldx%lld handed to ScaLAPACK: %s\n", routine_name<T>(), (long long)M,
                   (long long)N, (long long)K,
                   (agreed & 1)    ? (why.empty() ? "an argument is invalid on another process" : why.c_str())
                   : (agreed & 8)  ? "TESSERA_SCALAPACK=scalapack"
                   : (agreed & 16) ? "alpha or beta is NaN or Inf"
                   : (agreed & 2)  ? "its panels would not fit the memory free"
                                   : "too small to gain (TESSERA_SCALAPACK_MIN_FLOPS)");
    return hand_back();
  }

  // From here on every process works on its own: a failure it cannot recover from (memory for a
  // panel, its block of C that no backend can multiply) ends the job rather than leave the others
  // waiting for its messages.
  try {
    // ScaLAPACK's quick returns.
    if (M == 0 || N == 0 || *alpha == T(0) || K == 0) {
      if (M > 0 && N > 0 && *beta != T(1)) scale_local(c, descc[LLD_], my_c_rows, my_c_cols, *beta);
      if (verbose() && rank == 0)
        std::fprintf(stderr, "tessera %s: %lldx%lldx%lld %c%c on a %dx%d grid: tessera (nothing to multiply)\n",
                     routine_name<T>(), (long long)M, (long long)N, (long long)K, ta, tb, g.nprow, g.npcol);
      return;
    }

    T* const cblock = c + my_c_rows.local0 + my_c_cols.local0 * std::int64_t{descc[LLD_]};
    const auto c_begin = reinterpret_cast<std::uintptr_t>(cblock);
    const auto c_end =
        my_c_rows.count > 0 && my_c_cols.count > 0
            ? c_begin + static_cast<std::uintptr_t>((my_c_cols.count - 1) * descc[LLD_] + my_c_rows.count) * sizeof(T)
            : c_begin;
    // A's panel: op(A)'s rows this process's C rows need, all K; B's: op(B)'s columns, all K.
    Exchange<T> xa{a,
                   desca[LLD_],
                   na ? runs(sa.rows, sa.i0, sa.row_axis(), sc.i0, c_rows) : runs(sa.rows, sa.i0, sa.row_axis()),
                   na ? runs(sa.cols, sa.j0, sa.col_axis()) : runs(sa.cols, sa.j0, sa.col_axis(), sc.i0, c_rows),
                   na,
                   true,
                   my_c_rows.count,
                   g,
                   c_begin,
                   c_end};
    Exchange<T> xb{b,
                   descb[LLD_],
                   nb ? runs(sb.rows, sb.i0, sb.row_axis()) : runs(sb.rows, sb.i0, sb.row_axis(), sc.j0, c_cols),
                   nb ? runs(sb.cols, sb.j0, sb.col_axis(), sc.j0, c_cols) : runs(sb.cols, sb.j0, sb.col_axis()),
                   !nb,
                   false,
                   my_c_cols.count,
                   g,
                   c_begin,
                   c_end};
    struct Trim {
      ~Trim() { buffers().trim(); }
    } trim_at_return;
    Panel<T> pa = exchange(xa, buffers().panel[0], comm);
    Panel<T> pb = exchange(xb, buffers().panel[1], comm);
    const auto t1 = std::chrono::steady_clock::now();

    // This process's C is column-major my_c_rows x my_c_cols at (local0, local0): as tessera's
    // row-major matrices, C^T = op(B)^T op(A)^T with the panels read as their transposes.
    std::string ran = "nothing (no block of C here)";
    if (my_c_rows.count > 0 && my_c_cols.count > 0) {
      tessera::Matrix ea(pb.data, pb.cols, pb.rows, pb.ld);
      tessera::Matrix eb(pa.data, pa.cols, pa.rows, pa.ld);
      tessera::Matrix ec(cblock, my_c_cols.count, my_c_rows.count, descc[LLD_]);
      std::string backend = backend_choice();
      for (int attempt = 0;; ++attempt) {
        try {
          tessera::Options o;
          o.alpha(static_cast<double>(*alpha)).beta(static_cast<double>(*beta)).transpose_a(!nb).transpose_b(!na);
          o.allow_nonfinite(true).backend(backend);
          tessera::Result r = tessera::multiply(ea, eb, ec, o);
          if (verbose()) ran = r.backend();  // (reading the report makes it: ~20 us)
          break;
        } catch (const std::exception& e) {
          // tessera leaves C as it was: the CPU takes this process's block, else nothing can.
          if (attempt == 0 && backend != "cpu") {
            std::fprintf(stderr,
                         "tessera %s: the %s backend failed on grid process (%d,%d) (%s); the CPU takes its block\n",
                         routine_name<T>(), backend.c_str(), g.myrow, g.mycol, e.what());
            backend = "cpu";
            continue;
          }
          std::fprintf(stderr, "tessera %s: grid process (%d,%d) cannot multiply its block of C: %s\n",
                       routine_name<T>(), g.myrow, g.mycol, e.what());
          MPI_Abort(comm, 1);
        }
      }
    }
    if (verbose() && rank == 0) {
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
