#pragma once
// Files written whole (the JSON report, bench and tune files): under io::temporary_name(path),
// then fsync and rename, so a failed write (a full disk) leaves neither a truncated file nor a
// leftover, and an earlier file is replaced only by a complete one. No MPI, no HDF5.
#include <cstddef>
#include <string>

namespace tessera::io {

// Creates `path`'s temporary now and allocates `bytes` in it, so a full disk (or a directory
// where files cannot be created) is found before a job runs instead of after it. Removed by the
// destructor (and on SIGTERM / SIGINT) unless write_file_replacing(path, ...) has renamed it into
// place by then. Throws InputError naming the file.
class FileReservation {
 public:
  FileReservation(const std::string& path, std::size_t bytes, const std::string& option);
  ~FileReservation();
  FileReservation(const FileReservation&) = delete;
  FileReservation& operator=(const FileReservation&) = delete;

 private:
  std::string temp_;
};

// Writes `content` to `path`: "-" is the standard output (set_stdout_fd), an existing terminal,
// pipe or device (e.g. /dev/stdout) is written as it is; anything else through the temporary (the
// reservation's, when one was made) with fsync and rename. Throws IoError naming `path` (and
// nothing is left behind).
void write_file_replacing(const std::string& path, const std::string& content);

// Where "-" writes (STDOUT_FILENO unless the command line moved the standard output aside, so
// that a JSON document alone reaches it: `--report -`).
void set_stdout_fd(int fd);

}  // namespace tessera::io
