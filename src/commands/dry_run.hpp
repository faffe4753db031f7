#pragma once
// `tessera run --dry-run`: rank 0 prints the plan (and writes it as JSON with --report); nothing
// is read beyond the input files' shapes.
#include "comm/comm.hpp"
#include "job/run_job.hpp"

namespace tessera::commands {

// Collective over `comm` (errors are agreed on by every rank).
void dry_run(const job::RunOptions& o, const comm::Comm& comm);

}  // namespace tessera::commands
