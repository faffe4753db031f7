// The rollback journal of an existing output file (io/journal.hpp): made, written, committed
// and rolled back by its owner; the format and the restoration are in io/journal_format.cpp.
#include "io/journal.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/cleanup.hpp"
#include "io/journal_format.hpp"
#include "io/test_hooks.hpp"

namespace tessera::io {

using namespace journal_format;

std::string journal_path(const std::string& file) {
  // Beside the real file: `ln -s d.h5 link.h5` (or a linked folder) names the same journal.
  std::error_code ec;
  const auto real = std::filesystem::canonical(file, ec);
  const bool linked = !ec && real != std::filesystem::absolute(file, ec).lexically_normal();
  return std::filesystem::path(sidecar_prefix(linked ? real.string() : file)).string() + "journal";
}

std::string pending_journal(const std::string& file) {
  const std::string jpath = find_journal(file);
  if (jpath.empty()) return "";
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return jpath;  // cannot tell: named, as a reader would meet a damaged file
  const JournalClaim c = claim_of(fd, jpath);
  ::close(fd);
  return c.kind == JournalClaim::kPending || c.kind == JournalClaim::kDamaged ? jpath : "";
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
    // A journal left by a run that died, under this name or another of the file's (a hard link):
    // undone first, if provably this file's (else refused, and nothing is written).
    bool by_attribute = false;
    const std::string left = find_journal(file, &by_attribute);
    std::string note;
    if (!left.empty() && (!by_attribute || claim_of(fd_, left).kind == JournalClaim::kPending))
      note = recover_locked(file, fd_, left);
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
    const Mark mark = mark_of(kHeaderBytes);
    std::memcpy(slot + kMarkAt, &mark, sizeof mark);
    std::random_device entropy;
    const std::uint64_t stamp = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy() ^
                                static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    std::memcpy(slot + kStampAt, &stamp, sizeof stamp);
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
    // The file names its journal, for a run or `recover` that reaches it through another name (a
    // hard link). Where the file system keeps no user attributes, the name beside it is all.
    const std::string where = std::filesystem::absolute(journal_).string();
    if (::fsetxattr(fd_, kJournalAttribute, where.data(), where.size(), 0) == 0) (void)::fsync(fd_);
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

void RollbackJournal::append(std::uint32_t kind, std::uint64_t offset, std::uint64_t length, const void* payload,
                             std::uint32_t payload_bytes) {
  RecordHead h{kRecordMagic, 0, kind, payload_bytes, offset, length};
  h.crc = record_crc(h, payload);
  int err = test_write_point();
  if (err == 0 && (!write_all(jfd_, &h, sizeof h, journal_end_) ||
                   (payload_bytes > 0 && !write_all(jfd_, payload, payload_bytes, journal_end_ + sizeof h))))
    err = errno;
  if (err != 0) {
    failure_ = err;
    throw IoError("cannot save the original bytes of " + quote_path(file_) + " in " + quote_path(journal_) + ": " +
                  std::strerror(err));
  }
  journal_end_ += sizeof h + payload_bytes;
}

void RollbackJournal::sync_journal() {
  if (::fdatasync(jfd_) != 0) {
    failure_ = errno;
    throw IoError("cannot write " + quote_path(journal_) + ": " + std::strerror(failure_));
  }
  // The records are durable: the mark may now say they end here (it becomes durable with the next
  // sync; one that lags behind only leaves more of the tail to the torn-record rule). Moved before
  // the sync, a power loss could keep the mark and lose records it counts: a crash refused as damage.
  const Mark mark = mark_of(journal_end_);
  if (!write_all(jfd_, &mark, sizeof mark, kMarkAt)) {
    failure_ = errno;
    throw IoError("cannot write " + quote_path(journal_) + ": " + std::strerror(failure_));
  }
}

bool RollbackJournal::save_pages(std::uint64_t offset, std::uint64_t bytes, bool track) {
  if (committed_ || bytes == 0 || offset >= original_size_) return false;
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
    append(kSave, from, data.size(), data.data(), static_cast<std::uint32_t>(data.size()));
    for (std::uint64_t p = page; p <= run_end; ++p) {
      saved_[p] = true;
      if (track) {
        const std::uint64_t at = p * kPage - from;
        pages_[p].assign(data.begin() + static_cast<std::ptrdiff_t>(at),
                         data.begin() + static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(at + kPage, data.size())));
      }
    }
    added = true;
    page = run_end + 1;
  }
  return added;
}

