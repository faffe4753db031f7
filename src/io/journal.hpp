#pragma once
// Crash safety for an existing file that tessera adds its result to: a rollback journal, as
// SQLite keeps one. Before any byte the file held when the run began is overwritten (HDF5's
// metadata: superblock, groups, heaps, attributes), its original page is saved to
// "<file>.tessera-journal" and made durable; what is written beyond the original end needs no
// saving (a rollback cuts the file back to its original size). Removing the journal, after the
// file itself is made durable, is the commit: until then a rollback restores the file byte for
// byte. The rollback runs on an error, on SIGTERM/SIGINT/SIGHUP, and, after a kill -9, a power
// loss or a full disk, in the next tessera command that touches the file (or `tessera recover`).
//
// The journal's owner also holds a lock on the file for the whole run (an open-file-description
// lock, independent of HDF5's flock and of HDF5_USE_FILE_LOCKING), so two tessera runs never
// write one file at once. No MPI, no CUDA, no HDF5 here (io/journal_driver.hpp connects HDF5).
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::io {

// "<dir>/<name>.tessera-journal" (a long name shortened as temporary_name shortens it), beside the
// file's real path: a file named through a symbolic link (or a linked folder) has one journal.
// While a run writes the file, the file's attribute user.tessera.journal also names it, so that a
// run or `recover` through a hard link in another folder finds it too.
std::string journal_path(const std::string& file);

class RollbackJournal {
 public:
  // Locks `file` (an existing regular file) for writing, then creates its journal, durable before
  // this returns. Throws InputError when another tessera run holds the file or a journal is
  // already there (recover it first: recover_interrupted_write), IoError when the journal cannot
  // be written.
  explicit RollbackJournal(const std::string& file);
  // Rolls back unless committed (errors are ignored: the journal then stays for the next command).
  ~RollbackJournal();
  RollbackJournal(const RollbackJournal&) = delete;
  RollbackJournal& operator=(const RollbackJournal&) = delete;

  const std::string& file() const { return file_; }
  std::uint64_t original_size() const { return original_size_; }

  // Before the run writes `bytes` bytes of `data` at `offset`: the original bytes of the range's
  // pages below original_size() saved, and a hash of each sector as the write leaves it recorded
  // (so a recovery tells the run's writes from anyone else's later change); durable, where a page
  // was saved, when this returns. Throws IoError (a full disk): the caller must then not write.
  void before_write(std::uint64_t offset, const void* data, std::uint64_t bytes);
  // Before the run cuts the file to `size` bytes: what the cut removes of the original saved.
  void before_truncate(std::uint64_t size);
  // The range C's elements will take, written by the ranks without the journal: its original
  // bytes saved (any content there is the run's own at recovery).
  void reserve(std::uint64_t offset, std::uint64_t bytes);
  // The same as HDF5's driver calls them: 0, or the failure's errno instead of throwing.
  int before_write_noexcept(std::uint64_t offset, const void* data, std::uint64_t bytes) noexcept;
  int before_truncate_noexcept(std::uint64_t size) noexcept;
  const std::string& journal() const { return journal_; }

  // After a failed write (a full disk) nothing more is written: the run will roll back, so HDF5's
  // remaining writes are dropped instead of failing again. While HDF5 closes the file (Closing),
  // even the first failure is recorded and dropped rather than reported to HDF5: a failed close
  // is what HDF5 1.10 does not survive (the file freed but its id kept, then a crash at exit,
  // HDFFV-11052); the caller asks failure() after the close.
  void abandon(int err) noexcept {
    abandoned_ = true;
    if (failure_ == 0) failure_ = err;
  }
  bool abandoned() const noexcept { return abandoned_; }
  int failure() const noexcept { return failure_; }  // errno of the first failed write, else 0
  bool closing() const noexcept { return closing_; }
  class Closing {
   public:
    explicit Closing(RollbackJournal& j) : j_(j) { j_.closing_ = true; }
    ~Closing() { j_.closing_ = false; }
    Closing(const Closing&) = delete;
    Closing& operator=(const Closing&) = delete;

   private:
    RollbackJournal& j_;
  };

  // The file made durable, then the journal removed (the commit point), then its directory
  // made durable. Throws IoError; the journal then stays and the destructor rolls back.
  void commit();
  // Restores the original bytes and size, makes the file durable, removes the journal.
  void rollback();
  bool committed() const { return committed_; }

  // A file descriptor of the file, open for reading and writing (the driver's, and the lock's).
  int fd() const { return fd_; }

  // Signals (SIGTERM, SIGINT, SIGHUP) arriving while a write into the file is under way (an HDF5
  // session, the commit) wait until it ends; one arriving otherwise rolls the file back before
  // the process dies. Nests.
  class HoldSignals {
   public:
    HoldSignals();
    ~HoldSignals() noexcept(false);
    HoldSignals(const HoldSignals&) = delete;
    HoldSignals& operator=(const HoldSignals&) = delete;
  };

 private:
  // Appends a record; throws IoError.
  void append(std::uint32_t kind, std::uint64_t offset, std::uint64_t length, const void* payload,
              std::uint32_t payload_bytes);
  // Saves the unsaved pages of a range below original_size() (kSave records, not yet durable);
  // `track` keeps a copy of each (what the run's writes are hashed from). Whether any was saved.
  bool save_pages(std::uint64_t offset, std::uint64_t bytes, bool track);
  void sync_journal();
  template <class F>
  int noexcept_call(F&& f) noexcept;

  std::string file_;
  std::string journal_;
  int fd_ = -1;   // the file, locked
  int jfd_ = -1;  // the journal
  std::uint64_t original_size_ = 0;
  std::uint64_t journal_end_ = 0;
  std::vector<bool> saved_;                                              // per page of the original file
  std::unordered_map<std::uint64_t, std::vector<unsigned char>> pages_;  // page -> what it holds now
  bool committed_ = false;
  bool abandoned_ = false;
  bool closing_ = false;
  int failure_ = 0;
  int slot_ = -1;  // in the signal handler's table
};

// If `file` has a journal left by a tessera run that died (no process holds the file's lock), the
// file is restored from it and a note is returned for the user; "" when there is none. Throws
// InputError when a live tessera run holds the file, when the journal is not provably this file's
// (planted, replaced file, damaged), or when the file was changed after the crash by someone else
// (unless `force`): the message says what to do, and the journal is kept.
std::string recover_interrupted_write(const std::string& file, bool force = false);

// The journal of an interrupted tessera write that `file`, only to be read, has pending, or ""
// (none, or a file there that is provably not this file's journal: planted, another file's, a
// run that died before its first write). Nothing is opened for writing.
std::string pending_journal(const std::string& file);

}  // namespace tessera::io
