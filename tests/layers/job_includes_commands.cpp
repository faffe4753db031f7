// Must not build (layers.* in tests/CMakeLists.txt): the job includes a command above it.
// Compiled with the include path of its layer's target, it finds its own header, not the other.
#include "commands/verify.hpp"
#include "job/run_job.hpp"
