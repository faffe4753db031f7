#include "io/file_stamp.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace tessera::io {

FileStamp file_stamp(const std::string& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) throw IoError("cannot stat '" + file + "': " + std::strerror(errno));
  return {static_cast<std::int64_t>(st.st_size), static_cast<std::int64_t>(st.st_mtim.tv_sec),
          static_cast<std::int64_t>(st.st_mtim.tv_nsec)};
}

}  // namespace tessera::io
