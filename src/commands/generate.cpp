#include "commands/generate.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

#include "commands/command_paths.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
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

// "16.00 TiB", "512 B": for messages.
std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  for (; bytes >= 1024.0 && u < 6; ++u) bytes /= 1024.0;
  return u == 0 ? fmt::format("{:.0f} {}", bytes, units[u]) : fmt::format("{:.2f} {}", bytes, units[u]);
}

// The bytes the matrix takes in its file: rows x cols elements, chunked storage rounded up to whole
// chunks (HDF5 allocates the edge chunks whole). Refuses, with InputError, what HDF5 cannot store:
// more elements or bytes than a file can hold (2^63 - 1 bytes, its largest offset), a chunk of
// 4 GiB or more (the writer refuses it too, but only after the free space is checked).
std::int64_t stored_bytes(const GenerateOptions& o, DType dtype, const std::vector<std::int64_t>& chunk) {
  const auto size = static_cast<std::int64_t>(dtype_size(dtype));
  const auto round_up = [](std::int64_t n, std::int64_t unit, std::int64_t& out) {
    return !__builtin_mul_overflow(n / unit + (n % unit != 0 ? 1 : 0), unit, &out);
  };
  std::int64_t rows = o.rows, cols = o.cols, elements = 0, bytes = 0;
  bool fits = true;
  if (chunk.size() == 2 && chunk[0] > 0 && chunk[1] > 0) {
    if (static_cast<double>(chunk[0]) * static_cast<double>(chunk[1]) * static_cast<double>(size) >= 0x1p32)
      throw InputError(fmt::format("--chunk {}x{} of {} is too large: HDF5 limits a chunk to 4 GiB", chunk[0], chunk[1],
                                   dtype_name(dtype)));
    fits = round_up(o.rows, chunk[0], rows) && round_up(o.cols, chunk[1], cols);
  }
  if (!fits || __builtin_mul_overflow(rows, cols, &elements) || __builtin_mul_overflow(elements, size, &bytes)) {
    const double count = static_cast<double>(o.rows) * static_cast<double>(o.cols);
    throw InputError(
        fmt::format("--rows {} --cols {}: {:.3g} elements of {} take {:.3g} bytes, more than a file can "
                    "hold (2^63 - 1 bytes)",
                    o.rows, o.cols, count, dtype_name(dtype), count * static_cast<double>(size)));
  }
  return bytes;
}

// Refuses, before anything is written, a matrix larger than the free space of the file system
// its file goes to (statvfs of the output's directory; what root may use where tessera runs as
// root), with HDF5's own metadata (1 MiB is plenty). Compressed output (--gzip) is only warned
// about: its size is known once written. A directory that cannot be examined is left to the
// writer to name.
void check_free_space(const GenerateOptions& o, DType dtype, std::int64_t bytes) {
  const std::filesystem::path file(io::DatasetRef::parse(o.out).file);
  const std::string dir = file.has_parent_path() ? file.parent_path().string() : ".";
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return;
  const double free_bytes =
      static_cast<double>(::geteuid() == 0 ? fs.f_bfree : fs.f_bavail) * static_cast<double>(fs.f_frsize);
  constexpr double kMetadata = 1 << 20;
  if (static_cast<double>(bytes) + kMetadata <= free_bytes) return;
  const std::string what =
      fmt::format("--rows {} --cols {} of {} take {}, but the file system of '{}' has {} free", o.rows, o.cols,
                  dtype_name(dtype), bytes_text(static_cast<double>(bytes)), dir, bytes_text(free_bytes));
  if (o.gzip == 0) throw InputError(what);
  log::warn(what + " (uncompressed; with --gzip it may still fit)");
}

// The matrix in pieces of about 32 MiB (as float64): blocks of whole rows, or pieces of one row
// where a row is longer than that, so the memory generate holds is bounded whatever the shape.
void write_matrix(const GenerateOptions& o, DType dtype, const Distribution& draw, io::MatrixWriter& writer) {
  constexpr std::int64_t kPiece = (std::int64_t{32} << 20) / 8;  // elements
  const std::int64_t block_rows = std::max<std::int64_t>(1, kPiece / o.cols);
  const std::int64_t block_cols = std::min(o.cols, kPiece);
  std::vector<double> f64;
  std::vector<float> f32;
  for (std::int64_t r0 = 0; r0 < o.rows; r0 += block_rows) {
    const std::int64_t nr = std::min(block_rows, o.rows - r0);
    for (std::int64_t c0 = 0; c0 < o.cols; c0 += block_cols) {
      const std::int64_t nc = std::min(block_cols, o.cols - c0);
      const auto fill = [&](auto& piece) {
        using T = typename std::decay_t<decltype(piece)>::value_type;
        piece.resize(static_cast<std::size_t>(nr * nc));
        for (std::int64_t i = 0; i < nr; ++i) {
          const auto base = static_cast<std::uint64_t>((r0 + i) * o.cols + c0);
          T* row = piece.data() + i * nc;
          for (std::int64_t j = 0; j < nc; ++j) row[j] = static_cast<T>(draw(base + static_cast<std::uint64_t>(j)));
        }
        writer.write_block(r0, c0, nr, nc, piece.data());
      };
      if (dtype == DType::f64)
        fill(f64);
      else
        fill(f32);
    }
  }
}

}  // namespace

void generate(const GenerateOptions& o) {
  if (o.rows < 1 || o.cols < 1)
    throw InputError("--rows and --cols must be >= 1 (got " + std::to_string(o.rows) + "x" + std::to_string(o.cols) +
                     ")");
  DType dtype = DType::f32;
  if (!parse_dtype(o.dtype, &dtype)) throw InputError("invalid --dtype '" + o.dtype + "' (choose: f32, f64)");
  if (o.gzip < 0 || o.gzip > 9) throw InputError("--gzip must be 0..9");
  const Distribution draw(o);
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
  const std::int64_t bytes = stored_bytes(o, dtype, wo.chunk);
  guard_generate_paths(o);  // the output and the config (commands/command_paths.hpp), before anything is written
  // What a generate (or run) that died left of this output: its temporary file (the temporary
  // dataset inside an existing file is removed by the writer, through the file's journal).
  for (const auto& note : io::clean_stale_temporaries(io::DatasetRef::parse(o.out).file))
    std::fprintf(stderr, "tessera: note: %s\n", note.c_str());
  check_free_space(o, dtype, bytes);  // after the clean-up, which may have freed space

  io::MatrixWriter writer(io::DatasetRef::parse(o.out), o.rows, o.cols, dtype, wo);
  for (const auto& note : writer.notes()) std::fprintf(stderr, "tessera: note: %s\n", note.c_str());
  write_matrix(o, dtype, draw, writer);
  writer.set_attributes({io::Attribute::of("generator", "tessera generate"), io::Attribute::of("distribution", o.dist),
                         io::Attribute::of("seed", static_cast<std::int64_t>(o.seed))});
  writer.commit();
}

}  // namespace tessera::commands
