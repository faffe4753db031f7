#pragma once
// What a path is when it is not a regular file: tessera reads inputs and configs, and writes C,
// only as regular files. A fifo would block the first read forever (whoever can write the folder
// can stop every run that names it), a device such as /dev/zero never ends, a directory fails
// later with an unclear message (issue 40).
#include <sys/stat.h>

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

}  // namespace tessera
