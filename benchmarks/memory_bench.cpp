// tessera::multiply on matrices in host memory (issue 44: the path ScaLAPACK's drop-in and
// tessera.matmul on numpy take), timed as a caller sees it: random data (uniform [-1, 1)), WARMUP
// calls, then the median, min and max wall time of REPEATS calls, and the last call's phases.
//
//   memory_bench d|s M N K WARMUP REPEATS [ALPHA BETA [scan|noscan]]
//
// One line: `memory_bench <median s> <min s> <max s> <GFLOP/s at the median> kernel <name> <phase>
// <s>...`. Whole processes of it, alternated with another build or setting, make an A/B
// (scripts/memory_bench_ab.sh).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tessera/tessera.hpp"

namespace {

template <class T>
std::vector<T> random_matrix(std::size_t count, std::uint64_t seed) {
  std::vector<T> x(count);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (auto& v : x) v = static_cast<T>(u(rng));
  return x;
}

template <class T>
int bench(std::int64_t m, std::int64_t n, std::int64_t k, int warmup, int repeats, double alpha, double beta,
          bool scan) {
  const auto a = random_matrix<T>(static_cast<std::size_t>(m * k), 1);
  const auto b = random_matrix<T>(static_cast<std::size_t>(k * n), 2);
  auto c = random_matrix<T>(static_cast<std::size_t>(m * n), 3);
  tessera::Options o;
  o.alpha(alpha).beta(beta).allow_nonfinite(!scan);
  std::vector<double> times;
  tessera::Result last;
  for (int i = 0; i < warmup + repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    last = tessera::multiply(tessera::Matrix(a.data(), m, k), tessera::Matrix(b.data(), k, n),
                             tessera::Matrix(c.data(), m, n), o);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i >= warmup) times.push_back(s);
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::printf("memory_bench %.5f %.5f %.5f %.1f kernel %s", median, times.front(), times.back(),
              2.0 * double(m) * double(n) * double(k) / median * 1e-9, last.kernel().c_str());
  for (const std::string& phase : last.phase_names(0))
    std::printf(" %s %.5f", phase.c_str(), last.phase_seconds(0, phase));
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s d|s M N K WARMUP REPEATS [ALPHA BETA [scan|noscan]]\n", argv[0]);
    return 2;
  }
  const std::string dtype = argv[1];
  const std::int64_t m = std::atoll(argv[2]), n = std::atoll(argv[3]), k = std::atoll(argv[4]);
  const int warmup = std::atoi(argv[5]), repeats = std::max(1, std::atoi(argv[6]));
  const double alpha = argc > 8 ? std::atof(argv[7]) : 1.0, beta = argc > 8 ? std::atof(argv[8]) : 0.0;
  const bool scan = argc > 9 ? std::string(argv[9]) != "noscan" : true;
  try {
    return dtype == "s" ? bench<float>(m, n, k, warmup, repeats, alpha, beta, scan)
                        : bench<double>(m, n, k, warmup, repeats, alpha, beta, scan);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memory_bench: %s\n", e.what());
    return 1;
  }
}
