// The rollback journal of an existing output file (io/journal.hpp). Layout of
// "<file>.tessera-journal":
//   header (kHeaderBytes): magic, the file's original size, inode, device, writer's host and pid,
//   a checksum;
//   records, appended: {magic, crc32, offset, bytes} then `bytes` original bytes of the file.
// The header is durable before the file is first written, and each record before the bytes it
// saves are overwritten, so a journal read back after any crash holds every original byte that
// may have changed; a torn last record is one whose write never happened. Restoring is
// idempotent: a crash during a rollback is undone by the next one.
#include "io/journal.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/cleanup.hpp"
#include "io/test_hooks.hpp"

namespace tessera::io {

namespace {

constexpr char kMagic[16] = "TESSERA-JRNL-01";
constexpr std::uint32_t kRecordMagic = 0x544a5231u;  // "TJR1"
constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kHeaderBytes = 512;
constexpr std::uint64_t kRecordMax = 64 * 1024;  // bytes of one record: the signal handler's buffer

struct Header {
  char magic[16];
  std::uint64_t original_size;
  std::uint64_t inode;
  std::uint64_t device;
  std::int64_t birth_sec;  // the file's creation time where the file system keeps one, else 0
  std::uint32_t birth_nsec;
  std::int64_t pid;
  char host[256];
  std::uint32_t crc;  // of everything above
};
static_assert(sizeof(Header) <= kHeaderBytes, "the header fits its slot");

struct RecordHead {
  std::uint32_t magic;
  std::uint32_t crc;  // of offset, bytes and the data
  std::uint64_t offset;
  std::uint64_t bytes;
};

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
  const int jfd = ::open(jpath.c_str(), O_RDONLY | O_CLOEXEC);
  if (jfd < 0) {
    if (errno == ENOENT) return "";
    throw IoError("cannot read " + quote_path(jpath) + " (the journal of an interrupted write to " + quote_path(file) +
                  "): " + std::strerror(errno));
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

}  // namespace

std::string journal_path(const std::string& file) {
  return std::filesystem::path(sidecar_prefix(file)).string() + "journal";
}

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

RollbackJournal::RollbackJournal(const std::string& file) : file_(file), journal_(journal_path(file)) {
  fd_ = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0)
    throw InputError("cannot open the output file " + quote_path(file) + " for writing: " + std::strerror(errno));
  if (!try_lock(fd_)) {
    ::close(fd_);
    throw_locked(file);
  }
  try {
    std::string note = recover_locked(file, fd_, journal_);
    if (!note.empty()) log::warn(note);
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode))
      throw InputError("output file " + quote_path(file) + " is not a regular file");
    original_size_ = static_cast<std::uint64_t>(st.st_size);
    saved_.assign(static_cast<std::size_t>((original_size_ + kPage - 1) / kPage), false);
    jfd_ = ::open(journal_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (jfd_ < 0)
      throw IoError("cannot create " + quote_path(journal_) + " (the journal that keeps " + quote_path(file) +
                    " safe while tessera writes it): " + std::strerror(errno));
    // Known to the signal handler from now on: a signal before the header is durable rolls back
    // nothing (no byte of the file has changed) and removes the journal.
    slot_ = take_slot(fd_, jfd_, original_size_, journal_);
    Header h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.original_size = original_size_;
    h.inode = static_cast<std::uint64_t>(st.st_ino);
    h.device = static_cast<std::uint64_t>(st.st_dev);
    birth_of(fd_, h.birth_sec, h.birth_nsec);
    h.pid = static_cast<std::int64_t>(::getpid());
    const std::string host = host_of_this_machine();
    std::memcpy(h.host, host.c_str(), std::min(host.size(), sizeof h.host - 1));
    h.crc = crc32(0, &h, offsetof(Header, crc));
    unsigned char slot[kHeaderBytes] = {};
    std::memcpy(slot, &h, sizeof h);
    const int injected = test_write_point();
    if (injected != 0 || !write_all(jfd_, slot, sizeof slot, 0) || ::fsync(jfd_) != 0) {
      const int err = injected != 0 ? injected : errno;
      free_slot(slot_);
      slot_ = -1;
      ::close(jfd_);
      jfd_ = -1;
      (void)::unlink(journal_.c_str());
      throw IoError("cannot write " + quote_path(journal_) + ": " + std::strerror(err));
    }
    sync_directory(journal_);  // the journal's name durable before the file's first change
    journal_end_ = kHeaderBytes;
  } catch (...) {
    free_slot(slot_);
    if (jfd_ >= 0) ::close(jfd_);
    ::close(fd_);
    throw;
  }
}

