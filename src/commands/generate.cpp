#include "commands/generate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "commands/command_paths.hpp"
#include "core/error.hpp"
#include "io/cleanup.hpp"
#include "io/hdf5_io.hpp"
#include "partition/partition.hpp"

namespace tessera::commands {

namespace {

// splitmix64: a counter-based generator, so each element is a pure function of (seed, index).
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1p-53; }  // [0, 1)

class Distribution {
 public:
  Distribution(const GenerateOptions& o) : o_(o) {
    if (o.dist != "uniform" && o.dist != "normal" && o.dist != "integers")
      throw InputError("invalid --dist '" + o.dist + "' (choose: uniform, normal, integers)");
    if (!(o.low < o.high) && o.dist != "normal")
      throw InputError("--low must be below --high (got " + std::to_string(o.low) + ", " + std::to_string(o.high) +
                       ")");
    if (o.dist == "integers" && std::ceil(o.low) > std::floor(o.high))
      throw InputError("--dist integers: [--low, --high] = [" + std::to_string(o.low) + ", " + std::to_string(o.high) +
                       "] holds no integer");
  }
  double operator()(std::uint64_t index) const {
    const std::uint64_t h = mix(o_.seed * 0x2545f4914f6cdd1dULL ^ mix(index));
    if (o_.dist == "uniform") return o_.low + (o_.high - o_.low) * unit(h);
    if (o_.dist == "integers") {
      const double lo = std::ceil(o_.low), hi = std::floor(o_.high);
      return std::min(hi, lo + std::floor(unit(h) * (hi - lo + 1)));
    }
    // Box-Muller on two independent draws.
    const double u1 = 1.0 - unit(h), u2 = unit(mix(h));
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  GenerateOptions o_;
};

}  // namespace

void generate(const GenerateOptions& o) {
  if (o.rows < 1 || o.cols < 1)
    throw InputError("--rows and --cols must be >= 1 (got " + std::to_string(o.rows) + "x" + std::to_string(o.cols) +
                     ")");
  DType dtype;
  if (o.dtype == "f32" || o.dtype == "float32")
    dtype = DType::f32;
  else if (o.dtype == "f64" || o.dtype == "float64")
    dtype = DType::f64;
  else
    throw InputError("invalid --dtype '" + o.dtype + "' (choose: f32, f64)");
  if (o.gzip < 0 || o.gzip > 9) throw InputError("--gzip must be 0..9");
  const Distribution draw(o);
  guard_generate_paths(o);  // the output and the config (commands/command_paths.hpp), before anything is written
  // What a generate (or run) that died left of this output: its temporary file, or the temporary
  // dataset inside an existing file, removed as `run` removes them (io/cleanup.hpp).
  for (const auto& note : io::clean_stale_temporaries(io::DatasetRef::parse(o.out).file))
    std::fprintf(stderr, "tessera: note: %s\n", note.c_str());

  io::WriteOptions wo;
  wo.overwrite = o.overwrite;
  // Into an existing HDF5 file the matrix is added beside what it holds, as `run` writes C; an
  // existing dataset at that path is replaced only with --overwrite (nothing else is touched).
  wo.existing_file = io::ExistingFile::add_dataset;
  wo.gzip_level = o.gzip;
  if (!o.chunk.empty()) {
    const auto g = partition::parse_grid(o.chunk, "--chunk");  // the same "RxC" syntax
    wo.chunk = {std::min<std::int64_t>(g.rows, o.rows), std::min<std::int64_t>(g.cols, o.cols)};
  }
  io::MatrixWriter writer(io::DatasetRef::parse(o.out), o.rows, o.cols, dtype, wo);
  for (const auto& note : writer.notes()) std::fprintf(stderr, "tessera: note: %s\n", note.c_str());

  // Blocks of about 32 MiB of rows.
  const std::int64_t block_rows = std::max<std::int64_t>(1, (std::int64_t{32} << 20) / (o.cols * 8));
  std::vector<double> f64;
  std::vector<float> f32;
  for (std::int64_t r0 = 0; r0 < o.rows; r0 += block_rows) {
    const std::int64_t nr = std::min(block_rows, o.rows - r0);
    const auto count = static_cast<std::size_t>(nr * o.cols);
    const auto base = static_cast<std::uint64_t>(r0 * o.cols);
    if (dtype == DType::f64) {
      f64.resize(count);
      for (std::size_t i = 0; i < count; ++i) f64[i] = draw(base + i);
      writer.write_block(r0, 0, nr, o.cols, f64.data());
    } else {
      f32.resize(count);
      for (std::size_t i = 0; i < count; ++i) f32[i] = static_cast<float>(draw(base + i));
      writer.write_block(r0, 0, nr, o.cols, f32.data());
    }
  }
  writer.set_attributes({io::Attribute::of("generator", "tessera generate"), io::Attribute::of("distribution", o.dist),
                         io::Attribute::of("seed", static_cast<std::int64_t>(o.seed))});
  writer.commit();
}

}  // namespace tessera::commands
