// The journal's file format: its records' encoding and checks, the writes and reads they take, the
// rollback a signal handler may run, and its table of live journals (io/journal_format.hpp). How a
// dead run's journal is checked and restored: io/journal_recovery.cpp.
// Layout of "<file>.tessera-journal":
//   header (kHeaderBytes): magic, the file's original size, inode, device, creation time, the
//   writer's host and pid, a checksum;
//   the end of the records so far (a Mark, in the slot's last bytes, rewritten after each record);
//   records, appended: {magic, crc32, kind, payload bytes, offset, length} then the payload:
//   kSave the original bytes of a range, kWrote a hash of each sector of a range as the run's next
//   write leaves it, kReserve a range C's elements go to, kTruncate a cut of the file.
// The header is durable before the file is first written, and each kSave record (with the kWrote
// record of the write it precedes) before the bytes it saves are overwritten, so a journal read
// back after any crash holds every original byte that may have changed; a torn last record is one
// whose write never happened. Recovery of a dead run's journal checks it whole and the file against
// it (each saved sector holds its original bytes or what the run wrote: anything else is someone
// else's later change, refused). Restoring is idempotent: a crash during a rollback is undone by
// the next one.
#include "io/journal_format.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include "io/cleanup.hpp"

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

std::uint32_t record_crc(const RecordHead& h, const void* payload) noexcept {
  std::uint32_t c = crc32(0, &h.kind, sizeof h.kind);
  c = crc32(c, &h.payload, sizeof h.payload);
  c = crc32(c, &h.offset, sizeof h.offset);
  c = crc32(c, &h.length, sizeof h.length);
  return crc32(c, payload, h.payload);
}

Mark mark_of(std::uint64_t records_end) noexcept {
  Mark m{records_end, kMarkMagic, 0};
  m.crc = crc32(0, &m, offsetof(Mark, crc));
  return m;
}

std::uint64_t sector_hash(const void* data, std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t x = 0xcbf29ce484222325ull ^ n;
  for (std::size_t i = 0; i < n; ++i) x = (x ^ p[i]) * 0x100000001b3ull;
  x ^= x >> 33;  // finalised, so nearby contents spread over all 64 bits
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
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

// Restores from the journal open as `jfd` into `fd`: every kSave record, then the original size,
// then fsync. Only async-signal-safe calls (the signal handler uses it). Returns the number of
// bytes put back, or -1 when the file could not be written.
long long apply_journal(int fd, int jfd, std::uint64_t original_size) noexcept {
  static unsigned char buffer[kRecordMax];
  std::uint64_t at = kHeaderBytes;
  long long restored = 0;
  for (;;) {
    RecordHead h{};
    if (!read_all(jfd, &h, sizeof h, at)) break;
    if (h.magic != kRecordMagic || h.payload > kRecordMax) break;
    if (h.kind == kSave) {
      if (h.payload == 0 || h.length != h.payload) break;
      if (!read_all(jfd, buffer, h.payload, at + sizeof h)) break;
      if (record_crc(h, buffer) != h.crc) break;  // torn: its write never happened
      if (!write_all(fd, buffer, h.payload, h.offset)) return -1;
      restored += static_cast<long long>(h.payload);
    }
    at += sizeof h + h.payload;
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

}  // namespace tessera::io::journal_format
