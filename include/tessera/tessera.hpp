#pragma once
// tessera's public API: `tessera run` called in-process over an MPI communicator: the distributed
// multiply C = alpha op(A) op(B) + beta C_old, HDF5 in and out, one GPU (or the CPU) per rank, and
// its dry run (the plan, nothing run). docs/cpp-api.md says how to build against it.
//
//   tessera::Options o;
//   o.a("a.h5:/A").b("b.h5:/B").c("c.h5:/C");
//   tessera::Result r = tessera::multiply(o, MPI_COMM_WORLD);  // collective
//   std::printf("%.1f GFLOP/s\n", r.gflops());                   // r.json(): the whole report
//
// The caller initializes MPI (MPI_THREAD_FUNNELED or above: tessera's helper threads read and
// write files beside the calling thread's MPI calls, never calling MPI themselves) and finalizes
// it. Only this header is installed; it depends on nothing but <mpi.h> and the standard library.
// Every class holds one pointer to data kept inside libtessera: fields and accessors added in a
// later version do not change the layout a program was compiled with.

// MPI's C++ bindings (deprecated in MPI-2.2, removed in MPI-3) are not used: a program that does
// not include <mpi.h> before this header needs only MPI's C library (no libmpi_cxx).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <complex>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#if defined(__GNUC__)
#define TESSERA_API __attribute__((visibility("default")))
#else
#define TESSERA_API
#endif

namespace tessera {

struct Access;

// The library's version, e.g. "0.1.0" (the CMake package version).
TESSERA_API const char* version() noexcept;

// The options of `tessera run` (docs/usage.md), with the same defaults except quiet (true) and
// progress ("off"). Each setter returns *this, so that they chain. Every value is checked where it
// is set, as the command line checks it (the words an option takes, a grid's shape, a size, a
// number's range): std::invalid_argument naming the words, the options left as they were. The
// kernel is checked against the backend the ranks settle on when multiply() or dry_run() plans.
class TESSERA_API Options {
 public:
  Options();
  Options(const Options& other);
  Options(Options&& other) noexcept;
  Options& operator=(const Options& other);
  Options& operator=(Options&& other) noexcept;
  ~Options();

  // Operands, each FILE:/DATASET: A (M x K), B (K x N), and where C (M x N) goes.
  Options& a(const std::string& dataset);
  Options& b(const std::string& dataset);
  Options& c(const std::string& dataset);
  Options& transpose_a(bool on = true);  // A's dataset is stored K x M: use its transpose
  Options& transpose_b(bool on = true);  // B's dataset is stored N x K
  Options& alpha(double value);          // C = alpha op(A) op(B) + beta C_old (default 1)
  Options& beta(double value);           // default 0; != 0 reads the existing C (needs overwrite)
  // Complex products (complex64/complex128 Matrix objects in memory, or complex HDF5 datasets as
  // h5py stores them): a complex alpha and beta (`alpha-imag`, `beta-imag`), and op(X) = X^H, the
  // conjugate transpose (`conjugate-a`; for a real matrix, its transpose; conjugate_a(false)
  // leaves transpose_a as it was set). A complex alpha or beta on real datasets is refused.
  Options& alpha(std::complex<double> value);
  Options& beta(std::complex<double> value);
  Options& conjugate_a(bool on = true);
  Options& conjugate_b(bool on = true);

  // How the work is done ("auto" or "": chosen, as the command line chooses).
  Options& backend(const std::string& name);     // auto | cpu | cuda
  Options& kernel(const std::string& name);      // a kernel of the backend (`tessera info`)
  Options& dtype(const std::string& name);       // auto | f32 | f64
  Options& algorithm(const std::string& name);   // auto | panels | summa | ksplit
  Options& comm(const std::string& name);        // auto | nccl | cuda-aware | host
  Options& grid(const std::string& shape);       // "PRxPC"
  Options& panel_width(std::int64_t columns);    // summa's K panel width; 0: chosen
  Options& gpu_memory(const std::string& size);  // "8G", "512M", bytes; "": what is free
  Options& write(const std::string& route);      // auto | in-place | gather
  Options& machine(const std::string& name);     // the model's rates: a configs/machines name or a file
  Options& baseline(const std::string& kernel);  // also time this kernel on each rank's block

  // Checks, output and what is printed.
  Options& overwrite(bool on = true);            // replace an existing dataset at C
  Options& verify(bool on = true);               // Freivalds' check of C before it is written
  Options& allow_nonfinite(bool on = true);      // multiply inputs holding NaN / Inf
  Options& fail_on_nonfinite(bool on = true);    // a C holding NaN / Inf is an error, not a warning
  Options& report(const std::string& path);      // also write the JSON report there ("": none)
  Options& quiet(bool on = true);                // false: rank 0 prints the table (the plan) on stdout
  Options& progress(const std::string& mode);    // on | off | auto: progress lines on rank 0's stderr
  Options& log_level(const std::string& level);  // error | warn | info | debug, for the call

