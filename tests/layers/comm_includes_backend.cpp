// Must not build (layers.* in tests/CMakeLists.txt): the comm layer includes the backend beside it.
// Compiled with the include path of its layer's target, it finds its own header, not the other.
#include "backend/backend.hpp"
#include "comm/exchange.hpp"
