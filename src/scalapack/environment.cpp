#include "environment.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tessera::scalapack {

namespace {

// The default of TESSERA_SCALAPACK_MIN_FLOPS: 1e7, about 170^3. Below it the ~8 us a call costs of
// its own (the plan, the options, a tessera::multiply) outweigh one GEMM instead of ScaLAPACK's
// panels: on 2 cores (docs/performance.md) 1x1 grids broke even at 192^3-256^3 (128^3: 9% slower,
// 64^3: 17 us against 9 us), 1x2 grids at about 110^3.
constexpr double kDefaultMinFlops = 1e7;

}  // namespace

Mode mode() {
  static const Mode m = [] {
    const char* v = std::getenv("TESSERA_SCALAPACK");
    if (!v || !*v || std::strcmp(v, "auto") == 0) return Mode::automatic;
    if (std::strcmp(v, "tessera") == 0) return Mode::tessera;
    if (std::strcmp(v, "scalapack") == 0) return Mode::scalapack;
    std::fprintf(stderr, "tessera: TESSERA_SCALAPACK=%s is not one of auto, tessera, scalapack; using auto\n", v);
    return Mode::automatic;
  }();
  return m;
}

bool verbose() {
  static const bool on = [] {
    const char* v = std::getenv("TESSERA_SCALAPACK_VERBOSE");  // 0 or 1
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

bool worth_it(std::int64_t m, std::int64_t n, std::int64_t k) {
  static const double min_flops = [] {
    const char* v = std::getenv("TESSERA_SCALAPACK_MIN_FLOPS");
    if (!v || !*v) return kDefaultMinFlops;
    char* end = nullptr;
    const long long flops = std::strtoll(v, &end, 10);
    if (*end != '\0' || flops < 0 || std::strchr(v, '-')) {
      std::fprintf(stderr, "tessera: TESSERA_SCALAPACK_MIN_FLOPS=%s is not a whole number of flops; using %.0f\n", v,
                   kDefaultMinFlops);
      return kDefaultMinFlops;
    }
    return static_cast<double>(flops);
  }();
  return 2.0 * double(m) * double(n) * double(k) >= min_flops;
}

const std::string& backend_choice() {
  static const std::string choice = [] {
    const char* v = std::getenv("TESSERA_SCALAPACK_BACKEND");
    if (!v || !*v) return std::string("auto");
    for (const char* ok : {"auto", "cpu", "cuda"})
      if (std::strcmp(v, ok) == 0) return std::string(v);
    std::fprintf(stderr, "tessera: TESSERA_SCALAPACK_BACKEND=%s is not one of auto, cpu, cuda; using auto\n", v);
    return std::string("auto");
  }();
  return choice;
}

}  // namespace tessera::scalapack
