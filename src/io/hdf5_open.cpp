#include "io/hdf5_open.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5_library.hpp"
#include "io/journal.hpp"

#include "core/file_kind.hpp"

namespace tessera::io::hdf5 {

namespace {

// A missing file whose name holds ":/" was most likely split at the wrong ":/" (the last one
// splits, docs/usage.md "Datasets"): say how to keep a ':' in the dataset's path.
std::string colon_hint(const std::string& file) {
  const auto at = file.find(":/");
  if (at == std::string::npos) return {};
  const std::string head = file.substr(0, at), rest = file.substr(at + 1);
  return " (the last ':/' splits the file from the dataset; if the file is " + in_quotes(head) +
         ", write each ':' of the dataset's path as '\\:', e.g. " + in_quotes(head + ":" + rest + "\\:/...") + ")";
}

// The file an external link at `path` in `file` (named `file_name`) leads to, as HDF5 finds it:
// an absolute name as it is, else beside the file holding the link, else from the working folder.
// "" when `path` is not an external link.
std::string external_target(hid_t file, const std::string& file_name, const std::string& path) {
  H5L_info_t info{};
  if (H5Lget_info(file, path.c_str(), &info, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return "";
  }
  if (info.type != H5L_TYPE_EXTERNAL) return "";
  std::vector<char> value(info.u.val_size + 1, '\0');
  const char* target = nullptr;
  const char* object = nullptr;
  if (H5Lget_val(file, path.c_str(), value.data(), value.size(), H5P_DEFAULT) < 0 ||
      H5Lunpack_elink_val(value.data(), value.size(), nullptr, &target, &object) < 0 || target == nullptr) {
    H5Eclear2(H5E_DEFAULT);
    return "";
  }
  const std::string name(target);
  if (name.empty() || name[0] == '/') return name;
  const auto slash = file_name.rfind('/');
  if (slash != std::string::npos) {
    const std::string beside = file_name.substr(0, slash + 1) + name;
    struct stat st {};
    if (::stat(beside.c_str(), &st) == 0) return beside;
  }
  return name;
}

}  // namespace

Handle open_file_readonly(const std::string& file) {
  ensure_init();
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR)
      throw InputError("cannot open " + in_quotes(file) + ": no such file" + colon_hint(file));
    throw InputError("cannot open " + in_quotes(file) + ": " + std::strerror(err));
  }
  if (const std::string kind = not_regular_file(st); !kind.empty())
    throw InputError("cannot open " + in_quotes(file) + ": it is " + kind + ", not a regular file");
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
    const auto stack = error_stack();
    const std::string detail = summarize(stack);
    // A lock HDF5 cannot take (another program writing the file, or a network file system
    // without locking) is not the file's fault.
    const bool lock_failed = std::any_of(
        stack.begin(), stack.end(), [](const std::string& d) { return d.find("unable to lock") != std::string::npos; });
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

namespace {

const char* object_kind(H5I_type_t t) {
  switch (t) {
    case H5I_GROUP:
      return "a group";
    case H5I_DATATYPE:
      return "a named datatype";
    case H5I_DATASET:
      return "a dataset";
    default:
      return "not a dataset";
  }
}

}  // namespace

// Each level of the path is checked
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
    // An external link into a file that a tessera run died while writing: named, not followed
    // (HDF5 would call the half-written file's objects missing, or read them as they are).
    if (const std::string target = external_target(file, ref.file, prefix); !target.empty())
      if (const std::string journal = pending_journal(target); !journal.empty())
        throw InputError(in_quotes(ref.file + ":" + prefix) + " is an external link to " + in_quotes(target) +
                         ", which has a pending journal, " + in_quotes(journal) +
                         ", left by a tessera run that died while writing it: tessera does not read a file that "
                         "may be half-written. Run `tessera recover " +
                         target + "` to put it back as it was before that run");
    if (i + 1 == parts.size()) break;
    Handle group = own_object(H5Oopen(file, prefix.c_str(), H5P_DEFAULT));
    if (!group.valid()) {
      H5Eclear2(H5E_DEFAULT);
      throw not_found(" (" + in_quotes(prefix) + " is a broken link)");
    }
    if (H5Iget_type(group.get()) != H5I_GROUP) throw not_found(" (" + in_quotes(prefix) + " is not a group)");
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

TypeDesc describe_type(hid_t type) {
  TypeDesc d;
  const std::size_t bits = H5Tget_size(type) * 8;
  switch (H5Tget_class(type)) {
    case H5T_FLOAT: {
      d.name = "float" + std::to_string(bits);
      d.supported = bits == 32 || bits == 64;
      d.natural = bits == 32 ? DType::f32 : DType::f64;
      // Half precision, as h5py stores numpy's float16 (IEEE binary16: 5 exponent bits, 10 of
      // mantissa) or as bfloat16 is declared (8 and 7): read widened to float32 by HDF5's own
      // conversion, which is exact (every half value is a float32 value).
      std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
      // Named float16 / bfloat16 (C stored so by default, tensor cores on GPUs) only with their own
      // exponent bias and an implied leading bit; the same fields with another bias are read
      // (HDF5 converts them) under a name of their own: their values need not fit those types.
      if (bits == 16 && H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) >= 0) {
        d.supported = (esize == 5 && msize == 10) || (esize == 8 && msize == 7);
        const std::size_t bias = H5Tget_ebias(type);
        const bool implied = H5Tget_norm(type) == H5T_NORM_IMPLIED;
        d.name = esize == 5 && msize == 10 && bias == 15 && implied ? "float16"
                 : esize == 8 && msize == 7 && bias == 127 && implied
                     ? "bfloat16"
                     : "a 16-bit float of " + std::to_string(esize) + " exponent and " + std::to_string(msize) +
                           " mantissa bits, bias " + std::to_string(bias);
        d.natural = DType::f32;
      }
      break;
    }
    case H5T_INTEGER:
      d.name = (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(bits);
      d.supported = true;
      d.is_integer = true;
      d.natural = DType::f64;
      break;
    case H5T_STRING:
      d.name = "string";
      break;
    case H5T_COMPOUND: {
      // A complex number as h5py stores it: two floats of one size named r and i (any byte order;
      // HDF5 converts it to std::complex's layout on read).
      d.name = "compound";
      if (H5Tget_nmembers(type) != 2) break;
      char* first = H5Tget_member_name(type, 0);
      char* second = H5Tget_member_name(type, 1);
      const bool named =
          first != nullptr && second != nullptr && std::string(first) == "r" && std::string(second) == "i";
      H5free_memory(first);
      H5free_memory(second);
      const Handle r = own_type(H5Tget_member_type(type, 0));
      const Handle i = own_type(H5Tget_member_type(type, 1));
      if (!named || !r.valid() || !i.valid() || H5Tget_class(r.get()) != H5T_FLOAT ||
          H5Tget_class(i.get()) != H5T_FLOAT || H5Tget_size(r.get()) != H5Tget_size(i.get()))
        break;
      const std::size_t part = H5Tget_size(r.get());
      if (part != 4 && part != 8) {
        d.name = "complex of " + std::to_string(8 * part) + "-bit parts";
        break;
      }
      d.name = part == 4 ? "complex64" : "complex128";
      d.supported = true;
      d.natural = part == 4 ? DType::c64 : DType::c128;
      break;
    }
    case H5T_ENUM:
      d.name = "enum";
      break;  // also how h5py stores bool
    case H5T_ARRAY:
      d.name = "array";
      break;
    case H5T_VLEN:
      d.name = "variable-length";
      break;
    case H5T_OPAQUE:
      d.name = "opaque";
      break;
    case H5T_BITFIELD:
      d.name = "bitfield";
      break;
    case H5T_REFERENCE:
      d.name = "reference";
      break;
    case H5T_TIME:
      d.name = "time";
      break;
    default:
      d.name = "unknown";
      break;
  }
  return d;
}

namespace {

std::string filter_name(H5Z_filter_t id, const char* given) {
  switch (id) {
    case H5Z_FILTER_DEFLATE:
      return "deflate";
    case H5Z_FILTER_SHUFFLE:
      return "shuffle";
    case H5Z_FILTER_FLETCHER32:
      return "fletcher32";
    case H5Z_FILTER_SZIP:
      return "szip";
    case H5Z_FILTER_NBIT:
      return "nbit";
    case H5Z_FILTER_SCALEOFFSET:
      return "scaleoffset";
    default:
      break;
  }
  if (given != nullptr && given[0] != '\0') return given;
  // Registered ids of common third-party filters, so an unavailable one is named usefully.
  switch (id) {
    case 307:
      return "bzip2";
    case 32000:
      return "lzf";
    case 32001:
      return "blosc";
    case 32004:
      return "lz4";
    case 32008:
      return "bitshuffle";
    case 32015:
      return "zstd";
    default:
      return "filter " + std::to_string(id);
  }
}

// Whether element (0, 0) of the open 2-D dataset can be read: its filters are loaded, from the
// plugin folder where need be. A matrix without elements has nothing to decode.
bool reads_first_element(hid_t dset, const DatasetInfo& info) {
  if (info.rows == 0 || info.cols == 0) return true;
  Handle file_space = own_space(H5Dget_space(dset));
  const hsize_t start[3] = {0, 0, 0}, count[3] = {1, 1, 1};
  Handle mem_space = own_space(H5Screate_simple(1, count, nullptr));
  double value[2] = {0, 0};  // room for a complex128
  const bool ok = file_space.valid() && mem_space.valid() &&
                  H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) >= 0 &&
                  H5Dread(dset, native_type(info.natural), mem_space.get(), file_space.get(), H5P_DEFAULT, value) >= 0;
  H5Eclear2(H5E_DEFAULT);
  return ok;
}

// The storage layouts tessera reads, by their names in DatasetInfo::layout.
constexpr std::pair<H5D_layout_t, const char*> kLayoutNames[] = {
    {H5D_CONTIGUOUS, "contiguous"}, {H5D_CHUNKED, "chunked"}, {H5D_COMPACT, "compact"}, {H5D_VIRTUAL, "virtual"}};

}  // namespace

