// Must not build (layers.* in tests/CMakeLists.txt): the index math includes MPI.
// Compiled with the include path of its layer's target, it finds its own header, not the other.
#include "comm/comm.hpp"
#include "partition/partition.hpp"
