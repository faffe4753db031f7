// Must not build (layers.* in tests/CMakeLists.txt): the HDF5 layer includes the job above it.
// Compiled with the include path of its layer's target, it finds its own header, not the other.
#include "io/hdf5_io.hpp"
#include "job/run_job.hpp"
