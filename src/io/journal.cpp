// The rollback journal of an existing output file (io/journal.hpp): made, written, committed
// and rolled back by its owner; the format and the restoration are in io/journal_format.cpp.
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
#include "io/journal_format.hpp"
#include "io/test_hooks.hpp"

namespace tessera::io {

using namespace journal_format;

std::string journal_path(const std::string& file) {
  return std::filesystem::path(sidecar_prefix(file)).string() + "journal";
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
