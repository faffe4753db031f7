#pragma once
// The one rule for every path a command touches, checked before anything is read or computed:
//
//   A file the job reads (an input, every file an input's data lives in, the config) is never
//   written, replaced or removed. A write goes only to the output (a new file, or a new dataset
//   of an existing HDF5 file, with --overwrite replacing that dataset) and to files written
//   whole (the report, bench and tune files): a new file, or one that tessera wrote before in
//   the same format. Output,
//   its temporary, and such files are distinct. Paths are compared as the files they are
//   (symbolic links followed, hard links by device and inode), not as text.
//
// Each conflict is refused with one line naming both paths. No MPI, no HDF5: the caller says
// which files an input reads (io::locate_data).
#include <functional>
#include <string>
#include <vector>

namespace tessera::io {

class PathGuard {
 public:
  // A file the job reads. `what` names it in messages, e.g. "input A 'a.h5:/A'".
  void read(const std::string& file, const std::string& what);

  // The HDF5 output (run's C, generate's matrix). A new file is written under
  // io::temporary_name(file) and renamed into place. An existing file must be a regular file: the
  // result becomes a new dataset of it, and --overwrite replaces that dataset only (which the
  // writer checks, io::MatrixWriter, as it needs HDF5). A symbolic link is refused (the rename
  // would replace the link, not the file it points to; and a file is written only under its own
  // name). `option` is how the user named it ("--c").
  void output(const std::string& file, const std::string& option);

  // A file written whole by temporary + rename (io/atomic_file.hpp), e.g. the report. An existing
  // one is replaced only when `replaceable(path)` says tessera wrote it (`kind` names the format in
  // the message, e.g. "a tessera report"); an existing terminal, pipe or device (/dev/stdout) is
  // written as it is. `option` is how the user named it, e.g. "--report".
  void written(const std::string& file, const std::string& option, const std::string& kind,
               std::function<bool(const std::string&)> replaceable);

  // Checks all of the above; throws InputError at the first conflict.
  void check() const;

  // Whether `path` is one of the files read (as a file, not as text): a leftover temporary that
  // is must not be removed.
  bool is_read(const std::string& path) const;

 private:
  struct Entry {
    std::string file, what, option, kind;
    std::function<bool(const std::string&)> replaceable;
  };
  std::vector<Entry> reads_, outputs_, writes_;
};

}  // namespace tessera::io
