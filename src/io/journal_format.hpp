#pragma once
// The rollback journal's on-disk format and the steps its owner (io/journal.cpp) and its
// restoration share: checksums, whole reads and writes, the lock, reading a journal back and
// checking it against the file, applying it, and the table the fatal-signal handler rolls back
// from. Internal to io/.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::io::journal_format {

constexpr char kMagic[16] = "TESSERA-JRNL-02";
constexpr std::uint32_t kRecordMagic = 0x544a5232u;  // "TJR2"
constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kSector = 512;  // the unit a crash may tear a write at, and of the write hashes
constexpr std::uint64_t kHeaderBytes = 512;
constexpr std::uint64_t kRecordMax = 64 * 1024;  // payload bytes of one record: the signal handler's buffer

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
// The end of the records written so far, in the last bytes of the header's slot: rewritten after
// each record (SQLite's journal keeps its record count so), durable with it. Records before it
// must all read back; only what lies past it may be the torn end of a crash.
struct Mark {
  std::uint64_t records_end;
  std::uint32_t magic;
  std::uint32_t crc;  // of the two above
};
constexpr std::uint32_t kMarkMagic = 0x544a4d32u;  // "TJM2"
constexpr std::uint64_t kMarkAt = kHeaderBytes - sizeof(Mark);
// A random number of the run that made the journal, before the mark: the fence's token (a new
// journal may get the inode number of the one a failed run's rollback removed).
constexpr std::uint64_t kStampAt = kMarkAt - sizeof(std::uint64_t);
static_assert(sizeof(Header) <= kStampAt, "the header, the stamp and the mark fit the slot");
Mark mark_of(std::uint64_t records_end) noexcept;

// What a record says about the file range [offset, offset + length):
enum RecordKind : std::uint32_t {
  kSave = 1,      // the payload is the range's original bytes (page-aligned, below the original size)
  kWrote = 2,     // the run is about to write there: the payload holds one hash per sector of the
                  // range (sector-aligned) as it will read after the write
  kReserve = 3,   // the ranks write C's elements there without the journal (no payload): any content
  kTruncate = 4,  // the run cut the file to `offset` bytes (no payload)
};

struct RecordHead {
  std::uint32_t magic;
  std::uint32_t crc;  // of the fields below and the payload
  std::uint32_t kind;
  std::uint32_t payload;  // bytes following the head
  std::uint64_t offset;
  std::uint64_t length;
};

// CRC-32 (IEEE), bitwise: no table, so the signal handler may use it too.
std::uint32_t crc32(std::uint32_t crc, const void* data, std::size_t n) noexcept;
std::uint32_t record_crc(const RecordHead& h, const void* payload) noexcept;
// A 64-bit hash of a sector's bytes (FNV-1a, finalised): what a kWrote record keeps.
std::uint64_t sector_hash(const void* data, std::size_t n) noexcept;
// Whole transfers at an offset, EINTR retried; false (errno set) on failure or end of file.
bool read_all(int fd, void* buf, std::size_t n, std::uint64_t at) noexcept;
bool write_all(int fd, const void* buf, std::size_t n, std::uint64_t at) noexcept;
std::string quote_path(const std::string& s);
// The directory holding `file` made durable (a new or removed name in it).
void sync_directory(const std::string& file);
// The lock every tessera writer of the file holds (open-file-description lock on byte 0).
bool try_lock(int fd) noexcept;
// Every kSave record of the journal open as `jfd` written back into `fd` (up to the first record
// that does not read back whole), its size set to `original_size`, fsync. Async-signal-safe: the
// live run's own rollback. The bytes put back, or -1.
long long apply_journal(int fd, int jfd, std::uint64_t original_size) noexcept;
// The signal handler's table of live journals: a slot for each, freed at commit or rollback.
int take_slot(int fd, int jfd, std::uint64_t size, const std::string& journal);
void free_slot(int slot);
// The file's creation time where its file system keeps one (else 0): with the inode, its identity.
void birth_of(int fd, std::int64_t& sec, std::uint32_t& nsec);
// The journal's header, read and checked (magic, checksum); false where it is not one.
bool read_header(int jfd, Header& h);
std::string host_of_this_machine();

// The extended attribute by which a file being written names its journal, so that a hard link
// elsewhere finds it (where the file system keeps user attributes).
constexpr const char* kJournalAttribute = "user.tessera.journal";

// Where the journal of `file` is, if it has one: beside the file's real path (symbolic links
// resolved), or where the file's attribute points. "" when none. `by_attribute` says which.
std::string find_journal(const std::string& file, bool* by_attribute = nullptr);

// How a journal found for a file stands, read without changing anything (inputs are only read).
struct JournalClaim {
  enum Kind { kNone, kForeign, kIncomplete, kDamaged, kPending } kind = kNone;
  std::string path;  // the journal
  std::string why;   // kForeign: why it cannot be this file's (not regular, owner, mode, identity)
  Header header{};   // kPending
};
// `fd` is the file open (for reading at least).
JournalClaim claim_of(int fd, const std::string& jpath);

// Restores `file` (open as `fd`, locked by the caller) from the journal at `jpath` and removes it.
// The journal is checked whole first, and the file against it: every record must read back (a bad
// record that a valid one follows, a bad header, a size no run could have left: refused); every
// sector the run saved must hold its original bytes or what the run wrote there, else someone
// changed the file after the crash and nothing is restored unless `force`. A refusal keeps the
// journal. The note for the user ("" when there is no journal). Throws InputError / IoError.
std::string recover_locked(const std::string& file, int fd, const std::string& jpath, bool force = false);
[[noreturn]] void throw_locked(const std::string& file);

}  // namespace tessera::io::journal_format
