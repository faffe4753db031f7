#include "io/hdf5_io.hpp"
#include "io/cleanup.hpp"
#include "io/hdf5_handle.hpp"
#include "io/nonfinite.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <string>
#include <thread>
#include <vector>
#include <utility>

#include "core/error.hpp"
#include "io/chunked_read.hpp"
#include "io/direct_io.hpp"

namespace tessera::io {

namespace {

// ---- library setup --------------------------------------------------------------------------

// HDF5 prints its whole error stack to stderr by default; users must only ever see our one-line
// messages, so printing is switched off before the first HDF5 call of any entry point. In a
// thread-safe HDF5 that setting belongs to the thread, so each thread switches it off once.
void ensure_init() {
  static const bool initialized = [] {
    H5open();
    return true;
  }();
  thread_local const bool quiet = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)initialized;
  (void)quiet;
}

// The pipeline reads A on one thread while it writes C on another. HDF5 built without thread
// safety must not be entered by two threads at once, so the entry points that may run on such
// threads (read_block, write_block) hold this lock around their HDF5 calls; the bulk pread and
// pwrite of contiguous datasets run outside it.
std::mutex& hdf5_lock() {
  static std::mutex lock;
  return lock;
}

// ---- messages --------------------------------------------------------------------------------

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }
std::string in_quotes(const DatasetRef& ref) { return in_quotes(ref.str()); }

herr_t collect_error(unsigned /*n*/, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  try {
    out->emplace_back(err->desc != nullptr ? err->desc : "");
  } catch (...) {
    return -1;  // never let an exception cross the C library
  }
  return 0;
}

// HDF5's current error stack, innermost (most specific) entry first. Clears the stack.
std::vector<std::string> hdf5_error_stack() {
  std::vector<std::string> descs;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error, &descs);
  H5Eclear2(H5E_DEFAULT);
  return descs;
}

// The most useful line of an error stack: the operating system's message when the failure came
// from a system call (e.g. "No space left on device"), else the innermost HDF5 description.
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

std::string hdf5_detail() { return summarize(hdf5_error_stack()); }

std::string with_detail(std::string message) {
  const std::string detail = hdf5_detail();
  if (!detail.empty()) message += " (HDF5: " + detail + ")";
  return message;
}

[[noreturn]] void throw_io(const std::string& message) { throw IoError(with_detail(message)); }

// ---- reading ---------------------------------------------------------------------------------

Handle open_file_readonly(const std::string& file) {
  ensure_init();
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR)
      throw InputError("cannot open " + in_quotes(file) + ": no such file");
    throw InputError("cannot open " + in_quotes(file) + ": " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) throw InputError("cannot open " + in_quotes(file) + ": it is a directory");
  if (::access(file.c_str(), R_OK) != 0)
    throw InputError("cannot open " + in_quotes(file) + ": " + std::strerror(errno));

  // H5Fis_hdf5 only looks for the signature; a truncated file passes it and fails in H5Fopen.
  if (H5Fis_hdf5(file.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(in_quotes(file) + " is not an HDF5 file (or is truncated/corrupt)");
  }
  Handle fapl = own_plist(H5Pcreate(H5P_FILE_ACCESS));
  if (!fapl.valid() || H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0)
    throw_io("cannot set up HDF5 to read " + in_quotes(file));
  Handle f = own_file(H5Fopen(file.c_str(), H5F_ACC_RDONLY, fapl.get()));
  if (!f.valid()) {
    const auto stack = hdf5_error_stack();
    const std::string detail = summarize(stack);
    // A lock HDF5 cannot take (another program writing the file, or a network file system
    // without locking) is not the file's fault.
    const bool lock_failed = std::any_of(stack.begin(), stack.end(), [](const std::string& d) {
      return d.find("unable to lock") != std::string::npos;
    });
    if (lock_failed)
      throw IoError("cannot lock " + in_quotes(file) + " for reading (" + detail +
                    "): another program may be writing it, or the file system has no locking "
                    "(then set HDF5_USE_FILE_LOCKING=FALSE)");
    std::string message = in_quotes(file) + " is not an HDF5 file (or is truncated/corrupt)";
    if (!detail.empty()) message += " (HDF5: " + detail + ")";
    throw InputError(message);
  }
  return f;
}

const char* object_kind(H5I_type_t t) {
  switch (t) {
    case H5I_GROUP: return "a group";
    case H5I_DATATYPE: return "a named datatype";
    case H5I_DATASET: return "a dataset";
    default: return "not a dataset";
  }
}

