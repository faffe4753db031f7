// The journal's file format, its restoration and the signal handler's table (io/journal_format.hpp).
// Layout of "<file>.tessera-journal":
//   header (kHeaderBytes): magic, the file's original size, inode, device, creation time, the
//   writer's host and pid, a checksum;
//   records, appended: {magic, crc32, offset, bytes} then `bytes` original bytes of the file.
// The header is durable before the file is first written, and each record before the bytes it
// saves are overwritten, so a journal read back after any crash holds every original byte that
// may have changed; a torn last record is one whose write never happened. Restoring is
// idempotent: a crash during a rollback is undone by the next one.
#include "io/journal_format.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "io/cleanup.hpp"
#include "io/journal.hpp"

namespace tessera::io::journal_format {

// CRC-32 (IEEE), bitwise: no table, so the signal handler may use it too.
std::uint32_t crc32(std::uint32_t crc, const void* data, std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::uint32_t record_crc(const RecordHead& h, const void* data) noexcept {
  std::uint32_t c = crc32(0, &h.offset, sizeof h.offset);
  c = crc32(c, &h.bytes, sizeof h.bytes);
  return crc32(c, data, static_cast<std::size_t>(h.bytes));
}

bool read_all(int fd, void* buf, std::size_t n, std::uint64_t at) noexcept {
  auto* p = static_cast<unsigned char*>(buf);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<std::size_t>(got);
    at += static_cast<std::uint64_t>(got);
  }
  return true;
}

bool write_all(int fd, const void* buf, std::size_t n, std::uint64_t at) noexcept {
  const auto* p = static_cast<const unsigned char*>(buf);
  while (n > 0) {
    const ssize_t put = ::pwrite(fd, p, n, static_cast<off_t>(at));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) {
      if (put == 0) errno = EIO;
      return false;
    }
    p += put;
    n -= static_cast<std::size_t>(put);
    at += static_cast<std::uint64_t>(put);
  }
  return true;
}

std::string quote_path(const std::string& s) { return "'" + s + "'"; }

std::string directory_of(const std::string& file) {
  const std::string dir = std::filesystem::path(file).parent_path().string();
  return dir.empty() ? "." : dir;
}

void sync_directory(const std::string& file) {
  const int d = ::open(directory_of(file).c_str(), O_RDONLY | O_DIRECTORY);
  if (d < 0) return;
  (void)::fsync(d);
  ::close(d);
}

// The lock every tessera writer of `fd`'s file holds: an open-file-description write lock on its
// first byte. OFD locks belong to the descriptor, not the process, so HDF5 opening and closing
// the same file in this process does not drop it (a classic fcntl lock would go).
bool try_lock(int fd) noexcept {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 1;
  return ::fcntl(fd, F_OFD_SETLK, &fl) == 0;
}

// Restores from the journal open as `jfd` into `fd`: every valid record, then the original size,
// then fsync. Only async-signal-safe calls (the signal handler uses it). Returns the number of
// bytes put back, or -1 when the file could not be written.
long long apply_journal(int fd, int jfd, std::uint64_t original_size) noexcept {
  static unsigned char buffer[kRecordMax];
  std::uint64_t at = kHeaderBytes;
  long long restored = 0;
  for (;;) {
    RecordHead h{};
    if (!read_all(jfd, &h, sizeof h, at)) break;
    if (h.magic != kRecordMagic || h.bytes == 0 || h.bytes > kRecordMax) break;
    if (!read_all(jfd, buffer, static_cast<std::size_t>(h.bytes), at + sizeof h)) break;
    if (record_crc(h, buffer) != h.crc) break;  // torn: its write never happened
    if (!write_all(fd, buffer, static_cast<std::size_t>(h.bytes), h.offset)) return -1;
    restored += static_cast<long long>(h.bytes);
    at += sizeof h + h.bytes;
  }
  if (::ftruncate(fd, static_cast<off_t>(original_size)) != 0) return -1;
  if (::fsync(fd) != 0) return -1;
  return restored;
}

