// Must not build (layers.* in tests/CMakeLists.txt): the HDF5 layer includes the backend (io knows nothing of CUDA).
// Compiled with the include path of its layer's target, it finds its own header, not the other.
#include "backend/backend.hpp"
#include "io/hdf5_io.hpp"
