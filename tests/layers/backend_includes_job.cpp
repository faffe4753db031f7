// Must not build (layers.* in tests/CMakeLists.txt): the backend includes the job layer.
// Compiled with the include path of its layer's target, it finds its own header, not the other.
#include "backend/backend.hpp"
#include "job/run_job.hpp"
