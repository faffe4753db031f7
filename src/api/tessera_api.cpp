// The public API (include/tessera/tessera.hpp) over the job layer: copies the options into the
// job's own, runs the job, and turns the job's typed failures into the public ones, so that no
// internal header reaches a program that links libtessera.
#include "tessera/tessera.hpp"

#include <exception>

#include "comm/comm.hpp"
#include "core/version.hpp"
#include "job/run_job.hpp"

namespace tessera {

MultiplyError::MultiplyError(const std::string& what, int origin_rank, bool agreed)
    : std::runtime_error(what), origin_rank_(origin_rank), agreed_(agreed) {}
// Out of line: the exception types' vtables and type information live in libtessera.
MultiplyError::~MultiplyError() = default;
VerificationFailed::~VerificationFailed() = default;

const char* version() noexcept { return kVersion; }

namespace {

job::RunOptions job_options(const Options& o) {
  job::RunOptions r;
  r.a = o.a;
  r.b = o.b;
  r.c = o.c;
  r.report = o.report;
  r.grid = o.grid;
  r.backend = o.backend;
  r.kernel = o.kernel;
  r.dtype = o.dtype;
  r.algorithm = o.algorithm;
  r.comm = o.comm;
  r.panel_width = o.panel_width;
  r.gpu_memory = o.gpu_memory;
  r.progress = o.progress;
  r.overwrite = o.overwrite;
  r.verify = o.verify;
  r.allow_nonfinite = o.allow_nonfinite;
  r.quiet = o.quiet;
  return r;
}

}  // namespace

Result multiply(const Options& options, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const double start = MPI_Wtime();
  try {
    // The CLI checks these before it starts the job; so does the API, on every rank alike.
    for (const auto& [name, value] : {std::pair{"a", &options.a}, {"b", &options.b}, {"c", &options.c}})
      if (value->empty()) throw MultiplyError(std::string("Options.") + name + " is empty (FILE:/DATASET)", rank, true);
    const comm::Comm job_comm(comm);
    job::run_job(job_options(options), job_comm);
  } catch (const MultiplyError&) {
    throw;
  } catch (const job::VerificationFailed& e) {
    throw VerificationFailed(e.what(), rank, true);
  } catch (const comm::JobError& e) {
    throw MultiplyError(e.what(), e.origin(), true);
  } catch (const std::exception& e) {
    throw MultiplyError(e.what(), rank, false);
  }
  return Result{MPI_Wtime() - start};
}

}  // namespace tessera
