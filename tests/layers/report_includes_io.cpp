// Must not build (layers.* in tests/CMakeLists.txt): the report includes the HDF5 layer beside it.
// Compiled with the include path of its layer's target, it finds its own header, not the other.
#include "io/hdf5_io.hpp"
#include "report/report.hpp"
