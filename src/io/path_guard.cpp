#include "io/path_guard.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "io/cleanup.hpp"

namespace tessera::io {

namespace {

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// A file as the file system sees it: device and inode when it exists (symbolic links followed,
// so every name of one file compares equal); else its directory's device and inode and its own
// name, which is what it will be once created.
struct FileId {
  bool known = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string name;  // empty when the file exists

  static FileId of(const std::string& path) {
    FileId id;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      id.known = true;
      id.dev = st.st_dev;
      id.ino = st.st_ino;
      return id;
    }
    const std::filesystem::path p(path);
    const std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
    if (::stat(dir.c_str(), &st) != 0) return id;
    id.known = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    id.name = p.filename().string();
    return id;
  }
  bool same(const FileId& o) const { return known && o.known && dev == o.dev && ino == o.ino && name == o.name; }
};

std::string link_target(const std::string& path) {
  char buf[PATH_MAX] = {};
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("?");
}

// A terminal, pipe, socket or device: written as a stream, not replaced.
bool is_stream(const struct stat& st) { return !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode); }

void check_directory(const std::string& file, const std::string& label, const std::string& suffix) {
  std::string dir = std::filesystem::path(file).parent_path().string();
  if (dir.empty()) dir = ".";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw InputError(label + " " + in_quotes(dir) + " does not exist" + suffix);
  if (!S_ISDIR(st.st_mode)) throw InputError(label + " " + in_quotes(dir) + " is not a directory" + suffix);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError(label + " " + in_quotes(dir) + " is not writable" + suffix);
}

}  // namespace

void PathGuard::read(const std::string& file, const std::string& what) {
  Entry e;
  e.file = file;
  e.what = what;
  reads_.push_back(std::move(e));
}

void PathGuard::output(const std::string& file, const std::string& option) {
  Entry e;
  e.file = file;
  e.option = option;
  outputs_.push_back(std::move(e));
}

void PathGuard::written(const std::string& file, const std::string& option, const std::string& kind,
                        std::function<bool(const std::string&)> replaceable) {
  Entry e;
  e.file = file;
  e.option = option;
  e.kind = kind;
  e.replaceable = std::move(replaceable);
  writes_.push_back(std::move(e));
}

bool PathGuard::is_read(const std::string& path) const {
  const FileId id = FileId::of(path);
  for (const auto& r : reads_)
    if (id.same(FileId::of(r.file))) return true;
  return false;
}

void PathGuard::check() const {
  const auto refuse_read = [&](const std::string& subject, const FileId& id, const std::string& option) {
    for (const auto& r : reads_)
      if (id.same(FileId::of(r.file)))
        throw InputError(subject + " is also an input file: " + r.what +
                         "; tessera never writes to a file it reads (choose another " + option + ")");
  };

  // The output: what is there now, where its temporary goes, and that it reads nothing it writes.
  for (const auto& o : outputs_) {
    const std::string subject = "output file " + in_quotes(o.file);
    struct stat st {};
    if (::lstat(o.file.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      const std::string target = link_target(o.file);
      struct stat to {};
      if (::stat(o.file.c_str(), &to) != 0)
        throw InputError(subject + " is a symbolic link to " + in_quotes(target) +
                         ", which does not exist; tessera writes a new file and renames it into place, which would "
                         "replace the link: name the file itself");
      throw InputError(subject + " is a symbolic link to " + in_quotes(target) +
                       "; tessera writes into an existing file only under its own name: name " + in_quotes(target) +
                       " itself");
    }
    refuse_read(subject, FileId::of(o.file), o.option);
    if (::stat(o.file.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) throw InputError(subject + " is a directory");
      if (!S_ISREG(st.st_mode)) throw InputError(subject + " is not a regular file (a device, pipe or socket)");
      // An existing file gets the result as a new dataset (checked by the writer, which reads the
      // file); nothing is created beside it.
      continue;
    }
    check_directory(o.file, "output directory", "");
  }

  // Files written whole (report, bench and tune files).
  for (std::size_t i = 0; i < writes_.size(); ++i) {
    const auto& w = writes_[i];
    const std::string subject = w.option + " " + in_quotes(w.file);
    if (w.file == "-") continue;  // the standard output (io::write_file_replacing)
    const std::string in_dir = w.option == "--report" ? "report directory" : w.option + " directory";
    struct stat st {};
    if (::lstat(w.file.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      struct stat to {};
      if (::stat(w.file.c_str(), &to) == 0 && is_stream(to)) continue;  // e.g. /dev/stdout
      throw InputError(subject + " is a symbolic link to " + in_quotes(link_target(w.file)) +
                       (::stat(w.file.c_str(), &to) != 0 ? ", which does not exist" : "") +
                       "; tessera writes a new file and renames it into place, which would replace the link: name "
                       "the file itself");
    }
    if (::stat(w.file.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) throw InputError(subject + " is a directory");
      if (is_stream(st)) continue;
      // Read-only by its mode too, which root's access() ignores: the owner meant it to stay.
      if (::access(w.file.c_str(), W_OK) != 0 || (st.st_mode & 0222) == 0)
        throw InputError(subject + " exists and is read-only");
    }
    check_directory(w.file, in_dir, " (" + subject + ")");
    const FileId id = FileId::of(w.file);
    refuse_read(subject, id, w.option);
    for (const auto& o : outputs_) {
      if (id.same(FileId::of(o.file)))
        throw InputError(subject + " is the output file (" + o.option + " " + in_quotes(o.file) + "); choose another " +
                         w.option);
      if (id.same(FileId::of(temporary_name(o.file))))
        throw InputError(subject + " is the temporary name of the output file " + in_quotes(o.file) +
                         "; choose another " + w.option);
    }
    for (std::size_t j = 0; j < i; ++j)
      if (id.same(FileId::of(writes_[j].file)))
        throw InputError(subject + " is the same file as " + writes_[j].option + " " + in_quotes(writes_[j].file));
    // Last: only a file that is there and holds no conflict is looked into.
    if (::stat(w.file.c_str(), &st) == 0 && w.replaceable && !w.replaceable(w.file))
      throw InputError(subject + " exists and is not " + w.kind + "; tessera replaces only " + w.kind +
                       " it wrote: remove it or choose another " + w.option);
  }
}

}  // namespace tessera::io
