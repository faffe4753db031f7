// Must not build (layers.* in tests/CMakeLists.txt): the backend includes the algorithms above it.
// Compiled with the include path of its layer's target, it finds its own header, not the other.
#include "algorithms/algorithm.hpp"
#include "backend/backend.hpp"
