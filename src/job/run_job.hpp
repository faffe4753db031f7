#pragma once
// `tessera run`: the distributed multiply, run by one harness for every algorithm
// (job/run_job.cpp): plan and its broadcast, the path rule, backend start, the inputs read (NaN/Inf
// refused), the algorithm's compute step (algorithms/algorithm.hpp), C through the output route
// (in place or gathered), committed under its name only when all went well, the report.
#include <cstdint>
#include <optional>
#include <string>

#include "comm/comm.hpp"
#include "core/error.hpp"
#include "job/run_options.hpp"

namespace tessera::job {

// Thrown (on every rank) when --verify finds C wrong: nothing is written.
class VerificationFailed : public Error {
 public:
  using Error::Error;
};

// Collective over `comm`: the job, run once per warm-up and counted run (job/repeats.hpp).
// Returns normally on success; throws comm::JobError (agreed on by every rank) on any failure,
// VerificationFailed when --verify rejects C. With `report_json` (on every rank or none), the
// last run's JSON report (as --report writes it) is also left there, on every rank (libtessera).
void run_job(const RunOptions& opts, const comm::Comm& comm, std::string* report_json = nullptr);

}  // namespace tessera::job