OpenDataset open_matrix(const DatasetRef& ref) {
  OpenDataset od;
  od.file = open_file_readonly(ref.file);
  od.dataset = open_dataset_object(od.file.get(), ref);
  const hid_t dset = od.dataset.get();

  Handle space = own_space(H5Dget_space(dset));
  if (!space.valid()) throw_io("cannot read the shape of " + in_quotes(ref));
  const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
  if (space_class == H5S_NULL)
    throw InputError(in_quotes(ref) + " is empty (null dataspace); tessera needs a 2-D matrix");
  if (space_class == H5S_SCALAR) throw InputError(in_quotes(ref) + " is a scalar; tessera needs a 2-D matrix");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) throw_io("cannot read the shape of " + in_quotes(ref));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0)
    throw_io("cannot read the shape of " + in_quotes(ref));
  std::string shape;
  for (std::size_t i = 0; i < dims.size(); ++i) shape += (i ? "x" : "") + std::to_string(dims[i]);
  const bool indexed = ref.slice && ref.slice->index;
  const std::string named = in_quotes(ref.file + ":" + ref.path);
  if (rank == 3 && !indexed && ref.slice)
    throw InputError(named + " is 3-D (" + shape + ", a batch of " + std::to_string(dims[0]) + " matrices): a window " +
                     ref.slice->text + " of the whole batch is not read; name one matrix and its window, e.g. " +
                     ref.file + ":" + ref.path + "[0, r0:r1, c0:c1]");
  if (rank == 2 && indexed)
    throw InputError(named + " is 2-D (" + shape + "): the matrix index " + ref.slice->text +
                     " names a matrix of a 3-D dataset; write a window as [r0:r1, c0:c1]");
  if (rank != 2 && rank != 3)
    throw InputError(in_quotes(ref) + " is " + std::to_string(rank) + "-D (" + shape +
                     "); tessera needs a 2-D matrix "
                     "(or one matrix of a 3-D dataset)");
  const std::size_t first = rank == 3 ? 1 : 0;
  // Shapes a corrupt or hostile file may claim: no dimension, nor a batch's stack of rows, past what
  // a signed 64-bit count holds (HDF5's own limit is 2^64 - 1).
  constexpr auto kMost = static_cast<hsize_t>(std::numeric_limits<std::int64_t>::max());
  const bool too_large = std::any_of(dims.begin(), dims.end(), [&](hsize_t d) { return d > kMost; }) ||
                         (rank == 3 && !indexed && dims[1] > 0 && dims[0] > kMost / dims[1]);
  if (too_large)
    throw InputError(named + " claims a shape too large for any file (" + shape + "): the file is corrupt?");
  if (rank == 3) {
    od.info.stored_matrices = static_cast<std::int64_t>(dims[0]);
    if (indexed) od.info.index = resolve_index(*ref.slice, od.info.stored_matrices, named + " (" + shape + ")");
  }
  od.info.rows = od.info.stored_rows = static_cast<std::int64_t>(dims[first]);
  od.info.cols = od.info.stored_cols = static_cast<std::int64_t>(dims[first + 1]);
  if (od.info.stacked()) od.info.rows = od.info.stored_matrices * od.info.stored_rows;  // the matrices' stack
  const bool windowed = ref.slice && (ref.slice->row_begin || ref.slice->row_end || ref.slice->col_begin ||
                                      ref.slice->col_end || !indexed);
  if (windowed) {
    const Window w = resolve(*ref.slice, od.info.rows, od.info.cols, named);
    od.info.row0 = w.row0, od.info.col0 = w.col0, od.info.rows = w.rows, od.info.cols = w.cols;
  }

  Handle type = own_type(H5Dget_type(dset));
  if (!type.valid()) throw_io("cannot read the type of " + in_quotes(ref));
  const TypeDesc td = describe_type(type.get());
  if (!td.supported)
    throw InputError(
        in_quotes(ref) + " has unsupported type " + td.name +
        "; use float16, bfloat16, float32, float64, an integer type, or complex64 / complex128 (h5py's compound "
        "of r and i)");
  od.info.stored_type = td.name;
  od.info.is_integer = td.is_integer;
  od.info.natural = td.natural;

  Handle dcpl = own_plist(H5Dget_create_plist(dset));
  if (!dcpl.valid()) throw_io("cannot read the storage layout of " + in_quotes(ref));
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  for (const auto& [value, name] : kLayoutNames)
    if (value == layout) od.info.layout = name;
  if (od.info.layout.empty()) throw_io("cannot read the storage layout of " + in_quotes(ref));
  if (od.info.layout == "chunked") {
    hsize_t chunk[3] = {0, 0, 0};
    if (H5Pget_chunk(dcpl.get(), rank, chunk) != rank) throw_io("cannot read the chunk shape of " + in_quotes(ref));
    od.info.chunk = {static_cast<std::int64_t>(chunk[first]), static_cast<std::int64_t>(chunk[first + 1])};
  }
  const int nfilters = H5Pget_nfilters(dcpl.get());
  if (nfilters < 0) throw_io("cannot read the filters of " + in_quotes(ref));
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0;
    std::size_t nvalues = 0;
    unsigned config = 0;
    char name[256] = {};
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nvalues, nullptr, sizeof name, name, &config);
    if (id < 0) throw_io("cannot read the filters of " + in_quotes(ref));
    const std::string fname = filter_name(id, name);
    // Checked up front so the user learns which plugin is missing, not that a read failed.
    // H5Zfilter_avail does not load every plugin it could, so a "no" is confirmed by reading one
    // element (a chunk a filter marked optional left unfiltered reads without it; a later chunk
    // that needs it then fails its read, naming the plugin).
    if (H5Zfilter_avail(id) <= 0 && !reads_first_element(dset, od.info)) {
      H5Eclear2(H5E_DEFAULT);
      throw InputError(in_quotes(ref) + " is stored with the HDF5 filter '" + fname + "' (id " + std::to_string(id) +
                       "), which this HDF5 library cannot load; install its plugin (Debian and Ubuntu: "
                       "hdf5-plugin-lzf, hdf5-filter-plugin (lz4, bzip2), hdf5-filter-plugin-blosc-serial, "
                       "hdf5-filter-plugin-zfp-serial; scripts/setup.sh installs them) or set HDF5_PLUGIN_PATH to "
                       "its folder, or rewrite the file without it");
    }
    od.info.filters.push_back(fname);
  }
  return od;
}

}  // namespace tessera::io::hdf5