RollbackJournal::~RollbackJournal() {
  if (!committed_) {
    try {
      rollback();
    } catch (const std::exception& e) {
      log::warn(std::string(e.what()));
    }
  }
  free_slot(slot_);
  if (jfd_ >= 0) ::close(jfd_);
  if (fd_ >= 0) ::close(fd_);
}

void RollbackJournal::append(std::uint64_t offset, const std::vector<unsigned char>& data) {
  RecordHead h{kRecordMagic, 0, offset, data.size()};
  h.crc = record_crc(h, data.data());
  int err = test_write_point();
  if (err == 0 && (!write_all(jfd_, &h, sizeof h, journal_end_) ||
                   !write_all(jfd_, data.data(), data.size(), journal_end_ + sizeof h)))
    err = errno;
  if (err != 0) {
    failure_ = err;
    throw IoError("cannot save the original bytes of " + quote_path(file_) + " in " + quote_path(journal_) + ": " +
                  std::strerror(err));
  }
  journal_end_ += sizeof h + data.size();
}

void RollbackJournal::preserve(std::uint64_t offset, std::uint64_t bytes) {
  if (committed_ || bytes == 0 || offset >= original_size_) return;
  const std::uint64_t end = std::min(original_size_, offset + bytes);
  bool added = false;
  std::uint64_t page = offset / kPage;
  const std::uint64_t last = (end - 1) / kPage;
  while (page <= last) {
    if (saved_[page]) {
      ++page;
      continue;
    }
    std::uint64_t run_end = page;  // a run of unsaved pages, one record of at most kRecordMax
    while (run_end + 1 <= last && !saved_[run_end + 1] && (run_end + 2 - page) * kPage <= kRecordMax) ++run_end;
    const std::uint64_t from = page * kPage;
    const std::uint64_t to = std::min(original_size_, (run_end + 1) * kPage);
    std::vector<unsigned char> data(static_cast<std::size_t>(to - from));
    if (!read_all(fd_, data.data(), data.size(), from)) {
      failure_ = errno != 0 ? errno : EIO;
      throw IoError("cannot read " + quote_path(file_) + " to save its original bytes: " + std::strerror(failure_));
    }
    append(from, data);
    for (std::uint64_t p = page; p <= run_end; ++p) saved_[p] = true;
    added = true;
    page = run_end + 1;
  }
  if (added && ::fdatasync(jfd_) != 0) {
    failure_ = errno;
    throw IoError("cannot write " + quote_path(journal_) + ": " + std::strerror(failure_));
  }
}

int RollbackJournal::preserve_noexcept(std::uint64_t offset, std::uint64_t bytes) noexcept {
  const int before = failure_;
  failure_ = 0;
  try {
    preserve(offset, bytes);
    failure_ = before;
    return 0;
  } catch (...) {
    const int err = failure_ != 0 ? failure_ : EIO;
    failure_ = before;
    return err;
  }
}

void RollbackJournal::commit() {
  if (committed_) return;
  if (abandoned_) throw IoError("cannot commit " + quote_path(file_) + ": a write to it failed");
  if (::fsync(fd_) != 0) throw IoError("writing " + quote_path(file_) + " failed: " + std::strerror(errno));
  int err = test_write_point();
  if (err == 0 && ::unlink(journal_.c_str()) != 0) err = errno;  // the unlink is the commit point
  if (err != 0)
    throw IoError("cannot remove " + quote_path(journal_) + " to commit " + quote_path(file_) + ": " +
                  std::strerror(err));
  committed_ = true;
  free_slot(slot_);
  slot_ = -1;
  sync_directory(journal_);
  log::debug("committed " + quote_path(file_) + "; the journal held " + std::to_string(journal_end_) +
             " bytes (the original pages HDF5 rewrote, and its header)");
}

void RollbackJournal::rollback() {
  if (committed_) return;
  free_slot(slot_);
  slot_ = -1;
  if (jfd_ < 0) return;
  const long long restored = apply_journal(fd_, jfd_, original_size_);
  if (restored < 0)
    throw IoError("cannot restore " + quote_path(file_) + " after a failed run: " + std::strerror(errno) +
                  "; its journal " + quote_path(journal_) +
                  " is kept, and the next tessera command (or `tessera recover " + file_ + "`) restores it");
  if (::unlink(journal_.c_str()) != 0 && errno != ENOENT)
    throw IoError("cannot remove " + quote_path(journal_) + ": " + std::strerror(errno));
  committed_ = true;  // nothing more to undo
  sync_directory(journal_);
  log::debug("restored " + quote_path(file_) + " as it was (" + std::to_string(restored) + " byte(s) put back)");
}

RollbackJournal::HoldSignals::HoldSignals() { hold_fatal_signals(); }
RollbackJournal::HoldSignals::~HoldSignals() noexcept(false) { release_fatal_signals(); }

}  // namespace tessera::io
