// Must not build (layers.* in tests/CMakeLists.txt): the sm_90a kernels (kernels/wgmma.cu, their
// own object library) include a layer of src/. Compiled with that library's include path.
#include "backend/backend.hpp"
#include "kernels/gpu_kernel.hpp"
