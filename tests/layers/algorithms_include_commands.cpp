// Must not build (layers.* in tests/CMakeLists.txt): an algorithm includes a command.
// Compiled with the include path of its layer's target, it finds its own header, not the other.
#include "algorithms/algorithm.hpp"
#include "commands/verify.hpp"