// Opens the object at ref.path and makes sure it is a dataset. Each level of the path is checked
// on its own because H5Lexists fails (rather than answering "no") below a missing group.
Handle open_dataset_object(hid_t file, const DatasetRef& ref) {
  const auto not_found = [&](const std::string& why) {
    return InputError("dataset " + in_quotes(ref.path) + " not found in " + in_quotes(ref.file) + why);
  };
  std::vector<std::string> parts;
  for (std::size_t pos = 0; pos <= ref.path.size();) {
    auto next = ref.path.find('/', pos);
    if (next == std::string::npos) next = ref.path.size();
    if (next > pos) parts.push_back(ref.path.substr(pos, next - pos));
    pos = next + 1;
  }
  if (parts.empty()) throw InputError(in_quotes(ref) + " is the root group, not a dataset");

  std::string prefix;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    prefix += "/" + parts[i];
    if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      throw not_found("");
    }
    if (i + 1 == parts.size()) break;
    Handle group = own_object(H5Oopen(file, prefix.c_str(), H5P_DEFAULT));
    if (!group.valid()) {
      H5Eclear2(H5E_DEFAULT);
      throw not_found(" (" + in_quotes(prefix) + " is a broken link)");
    }
    if (H5Iget_type(group.get()) != H5I_GROUP)
      throw not_found(" (" + in_quotes(prefix) + " is not a group)");
  }
  Handle obj = own_object(H5Oopen(file, prefix.c_str(), H5P_DEFAULT));
  if (!obj.valid()) {
    H5Eclear2(H5E_DEFAULT);
    throw not_found(" (the link is broken)");
  }
  const H5I_type_t kind = H5Iget_type(obj.get());
  if (kind != H5I_DATASET) throw InputError(in_quotes(ref) + " is " + object_kind(kind) + ", not a dataset");
  return obj;
}

struct TypeDesc {
  std::string name;  // "float32", "int16", "string", ...
  bool supported = false;
  bool is_integer = false;
  DType natural = DType::f64;
};

TypeDesc describe_type(hid_t type) {
  TypeDesc d;
  const std::size_t bits = H5Tget_size(type) * 8;
  switch (H5Tget_class(type)) {
    case H5T_FLOAT:
      d.name = "float" + std::to_string(bits);
      d.supported = bits == 32 || bits == 64;
      d.natural = bits == 32 ? DType::f32 : DType::f64;
      break;
    case H5T_INTEGER:
      d.name = (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(bits);
      d.supported = true;
      d.is_integer = true;
      d.natural = DType::f64;
      break;
    case H5T_STRING: d.name = "string"; break;
    case H5T_COMPOUND: d.name = "compound"; break;  // also how h5py stores complex numbers
    case H5T_ENUM: d.name = "enum"; break;          // also how h5py stores bool
    case H5T_ARRAY: d.name = "array"; break;
    case H5T_VLEN: d.name = "variable-length"; break;
    case H5T_OPAQUE: d.name = "opaque"; break;
    case H5T_BITFIELD: d.name = "bitfield"; break;
    case H5T_REFERENCE: d.name = "reference"; break;
    case H5T_TIME: d.name = "time"; break;
    default: d.name = "unknown"; break;
  }
  return d;
}

std::string filter_name(H5Z_filter_t id, const char* given) {
  switch (id) {
    case H5Z_FILTER_DEFLATE: return "deflate";
    case H5Z_FILTER_SHUFFLE: return "shuffle";
    case H5Z_FILTER_FLETCHER32: return "fletcher32";
    case H5Z_FILTER_SZIP: return "szip";
    case H5Z_FILTER_NBIT: return "nbit";
    case H5Z_FILTER_SCALEOFFSET: return "scaleoffset";
    default: break;
  }
  if (given != nullptr && given[0] != '\0') return given;
  // Registered ids of common third-party filters, so an unavailable one is named usefully.
  switch (id) {
    case 307: return "bzip2";
    case 32000: return "lzf";
    case 32001: return "blosc";
    case 32004: return "lz4";
    case 32008: return "bitshuffle";
    case 32015: return "zstd";
    default: return "filter " + std::to_string(id);
  }
}

// An open, validated 2-D numeric dataset and its description.
struct OpenDataset {
  Handle file;  // declared first: destroyed last
  Handle dataset;
  DatasetInfo info;
};

OpenDataset open_matrix(const DatasetRef& ref) {
  OpenDataset od;
  od.file = open_file_readonly(ref.file);
  od.dataset = open_dataset_object(od.file.get(), ref);
  const hid_t dset = od.dataset.get();

  Handle space = own_space(H5Dget_space(dset));
  if (!space.valid()) throw_io("cannot read the shape of " + in_quotes(ref));
  const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
  if (space_class == H5S_NULL) throw InputError(in_quotes(ref) + " is empty (null dataspace); tessera needs a 2-D matrix");
  if (space_class == H5S_SCALAR) throw InputError(in_quotes(ref) + " is a scalar; tessera needs a 2-D matrix");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) throw_io("cannot read the shape of " + in_quotes(ref));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0)
    throw_io("cannot read the shape of " + in_quotes(ref));
  if (rank != 2) {
    std::string shape;
    for (std::size_t i = 0; i < dims.size(); ++i) shape += (i ? "x" : "") + std::to_string(dims[i]);
    throw InputError(in_quotes(ref) + " is " + std::to_string(rank) + "-D (" + shape +
                     "); tessera needs a 2-D matrix");
  }
  od.info.rows = static_cast<std::int64_t>(dims[0]);
  od.info.cols = static_cast<std::int64_t>(dims[1]);

  Handle type = own_type(H5Dget_type(dset));
  if (!type.valid()) throw_io("cannot read the type of " + in_quotes(ref));
  const TypeDesc td = describe_type(type.get());
  if (!td.supported)
    throw InputError(in_quotes(ref) + " has unsupported type " + td.name +
                     "; use float32, float64 or an integer type");
  od.info.stored_type = td.name;
  od.info.is_integer = td.is_integer;
  od.info.natural = td.natural;

  Handle dcpl = own_plist(H5Dget_create_plist(dset));
  if (!dcpl.valid()) throw_io("cannot read the storage layout of " + in_quotes(ref));
  switch (H5Pget_layout(dcpl.get())) {
    case H5D_CONTIGUOUS: od.info.layout = "contiguous"; break;
    case H5D_CHUNKED: od.info.layout = "chunked"; break;
    case H5D_COMPACT: od.info.layout = "compact"; break;
    case H5D_VIRTUAL: od.info.layout = "virtual"; break;
    default: throw_io("cannot read the storage layout of " + in_quotes(ref));
  }
  if (od.info.layout == "chunked") {
    hsize_t chunk[2] = {0, 0};
    if (H5Pget_chunk(dcpl.get(), 2, chunk) != 2) throw_io("cannot read the chunk shape of " + in_quotes(ref));
    od.info.chunk = {static_cast<std::int64_t>(chunk[0]), static_cast<std::int64_t>(chunk[1])};
  }
  const int nfilters = H5Pget_nfilters(dcpl.get());
  if (nfilters < 0) throw_io("cannot read the filters of " + in_quotes(ref));
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0;
    std::size_t nvalues = 0;
    unsigned config = 0;
    char name[256] = {};
    const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nvalues,
                                           nullptr, sizeof name, name, &config);
    if (id < 0) throw_io("cannot read the filters of " + in_quotes(ref));
    const std::string fname = filter_name(id, name);
    // Checked up front so the user learns which plugin is missing, not that a read failed.
    if (H5Zfilter_avail(id) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      throw InputError(in_quotes(ref) + " is stored with the HDF5 filter '" + fname + "' (id " +
                       std::to_string(id) +
                       "), which this HDF5 library does not have; install its plugin and set "
                       "HDF5_PLUGIN_PATH, or rewrite the file without it");
    }
    od.info.filters.push_back(fname);
  }
  return od;
}

