#pragma once
// The TESSERA_SCALAPACK* variables libtessera_scalapack reads (docs/scalapack.md, "Environment";
// registered in core/env.hpp so that the tessera binary takes them for no typo), each read once
// per process. A value it does not take is named on stderr and the default used.
#include <cstdint>
#include <string>

namespace tessera::scalapack {

// TESSERA_SCALAPACK: auto (tessera above the size rule), tessera (every valid call), scalapack (none).
enum class Mode { automatic, tessera, scalapack };
Mode mode();

// TESSERA_SCALAPACK_VERBOSE=1: a line per call on the grid's process 0.
bool verbose();

// TESSERA_SCALAPACK=auto's rule: a product of at least TESSERA_SCALAPACK_MIN_FLOPS (2 M N K).
bool worth_it(std::int64_t m, std::int64_t n, std::int64_t k);

// TESSERA_SCALAPACK_BACKEND: auto, cpu or cuda, the backend of each process's multiply.
const std::string& backend_choice();

}  // namespace tessera::scalapack
