#include "io/dataset_in_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "io/cleanup.hpp"
#include "io/hdf5_library.hpp"
#include "io/journal_driver.hpp"

namespace tessera::io {

namespace hdf5 {

namespace {

std::vector<std::string> path_levels(const std::string& path) {
  std::vector<std::string> levels;
  std::string prefix;
  for (std::size_t pos = 0; pos <= path.size();) {
    auto next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    if (next > pos) levels.push_back(prefix += "/" + path.substr(pos, next - pos));
    pos = next + 1;
  }
  return levels;
}

bool is_lock_failure(const std::vector<std::string>& stack) {
  return std::any_of(stack.begin(), stack.end(),
                     [](const std::string& d) { return d.find("unable to lock") != std::string::npos; });
}

herr_t collect_link(hid_t /*group*/, const char* name, const H5L_info_t* /*info*/, void* data) {
  try {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  } catch (...) {
    return -1;
  }
  return 0;
}

}  // namespace

namespace {

// Whether the output file may be written: an HDF5 file, writable by its mode too.
void check_writable_hdf5(const std::string& file) {
  if (H5Fis_hdf5(file.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError("output file " + in_quotes(file) +
                     " exists and is not an HDF5 file; tessera adds its result to an existing HDF5 file as a new "
                     "dataset and never replaces a file: remove it or choose another output");
  }
  struct stat st {};
  // Read-only by its mode too, which root's access() ignores: the owner meant it to stay.
  if (::access(file.c_str(), W_OK) != 0 || (::stat(file.c_str(), &st) == 0 && (st.st_mode & 0222) == 0))
    throw InputError("output file " + in_quotes(file) +
                     " exists and is read-only; tessera cannot add its result to it");
}

[[noreturn]] void throw_open_failure(const std::string& file, const char* how) {
  const auto stack = error_stack();
  if (is_lock_failure(stack))
    throw IoError("cannot lock " + in_quotes(file) + " " + how + " (" + summarize(stack) +
                  "): another program has it open for writing. On a file system without locking, "
                  "HDF5_USE_FILE_LOCKING=FALSE turns HDF5's lock off; tessera's own lock still keeps two tessera "
                  "runs apart, but then nothing stops another program (h5py, a second tool) from writing the file "
                  "at the same time, which can corrupt it");
  const std::string why = summarize(stack);
  const bool system_failure = std::any_of(stack.begin(), stack.end(), [](const std::string& d) {
    return d.find("error message = '") != std::string::npos;
  });
  if (system_failure)  // the file system failed (a full disk), not the file
    throw IoError("cannot open the output file " + in_quotes(file) + " " + how + ": " + why);
  throw InputError("cannot open the output file " + in_quotes(file) + " to add the result to it (HDF5: " + why + ")");
}

}  // namespace

Handle open_file_readwrite(const std::string& file, RollbackJournal* journal) {
  ensure_init();
  check_writable_hdf5(file);
  Handle fapl;
  if (journal != nullptr) {
    fapl = journaled_access(*journal);
  } else {
    fapl = own_plist(H5Pcreate(H5P_FILE_ACCESS));
    if (!fapl.valid() || H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0)
      throw_io("cannot set up HDF5 to write " + in_quotes(file));
  }
  Handle f = own_file(H5Fopen(file.c_str(), H5F_ACC_RDWR, fapl.get()));
  if (!f.valid()) throw_open_failure(file, "for writing");
  return f;
}

JournaledWrite::JournaledWrite(const std::string& file, RollbackJournal& journal)
    : journal_(journal), name_(file), file_(open_file_readwrite(file, &journal)) {}

JournaledWrite::~JournaledWrite() {
  if (!file_.valid()) return;
  journal_.abandon(0);  // left by an exception: nothing more is written, the run rolls back
  const RollbackJournal::Closing closing(journal_);
  (void)file_.close();
  H5Eclear2(H5E_DEFAULT);
}

void JournaledWrite::close(Handle& object, const std::string& what) {
  herr_t rc = 0;
  {
    const RollbackJournal::Closing closing(journal_);
    rc = object.close();
  }
  if (rc < 0) throw_io(what);
  if (journal_.failure() != 0) throw IoError(what + ": " + std::strerror(journal_.failure()));
}

void JournaledWrite::close(const std::string& what) {
  if (H5Fflush(file_.get(), H5F_SCOPE_LOCAL) < 0) throw_io(what);
  close(file_, what);
}

void check_existing_output(const DatasetRef& target, bool overwrite) {
  ensure_init();
  check_writable_hdf5(target.file);
  Handle fapl = own_plist(H5Pcreate(H5P_FILE_ACCESS));
  if (!fapl.valid() || H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0)
    throw_io("cannot set up HDF5 to read " + in_quotes(target.file));
  Handle f = own_file(H5Fopen(target.file.c_str(), H5F_ACC_RDONLY, fapl.get()));
  if (!f.valid()) throw_open_failure(target.file, "for reading");
  check_dataset_target(f.get(), target, overwrite);
}

void check_dataset_target(hid_t file, const DatasetRef& target, bool overwrite) {
  const auto levels = path_levels(target.path);
  if (levels.empty()) throw InputError(in_quotes(target) + " is the root group, not a dataset");
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const std::string& level = levels[i];
    const bool last = i + 1 == levels.size();
    const htri_t exists = H5Lexists(file, level.c_str(), H5P_DEFAULT);
    if (exists < 0) throw_io("cannot look up " + in_quotes(target.file + ":" + level));
    if (exists == 0) return;  // created at commit, with the groups above it
    H5L_info_t link{};
    if (H5Lget_info(file, level.c_str(), &link, H5P_DEFAULT) < 0)
      throw_io("cannot look up " + in_quotes(target.file + ":" + level));
    const std::string where = in_quotes(target.file + ":" + level);
    if (link.type == H5L_TYPE_EXTERNAL || link.type > H5L_TYPE_SOFT)
      throw InputError("output dataset " + in_quotes(target) + ": " + where +
                       " is an external link (to another file); tessera writes C only into the file named: name "
                       "a path of that file");
    if (last && link.type == H5L_TYPE_SOFT)
      throw InputError("output dataset " + in_quotes(target) +
                       " is a soft link; tessera replaces only a dataset: name the dataset itself");
    Handle object = own_object(H5Oopen(file, level.c_str(), H5P_DEFAULT));
    if (!object.valid()) {
      H5Eclear2(H5E_DEFAULT);
      throw InputError("output dataset " + in_quotes(target) + ": " + where + " is a broken link");
    }
    const H5I_type_t kind = H5Iget_type(object.get());
    if (!last && kind != H5I_GROUP)
      throw InputError("output dataset " + in_quotes(target) + ": " + where + " is not a group");
    if (last && kind != H5I_DATASET)
      throw InputError("output dataset " + in_quotes(target) + " exists and is " +
                       (kind == H5I_GROUP ? "a group" : "not a dataset") + "; tessera replaces only a dataset");
    if (last && !overwrite)
      throw InputError("output dataset " + in_quotes(target) +
                       " exists; pass --overwrite to replace it (that dataset only: the rest of the file is kept)");
  }
}

std::string temporary_dataset(const DatasetRef& target) {
  const auto levels = path_levels(target.path);
  const std::string leaf = levels.empty() ? "C" : levels.back().substr(levels.back().rfind('/') + 1);
  return "/" + temporary_name(leaf);
}

std::vector<std::string> remove_dead_leftovers(hid_t f, const std::string& file) {
  std::vector<std::string> names;
  hsize_t idx = 0;
  if (H5Literate(f, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_link, &names) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return {};
  }
  std::vector<std::string> notes;
  for (const auto& name : names) {
    if (name.find(".tessera-partial-") == std::string::npos) continue;
    const std::string where = in_quotes(file + ":/" + name);
    if (!left_by_dead_process(name))
      notes.push_back("found dataset " + where +
                      ", a partial output of another run (still running, or on another host); not touched");
    else if (H5Ldelete(f, ("/" + name).c_str(), H5P_DEFAULT) >= 0)
      notes.push_back("removed dataset " + where +
                      ", a partial output left by an earlier run that died (HDF5 keeps its space in the file until "
                      "it is repacked: h5repack)");
    else
      notes.push_back("found dataset " + where +
                      ", a partial output left by an earlier run that died, but could not remove it (" +
                      summarize(error_stack()) + ")");
  }
  H5Eclear2(H5E_DEFAULT);
  return notes;
}

}  // namespace hdf5

}  // namespace tessera::io
