#include "io/data_sources.hpp"

#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5_handle.hpp"

namespace tessera::io {

namespace {

constexpr int kMaxDepth = 8;  // virtual datasets whose sources are virtual, and so on

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// A string property of index i (H5Pget_virtual_filename and the like: size query, then read).
template <class Getter>
std::string indexed_string(Getter get, hid_t plist, std::size_t i) {
  const ssize_t n = get(plist, i, nullptr, 0);
  if (n <= 0) return {};
  std::string text(static_cast<std::size_t>(n), '\0');
  get(plist, i, text.data(), text.size() + 1);
  return text;
}

// The name of the file an object lives in, as HDF5 opened it (for an object reached through an
// external link, the linked file's path as HDF5 found it).
std::string file_of(hid_t object) {
  Handle file(H5Iget_file_id(object), H5Fclose);
  if (!file.valid()) return {};
  const ssize_t n = H5Fget_name(file.get(), nullptr, 0);
  if (n <= 0) return {};
  std::string name(static_cast<std::size_t>(n), '\0');
  H5Fget_name(file.get(), name.data(), name.size() + 1);
  return name;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string directory_of(const std::string& file) {
  const std::string dir = std::filesystem::path(file).parent_path().string();
  return dir.empty() ? "." : dir;
}

// "${ORIGIN}/x" -> "<directory of the file holding the dataset>/x", as HDF5 expands prefixes.
std::string expand_origin(const std::string& prefix, const std::string& home) {
  static const std::string origin = "${ORIGIN}";
  if (prefix.compare(0, origin.size(), origin) != 0) return prefix;
  return directory_of(home) + prefix.substr(origin.size());
}

std::vector<std::string> split_paths(const std::string& list) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const auto end = std::min(list.find(':', begin), list.size());
    if (end > begin) out.push_back(list.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

// Where HDF5 1.10 looks for the source file `name` of a virtual dataset stored in `home`
// (H5F_prefix_open_file): an absolute name as it is; then the bare file name under each path of
// $HDF5_VDS_PREFIX, in the directory of `home`, and in the working directory. tessera sets no
// prefix property of its own.
std::vector<std::string> vds_candidates(const std::string& name, const std::string& home) {
  std::vector<std::string> out;
  std::string bare = name;
  if (!name.empty() && name.front() == '/') {
    out.push_back(name);
    bare = std::filesystem::path(name).filename().string();
  }
  if (const char* env = std::getenv("HDF5_VDS_PREFIX"))
    for (const auto& prefix : split_paths(env)) out.push_back(expand_origin(prefix, home) + "/" + bare);
  const std::string dir = directory_of(home);
  out.push_back(dir == "." ? bare : dir + "/" + bare);
  out.push_back(bare);
  return out;
}

// Where HDF5 1.10 finds an external raw data file: relative names under $HDF5_EXTFILE_PREFIX if
// set, else relative to the working directory.
std::string external_file_path(const std::string& name, const std::string& home) {
  if (!name.empty() && name.front() == '/') return name;
  const char* env = std::getenv("HDF5_EXTFILE_PREFIX");
  if (env == nullptr || *env == '\0') return name;
  return expand_origin(env, home) + "/" + name;
}

// A printf-style pattern (%b, %05b, ...) in a VDS source name: the files it stands for depend on
// the dataset's current extent; "%%" is a literal '%'.
bool printf_style(const std::string& name) {
  for (std::size_t i = 0; i < name.size(); ++i)
    if (name[i] == '%') {
      if (i + 1 < name.size() && name[i + 1] == '%') {
        ++i;
        continue;
      }
      return true;
    }
  return false;
}

std::string fill_text(hid_t dcpl) {
  double fill = 0;
  if (H5Pget_fill_value(dcpl, H5T_NATIVE_DOUBLE, &fill) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return "its declared fill value";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", fill);
  return std::string("its declared fill value ") + buf;
}

// Whether the dataset declares its own fill value: then elements it does not store read as a
// value its creator chose (h5py's fillvalue=), and tessera accepts them with a note.
bool user_fill(hid_t dcpl) {
  H5D_fill_value_t status = H5D_FILL_VALUE_UNDEFINED;
  if (H5Pfill_value_defined(dcpl, &status) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  return status == H5D_FILL_VALUE_USER_DEFINED;
}

class Locator {
 public:
  // Opens `path` in `file` one link at a time (recording the file each step lands in) and checks
  // the dataset there. `what` names it in messages.
  void visit(const std::string& file, const std::string& path, const std::string& what, int depth) {
    if (depth > kMaxDepth)
      throw InputError(what + " is a virtual dataset nested more than " + std::to_string(kMaxDepth) +
                       " levels deep (or in a cycle); tessera cannot check where its data lives");
    add(file);
    Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!f.valid()) {
      H5Eclear2(H5E_DEFAULT);
      throw InputError(what + ": cannot open " + in_quotes(file) + " as an HDF5 file");
    }
    Handle object(H5Oopen(f.get(), "/", H5P_DEFAULT), H5Oclose);
    for (std::size_t pos = 0; object.valid() && pos < path.size();) {
      auto next = path.find('/', pos);
      if (next == std::string::npos) next = path.size();
      if (next > pos) {
        object = Handle(H5Oopen(object.get(), path.substr(pos, next - pos).c_str(), H5P_DEFAULT), H5Oclose);
        if (object.valid()) add(file_of(object.get()));
      }
      pos = next + 1;
    }
    if (!object.valid() || H5Iget_type(object.get()) != H5I_DATASET) {
      H5Eclear2(H5E_DEFAULT);
      throw InputError(what + ": dataset " + in_quotes(path) + " cannot be opened in " + in_quotes(file));
    }
    check_storage(object.get(), what, depth);
  }

  DataSources result() { return std::move(out_); }

 private:
  void add(const std::string& file) {
    if (!file.empty() && std::find(out_.files.begin(), out_.files.end(), file) == out_.files.end())
      out_.files.push_back(file);
  }

  void check_storage(hid_t dset, const std::string& what, int depth) {
    Handle dcpl(H5Dget_create_plist(dset), H5Pclose);
    Handle space(H5Dget_space(dset), H5Sclose);
    if (!dcpl.valid() || !space.valid()) {
      H5Eclear2(H5E_DEFAULT);
      throw InputError(what + ": cannot read how its data is stored");
    }
    const hssize_t elements = H5Sget_simple_extent_npoints(space.get());
    if (elements <= 0) return;  // nothing to read (a zero dimension is refused elsewhere)
    switch (H5Pget_layout(dcpl.get())) {
      case H5D_VIRTUAL:
        return check_virtual(dset, dcpl.get(), elements, what, depth);
      case H5D_CHUNKED:
        return check_chunks(dset, dcpl.get(), space.get(), what);
      case H5D_CONTIGUOUS:
        if (H5Pget_external_count(dcpl.get()) > 0) return check_external(dset, dcpl.get(), elements, what);
        return check_allocated(dset, dcpl.get(), what);
      default:
        return;  // compact: the data is in the object header
    }
  }

  // `fact` says which elements no file holds, e.g. "A 'x.h5:/A' has 2 of its 3 chunks never written".
  void unwritten(hid_t dcpl, const std::string& fact) {
    if (user_fill(dcpl)) {
      out_.notes.push_back(fact + "; tessera reads those elements as " + fill_text(dcpl));
      return;
    }
    throw InputError(fact +
                     ": HDF5 would read those elements as the fill value without a word, so tessera refuses "
                     "it (write its data, or give the dataset a fill value of its own)");
  }

  void check_allocated(hid_t dset, hid_t dcpl, const std::string& what) {
    H5D_space_status_t status = H5D_SPACE_STATUS_ERROR;
    if (H5Dget_space_status(dset, &status) < 0) {
      H5Eclear2(H5E_DEFAULT);
      return;
    }
    if (status == H5D_SPACE_STATUS_NOT_ALLOCATED) unwritten(dcpl, what + " was never written (no storage allocated)");
  }

  // Chunks never written read as the fill value. (H5Dget_space_status compares bytes, which
  // compression and edge chunks change, so the chunks are counted.)
  void check_chunks(hid_t dset, hid_t dcpl, hid_t space, const std::string& what) {
    const int rank = H5Sget_simple_extent_ndims(space);
    if (rank < 1 || rank > 8) return;
    hsize_t dims[8] = {}, chunk[8] = {};
    if (H5Sget_simple_extent_dims(space, dims, nullptr) < 0 || H5Pget_chunk(dcpl, rank, chunk) != rank) {
      H5Eclear2(H5E_DEFAULT);
      return;
    }
    double expected = 1;
    for (int d = 0; d < rank; ++d)
      expected *= static_cast<double>((dims[d] + chunk[d] - 1) / std::max<hsize_t>(chunk[d], 1));
    hsize_t stored = 0;  // (HDF5 1.10 wants a dataspace here, not H5S_ALL)
    if (H5Dget_num_chunks(dset, space, &stored) < 0) {
      H5Eclear2(H5E_DEFAULT);
      return;
    }
    if (static_cast<double>(stored) < expected)
      unwritten(dcpl, what + " has " + std::to_string(static_cast<long long>(expected - static_cast<double>(stored))) +
                          " of its " + std::to_string(static_cast<long long>(expected)) + " chunks never written");
  }

  // External raw data files: HDF5 reads bytes past the end of one as zeros.
  void check_external(hid_t dset, hid_t dcpl, hssize_t elements, const std::string& what) {
    Handle type(H5Dget_type(dset), H5Tclose);
    const double size = static_cast<double>(H5Tget_size(type.get()));
    double need = static_cast<double>(elements) * size;
    const std::string home = file_of(dset);
    const int count = H5Pget_external_count(dcpl);
    for (int i = 0; i < count && need > 0; ++i) {
      char name[4096] = {};
      off_t offset = 0;
      hsize_t bytes = 0;
      if (H5Pget_external(dcpl, static_cast<unsigned>(i), sizeof name, name, &offset, &bytes) < 0) {
        H5Eclear2(H5E_DEFAULT);
        throw InputError(what + ": cannot read the list of its external raw data files");
      }
      const std::string path = external_file_path(name, home);
      add(path);
      const double take = bytes == H5F_UNLIMITED ? need : std::min(need, static_cast<double>(bytes));
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0)
        throw InputError(what + " keeps its data in the external file " + in_quotes(path) + ", which " +
                         (errno == ENOENT ? std::string("does not exist") : std::strerror(errno)) +
                         ": HDF5 would read those elements as zeros");
      if (::access(path.c_str(), R_OK) != 0)
        throw InputError(what + " keeps its data in the external file " + in_quotes(path) +
                         ", which cannot be read: " + std::strerror(errno));
      if (static_cast<double>(st.st_size) < static_cast<double>(offset) + take)
        throw InputError(what + " keeps its data in the external file " + in_quotes(path) + ", which holds " +
                         std::to_string(static_cast<long long>(st.st_size)) + " bytes where " +
                         std::to_string(static_cast<long long>(static_cast<double>(offset) + take)) +
                         " are needed: HDF5 would read the missing bytes as zeros");
      need -= take;
    }
    if (need > 0)
      throw InputError(what +
                       "'s external raw data files hold fewer bytes than the dataset needs: HDF5 would "
                       "read the rest as zeros");
  }

  void check_virtual(hid_t dset, hid_t dcpl, hssize_t elements, const std::string& what, int depth) {
    const std::string home = file_of(dset);
    std::size_t count = 0;
    if (H5Pget_virtual_count(dcpl, &count) < 0) {
      H5Eclear2(H5E_DEFAULT);
      throw InputError(what + " is a virtual dataset whose mappings cannot be read");
    }
    Handle covered;  // union of the hyperslab selections mapped so far
    bool all = false;
    double points = 0;  // elements of point selections (not combinable)
    for (std::size_t i = 0; i < count; ++i) {
      const std::string file = indexed_string(H5Pget_virtual_filename, dcpl, i);
      const std::string name = indexed_string(H5Pget_virtual_dsetname, dcpl, i);
      if (printf_style(file) || printf_style(name))
        throw InputError(what + " is a virtual dataset whose sources are named by a pattern (" +
                         in_quotes(file + ":" + name) + "); tessera cannot tell which files it reads");
      Handle vspace(H5Pget_virtual_vspace(dcpl, i), H5Sclose);
      Handle sspace(H5Pget_virtual_srcspace(dcpl, i), H5Sclose);
      if (!vspace.valid() || !sspace.valid()) {
        H5Eclear2(H5E_DEFAULT);
        throw InputError(what + " is a virtual dataset whose mappings cannot be read");
      }
      switch (H5Sget_select_type(vspace.get())) {
        case H5S_SEL_ALL:
          all = true;
          break;
        case H5S_SEL_HYPERSLABS:
          covered = covered.valid() ? Handle(H5Scombine_select(covered.get(), H5S_SELECT_OR, vspace.get()), H5Sclose)
                                    : Handle(H5Scopy(vspace.get()), H5Sclose);
          break;
        default:
          points += static_cast<double>(H5Sget_select_npoints(vspace.get()));
          break;
      }
      const std::string source = file == "." ? home : find_source(file, home);
      if (source.empty())
        throw InputError(what + " is a virtual dataset whose source file " + in_quotes(file) + " (for dataset " +
                         in_quotes(name) + ") does not exist: HDF5 would read those elements as the fill value");
      if (H5Fis_hdf5(source.c_str()) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        throw InputError(what + " is a virtual dataset whose source file " + in_quotes(source) +
                         " cannot be read as HDF5: HDF5 would read those elements as the fill value");
      }
      visit(source, name, "virtual dataset " + what + ": source " + in_quotes(source + ":" + name), depth + 1);
      check_extent(source, name, sspace.get(), what);
    }
    double mapped = points;
    if (all)
      mapped = static_cast<double>(elements);
    else if (covered.valid())
      mapped += static_cast<double>(H5Sget_select_npoints(covered.get()));
    H5Eclear2(H5E_DEFAULT);
    if (mapped < static_cast<double>(elements))
      unwritten(dcpl, what + " is a virtual dataset with " +
                          std::to_string(static_cast<long long>(static_cast<double>(elements) - mapped)) + " of its " +
                          std::to_string(static_cast<long long>(elements)) + " elements mapped to no source");
  }

  // A source dataset smaller than the region mapped from it: HDF5 fills the rest.
  void check_extent(const std::string& file, const std::string& name, hid_t sspace, const std::string& what) {
    Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    Handle d(f.valid() ? H5Dopen2(f.get(), name.c_str(), H5P_DEFAULT) : -1, H5Dclose);
    Handle s(d.valid() ? H5Dget_space(d.get()) : -1, H5Sclose);
    hsize_t dims[8] = {}, start[8] = {}, end[8] = {};
    const int rank = s.valid() ? H5Sget_simple_extent_ndims(s.get()) : -1;
    if (rank < 1 || rank > 8 || H5Sget_simple_extent_ndims(sspace) != rank ||
        H5Sget_simple_extent_dims(s.get(), dims, nullptr) < 0 || H5Sget_select_bounds(sspace, start, end) < 0) {
      H5Eclear2(H5E_DEFAULT);
      return;  // unlimited or odd selections: HDF5 itself decides; nothing more to check here
    }
    for (int k = 0; k < rank; ++k)
      if (end[k] >= dims[k])
        throw InputError(what + " is a virtual dataset that maps elements beyond the extent of its source " +
                         in_quotes(file + ":" + name) + ": HDF5 would read them as the fill value");
  }

  // The first candidate HDF5 would open, or "" when none exists.
  static std::string find_source(const std::string& name, const std::string& home) {
    std::string first_existing;
    for (const auto& candidate : vds_candidates(name, home)) {
      if (!exists(candidate)) continue;
      if (H5Fis_hdf5(candidate.c_str()) > 0) return candidate;
      H5Eclear2(H5E_DEFAULT);
      if (first_existing.empty()) first_existing = candidate;
    }
    return first_existing;  // exists but is not HDF5: refused by the caller, naming it
  }

  DataSources out_;
};

}  // namespace

DataSources locate_data(const DatasetRef& ref, const std::string& role) {
  (void)inspect(ref);  // the usual checks and messages: file, dataset, shape, type
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  Locator locator;
  locator.visit(ref.file, ref.path, role + " '" + ref.str() + "'", 0);
  return locator.result();
}

}  // namespace tessera::io
