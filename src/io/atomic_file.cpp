#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/cleanup.hpp"

namespace tessera::io {

namespace {

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// pwrite all of it (short writes, EINTR); 0 or errno.
int write_all(int fd, const char* data, std::size_t size) {
  off_t at = 0;
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, data, size, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    data += n;
    at += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

FileReservation::FileReservation(const std::string& path, std::size_t bytes, const std::string& option)
    : temp_(temporary_name(path)) {
  const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    throw InputError("cannot create " + option + " " + in_quotes(path) + " (its temporary " + in_quotes(temp_) +
                     "): " + std::strerror(err));
  }
  register_temporary(temp_);
  const int rc = bytes > 0 ? ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)) : 0;
  ::close(fd);
  if (rc != 0) {
    ::unlink(temp_.c_str());
    forget_temporary(temp_);
    throw InputError("cannot write " + option + " " + in_quotes(path) + ": reserving " + std::to_string(bytes / 1024) +
                     " KiB for it failed (" + std::strerror(rc) + ")");
  }
}

FileReservation::~FileReservation() {
  (void)::unlink(temp_.c_str());  // gone already when the file was written and renamed into place
  forget_temporary(temp_);
}

namespace {
int g_stdout_fd = STDOUT_FILENO;
}  // namespace

void set_stdout_fd(int fd) { g_stdout_fd = fd; }

void write_file_replacing(const std::string& path, const std::string& content) {
  struct stat st {};
  const bool dash = path == "-";
  if (dash || (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
    const int fd = dash ? ::dup(g_stdout_fd) : ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    std::size_t done = 0;
    int err = fd < 0 ? errno : 0;
    while (err == 0 && done < content.size()) {
      const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        err = n < 0 ? errno : EIO;
      else
        done += static_cast<std::size_t>(n);
    }
    if (fd >= 0) ::close(fd);
    if (err != 0) throw IoError("cannot write " + in_quotes(path) + ": " + std::strerror(err));
    log::info("wrote " + (dash ? std::string("the standard output") : in_quotes(path)));
    return;
  }
  const std::string temp = temporary_name(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);  // a reservation's, or new
  if (fd < 0) {
    const int err = errno;
    throw IoError("cannot write " + in_quotes(path) + ": creating " + in_quotes(temp) +
                  " failed: " + std::strerror(err));
  }
  register_temporary(temp);
  int err = write_all(fd, content.data(), content.size());
  if (err == 0 && ::ftruncate(fd, static_cast<off_t>(content.size())) != 0) err = errno;
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && std::rename(temp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(temp.c_str());
    forget_temporary(temp);
    throw IoError("cannot write " + in_quotes(path) + ": " + std::strerror(err));
  }
  forget_temporary(temp);
  log::info("wrote " + in_quotes(path));
}

}  // namespace tessera::io
