// Must not build (layers.* in tests/CMakeLists.txt): an algorithm includes the job harness above it.
// Compiled with the include path of its layer's target, it finds its own header, not the other.
#include "algorithms/algorithm.hpp"
#include "job/run_job.hpp"