  // --repeat N --warmup W: the whole job W + N times; the report holds the spread of the N.
  Options& repeat(int runs);
  Options& warmup(int runs);  // default: 1 with repeat > 1, else 0
  // --timeout: a rank waiting longer than this in MPI for the others ends itself (0: never);
  // default: 30 s + 10 x the model's prediction of the run.
  Options& timeout(int seconds);

  // Dry run only: the shape without input files, and the ranks (per node) to plan for.
  Options& shape(std::int64_t m, std::int64_t n, std::int64_t k);
  Options& ranks(int count);
  Options& ranks_per_node(int count);

  // Any of the above by its `tessera run` name and a value as on the command line, e.g.
  // set("transpose-a", "true"), set("panel-width", "512"). Throws std::invalid_argument for an
  // unknown name or a value the option does not take.
  Options& set(const std::string& option, const std::string& value);
  // The value an option has now, as text ("" for an unset name or path); throws
  // std::invalid_argument for an unknown name.
  std::string get(const std::string& option) const;
  // The options' names, as `tessera run --help` lists them (without "--").
  static std::vector<std::string> names();

 private:
  friend struct Access;  // inside libtessera
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The report of a multiply: the same on every rank (but seconds()). json() is the whole of it, as
// `tessera run --report` writes it (docs/report.md, schema tessera.report/1); the accessors read
// its main figures. Cheap to copy (the report is shared).
class TESSERA_API Result {
 public:
  Result();
  Result(const Result& other);
  Result(Result&& other) noexcept;
  Result& operator=(const Result& other);
  Result& operator=(Result&& other) noexcept;
  ~Result();

  double seconds() const noexcept;  // wall time of the multiply() call on this rank
  const std::string& json() const noexcept;

  std::int64_t m() const;
  std::int64_t n() const;
  std::int64_t k() const;
  std::string dtype() const;      // float32 | float64
  std::string algorithm() const;  // panels | summa | ksplit
  std::string backend() const;    // cpu | cuda
  std::string kernel() const;
  std::string comm() const;   // how ranks exchanged data: host | nccl | cuda-aware | none
  std::string write() const;  // how C reached the file
  int grid_rows() const;
  int grid_cols() const;
  int ranks() const;                 // ranks in the job (the idle ones too)
  double wall_seconds() const;       // the job's: its slowest rank's
  double gflops() const;             // aggregate: 2 M N K over the slowest rank's compute
  double load_imbalance() const;     // max / mean compute over the active ranks
  std::string bound() const;         // the phase that bounded the run: start-up | read | compute | write
  double predicted_seconds() const;  // the footprint model's prediction
  std::vector<std::string> warnings() const;
  std::string settings_json() const;    // the run's settings, as its algorithm describes them
  std::string provenance_json() const;  // versions, libraries, hosts, GPUs, options given

  // Per rank, 0 <= rank < ranks().
  std::string rank_host(int rank) const;
  std::string rank_device(int rank) const;
  bool rank_active(int rank) const;  // false: idle (the grid used fewer ranks)
  double rank_gflops(int rank) const;
  std::vector<std::string> phase_names(int rank) const;            // in the order they ran
  double phase_seconds(int rank, const std::string& phase) const;  // 0 when the rank had no such phase

 private:
  friend struct Access;  // inside libtessera
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// The plan of a dry run (`tessera run --dry-run`): what a run would choose and what the model
// predicts, the same on every rank. json() is schema tessera.dry-run/1 (docs/report.md).
class TESSERA_API Plan {
 public:
  Plan();
  Plan(const Plan& other);
  Plan(Plan&& other) noexcept;
  Plan& operator=(const Plan& other);
  Plan& operator=(Plan&& other) noexcept;
  ~Plan();

  const std::string& text() const noexcept;  // what `tessera run --dry-run` prints
  const std::string& json() const noexcept;

  std::int64_t m() const;
  std::int64_t n() const;
  std::int64_t k() const;
  std::string dtype() const;
  std::string algorithm() const;
  std::string backend() const;
  std::string comm() const;
  int grid_rows() const;
  int grid_cols() const;
  int ranks() const;
  int idle_ranks() const;
  double predicted_seconds() const;
  std::string bound() const;
  std::string settings_json() const;