// ---- attributes ------------------------------------------------------------------------------

herr_t collect_attr_name(hid_t /*loc*/, const char* name, const H5A_info_t* /*info*/, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  try {
    out->emplace_back(name);
  } catch (...) {
    return -1;
  }
  return 0;
}

std::string format_real(double v) {
  // Shortest %g form that reads back to the same double.
  char buf[40];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out;
}

std::string attribute_text(hid_t attr, const std::string& where) {
  Handle space = own_space(H5Aget_space(attr));
  Handle type = own_type(H5Aget_type(attr));
  if (!space.valid() || !type.valid()) throw_io("cannot read attribute of " + where);
  const hssize_t npoints = H5Sget_simple_extent_npoints(space.get());
  if (npoints < 0) throw_io("cannot read attribute of " + where);
  const auto n = static_cast<std::size_t>(npoints);
  if (n == 0) return {};
  std::vector<std::string> items;
  items.reserve(n);

  switch (H5Tget_class(type.get())) {
    case H5T_STRING: {
      if (H5Tis_variable_str(type.get()) > 0) {
        Handle mem = own_type(H5Tcopy(H5T_C_S1));
        if (!mem.valid() || H5Tset_size(mem.get(), H5T_VARIABLE) < 0 ||
            H5Tset_cset(mem.get(), H5Tget_cset(type.get())) < 0)
          throw_io("cannot read attribute of " + where);
        std::vector<char*> ptrs(n, nullptr);
        if (H5Aread(attr, mem.get(), ptrs.data()) < 0) throw_io("cannot read attribute of " + where);
        for (char* p : ptrs) items.emplace_back(p != nullptr ? p : "");
        H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
      } else {
        const std::size_t size = H5Tget_size(type.get());
        std::vector<char> buf(size * n + 1, '\0');
        if (H5Aread(attr, type.get(), buf.data()) < 0) throw_io("cannot read attribute of " + where);
        const bool space_padded = H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD;
        for (std::size_t i = 0; i < n; ++i) {
          const char* begin = buf.data() + i * size;
          std::string s(begin, strnlen(begin, size));
          if (space_padded) s.erase(s.find_last_not_of(' ') + 1);
          items.push_back(std::move(s));
        }
      }
      break;
    }
    case H5T_INTEGER: {
      if (H5Tget_sign(type.get()) == H5T_SGN_NONE) {
        std::vector<unsigned long long> v(n);
        if (H5Aread(attr, H5T_NATIVE_ULLONG, v.data()) < 0) throw_io("cannot read attribute of " + where);
        for (auto x : v) items.push_back(std::to_string(x));
      } else {
        std::vector<long long> v(n);
        if (H5Aread(attr, H5T_NATIVE_LLONG, v.data()) < 0) throw_io("cannot read attribute of " + where);
        for (auto x : v) items.push_back(std::to_string(x));
      }
      break;
    }
    case H5T_FLOAT: {
      std::vector<double> v(n);
      if (H5Aread(attr, H5T_NATIVE_DOUBLE, v.data()) < 0) throw_io("cannot read attribute of " + where);
      for (double x : v) items.push_back(format_real(x));
      break;
    }
    default:
      return "(" + describe_type(type.get()).name + " attribute)";
  }
  return join(items);
}

