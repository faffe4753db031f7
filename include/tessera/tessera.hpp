#pragma once
// tessera's public API: the distributed multiply C = A * B of `tessera run`, called in-process
// over an MPI communicator. HDF5 in, HDF5 out; one GPU (or the CPU) per rank, as the CLI.
//
//   find_package(tessera) + target_link_libraries(app PRIVATE tessera::tessera), or
//   mpicxx app.cpp $(pkg-config --cflags --libs tessera)
//
//   tessera::Options o;
//   o.a = "a.h5:/A"; o.b = "b.h5:/B"; o.c = "c.h5:/C";
//   tessera::multiply(o, MPI_COMM_WORLD);  // collective: every rank of the communicator calls it
//
// The caller initializes MPI (MPI_THREAD_FUNNELED or above: tessera's helper threads read and
// write files beside the calling thread's MPI calls, never calling MPI themselves) and finalizes
// it. Only this header is installed; it depends on nothing but <mpi.h> and the standard library.
#include <mpi.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tessera {

// The library's version, e.g. "0.1.0" (the CMake package version).
const char* version() noexcept;

// The options of `tessera run` that a program sets (docs/usage.md; defaults as the CLI's).
struct Options {
  std::string a, b, c;             // FILE:/DATASET of A (M x K), B (K x N), and where C goes
  std::string report;              // JSON report path (schema: docs/report.md); "" = none
  std::string grid;                // process grid "PRxPC"; "" = chosen from M, N, K and the ranks
  std::string backend = "auto";    // auto | cpu | cuda
  std::string kernel = "auto";     // a kernel of the backend (`tessera info`); auto = its choice
  std::string dtype = "auto";      // auto | f32 | f64
  std::string algorithm = "auto";  // auto | panels | summa | ksplit
  std::string comm = "auto";       // auto | nccl | cuda-aware | host
  std::int64_t panel_width = 0;    // summa's K panel width; 0 = chosen
  std::string gpu_memory;          // GPU memory a rank may use ("8G"); "" = what is free
  std::string progress = "off";    // on | off | auto (progress lines on rank 0's stderr)
  bool overwrite = false;          // replace an existing output file
  bool verify = false;             // Freivalds' check of C before it is written
  bool allow_nonfinite = false;    // multiply inputs holding NaN / Inf instead of refusing them
  bool quiet = true;               // false: rank 0 prints the report table on stdout
};

// What a successful multiply returns, on every rank.
struct Result {
  double seconds = 0;  // wall time of the call on this rank
};

// A failure of multiply(). When agreed() is true every rank of the communicator threw the same
// error (from rank origin_rank(), which saw it first) and the communicator is usable; when it is
// false only this rank failed, outside a collective step, and its peers may be waiting for it:
// end the job (MPI_Abort), as the tessera CLI does.
class MultiplyError : public std::runtime_error {
 public:
  MultiplyError(const std::string& what, int origin_rank, bool agreed);
  ~MultiplyError() override;
  int origin_rank() const noexcept { return origin_rank_; }
  bool agreed() const noexcept { return agreed_; }

 private:
  int origin_rank_;
  bool agreed_;
};

// Options.verify found C wrong (on every rank); nothing was written.
class VerificationFailed : public MultiplyError {
 public:
  using MultiplyError::MultiplyError;
  ~VerificationFailed() override;
};

// C = A * B over the ranks of `comm` (collective; `comm` is borrowed, not freed). Returns on
// every rank once C is written; throws MultiplyError (or VerificationFailed) otherwise.
Result multiply(const Options& options, MPI_Comm comm);

}  // namespace tessera