 private:
  friend struct Access;  // inside libtessera
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// A failure of multiply() or dry_run(). When agreed() is true every rank of the communicator
// threw the same error (from rank origin_rank(), which saw it first) and the communicator is
// usable; when it is false only this rank failed, outside a collective step, and its peers may be
// waiting for it: end the job (MPI_Abort), as the tessera CLI does.
//
// After a failed multiply() whose failure every rank agreed on, rank 0 runs the recovery of the
// output file (Options::c's file) before throwing, as `tessera recover FILE` does, so that the next
// step of a pipeline never reads a half-written file: recovery() says what it found, and what()
// ends with it; output_restored() is true where the file was put back from the journal the run
// left (false where there was none to apply, or it could not be applied: recovery() says which).
// recovery() is empty on the other ranks, for a failure only this rank saw, and for dry_run().
class TESSERA_API MultiplyError : public std::runtime_error {
 public:
  MultiplyError(const std::string& what, int origin_rank, bool agreed);
  MultiplyError(const MultiplyError& failure, const std::string& recovery, bool output_restored);
  ~MultiplyError() override;
  int origin_rank() const noexcept { return origin_rank_; }
  bool agreed() const noexcept { return agreed_; }
  const std::string& recovery() const noexcept { return recovery_; }
  bool output_restored() const noexcept { return output_restored_; }

 private:
  int origin_rank_;
  bool agreed_;
  std::string recovery_;
  bool output_restored_ = false;
};

// Options::verify found C wrong (on every rank); nothing was written.
class TESSERA_API VerificationFailed : public MultiplyError {
 public:
  using MultiplyError::MultiplyError;
  VerificationFailed(const VerificationFailed& failure, const std::string& recovery, bool output_restored)
      : MultiplyError(failure, recovery, output_restored) {}
  ~VerificationFailed() override;
};

// C = alpha op(A) op(B) + beta C_old over the ranks of `comm` (collective; `comm` is borrowed, not
// freed). Returns on every rank once C is written; throws MultiplyError (or VerificationFailed)
// otherwise. With Options::report, the report is also written there.
TESSERA_API Result multiply(const Options& options, MPI_Comm comm);

// Where a Matrix lies: host memory, or the memory of the GPU tessera computes on in this process
// (its current CUDA device: cudaMalloc'd or managed memory, a torch or cupy tensor's), used there
// in place without a copy to the host.
enum class Memory { host, device };

// A matrix in this process's memory, row-major (as C arrays and numpy's default order are):
// `rows` x `cols` elements of float, double, std::complex<float> or std::complex<double>
// (complex64, complex128: a real and an imaginary part side by side, as numpy and C99's complex
// store them), each row `ld` elements after the last (0: cols, the rows packed), on the host or
// on the GPU (`where`). It describes the memory and never owns or copies it: the caller keeps it
// alive through the call. Made from a const pointer it is read-only: it may be A or B, not C.
class TESSERA_API Matrix {
 public:
  Matrix(const std::complex<float>* data, std::int64_t rows, std::int64_t cols, std::int64_t ld = 0,
         Memory where = Memory::host);
  Matrix(const std::complex<double>* data, std::int64_t rows, std::int64_t cols, std::int64_t ld = 0,
         Memory where = Memory::host);
  Matrix(std::complex<float>* data, std::int64_t rows, std::int64_t cols, std::int64_t ld = 0,
         Memory where = Memory::host);
  Matrix(std::complex<double>* data, std::int64_t rows, std::int64_t cols, std::int64_t ld = 0,
         Memory where = Memory::host);
  Matrix(const float* data, std::int64_t rows, std::int64_t cols, std::int64_t ld = 0);
  Matrix(const double* data, std::int64_t rows, std::int64_t cols, std::int64_t ld = 0);
  Matrix(float* data, std::int64_t rows, std::int64_t cols, std::int64_t ld = 0);
  Matrix(double* data, std::int64_t rows, std::int64_t cols, std::int64_t ld = 0);
  Matrix(const float* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Memory where);
  Matrix(const double* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Memory where);
  Matrix(float* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Memory where);
  Matrix(double* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Memory where);
  Matrix(const Matrix& other);
  Matrix(Matrix&& other) noexcept;
  Matrix& operator=(const Matrix& other);
  Matrix& operator=(Matrix&& other) noexcept;
  ~Matrix();

  std::int64_t rows() const noexcept;
  std::int64_t cols() const noexcept;
  std::int64_t ld() const noexcept;
  std::string dtype() const;  // float32 | float64 | complex64 | complex128
  bool writable() const noexcept;
  Memory memory() const noexcept;

