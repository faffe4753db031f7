// Must not build (layers.* in tests/CMakeLists.txt): a kernel includes the backend.
// Compiled with the include path of its layer's target, it finds its own header, not the other.
#include "backend/backend.hpp"
#include "kernels/cpu_gemm.hpp"
