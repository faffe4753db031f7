#pragma once
// `tessera run --dry-run`: rank 0 prints the plan (and writes it as JSON with --report); nothing
// is read beyond the input files' shapes.
#include <string>

#include "comm/comm.hpp"
#include "job/run_job.hpp"

namespace tessera::commands {

// The plan as rank 0 made it: the text `--dry-run` prints, and its JSON (tessera.dry-run/1).
struct DryRunPlan {
  std::string text, json;
};

// Collective over `comm` (errors are agreed on by every rank): rank 0 prints the plan (unless
// `print` is false) and writes its JSON to --report. Returns the plan on every rank.
DryRunPlan dry_run(const job::RunOptions& o, const comm::Comm& comm, bool print = true);

}  // namespace tessera::commands