 private:
  friend struct Access;  // inside libtessera
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// C = alpha op(A) op(B) + beta C with the matrices in this process's memory (issue 42): no file is
// read or written, and no MPI is needed (a program that never initializes MPI may call it). op,
// alpha, beta and every other choice (backend, kernel, dtype, gpu_memory, allow_nonfinite) come from
// `options`, whose a, b and c must be left empty. op(A) is M x K, op(B) K x N, C M x N (made from a
// non-const pointer, sharing no memory with A or B), all of one dtype. beta = 0 does not read C.
// Matrices in GPU memory need the cuda backend and are used in place; on a GPU, host matrices are
// copied up and C down. The backend (a GPU's context, cuBLAS, its scratch memory) starts at the
// first call and is kept for the next, so a loop of products pays its start once. Calls are
// serialized within a process, and return when C is complete. Throws MultiplyError naming the
// cause (a shape, a dtype, overlapping memory, NaN/Inf in A or B): C is then left as it was. The
// Result is a one-rank run's report.
TESSERA_API Result multiply(const Matrix& a, const Matrix& b, const Matrix& c, const Options& options);

// The same, ordered on the caller's CUDA stream (a cudaStream_t, passed as void*; nullptr: the
// call above, so the legacy default stream is passed as cudaStreamLegacy): the product runs after
// the work `cuda_stream` already holds. With A, B and C all in GPU memory it
// returns once the product is enqueued there: C is complete when the stream gets past it, and the Result's only phase
// is "enqueue". Otherwise it returns when C is complete. NaN/Inf in A and B are still refused unless allow_nonfinite:
// for float32/float64 the scan runs beside the product and the call waits for the scan alone. With
// beta 0 the product writes C meanwhile (a refusal leaves the product, NaN/Inf carried through);
// with beta != 0 it writes a scratch C folded into C once the scan found nothing (C as it was).
TESSERA_API Result multiply(const Matrix& a, const Matrix& b, const Matrix& c, const Options& options,
                            void* cuda_stream);

// A matrix distributed over the ranks of a communicator, as HPC codes hold one (issue 42): `rows`
// x `cols` as stored, cut into a grid_rows x grid_cols grid of blocks, block (i, j) held by rank
// i * grid_cols + j (ranks beyond the grid hold none: a 0 x 0 local block). Block row i spans the
// rows block_span(rows, grid_rows, i), block column j the columns block_span(cols, grid_cols, j):
// sizes differ by one at most, the first ones longer. `local` is this rank's block (host or GPU
// memory, any leading dimension), described, never owned or copied by the description.
class TESSERA_API DistributedMatrix {
 public:
  DistributedMatrix(std::int64_t rows, std::int64_t cols, int grid_rows, int grid_cols, const Matrix& local);
  DistributedMatrix(const DistributedMatrix& other);
  DistributedMatrix(DistributedMatrix&& other) noexcept;
  DistributedMatrix& operator=(const DistributedMatrix& other);
  DistributedMatrix& operator=(DistributedMatrix&& other) noexcept;
  ~DistributedMatrix();

  std::int64_t rows() const noexcept;
  std::int64_t cols() const noexcept;
  int grid_rows() const noexcept;
  int grid_cols() const noexcept;
  const Matrix& local() const noexcept;

 private:
  friend struct Access;  // inside libtessera
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// [first, last) of part `index` of `extent` cut into `parts` (a DistributedMatrix's block rows or
// columns): the first extent % parts parts are one longer. Throws std::invalid_argument for
// parts < 1, an index outside [0, parts) or a negative extent.
TESSERA_API std::pair<std::int64_t, std::int64_t> block_span(std::int64_t extent, int parts, int index);

// C = alpha op(A) op(B) + beta C over the ranks of `comm` (collective; `comm` borrowed), each rank
// holding its blocks of A, B and C (each matrix with a grid of its own). The ranks exchange the
// rows of A and the columns of B each needs for its block of C, point to point (through host
// memory: blocks in GPU memory are copied down first), then each multiplies its block as
// multiply(a, b, c, options) does, C written where the rank holds it. Options as there (a, b, c
// empty). Every rank must describe the same shapes, grids, dtype, op, alpha and beta. A refusal
// (a shape, a block that is not the rank's, NaN/Inf) is agreed on: every rank throws the same
// MultiplyError (agreed() true), and no rank's C is written. The Result is the same on every rank
// (but seconds()): a rank per record, its "exchange" phase first.
TESSERA_API Result multiply(const DistributedMatrix& a, const DistributedMatrix& b, const DistributedMatrix& c,
                            const Options& options, MPI_Comm comm);

// The plan of multiply(options, comm) without running it (collective): only the inputs' shapes
// are read (or Options::shape is used). Writes the plan's JSON to Options::report when set, and
// prints it on rank 0's stdout unless quiet. Throws MultiplyError.
TESSERA_API Plan dry_run(const Options& options, MPI_Comm comm);

}  // namespace tessera