namespace {

// What the signal handler needs of each live journal, in fixed storage.
constexpr int kSlots = 4;
constexpr std::size_t kPathMax = 4096;
struct Slot {
  std::atomic<int> used{0};
  int fd = -1;
  int jfd = -1;
  std::uint64_t original_size = 0;
  char journal[kPathMax] = {};
};
Slot g_slots[kSlots];

void rollback_all_on_signal() noexcept {
  bool any = false;
  for (auto& s : g_slots) {
    if (s.used.load() != 1) continue;
    s.used.store(2);
    if (apply_journal(s.fd, s.jfd, s.original_size) >= 0) ::unlink(s.journal);
    any = true;
  }
  if (!any) return;
  // Other ranks may still be writing their rows of C past the original end (a signal that reached
  // this rank first, a launcher that ends the others a moment later): cut the file again after
  // they have had time to die, so no late write leaves it longer than it was.
  const struct timespec pause { 0, 300 * 1000 * 1000 };
  ::nanosleep(&pause, nullptr);
  for (auto& s : g_slots)
    if (s.used.load() == 2 && ::ftruncate(s.fd, static_cast<off_t>(s.original_size)) == 0) ::fsync(s.fd);
}

}  // namespace

int take_slot(int fd, int jfd, std::uint64_t size, const std::string& journal) {
  if (journal.size() >= kPathMax) return -1;
  set_signal_rollback(rollback_all_on_signal);
  for (int i = 0; i < kSlots; ++i) {
    if (g_slots[i].used.load() != 0) continue;
    g_slots[i].fd = fd;
    g_slots[i].jfd = jfd;
    g_slots[i].original_size = size;
    std::memcpy(g_slots[i].journal, journal.c_str(), journal.size() + 1);
    g_slots[i].used.store(1);
    return i;
  }
  return -1;
}

void free_slot(int slot) {
  if (slot >= 0) g_slots[slot].used.store(0);
}

// The file's identity beyond its inode number, which a new file may reuse: its creation time
// (statx), where the file system records one.
void birth_of(int fd, std::int64_t& sec, std::uint32_t& nsec) {
  struct statx sx {};
  sec = 0;
  nsec = 0;
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_BTIME, &sx) == 0 && (sx.stx_mask & STATX_BTIME) != 0) {
    sec = sx.stx_btime.tv_sec;
    nsec = sx.stx_btime.tv_nsec;
  }
}

std::string host_of_this_machine() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "?";
  return host;
}

bool read_header(int jfd, Header& h) {
  if (!read_all(jfd, &h, sizeof h, 0)) return false;
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return false;
  h.host[sizeof h.host - 1] = '\0';
  return crc32(0, &h, offsetof(Header, crc)) == h.crc;
}