void RollbackJournal::before_write(std::uint64_t offset, const void* data, std::uint64_t bytes) {
  if (committed_ || bytes == 0 || offset >= original_size_) return;
  const bool saved = save_pages(offset, bytes, true);
  // The pages as this write leaves them, and a hash of each sector it touches.
  const std::uint64_t end = std::min(original_size_, offset + bytes);
  const auto* src = static_cast<const unsigned char*>(data);
  for (std::uint64_t at = offset; at < end;) {
    const std::uint64_t page = at / kPage;
    const std::uint64_t stop = std::min(end, (page + 1) * kPage);
    const auto it = pages_.find(page);
    if (it != pages_.end())
      std::memcpy(it->second.data() + (at - page * kPage), src + (at - offset), static_cast<std::size_t>(stop - at));
    at = stop;
  }
  std::vector<std::uint64_t> hashes;
  std::uint64_t first = 0;
  const auto flush = [&] {
    if (hashes.empty()) return;
    const std::uint64_t length = std::min(original_size_, (first + hashes.size()) * kSector) - first * kSector;
    append(kWrote, first * kSector, length, hashes.data(),
           static_cast<std::uint32_t>(hashes.size() * sizeof(std::uint64_t)));
    hashes.clear();
  };
  for (std::uint64_t s = offset / kSector; s * kSector < end; ++s) {
    const auto it = pages_.find(s * kSector / kPage);
    if (it == pages_.end()) {  // reserved for C's elements: any content is the run's
      flush();
      continue;
    }
    const std::uint64_t in_page = s * kSector % kPage;
    const std::uint64_t n = std::min<std::uint64_t>(kSector, it->second.size() - in_page);
    if (hashes.empty()) first = s;
    hashes.push_back(sector_hash(it->second.data() + in_page, static_cast<std::size_t>(n)));
    if (hashes.size() * sizeof(std::uint64_t) >= kRecordMax) flush();
  }
  flush();
  // Saved pages must be durable before they change. The hashes ride along; a hash lost in a power
  // failure can only make a later recovery refuse (and say so), never restore wrongly.
  if (saved) sync_journal();
}

void RollbackJournal::before_truncate(std::uint64_t size) {
  if (committed_ || size >= original_size_) return;
  save_pages(size, original_size_ - size, true);
  append(kTruncate, size, 0, nullptr, 0);
  sync_journal();
}

void RollbackJournal::reserve(std::uint64_t offset, std::uint64_t bytes) {
  if (committed_ || bytes == 0 || offset >= original_size_) return;
  const std::uint64_t end = std::min(original_size_, offset + bytes);
  // The pages C shares with other bytes (its first and last, where partial) are kept too: HDF5 may
  // write those other bytes at the commit, and recovery must know what it wrote there.
  if (offset % kPage != 0) save_pages(offset, 1, true);
  if (end % kPage != 0) save_pages(end - 1, 1, true);
  save_pages(offset, bytes, false);
  append(kReserve, offset, end - offset, nullptr, 0);
  sync_journal();
}

template <class F>
int RollbackJournal::noexcept_call(F&& f) noexcept {
  const int before = failure_;
  failure_ = 0;
  try {
    f();
    failure_ = before;
    return 0;
  } catch (...) {
    const int err = failure_ != 0 ? failure_ : EIO;
    failure_ = before;
    return err;
  }
}

int RollbackJournal::before_write_noexcept(std::uint64_t offset, const void* data, std::uint64_t bytes) noexcept {
  return noexcept_call([&] { before_write(offset, data, bytes); });
}

int RollbackJournal::before_truncate_noexcept(std::uint64_t size) noexcept {
  return noexcept_call([&] { before_truncate(size); });
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
  (void)::fremovexattr(fd_, kJournalAttribute);
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
  (void)::fremovexattr(fd_, kJournalAttribute);
  sync_directory(journal_);
  log::debug("restored " + quote_path(file_) + " as it was (" + std::to_string(restored) + " byte(s) put back)");
}

RollbackJournal::HoldSignals::HoldSignals() { hold_fatal_signals(); }
RollbackJournal::HoldSignals::~HoldSignals() noexcept(false) { release_fatal_signals(); }

}  // namespace tessera::io
