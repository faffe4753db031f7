#pragma once
// The rollback journal's on-disk format and the steps its owner (io/journal.cpp) and its
// restoration share: checksums, whole reads and writes, the lock, applying a journal, and the
// table the fatal-signal handler rolls back from. Internal to io/.
#include <cstddef>
#include <cstdint>
#include <string>

namespace tessera::io::journal_format {

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
std::uint32_t crc32(std::uint32_t crc, const void* data, std::size_t n) noexcept;
std::uint32_t record_crc(const RecordHead& h, const void* data) noexcept;
// Whole transfers at an offset, EINTR retried; false (errno set) on failure or end of file.
bool read_all(int fd, void* buf, std::size_t n, std::uint64_t at) noexcept;
bool write_all(int fd, const void* buf, std::size_t n, std::uint64_t at) noexcept;
std::string quote_path(const std::string& s);
// The directory holding `file` made durable (a new or removed name in it).
void sync_directory(const std::string& file);
// The lock every tessera writer of the file holds (open-file-description lock on byte 0).
bool try_lock(int fd) noexcept;
// Every valid record of the journal open as `jfd` written back into `fd`, its size set to
// `original_size`, fsync. Async-signal-safe. The bytes put back, or -1.
long long apply_journal(int fd, int jfd, std::uint64_t original_size) noexcept;
// The signal handler's table of live journals: a slot for each, freed at commit or rollback.
int take_slot(int fd, int jfd, std::uint64_t size, const std::string& journal);
void free_slot(int slot);
// The file's creation time where its file system keeps one (else 0): with the inode, its identity.
void birth_of(int fd, std::int64_t& sec, std::uint32_t& nsec);
std::string host_of_this_machine();
// Restores `file` (open as `fd`, locked by the caller) from the journal at `jpath` and removes it.
// The note for the user ("" when there is no journal). Throws InputError / IoError.
std::string recover_locked(const std::string& file, int fd, const std::string& jpath);
[[noreturn]] void throw_locked(const std::string& file);

}  // namespace tessera::io::journal_format
