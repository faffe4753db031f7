// Reading: dataset references, inspect() and read_block(), which takes the fastest way the
// dataset's storage allows: pread of contiguous data, the parallel chunk reader, or HDF5.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/chunked_read.hpp"
#include "io/direct_io.hpp"
#include "io/hdf5_io.hpp"
#include "io/hdf5_library.hpp"
#include "io/hdf5_open.hpp"
#include "io/stored_type.hpp"

namespace tessera::io {

using namespace hdf5;

// ---- DatasetRef ------------------------------------------------------------------------------

DatasetRef DatasetRef::parse(const std::string& text) {
  // Unescape while looking for the separator: the last ':' followed by '/' that is not "\:".
  std::string plain;                      // text with its escapes resolved
  std::size_t split = std::string::npos;  // index in `plain` of the separating ':'
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == ':' || text[i + 1] == '\\')) {
      plain += text[++i];
      continue;
    }
    if (c == ':' && i + 1 < text.size() && text[i + 1] == '/') split = plain.size();
    plain += c;
  }
  if (split == std::string::npos || split == 0)
    throw InputError("invalid dataset reference '" + text + "': expected FILE:/PATH, e.g. data.h5:/A");
  DatasetRef ref{plain.substr(0, split), plain.substr(split + 1), std::nullopt};
  // A window after the path, "[r0:r1, c0:c1]" (slice.cpp); any other bracket belongs to the name.
  const std::size_t open = ref.path.rfind('[');
  if (!ref.path.empty() && ref.path.back() == ']' && open != std::string::npos && open > 1 &&
      looks_like_slice(ref.path.substr(open + 1, ref.path.size() - open - 2))) {
    try {
      ref.slice = parse_slice(ref.path.substr(open + 1, ref.path.size() - open - 2));
    } catch (const InputError& e) {
      throw InputError("'" + text + "': " + e.what());
    }
    ref.path.erase(open);
    while (!ref.path.empty() && ref.path.back() == ' ') ref.path.pop_back();
  }
  return ref;
}

