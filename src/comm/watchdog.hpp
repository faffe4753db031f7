#pragma once
// The bound on a wait in MPI. A rank whose peers are gone (their node lost, its slurmd killed, so
// that nothing ended this rank) waits in a collective forever, and Open MPI spins meanwhile (100%
// of a core). Every MPI call made through TESSERA_MPI_CHECK is armed (a MpiWait): a background
// thread, started when a bound is set, sees a wait older than the bound, prints one line naming
// the rank, its host, the MPI call and the job's step, and ends the process with SIGTERM (so the
// io layer's handler rolls back the output it holds, as for any SIGTERM). Unset (every command but
// `run`, and `run` before its plan is settled) nothing is armed: one atomic load per MPI call.
#include <optional>
#include <string>

namespace tessera::comm {

// The bound `run` uses: --timeout SECONDS when given (0: none), else a floor of kWaitFloorSeconds
// plus kWaitModelFactor times the model's prediction of the whole run (a wait in a healthy run,
// an idle rank waiting out the others' compute, rank 0's commit, is at most one run long). Pure.
inline constexpr double kWaitFloorSeconds = 30;
inline constexpr double kWaitModelFactor = 10;
double wait_bound(const std::optional<int>& timeout, double predicted_seconds);

// Sets the bound (seconds; 0 or less: off) for this process, with what it came from (for the
// message: "--timeout", "the model's prediction"), this rank and its host.
void set_wait_bound(double seconds, const std::string& why, int rank, const std::string& host);
double wait_bound_seconds();
// The job's step now under way, named in the message ("plan", "read", "write", ...): a string
// literal (the pointer is kept).
void set_wait_step(const char* step);

// Armed while this thread waits in one MPI call (`call`: its text, e.g. "MPI_Allreduce(...)"; a
// string literal). Nests: the outer wait is armed again when the inner one ends.
class MpiWait {
 public:
  explicit MpiWait(const char* call) noexcept;
  ~MpiWait();
  MpiWait(const MpiWait&) = delete;
  MpiWait& operator=(const MpiWait&) = delete;

 private:
  const char* call_;
  long long since_ = 0;  // the outer wait's start (steady clock, ns), 0: none
  const char* outer_ = nullptr;
};

}  // namespace tessera::comm
