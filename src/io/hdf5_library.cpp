#include "io/hdf5_library.hpp"
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <hdf5.h>

#include "core/error.hpp"
#include "io/lz4_filter.hpp"
#include "io/lzf_filter.hpp"
#include "io/zstd_filter.hpp"

namespace tessera::io::hdf5 {

void ensure_init() {
  static const bool initialized = [] {
    H5open();
    register_lzf_filter();  // h5py's LZF, where HDF5 has no plugin it can load
    register_lz4_filter();   // LZ4 (32004) by tessera's own, plugin or not
    register_zstd_filter();  // Zstandard (32015) likewise
    return true;
  }();
  thread_local const bool quiet = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)initialized;
  (void)quiet;
}

std::size_t hand_to_hdf5(void** buf, std::size_t* buf_size, void* out, std::size_t allocated, std::size_t bytes) {
  std::free(*buf);
  *buf = out;
  *buf_size = std::max<std::size_t>(allocated, 1);
  return bytes;
}

std::size_t hand_to_hdf5(void** buf, std::size_t* buf_size, const std::vector<unsigned char>& bytes) {
  void* out = std::malloc(std::max<std::size_t>(bytes.size(), 1));
  if (out == nullptr) return 0;
  if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
  return hand_to_hdf5(buf, buf_size, out, bytes.size(), bytes.size());
}

std::mutex& lock() {
  static std::mutex lock;
  return lock;
}

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }
std::string in_quotes(const DatasetRef& ref) { return in_quotes(ref.str()); }

namespace {

herr_t collect_error(unsigned /*n*/, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  try {
    out->emplace_back(err->desc != nullptr ? err->desc : "");
  } catch (...) {
    return -1;  // never let an exception cross the C library
  }
  return 0;
}

}  // namespace

std::vector<std::string> error_stack() {
  std::vector<std::string> descs;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error, &descs);
  H5Eclear2(H5E_DEFAULT);
  return descs;
}

std::string summarize(const std::vector<std::string>& descs) {
  static const std::string marker = "error message = '";
  for (const auto& d : descs) {
    const auto p = d.find(marker);
    if (p == std::string::npos) continue;
    const auto begin = p + marker.size();
    const auto end = d.find('\'', begin);
    return d.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  }
  for (const auto& d : descs)
    if (!d.empty()) return d;
  return {};
}

void throw_io(const std::string& message) {
  std::string text = message;
  const std::string detail = summarize(error_stack());
  if (!detail.empty()) text += " (HDF5: " + detail + ")";
  throw IoError(text);
}

namespace {
// A complex number as h5py stores it: a compound of two floats named r and i, side by side as
// std::complex lays them out; `part` is the type of each.
hid_t complex_type(hid_t part, std::size_t part_size) {
  const hid_t t = H5Tcreate(H5T_COMPOUND, 2 * part_size);
  if (t >= 0 && (H5Tinsert(t, "r", 0, part) < 0 || H5Tinsert(t, "i", part_size, part) < 0)) {
    H5Tclose(t);
    return -1;
  }
  return t;
}
}  // namespace

hid_t native_type(DType t) {
  // The compound types are made once and kept for the process (HDF5 closes them at its exit).
  static const hid_t c64 = complex_type(H5T_NATIVE_FLOAT, sizeof(float));
  static const hid_t c128 = complex_type(H5T_NATIVE_DOUBLE, sizeof(double));
  switch (t) {
    case DType::f32:
      return H5T_NATIVE_FLOAT;
    case DType::f64:
      return H5T_NATIVE_DOUBLE;
    case DType::c64:
      return c64;
    case DType::c128:
      return c128;
  }
  return H5T_NATIVE_DOUBLE;
}

hid_t complex_file_type(DType t) {
  return real_of(t) == DType::f32 ? complex_type(H5T_IEEE_F32LE, 4) : complex_type(H5T_IEEE_F64LE, 8);
}

bool in_range(std::int64_t first, std::int64_t count, std::int64_t extent) {
  return first >= 0 && count >= 0 && first <= extent && count <= extent - first;
}

std::string block_text(std::int64_t row0, std::int64_t nrows, std::int64_t col0, std::int64_t ncols) {
  return "block " + std::to_string(nrows) + "x" + std::to_string(ncols) + " at (" + std::to_string(row0) + ", " +
         std::to_string(col0) + ")";
}

std::string shape_text(std::int64_t rows, std::int64_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

std::pair<Handle, Handle> block_spaces(hid_t dset, std::int64_t row0, std::int64_t nrows, std::int64_t col0,
                                       std::int64_t ncols, std::int64_t index, std::int64_t stacked_rows) {
  Handle file_space = own_space(H5Dget_space(dset));
  const hsize_t count[2] = {static_cast<hsize_t>(nrows), static_cast<hsize_t>(ncols)};
  if (stacked_rows > 0 && nrows > 0) {  // the stack's rows: a piece of each matrix they cross, in order
    bool first = true;
    for (std::int64_t r = row0; r < row0 + nrows;) {
      const std::int64_t matrix = r / stacked_rows, in = r - matrix * stacked_rows;
      const std::int64_t take = std::min(row0 + nrows - r, stacked_rows - in);
      const hsize_t start3[3] = {static_cast<hsize_t>(matrix), static_cast<hsize_t>(in), static_cast<hsize_t>(col0)};
      const hsize_t piece[3] = {1, static_cast<hsize_t>(take), static_cast<hsize_t>(ncols)};
      if (!file_space.valid() || H5Sselect_hyperslab(file_space.get(), first ? H5S_SELECT_SET : H5S_SELECT_OR, start3,
                                                     nullptr, piece, nullptr) < 0)
        return {};
      first = false;
      r += take;
    }
    Handle mem_space = own_space(H5Screate_simple(2, count, nullptr));
    if (!mem_space.valid()) return {};
    return {std::move(file_space), std::move(mem_space)};
  }
  // A matrix of a 3-D dataset: its index first, one deep.
  const hsize_t start3[3] = {static_cast<hsize_t>(std::max<std::int64_t>(index, 0)), static_cast<hsize_t>(row0),
                             static_cast<hsize_t>(col0)};
  const hsize_t count3[3] = {1, count[0], count[1]};
  const hsize_t* start = index >= 0 ? start3 : start3 + 1;
  const hsize_t* counts = index >= 0 ? count3 : count;
  if (!file_space.valid() || H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, counts, nullptr) < 0)
    return {};
  Handle mem_space = own_space(H5Screate_simple(2, count, nullptr));
  if (!mem_space.valid()) return {};
  return {std::move(file_space), std::move(mem_space)};
}

}  // namespace tessera::io::hdf5

namespace tessera::io {

std::string library_version() {
  hdf5::ensure_init();
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

bool library_is_parallel() {
#if defined(H5_HAVE_PARALLEL)
  return true;
#else
  return false;
#endif
}

}  // namespace tessera::io
