// The public API (include/tessera/tessera.hpp) over the job layer and the dry run: the options go
// to the job as the command line's would, the report and the plan come back as values, and the
// job's typed failures become the public ones, so that no internal header reaches a program that
// links libtessera.
#include "tessera/tessera.hpp"

#include <sys/stat.h>

#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "access.hpp"
#include "comm/comm.hpp"
#include "commands/dry_run.hpp"
#include "commands/provenance.hpp"
#include "core/log.hpp"
#include "core/version.hpp"
#include "io/hdf5_io.hpp"
#include "io/journal.hpp"
#include "job/run_job.hpp"
#include "report/provenance.hpp"

namespace tessera {

MultiplyError::MultiplyError(const std::string& what, int origin_rank, bool agreed)
    : std::runtime_error(what), origin_rank_(origin_rank), agreed_(agreed) {}
MultiplyError::MultiplyError(const MultiplyError& failure, const std::string& recovery, bool output_restored)
    : std::runtime_error(std::string(failure.what()) + (recovery.empty() ? "" : "; " + recovery)),
      origin_rank_(failure.origin_rank_),
      agreed_(failure.agreed_),
      recovery_(recovery),
      output_restored_(output_restored) {}
// Out of line: the exception types' vtables and type information live in libtessera.
MultiplyError::~MultiplyError() = default;
VerificationFailed::~VerificationFailed() = default;

const char* version() noexcept { return kVersion; }

namespace {

// This process's command line, as the report's provenance names it (empty where /proc is not).
std::vector<std::string> command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  std::string::size_type at = 0;
  while (at < all.size()) {
    const auto end = all.find('\0', at);
    argv.push_back(all.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return argv;
}

// For one call: the log level Options::log_level asks for (the library's is restored after), and
// the provenance of the report (the program's command line, the options given, the libraries).
class CallScope {
 public:
  CallScope(const Options& options, int rank) : level_(log::level()), rank_(log::rank()) {
    const std::string& asked = Access::of(options).log_level;
    log::Level level = level_;
    if (!asked.empty() && !log::parse_level(asked, level))
      throw MultiplyError("Options log-level '" + asked + "' is not error, warn, info or debug", rank, true);
    log::configure(level, rank);
    report::set_provenance({{"command_line", command_line()},
                            {"options", options_given(options)},
                            {"libraries", commands::library_versions()}});
  }
  ~CallScope() { log::configure(level_, rank_); }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  log::Level level_;
  int rank_;
};

// Runs `body` (collective), turning the job's failures into the public ones.
template <typename Body>
void translated(int rank, Body&& body) {
  try {
    body();
  } catch (const MultiplyError&) {
    throw;
  } catch (const job::VerificationFailed& e) {
    throw VerificationFailed(e.what(), rank, true);
  } catch (const comm::JobError& e) {
    throw MultiplyError(e.what(), e.origin(), true);
  } catch (const std::exception& e) {
    throw MultiplyError(e.what(), rank, false);
  }
}

// After a failed run, on rank 0 once every rank has stopped: the output file's recovery, as
// `tessera recover` does it (io/journal.hpp), and what it found, for MultiplyError::recovery().
std::pair<std::string, bool> recover_output(const std::string& c) {
  std::string file;
  try {
    file = io::DatasetRef::parse(c).file;
  } catch (const std::exception&) {
    return {"", false};  // not a dataset reference: the run never reached the file
  }
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0)
    return {"the output file '" + file + "' does not exist (nothing to restore)", false};
  try {
    const std::string note = io::recover_interrupted_write(file);
    if (!note.empty()) return {"the output file '" + file + "' was restored from the run's journal: " + note, true};
    return {"the output file '" + file + "' needed no restoring (no interrupted write to undo)", false};
  } catch (const std::exception& e) {
    return {"the output file '" + file + "' could not be restored: " + e.what(), false};
  }
}

// `failure` of multiply(), rethrown with the output file's recovery where it ran.
template <typename Failure>
[[noreturn]] void rethrow_recovered(const Failure& failure, const job::RunOptions& o, int rank) {
  if (rank != 0 || !failure.agreed()) throw failure;
  const auto [recovery, restored] = recover_output(o.c);
  throw Failure(failure, recovery, restored);
}

int rank_in(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

}  // namespace

Result multiply(const Options& options, MPI_Comm comm) {
  const int rank = rank_in(comm);
  const double start = MPI_Wtime();
  auto impl = std::make_shared<Access::ResultImpl>();
  const job::RunOptions& o = Access::of(options).run;
  try {
    translated(rank, [&] {
      // The CLI checks these before it starts the job; so does the API, on every rank alike.
      for (const auto& [name, value] : {std::pair{"a", &o.a}, {"b", &o.b}, {"c", &o.c}})
        if (value->empty())
          throw MultiplyError(std::string("Options ") + name + " is empty (FILE:/DATASET)", rank, true);
      const CallScope scope(options, rank);
      const comm::Comm job_comm(comm);
      job::run_job(o, job_comm, &impl->text);
      impl->report = nlohmann::json::parse(impl->text);
    });
  } catch (const VerificationFailed& failure) {
    rethrow_recovered(failure, o, rank);
  } catch (const MultiplyError& failure) {
    rethrow_recovered(failure, o, rank);
  }
  impl->seconds = MPI_Wtime() - start;
  return Access::result(std::move(impl));
}

Plan dry_run(const Options& options, MPI_Comm comm) {
  const int rank = rank_in(comm);
  auto impl = std::make_shared<Access::PlanImpl>();
  const job::RunOptions& o = Access::of(options).run;
  translated(rank, [&] {
    const CallScope scope(options, rank);
    const comm::Comm job_comm(comm);
    commands::DryRunPlan plan = commands::dry_run(o, job_comm, !o.quiet);
    impl->text = std::move(plan.text);
    impl->json = std::move(plan.json);
    impl->plan = nlohmann::json::parse(impl->json);
  });
  return Access::plan(std::move(impl));
}

}  // namespace tessera