namespace {

// `part` written so that parse() reads it back unchanged: a '\\' that parse() would take for an
// escape (followed by ':' or '\\', or ending the file name, where the separator follows) is
// doubled; in the dataset path, a ':' followed by '/' becomes "\\:" (it must not split).
std::string escaped(const std::string& part, bool is_path) {
  std::string out;
  for (std::size_t i = 0; i < part.size(); ++i) {
    const char c = part[i];
    const char next = i + 1 < part.size() ? part[i + 1] : '\0';
    if (c == '\\' && (next == ':' || next == '\\' || (next == '\0' && !is_path)))
      out += "\\\\";
    else if (c == ':' && is_path && next == '/')
      out += "\\:";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string DatasetRef::text() const {
  return escaped(file, false) + ":" + escaped(path, true) + (slice ? slice->text : "");
}

DatasetRef DatasetRef::absolute() const {
  std::error_code ec;
  const auto abs = std::filesystem::absolute(file, ec);
  return {ec ? file : abs.lexically_normal().string(), path, slice};
}

DatasetInfo inspect(const DatasetRef& ref) { return open_matrix(ref).info; }

namespace {

// Where a dataset's elements lie in its file when they can be read without HDF5: contiguous
// storage, allocated, no filters or external files, stored exactly in the type asked for (so
// no conversion) or as a half type this reader widens itself (`half`: stored_type.hpp), and a
// plain POSIX file (sec2 driver, no user block). -1 otherwise.
std::int64_t direct_offset(const OpenDataset& od, DType as, Stored* half) {
  if (!direct_io_enabled()) return -1;
  const hid_t dset = od.dataset.get();
  Handle dcpl = own_plist(H5Dget_create_plist(dset));
  Handle ftype = own_type(H5Dget_type(dset));
  Handle fapl = own_plist(H5Fget_access_plist(od.file.get()));
  Handle fcpl = own_plist(H5Fget_create_plist(od.file.get()));
  hsize_t userblock = 0;
  *half = ftype.valid() && !is_complex(as) ? half_file_type(ftype.get()) : Stored::same;
  const bool plain =
      dcpl.valid() && ftype.valid() && fapl.valid() && fcpl.valid() && H5Pget_layout(dcpl.get()) == H5D_CONTIGUOUS &&
      H5Pget_nfilters(dcpl.get()) == 0 && H5Pget_external_count(dcpl.get()) == 0 &&
      (H5Tequal(ftype.get(), native_type(as)) > 0 || *half != Stored::same) && H5Pget_driver(fapl.get()) == H5FD_SEC2 &&
      H5Pget_userblock(fcpl.get(), &userblock) >= 0 && userblock == 0;
  // The dataset must live in the file that was named, not behind an external link in another.
  bool same_file = false;
  if (plain) {
    // (By name: HDF5 1.10 has no H5Fget_fileno. A file reached under another name only falls back.)
    const auto name_of = [](hid_t f) {
      const ssize_t n = H5Fget_name(f, nullptr, 0);
      std::string text(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
      if (n > 0) H5Fget_name(f, text.data(), text.size() + 1);
      return text;
    };
    Handle home = own_file(H5Iget_file_id(dset));
    same_file = home.valid() && !name_of(home.get()).empty() && name_of(home.get()) == name_of(od.file.get());
  }
  const haddr_t offset = plain && same_file ? H5Dget_offset(dset) : HADDR_UNDEF;
  H5Eclear2(H5E_DEFAULT);
  return offset == HADDR_UNDEF ? -1 : static_cast<std::int64_t>(offset);
}

void read_direct(const std::string& path, std::int64_t base, std::int64_t cols, std::int64_t row0, std::int64_t nrows,
                 std::int64_t col0, std::int64_t ncols, std::size_t esize, void* out) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw IoError("cannot open " + in_quotes(path) + ": " + std::strerror(errno));
  const int rc = transfer_direct(fd, false, base, cols, row0, nrows, col0, ncols, esize, out);
  ::close(fd);
  if (rc != 0)
    throw IoError("reading " + in_quotes(path) + " failed: " +
                  (rc > 0 ? std::string(std::strerror(rc)) : std::string("the file ends early (truncated?)")));
}

// The half-typed block: rows split over the I/O threads (as transfer_direct splits a pread, 4 MiB
// of output at least each), each reading bands of 2 MiB as stored and widening them into `out`.
void read_direct_half(const std::string& path, std::int64_t base, std::int64_t cols, std::int64_t row0,
                      std::int64_t nrows, std::int64_t col0, std::int64_t ncols, Stored half, DType as, void* out) {
  const std::size_t out_row = static_cast<std::size_t>(ncols) * dtype_size(as);
  const auto threads = static_cast<int>(std::clamp<std::size_t>((static_cast<std::size_t>(nrows) * out_row) >> 22, 1,
                                                                static_cast<std::size_t>(io_threads())));
  const std::int64_t band = std::max<std::int64_t>(1, (std::int64_t{2} << 20) / (2 * ncols));
  std::vector<int> failed(static_cast<std::size_t>(threads), 0);
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw IoError("cannot open " + in_quotes(path) + ": " + std::strerror(errno));
  const auto work = [&](int t) {
    const std::int64_t r0 = nrows * t / threads, r1 = nrows * (t + 1) / threads;
    try {
      std::vector<std::uint16_t> stored(static_cast<std::size_t>(std::min(band, r1 - r0) * ncols));
      for (std::int64_t r = r0; r < r1; r += band) {
        const std::int64_t rows = std::min(band, r1 - r);
        if (const int rc = transfer_direct(fd, false, base, cols, row0 + r, rows, col0, ncols, 2, stored.data())) {
          failed[static_cast<std::size_t>(t)] = rc;
          return;
        }
        widen_half(stored.data(), static_cast<std::size_t>(rows * ncols), half, as,
                   static_cast<unsigned char*>(out) + static_cast<std::size_t>(r) * out_row);
      }
    } catch (const std::bad_alloc&) {
      failed[static_cast<std::size_t>(t)] = ENOMEM;
    }
  };
  try {
    run_split(threads, work);
  } catch (...) {  // (the pool's own allocation)
    ::close(fd);
    throw;
  }
  ::close(fd);
  for (const int rc : failed)
    if (rc != 0)
      throw IoError("reading " + in_quotes(path) + " failed: " +
                    (rc > 0 ? std::string(std::strerror(rc)) : std::string("the file ends early (truncated?)")));
}

// read_block, or with `keep` (f16 / bf16) read_block_half: the 2-byte values of a dataset stored
// so, not widened.
void read_block_as(const DatasetRef& ref, std::int64_t row0, std::int64_t nrows, std::int64_t col0, std::int64_t ncols,
                   DType as, Stored keep, void* out) {
  std::int64_t base = -1, file_cols = 0;
  Stored half = Stored::same;
  {
    const std::lock_guard<std::mutex> hold(hdf5::lock());
    OpenDataset od = open_matrix(ref);  // (opening switches off this thread's error printing)
    // Kept as stored: the exact little-endian type by tessera's reads, any other 16-bit float
    // with the same fields (the job plan names types by their fields: a big-endian float16 too)
    // through HDF5, whose conversion to the kept type is then exact.
    bool keep_exact = false;
    if (keep != Stored::same) {
      const Handle ftype = own_type(H5Dget_type(od.dataset.get()));
      if (!ftype.valid() || H5Tget_class(ftype.get()) != H5T_FLOAT || H5Tget_size(ftype.get()) != 2)
        throw InputError(in_quotes(ref) + " is not stored as a 16-bit float (" + stored_name(keep, DType::f32) + ")");
      keep_exact = half_file_type(ftype.get()) == keep;
    }
    if (!in_range(row0, nrows, od.info.rows) || !in_range(col0, ncols, od.info.cols))
      throw InputError(block_text(row0, nrows, col0, ncols) + " is outside " + in_quotes(ref) + " (" +
                       shape_text(od.info.rows, od.info.cols) + ")");
    row0 += od.info.row0;  // a window's block, in the dataset's own coordinates from here on
    col0 += od.info.col0;
    if (nrows == 0 || ncols == 0) return;
    if (out == nullptr) throw std::invalid_argument("read_block: null output buffer");
    base = direct_offset(od, as, &half);
    if (keep != Stored::same && !keep_exact) base = -1;  // (through HDF5, below)
    if (keep != Stored::same) half = keep;  // (contiguous: read as the plain 2-byte elements they are)
    file_cols = od.info.stored_cols;
    // A matrix of a 3-D dataset: its own rows, after those of the matrices before it (a stack of
    // them is read as the one matrix it is in a contiguous file).
    const std::int64_t index = od.info.index;
    // Chunked (and compressed) storage: decompressed by many threads (2-D datasets; a matrix of a
    // 3-D one goes through HDF5).
    const bool try_chunks =
        base < 0 && od.info.stored_matrices == 0 && direct_io_enabled() && (keep == Stored::same || keep_exact);
    const bool say = log::enabled(log::Level::info);
    const bool by_chunks = say && try_chunks && chunk_reader_takes(od.dataset.get());
    if (say)
      log::info("reading " + block_text(row0, nrows, col0, ncols) + " of " + in_quotes(ref) + " (" +
                (base >= 0     ? std::string("pread")
                 : by_chunks ? od.info.layout + ", decompressed by tessera on up to " + std::to_string(io_threads()) + " thread(s)"
                             : od.info.layout + ", through HDF5") +
                ")");
    if (try_chunks &&
        read_chunked(od.dataset.get(), ref.str(), row0, nrows, col0, ncols, as, out, keep != Stored::same))
      return;
    if (by_chunks)
      log::info("the chunk reader left that block to HDF5 (a chunk it needs is not in the file, or HDF5 could not list it)");
    if (base >= 0 && index >= 0) row0 += index * od.info.stored_rows;  // contiguous: the matrices one after another
    if (base < 0) {
      auto [file_space, mem_space] =
          block_spaces(od.dataset.get(), row0, nrows, col0, ncols, index, od.info.stacked() ? od.info.stored_rows : 0);
      if (!file_space.valid())
        throw_io("cannot select " + block_text(row0, nrows, col0, ncols) + " of " + in_quotes(ref));
      // (Kept as stored: the memory type is the file's own 16-bit float, so HDF5 copies it.)
      const Handle kept = own_type(keep != Stored::same ? stored_file_type(keep, DType::f32) : -1);
      if (keep != Stored::same && !kept.valid()) throw_io("cannot describe " + stored_name(keep, DType::f32));
      if (H5Dread(od.dataset.get(), kept.valid() ? kept.get() : native_type(as), mem_space.get(), file_space.get(),
                  H5P_DEFAULT, out) < 0)
        throw_io("reading " + block_text(row0, nrows, col0, ncols) + " of " + in_quotes(ref) + " failed");
      return;
    }
  }
  if (keep != Stored::same)
    read_direct(ref.file, base, file_cols, row0, nrows, col0, ncols, 2, out);
  else if (half != Stored::same)
    read_direct_half(ref.file, base, file_cols, row0, nrows, col0, ncols, half, as, out);
  else
    read_direct(ref.file, base, file_cols, row0, nrows, col0, ncols, dtype_size(as), out);
}

}  // namespace

void read_block(const DatasetRef& ref, std::int64_t row0, std::int64_t nrows, std::int64_t col0, std::int64_t ncols,
                DType as, void* out) {
  read_block_as(ref, row0, nrows, col0, ncols, as, Stored::same, out);
}

void read_block_half(const DatasetRef& ref, std::int64_t row0, std::int64_t nrows, std::int64_t col0,
                     std::int64_t ncols, Stored half, void* out) {
  if (half != Stored::f16 && half != Stored::bf16) throw std::invalid_argument("read_block_half: f16 or bf16");
  read_block_as(ref, row0, nrows, col0, ncols, DType::f32, half, out);
}

}  // namespace tessera::io
