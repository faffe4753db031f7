#pragma once
// What a path is when it is not a regular file: tessera reads inputs and configs, and writes C,
// only as regular files. A fifo would block the first read forever (whoever can write the folder
// can stop every run that names it), a device such as /dev/zero never ends, a directory fails
// later with an unclear message (issue 40).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>

namespace tessera {

// "" for a regular file; else what it is, for a message: "a directory", "a fifo (named pipe)", ...
inline std::string not_regular_file(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISFIFO(st.st_mode)) return "a fifo (named pipe)";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
}

// A small file read whole: opened without blocking (a fifo's open would wait for a writer) and
// checked on the descriptor (a name checked first may be swapped before the open) to be a regular
// file of at most `max_bytes` before a byte is read. Exactly one of the fields after `text` tells
// why nothing (or not all) was read; the caller words the refusal.
struct SmallFile {
  std::string text;
  int error = 0;            // errno of the failed open, fstat or read
  std::string not_regular;  // not_regular_file()'s words
  off_t too_large = 0;      // its size, when more than max_bytes
  bool ok() const { return error == 0 && not_regular.empty() && too_large == 0; }
};

inline SmallFile read_small_file(const std::string& path, off_t max_bytes) {
  SmallFile f;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    f.error = errno;
    return f;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    f.error = errno;
  else
    f.not_regular = not_regular_file(st);
  if (f.ok() && st.st_size > max_bytes) f.too_large = st.st_size;
  if (f.ok()) {
    f.text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < f.text.size()) {
      const ssize_t n = ::read(fd, &f.text[got], f.text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) f.error = errno;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    f.text.resize(got);
  }
  ::close(fd);
  return f;
}

}  // namespace tessera