// Restores `file` (open as `fd`, locked by the caller) from its journal and removes the journal.
// Returns the note for the user.
std::string recover_locked(const std::string& file, int fd, const std::string& jpath) {
  // Not followed through a link, not waited on (a fifo), and applied only when it is a regular
  // file that the file's owner or this user made and no one else could have written: in a shared
  // folder anyone may plant a file at this name (issue 40). A refusal keeps it.
  const int jfd = ::open(jpath.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (jfd < 0) {
    if (errno == ENOENT) return "";
    throw IoError("cannot read " + quote_path(jpath) + " (the journal of an interrupted write to " + quote_path(file) +
                  "): " +
                  (errno == ELOOP ? std::string("it is a symbolic link, which tessera never follows")
                                  : std::string(std::strerror(errno))));
  }
  {
    struct stat js {
    }, fs{};
    std::string why;
    if (::fstat(jfd, &js) != 0 || ::fstat(fd, &fs) != 0)
      why = std::strerror(errno);
    else if (!S_ISREG(js.st_mode))
      why = "it is not a regular file";
    else if (js.st_uid != fs.st_uid && js.st_uid != ::geteuid())
      why = "it belongs to user " + std::to_string(js.st_uid) + ", neither the file's owner (" +
            std::to_string(fs.st_uid) + ") nor you";
    else if ((js.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(js.st_mode & 07777));
      why = std::string("others may write it (mode ") + mode + ")";
    }
    if (!why.empty()) {
      ::close(jfd);
      throw InputError(quote_path(jpath) + " is not applied to " + quote_path(file) + ": " + why +
                       ", so it cannot be a journal tessera wrote for this file. The journal is kept and the file "
                       "untouched; remove the journal if it is not yours");
    }
  }
  Header h{};
  const bool valid = read_header(jfd, h);
  if (!valid) {
    // A header is durable before the file's first write: without one, nothing was written.
    ::close(jfd);
    if (::unlink(jpath.c_str()) != 0 && errno != ENOENT)
      throw IoError("cannot remove " + quote_path(jpath) + ": " + std::strerror(errno));
    sync_directory(jpath);
    return "removed " + quote_path(jpath) + ", an incomplete journal of a tessera run that died before it wrote to " +
           quote_path(file) + " (the file was not changed)";
  }
  struct stat st {};
  std::int64_t birth_sec = 0;
  std::uint32_t birth_nsec = 0;
  birth_of(fd, birth_sec, birth_nsec);
  if (::fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_ino) != h.inode || birth_sec != h.birth_sec ||
      birth_nsec != h.birth_nsec) {
    ::close(jfd);
    throw InputError(quote_path(file) + " has a journal " + quote_path(jpath) + " of a tessera run (host " + h.host +
                     ", pid " + std::to_string(h.pid) +
                     ") that died while writing it, but the file has been replaced since (another inode), so the "
                     "journal's saved bytes do not belong to it: if the file is as you want it, remove the journal");
  }
  const long long restored = apply_journal(fd, jfd, h.original_size);
  ::close(jfd);
  if (restored < 0)
    throw IoError("cannot restore " + quote_path(file) + " from its journal " + quote_path(jpath) + ": " +
                  std::strerror(errno) + " (the journal is kept: run `tessera recover " + file + "` again)");
  if (::unlink(jpath.c_str()) != 0 && errno != ENOENT)
    throw IoError("cannot remove " + quote_path(jpath) + " after restoring " + quote_path(file) + ": " +
                  std::strerror(errno));
  sync_directory(jpath);
  return "restored " + quote_path(file) + " as it was before a tessera run (host " + std::string(h.host) + ", pid " +
         std::to_string(h.pid) + ") that died while writing it: " + std::to_string(restored) +
         " byte(s) put back and its size set to " + std::to_string(h.original_size) + " from " + quote_path(jpath);
}

[[noreturn]] void throw_locked(const std::string& file) {
  throw InputError(quote_path(file) +
                   " is being written by another tessera run (it holds the file's lock); wait for it to end, "
                   "or write the result elsewhere");
}

}  // namespace tessera::io::journal_format

namespace tessera::io {

using namespace journal_format;

std::string recover_interrupted_write(const std::string& file) {
  const std::string jpath = journal_path(file);
  struct stat st {};
  if (::lstat(jpath.c_str(), &st) != 0) return "";
  const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      throw InputError(quote_path(jpath) + " is the journal of an interrupted tessera write to " + quote_path(file) +
                       ", which no longer exists; remove the journal");
    throw InputError("cannot open " + quote_path(file) + " to restore it from its journal " + quote_path(jpath) + ": " +
                     std::strerror(errno));
  }
  if (!try_lock(fd)) {
    ::close(fd);
    throw_locked(file);
  }
  try {
    std::string note = recover_locked(file, fd, jpath);
    ::close(fd);
    return note;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

}  // namespace tessera::io
