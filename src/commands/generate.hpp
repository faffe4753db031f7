#pragma once
// `tessera generate`: random matrices into HDF5, written in pieces of about 32 MiB (blocks of rows,
// or pieces of a row longer than that: bounded memory whatever the shape). Element (i, j) depends
// only on (seed, i * cols + j), so a matrix is the same whatever the pieces. A matrix that cannot
// fit its file system's free space (uncompressed), or HDF5's limits, is refused before anything is
// written.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::commands {

struct GenerateOptions {
  std::string out;  // FILE:/DATASET
  std::int64_t rows = 0, cols = 0;
  std::string dtype = "f32";  // f32 | f64
  std::uint64_t seed = 1;
  std::string dist = "uniform";  // uniform [low, high) | normal (mean 0, sd 1) | integers [low, high]
  double low = -1, high = 1;
  std::string chunk;  // "RxC" or ""
  int gzip = 0;       // 0..9
  bool overwrite = false;
  std::string config;  // --config file, if any: never written
};

void generate(const GenerateOptions& opts);

}  // namespace tessera::commands