// Writes one attribute, replacing any of the same name.
void write_attribute(hid_t dset, const Attribute& a, const std::string& where) {
  if (a.name.empty()) throw InputError("attribute names must not be empty (writing " + where + ")");
  const std::string what = "cannot write attribute '" + a.name + "' to " + where;
  const htri_t exists = H5Aexists(dset, a.name.c_str());
  if (exists < 0) throw_io(what);
  if (exists > 0 && H5Adelete(dset, a.name.c_str()) < 0) throw_io(what);

  Handle space;
  Handle owned_type;   // file type when we built one (strings)
  hid_t file_type = kNoId;
  hid_t mem_type = kNoId;
  const void* data = nullptr;
  const std::int64_t dummy = 0;
  switch (a.kind) {
    case Attribute::Kind::text: {
      // Fixed-length, null-terminated, sized to the text: the simplest type every reader
      // (h5py, h5dump, HDFView) handles; UTF-8 is declared only when the text needs it.
      owned_type = own_type(H5Tcopy(H5T_C_S1));
      const bool ascii = std::all_of(a.text.begin(), a.text.end(),
                                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
      if (!owned_type.valid() || H5Tset_size(owned_type.get(), a.text.size() + 1) < 0 ||
          H5Tset_strpad(owned_type.get(), H5T_STR_NULLTERM) < 0 ||
          H5Tset_cset(owned_type.get(), ascii ? H5T_CSET_ASCII : H5T_CSET_UTF8) < 0)
        throw_io(what);
      file_type = mem_type = owned_type.get();
      space = own_space(H5Screate(H5S_SCALAR));
      data = a.text.c_str();
      break;
    }
    case Attribute::Kind::integer:
      file_type = H5T_STD_I64LE;
      mem_type = H5T_NATIVE_INT64;
      space = own_space(H5Screate(H5S_SCALAR));
      data = &a.integer;
      break;
    case Attribute::Kind::real:
      file_type = H5T_IEEE_F64LE;
      mem_type = H5T_NATIVE_DOUBLE;
      space = own_space(H5Screate(H5S_SCALAR));
      data = &a.real;
      break;
    case Attribute::Kind::integers: {
      file_type = H5T_STD_I64LE;
      mem_type = H5T_NATIVE_INT64;
      const hsize_t n = a.integers.size();
      space = own_space(H5Screate_simple(1, &n, nullptr));
      // HDF5 wants a non-null buffer even for zero elements.
      data = a.integers.empty() ? static_cast<const void*>(&dummy) : a.integers.data();
      break;
    }
  }
  if (!space.valid()) throw_io(what);
  Handle attr = own_attr(H5Acreate2(dset, a.name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (!attr.valid()) throw_io(what);
  if (H5Awrite(attr.get(), mem_type, data) < 0) throw_io(what);
  if (attr.close() < 0) throw_io(what);
}

hid_t native_type(DType t) { return t == DType::f32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE; }

// Checks that [first, first+count) lies inside [0, extent) without overflowing.
bool in_range(std::int64_t first, std::int64_t count, std::int64_t extent) {
  return first >= 0 && count >= 0 && first <= extent && count <= extent - first;
}

// "block 5x3 at (4, 0)": shape and origin, so absurd (overflowing) requests print as given.
std::string block_text(std::int64_t row0, std::int64_t nrows, std::int64_t col0, std::int64_t ncols) {
  return "block " + std::to_string(nrows) + "x" + std::to_string(ncols) + " at (" + std::to_string(row0) + ", " +
         std::to_string(col0) + ")";
}

std::string shape_text(std::int64_t rows, std::int64_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

// Selects the block in a fresh copy of the dataset's file space; returns it with a matching
// contiguous memory space.
std::pair<Handle, Handle> block_spaces(hid_t dset, std::int64_t row0, std::int64_t nrows, std::int64_t col0,
                                       std::int64_t ncols) {
  Handle file_space = own_space(H5Dget_space(dset));
  const hsize_t start[2] = {static_cast<hsize_t>(row0), static_cast<hsize_t>(col0)};
  const hsize_t count[2] = {static_cast<hsize_t>(nrows), static_cast<hsize_t>(ncols)};
  if (!file_space.valid() ||
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0)
    return {};
  Handle mem_space = own_space(H5Screate_simple(2, count, nullptr));
  if (!mem_space.valid()) return {};
  return {std::move(file_space), std::move(mem_space)};
}

}  // namespace

// ---- DatasetRef ------------------------------------------------------------------------------

DatasetRef DatasetRef::parse(const std::string& text) {
  // Unescape while looking for the separator: the last ':' followed by '/' that is not "\:".
  std::string plain;       // text with its escapes resolved
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
  return {plain.substr(0, split), plain.substr(split + 1)};
}

// ---- reading ---------------------------------------------------------------------------------

DatasetInfo inspect(const DatasetRef& ref) { return open_matrix(ref).info; }

namespace {

// Where a dataset's elements lie in its file when they can be read without HDF5: contiguous
// storage, allocated, no filters or external files, stored exactly in the type asked for (so
// no conversion), and a plain POSIX file (sec2 driver, no user block). -1 otherwise.
std::int64_t direct_offset(const OpenDataset& od, DType as) {
  if (!direct_io_enabled()) return -1;
  const hid_t dset = od.dataset.get();
  Handle dcpl = own_plist(H5Dget_create_plist(dset));
  Handle ftype = own_type(H5Dget_type(dset));
  Handle fapl = own_plist(H5Fget_access_plist(od.file.get()));
  Handle fcpl = own_plist(H5Fget_create_plist(od.file.get()));
  hsize_t userblock = 0;
  const bool plain = dcpl.valid() && ftype.valid() && fapl.valid() && fcpl.valid() &&
                     H5Pget_layout(dcpl.get()) == H5D_CONTIGUOUS && H5Pget_nfilters(dcpl.get()) == 0 &&
                     H5Pget_external_count(dcpl.get()) == 0 && H5Tequal(ftype.get(), native_type(as)) > 0 &&
                     H5Pget_driver(fapl.get()) == H5FD_SEC2 && H5Pget_userblock(fcpl.get(), &userblock) >= 0 &&
                     userblock == 0;
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

void read_direct(const std::string& path, std::int64_t base, std::int64_t cols, std::int64_t row0,
                 std::int64_t nrows, std::int64_t col0, std::int64_t ncols, std::size_t esize, void* out) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw IoError("cannot open " + in_quotes(path) + ": " + std::strerror(errno));
  const int rc = transfer_direct(fd, false, base, cols, row0, nrows, col0, ncols, esize, out);
  ::close(fd);
  if (rc != 0)
    throw IoError("reading " + in_quotes(path) + " failed: " +
                  (rc > 0 ? std::string(std::strerror(rc)) : std::string("the file ends early (truncated?)")));
}

}  // namespace

void read_block(const DatasetRef& ref, std::int64_t row0, std::int64_t nrows, std::int64_t col0,
                std::int64_t ncols, DType as, void* out) {
  std::int64_t base = -1, file_cols = 0;
  {
    const std::lock_guard<std::mutex> hold(hdf5_lock());
    OpenDataset od = open_matrix(ref);  // (opening switches off this thread's error printing)
    if (!in_range(row0, nrows, od.info.rows) || !in_range(col0, ncols, od.info.cols))
      throw InputError(block_text(row0, nrows, col0, ncols) + " is outside " + in_quotes(ref) + " (" +
                       shape_text(od.info.rows, od.info.cols) + ")");
    if (nrows == 0 || ncols == 0) return;
    if (out == nullptr) throw std::invalid_argument("read_block: null output buffer");
    base = direct_offset(od, as);
    file_cols = od.info.cols;
    // Chunked (and compressed) storage: decompressed by many threads.
    if (base < 0 && direct_io_enabled() &&
        read_chunked(od.dataset.get(), ref.str(), row0, nrows, col0, ncols, as, out))
      return;
    if (base < 0) {
      auto [file_space, mem_space] = block_spaces(od.dataset.get(), row0, nrows, col0, ncols);
      if (!file_space.valid())
        throw_io("cannot select " + block_text(row0, nrows, col0, ncols) + " of " + in_quotes(ref));
      if (H5Dread(od.dataset.get(), native_type(as), mem_space.get(), file_space.get(), H5P_DEFAULT, out) < 0)
        throw_io("reading " + block_text(row0, nrows, col0, ncols) + " of " + in_quotes(ref) + " failed");
      return;
    }
  }
  read_direct(ref.file, base, file_cols, row0, nrows, col0, ncols, dtype_size(as), out);
}

std::vector<std::pair<std::string, std::string>> read_attributes(const DatasetRef& ref) {
  Handle file = open_file_readonly(ref.file);
  Handle dset = open_dataset_object(file.get(), ref);

  // Creation order when the file tracks it (ours does), so attributes list as they were written.
  H5_index_t index = H5_INDEX_NAME;
  {
    Handle ocpl = own_plist(H5Dget_create_plist(dset.get()));
    unsigned crt_order = 0;
    if (ocpl.valid() && H5Pget_attr_creation_order(ocpl.get(), &crt_order) >= 0 &&
        (crt_order & H5P_CRT_ORDER_INDEXED) != 0)
      index = H5_INDEX_CRT_ORDER;
    H5Eclear2(H5E_DEFAULT);
  }
  std::vector<std::string> names;
  hsize_t idx = 0;
  if (H5Aiterate2(dset.get(), index, H5_ITER_INC, &idx, collect_attr_name, &names) < 0)
    throw_io("cannot list the attributes of " + in_quotes(ref));

  std::vector<std::pair<std::string, std::string>> result;
  for (const auto& name : names) {
    Handle attr = own_attr(H5Aopen(dset.get(), name.c_str(), H5P_DEFAULT));
    if (!attr.valid()) throw_io("cannot open attribute '" + name + "' of " + in_quotes(ref));
    result.emplace_back(name, attribute_text(attr.get(), in_quotes(ref)));
  }
  return result;
}

// ---- Attribute -------------------------------------------------------------------------------

Attribute Attribute::of(std::string name, std::string v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::text;
  a.text = std::move(v);
  return a;
}

Attribute Attribute::of(std::string name, std::int64_t v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::integer;
  a.integer = v;
  return a;
}

Attribute Attribute::of(std::string name, double v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::real;
  a.real = v;
  return a;
}

Attribute Attribute::of(std::string name, std::vector<std::int64_t> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::integers;
  a.integers = std::move(v);
  return a;
}

// ---- MatrixWriter ----------------------------------------------------------------------------

struct MatrixWriter::Impl {
  DatasetRef target;
  std::string temp_path;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  DType dtype = DType::f64;
  bool overwrite = false;
  bool created = false;    // the temporary file is ours: remove it unless committed
  bool committed = false;
  Handle file;  // declared before dataset: closed after it
  Handle dataset;
  // Contiguous datasets are written with pwrite at their offset in the file (see write_block);
  // invalid where HDF5 writes (chunked or compressed output).
  DirectTarget direct;
  std::unique_ptr<BlockFile> direct_file;
  // NaN and Inf among the elements HDF5 wrote so far (write_block may run on another thread);
  // direct_file counts its own.
  NonfiniteCount nonfinite;
  mutable std::mutex nonfinite_lock;

  std::string where() const { return in_quotes(temp_path + ":" + target.path); }
  void close_direct() {
    if (!direct_file) return;
    const std::lock_guard<std::mutex> hold(nonfinite_lock);
    nonfinite.merge(direct_file->nonfinite_written());
    direct_file.reset();
  }

  // Runs also when the writer's constructor throws after creating the temporary file.
  ~Impl() {
    close_direct();
    if (committed) return;
    // Closing flushes HDF5's caches. If that flush fails (full disk, quota), HDF5 1.10 frees the
    // file but keeps its id, and the library crashes at exit (HDFFV-11052). The file is being
    // discarded anyway, so empty it first: that returns the space the final flush needs.
    if (created && (file.valid() || dataset.valid()) && ::truncate(temp_path.c_str(), 0) != 0) {
      // nothing more to do: the file is unlinked below either way
    }
    (void)dataset.close();
    (void)file.close();
    H5Eclear2(H5E_DEFAULT);
    if (created) (void)::unlink(temp_path.c_str());
    if (created) forget_temporary(temp_path);
  }
};

MatrixWriter::MatrixWriter(const DatasetRef& target, std::int64_t rows, std::int64_t cols, DType dtype,
                           const WriteOptions& opts)
    : impl_(std::make_unique<Impl>()) {
  ensure_init();
  Impl& w = *impl_;
  w.target = target;
  w.rows = rows;
  w.cols = cols;
  w.dtype = dtype;
  w.overwrite = opts.overwrite;

  if (target.file.empty() || target.path.size() < 2 || target.path.front() != '/' || target.path.back() == '/')
    throw InputError("invalid output dataset " + in_quotes(target) + ": expected FILE:/PATH, e.g. c.h5:/C");
  if (rows < 0 || cols < 0)
    throw InputError("invalid output shape " + shape_text(rows, cols) + " for " + in_quotes(target));
  if (opts.gzip_level < 0 || opts.gzip_level > 9)
    throw InputError("gzip level " + std::to_string(opts.gzip_level) + " is out of range 0..9");

  // Fail before any compute: target and directory.
  struct stat st {};
  if (::stat(target.file.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw InputError("output file " + in_quotes(target.file) + " is a directory");
    if (!opts.overwrite)
      throw InputError("output file " + in_quotes(target.file) + " exists; pass --overwrite to replace it");
  }
  std::string dir = std::filesystem::path(target.file).parent_path().string();
  if (dir.empty()) dir = ".";
  if (::stat(dir.c_str(), &st) != 0) throw InputError("output directory " + in_quotes(dir) + " does not exist");
  if (!S_ISDIR(st.st_mode)) throw InputError("output directory " + in_quotes(dir) + " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError("output directory " + in_quotes(dir) + " is not writable");

  // Storage: contiguous unless chunking or compression was asked for.
  const hsize_t dims[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(cols)};
  Handle dcpl = own_plist(H5Pcreate(H5P_DATASET_CREATE));
  if (!dcpl.valid()) throw_io("cannot set up HDF5 to write " + in_quotes(target));
  // Lets read_attributes list attributes in the order they were written.
  if (H5Pset_attr_creation_order(dcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0)
    throw_io("cannot set up HDF5 to write " + in_quotes(target));
  const bool want_chunks = !opts.chunk.empty() || opts.gzip_level > 0;
  // A dataset with a zero dimension has nothing to chunk or compress.
  if (want_chunks && rows > 0 && cols > 0) {
    std::int64_t chunk_rows = std::min<std::int64_t>(rows, 256);
    std::int64_t chunk_cols = std::min<std::int64_t>(cols, 256);
    if (!opts.chunk.empty()) {
      if (opts.chunk.size() != 2 || opts.chunk[0] < 1 || opts.chunk[1] < 1)
        throw InputError("invalid chunk shape for " + in_quotes(target) + ": expected two positive sizes");
      // Larger than the matrix only means "whole extent"; HDF5 wants chunk <= dims.
      chunk_rows = std::min(opts.chunk[0], rows);
      chunk_cols = std::min(opts.chunk[1], cols);
    }
    const auto chunk_bytes = static_cast<double>(chunk_rows) * static_cast<double>(chunk_cols) *
                             static_cast<double>(dtype_size(dtype));
    if (chunk_bytes >= 4294967296.0)
      throw InputError("chunk " + shape_text(chunk_rows, chunk_cols) + " for " + in_quotes(target) +
                       " is too large: HDF5 limits a chunk to 4 GiB");
    const hsize_t chunk[2] = {static_cast<hsize_t>(chunk_rows), static_cast<hsize_t>(chunk_cols)};
    if (H5Pset_chunk(dcpl.get(), 2, chunk) < 0) throw_io("cannot set the chunk shape of " + in_quotes(target));
    if (opts.gzip_level > 0) {
      if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0)
        throw InputError("gzip compression is not available in this HDF5 library; use --gzip 0");
      if (H5Pset_deflate(dcpl.get(), static_cast<unsigned>(opts.gzip_level)) < 0)
        throw_io("cannot set up gzip compression for " + in_quotes(target));
    }
  }

  w.temp_path = temporary_name(target.file);
  if (::stat(w.temp_path.c_str(), &st) == 0)
    throw IoError("cannot create temporary file " + in_quotes(w.temp_path) +
                  ": it already exists (left by an earlier run?); remove it");
  Handle fapl = own_plist(H5Pcreate(H5P_FILE_ACCESS));
  // STRONG: closing the file closes every object in it, so commit's H5Fclose really flushes and
  // releases the file (and reports a failed flush) instead of deferring until the last handle.
  if (!fapl.valid() || H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0)
    throw_io("cannot set up HDF5 to write " + in_quotes(target));
  w.file = own_file(H5Fcreate(w.temp_path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()));
  if (!w.file.valid()) throw_io("cannot create temporary file " + in_quotes(w.temp_path));
  w.created = true;
  register_temporary(w.temp_path);  // removed on SIGTERM / SIGINT too

  Handle lcpl = own_plist(H5Pcreate(H5P_LINK_CREATE));
  if (!lcpl.valid() || H5Pset_create_intermediate_group(lcpl.get(), 1) < 0)
    throw_io("cannot set up HDF5 to write " + in_quotes(target));
  Handle space = own_space(H5Screate_simple(2, dims, nullptr));
  if (!space.valid()) throw_io("cannot create the dataspace of " + w.where());
  const hid_t file_type = dtype == DType::f32 ? H5T_IEEE_F32LE : H5T_IEEE_F64LE;
  // Contiguous output whose file type is the native one: its space is allocated now and never
  // filled (every element is written), so write_block can pwrite the blocks straight into it.
  const bool direct =
      !want_chunks && rows > 0 && cols > 0 && H5Tequal(file_type, native_type(dtype)) > 0 && direct_io_enabled();
  if (direct && (H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY) < 0 ||
                 H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER) < 0))
    throw_io("cannot set up HDF5 to write " + in_quotes(target));
  w.dataset = own_dataset(
      H5Dcreate2(w.file.get(), target.path.c_str(), file_type, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT));
  if (!w.dataset.valid()) throw_io("cannot create dataset " + w.where());
  if (direct) {
    const haddr_t offset = H5Dget_offset(w.dataset.get());
    H5Eclear2(H5E_DEFAULT);
    if (offset != HADDR_UNDEF) {
      w.direct = {w.temp_path, static_cast<std::int64_t>(offset), rows, cols, dtype_size(dtype)};
      w.direct_file = std::make_unique<BlockFile>(w.direct);
    }
  }
}

MatrixWriter::~MatrixWriter() = default;  // Impl's destructor removes an uncommitted file

void MatrixWriter::write_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                               const void* data) {
  Impl& w = *impl_;
  if (w.committed || !w.dataset.valid())
    throw IoError("cannot write to " + in_quotes(w.target) + ": the writer is already committed or closed");
  if (!in_range(row0, nrows, w.rows) || !in_range(col0, ncols, w.cols))
    throw InputError(block_text(row0, nrows, col0, ncols) + " is outside " + in_quotes(w.target) + " (" +
                     shape_text(w.rows, w.cols) + ")");
  if (nrows == 0 || ncols == 0) return;
  if (data == nullptr) throw std::invalid_argument("write_block: null data");
  if (w.direct_file) {
    w.direct_file->write_block(row0, col0, nrows, ncols, data);
    return;
  }
  {
    const NonfiniteCount seen = count_nonfinite(data, w.dtype, nrows, ncols, row0, col0, w.cols);
    const std::lock_guard<std::mutex> hold(w.nonfinite_lock);
    w.nonfinite.merge(seen);
  }
  const std::lock_guard<std::mutex> hold(hdf5_lock());
  ensure_init();
  auto [file_space, mem_space] = block_spaces(w.dataset.get(), row0, nrows, col0, ncols);
  if (!file_space.valid()) throw_io("cannot select " + block_text(row0, nrows, col0, ncols) + " of " + w.where());
  if (H5Dwrite(w.dataset.get(), native_type(w.dtype), mem_space.get(), file_space.get(), H5P_DEFAULT, data) < 0)
    throw_io("writing " + block_text(row0, nrows, col0, ncols) + " to " + w.where() + " failed");
}

void MatrixWriter::set_attributes(const std::vector<Attribute>& attrs) {
  Impl& w = *impl_;
  if (w.committed || !w.dataset.valid())
    throw IoError("cannot write attributes to " + in_quotes(w.target) + ": the writer is already committed or closed");
  for (const auto& a : attrs) write_attribute(w.dataset.get(), a, w.where());
}

void MatrixWriter::commit() {
  Impl& w = *impl_;
  if (w.committed) return;
  if (!w.file.valid())
    throw IoError("cannot commit " + in_quotes(w.target) + ": an earlier commit failed");

  w.close_direct();  // the blocks written with pwrite are in the file; fsync below makes them durable
  // HDF5 writes most metadata (and cached chunks) only now; a full disk shows up here. Flush
  // explicitly before closing: a failed flush leaves the handles intact for the destructor, while
  // a failed close would leave HDF5 1.10 with a dangling id that crashes it at exit.
  if (H5Dflush(w.dataset.get()) < 0 || H5Fflush(w.file.get(), H5F_SCOPE_LOCAL) < 0)
    throw_io("writing " + in_quotes(w.temp_path) + " failed");
  const herr_t dataset_closed = w.dataset.close();
  const herr_t file_closed = w.file.close();
  if (dataset_closed < 0 || file_closed < 0)
    throw_io("writing " + in_quotes(w.temp_path) + " failed while closing it (disk full?)");

  // Network file systems may report write errors only on fsync; and the data must be on disk
  // before the rename makes the file look complete.
  const int fd = ::open(w.temp_path.c_str(), O_RDONLY);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw IoError("writing " + in_quotes(w.temp_path) + " failed: " + std::strerror(err));
  }
  ::close(fd);

  const std::string what = "cannot rename " + in_quotes(w.temp_path) + " to " + in_quotes(w.target.file);
  const auto appeared = [&] {
    return InputError("output file " + in_quotes(w.target.file) +
                      " appeared while tessera was running; pass --overwrite to replace it");
  };
  if (!w.overwrite) {
    // link() fails if the target exists, so no file that appeared meanwhile is clobbered; some
    // file systems have no hard links, and there the check-then-rename below has to do.
    if (::link(w.temp_path.c_str(), w.target.file.c_str()) == 0) {
      w.committed = true;
      (void)::unlink(w.temp_path.c_str());
      forget_temporary(w.temp_path);
      return;
    }
    if (errno == EEXIST) throw appeared();
    struct stat st {};
    if (::stat(w.target.file.c_str(), &st) == 0) throw appeared();
  }
  if (std::rename(w.temp_path.c_str(), w.target.file.c_str()) != 0)
    throw IoError(what + ": " + std::strerror(errno));
  w.committed = true;
  forget_temporary(w.temp_path);
}

const std::string& MatrixWriter::temporary_path() const { return impl_->temp_path; }

DirectTarget MatrixWriter::direct_target() const { return impl_->direct; }

NonfiniteCount MatrixWriter::nonfinite_written() const {
  const std::lock_guard<std::mutex> hold(impl_->nonfinite_lock);
  NonfiniteCount all = impl_->nonfinite;
  if (impl_->direct_file) all.merge(impl_->direct_file->nonfinite_written());
  return all;
}

// ---- library ---------------------------------------------------------------------------------

std::string library_version() {
  ensure_init();
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
