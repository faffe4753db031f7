#pragma once
// Progress of a long run on rank 0's stderr: report/progress.hpp (steps, the work done with an
// ETA, `auto` turning it on for a run that takes longer than predicted).
#include "report/progress.hpp"

namespace tessera::job {

using report::Progress;

}  // namespace tessera::job
