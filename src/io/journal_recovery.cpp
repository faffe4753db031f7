// The recovery of a dead run's journal (io/journal_format.hpp): who may claim it, its records read
// back and checked whole, the file checked against them, then restored (`tessera recover` and every
// command that opens such a file). The format itself: io/journal_format.cpp.
#include "io/journal_format.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "io/cleanup.hpp"
#include "io/journal.hpp"

namespace tessera::io::journal_format {

namespace {

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// The journal opened for reading, never followed through a link nor waited on (a fifo), with its
// claim on the file open as `fd`. jfd is -1 unless the claim is kPending, kIncomplete or kDamaged.
struct OpenClaim {
  JournalClaim claim;
  int jfd = -1;
  std::uint64_t journal_size = 0;
  OpenClaim() = default;
  OpenClaim(const OpenClaim&) = delete;
  OpenClaim& operator=(const OpenClaim&) = delete;
  ~OpenClaim() {
    if (jfd >= 0) ::close(jfd);
  }
};

void open_claim(int fd, const std::string& jpath, OpenClaim& out) {
  JournalClaim& c = out.claim;
  c.path = jpath;
  const int jfd = ::open(jpath.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (jfd < 0) {
    if (errno == ENOENT) return;  // kNone
    c.kind = JournalClaim::kForeign;
    c.why = errno == ELOOP ? std::string("it is a symbolic link, which tessera never follows")
                           : std::string("it cannot be read: ") + std::strerror(errno);
    return;
  }
  out.jfd = jfd;
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
  else if ((js.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    why = "others may write it (mode " + mode_text(js.st_mode) + ")";
  if (!why.empty()) {
    c.kind = JournalClaim::kForeign;
    c.why = why;
    ::close(jfd);
    out.jfd = -1;
    return;
  }
  out.journal_size = static_cast<std::uint64_t>(js.st_size);
  if (!read_header(jfd, c.header)) {
    // The header is durable before the file's first write, and records follow it only then: a
    // journal no longer than its header slot is one whose run died before it changed the file.
    c.kind = out.journal_size <= kHeaderBytes ? JournalClaim::kIncomplete : JournalClaim::kDamaged;
    return;
  }
  std::int64_t birth_sec = 0;
  std::uint32_t birth_nsec = 0;
  birth_of(fd, birth_sec, birth_nsec);
  if (static_cast<std::uint64_t>(fs.st_ino) != c.header.inode ||
      static_cast<std::uint64_t>(fs.st_dev) != c.header.device || birth_sec != c.header.birth_sec ||
      birth_nsec != c.header.birth_nsec) {
    c.kind = JournalClaim::kForeign;
    c.why = "it was written for another file (inode " + std::to_string(c.header.inode) + ", this file's is " +
            std::to_string(fs.st_ino) + ")";
    ::close(jfd);
    out.jfd = -1;
    return;
  }
  c.kind = JournalClaim::kPending;
}

// A record read back whole: its head and its payload's place in the journal.
struct Record {
  RecordHead head;
  std::uint64_t at;  // of the head in the journal
};

// Whether `h` (checksum already good) says something a run of this journal could have written.
std::string inconsistency(const RecordHead& h, std::uint64_t original_size) {
  const auto end_ok = [&] { return h.length <= original_size && h.offset <= original_size - h.length; };
  switch (h.kind) {
    case kSave:
      if (h.length == 0 || h.payload != h.length || h.offset % kPage != 0 || !end_ok() ||
          (h.length % kPage != 0 && h.offset + h.length != original_size))
        return "a saved range outside the file's original " + std::to_string(original_size) + " bytes";
      return "";
    case kWrote:
      if (h.length == 0 || h.offset % kSector != 0 || !end_ok() ||
          h.payload != (h.length + kSector - 1) / kSector * sizeof(std::uint64_t))
        return "a written range outside the file's original " + std::to_string(original_size) + " bytes";
      return "";
    case kReserve:
      if (h.payload != 0 || !end_ok()) return "a reserved range outside the file's original size";
      return "";
    case kTruncate:
      if (h.payload != 0 || h.length != 0 || h.offset > original_size) return "a truncation past the original size";
      return "";
    default:
      return "an unknown kind of record (" + std::to_string(h.kind) + ")";
  }
}

// The record at `at`, if one reads back whole with a good checksum (its payload into `payload`).
bool record_at(int jfd, std::uint64_t at, std::uint64_t journal_size, RecordHead& h,
               std::vector<unsigned char>& payload) {
  if (at + sizeof h > journal_size || !read_all(jfd, &h, sizeof h, at)) return false;
  if (h.magic != kRecordMagic || h.payload > kRecordMax || at + sizeof h + h.payload > journal_size) return false;
  payload.resize(h.payload);
  if (h.payload > 0 && !read_all(jfd, payload.data(), h.payload, at + sizeof h)) return false;
  return record_crc(h, payload.data()) == h.crc;
}

// Whether a whole record with a good checksum starts anywhere in the journal after `from`: then a
// bad record before it is damage, not the torn end of a crash (records are only ever appended).
bool valid_record_after(int jfd, std::uint64_t from, std::uint64_t journal_size) {
  std::vector<unsigned char> chunk(1 << 20), payload;
  const unsigned char key[4] = {kRecordMagic & 0xff, (kRecordMagic >> 8) & 0xff, (kRecordMagic >> 16) & 0xff,
                                kRecordMagic >> 24};
  for (std::uint64_t base = from; base + sizeof(RecordHead) <= journal_size; base += chunk.size() - 3) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), journal_size - base));
    if (!read_all(jfd, chunk.data(), n, base)) return false;
    for (std::size_t i = 0; i + 4 <= n; ++i) {
      if (std::memcmp(chunk.data() + i, key, 4) != 0) continue;
      RecordHead h{};
      if (record_at(jfd, base + i, journal_size, h, payload)) return true;
    }
    if (n < chunk.size()) break;
  }
  return false;
}

struct Scan {
  std::vector<Record> saves;
  std::map<std::uint64_t, std::vector<std::uint64_t>> wrote;  // sector -> hashes the run wrote there
  std::vector<std::pair<std::uint64_t, std::uint64_t>> reserved;
  std::uint64_t lowest_cut = UINT64_MAX;  // the smallest size the run cut the file to
  bool saved_page(std::uint64_t page) const {
    for (const auto& r : saves)
      if (r.head.offset / kPage <= page && page <= (r.head.offset + r.head.length - 1) / kPage) return true;
    return false;
  }
  bool is_reserved(std::uint64_t from, std::uint64_t to) const {  // any overlap: the ranks' writes
    for (const auto& [a, b] : reserved)
      if (a < to && from < b) return true;
    return false;
  }
};

// Every record, checked: a bad one is the torn end of a crash only when nothing valid follows it.
Scan scan_records(const std::string& file, const std::string& jpath, int jfd, std::uint64_t journal_size,
                  const Header& header) {
  const auto damaged = [&](std::uint64_t at, const std::string& what) {
    return InputError(quote_path(jpath) + " (the journal of a tessera run, host " + std::string(header.host) +
                      ", pid " + std::to_string(header.pid) + ", that died while writing " + quote_path(file) +
                      ") is damaged at byte " + std::to_string(at) + ": " + what +
                      ". Nothing was restored and the journal is kept; without it the file cannot be put back "
                      "as it was: check the file (h5py, h5dump), and remove the journal once you have it as "
                      "you want it");
  };
  Mark mark{};
  if (!read_all(jfd, &mark, sizeof mark, kMarkAt) || mark.magic != kMarkMagic ||
      crc32(0, &mark, offsetof(Mark, crc)) != mark.crc || mark.records_end < kHeaderBytes)
    throw damaged(kMarkAt, "the end of its records, kept in its header, does not read back");
  if (journal_size < mark.records_end)
    throw damaged(journal_size, "it was cut: its records end at byte " + std::to_string(mark.records_end));
  Scan scan;
  std::vector<unsigned char> payload;
  std::uint64_t at = kHeaderBytes;
  while (at < journal_size) {
    RecordHead h{};
    if (!record_at(jfd, at, journal_size, h, payload)) {
      if (at < mark.records_end) throw damaged(at, "a record that does not read back");
      if (valid_record_after(jfd, at + 1, journal_size))
        throw damaged(at, "a record that does not read back, with valid records after it");
      break;  // the torn last record: its write never happened, nor the change it was to precede
    }
    if (const std::string why = inconsistency(h, header.original_size); !why.empty()) throw damaged(at, why);
    switch (h.kind) {
      case kSave:
        scan.saves.push_back({h, at});
        break;
      case kWrote:
        for (std::uint64_t i = 0; i < h.payload / sizeof(std::uint64_t); ++i) {
          std::uint64_t hash = 0;
          std::memcpy(&hash, payload.data() + i * sizeof hash, sizeof hash);
          scan.wrote[h.offset / kSector + i].push_back(hash);
        }
        break;
      case kReserve:
        scan.reserved.emplace_back(h.offset, h.offset + h.length);
        break;
      case kTruncate:
        scan.lowest_cut = std::min(scan.lowest_cut, h.offset);
        break;
      default:
        break;
    }
    at += sizeof h + h.payload;
  }
  return scan;
}

// The ranges of the saved pages that hold neither their original bytes nor what the run wrote.
std::vector<std::pair<std::uint64_t, std::uint64_t>> changed_since(int fd, int jfd, const Scan& scan,
                                                                   std::uint64_t original_size,
                                                                   std::uint64_t size_now) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> changed;
  const auto add = [&](std::uint64_t from, std::uint64_t to) {
    if (!changed.empty() && changed.back().second == from)
      changed.back().second = to;
    else
      changed.emplace_back(from, to);
  };
  std::vector<unsigned char> original, now;
  for (const auto& r : scan.saves) {
    const RecordHead& h = r.head;
    original.resize(h.payload);
    if (!read_all(jfd, original.data(), h.payload, r.at + sizeof h))
      throw IoError("cannot read the journal: " + std::string(std::strerror(errno)));
    for (std::uint64_t s = h.offset; s < h.offset + h.length; s += kSector) {
      const std::uint64_t n = std::min(kSector, std::min(original_size, h.offset + h.length) - s);
      if (scan.is_reserved(s, s + n)) continue;  // C's elements: the ranks wrote there unrecorded
      if (scan.lowest_cut < s + n) continue;     // the run cut the file below this sector's end
      if (s + n > size_now) {
        add(s, s + n);
        continue;
      }
      now.resize(n);
      if (!read_all(fd, now.data(), n, s)) throw IoError("cannot read the file: " + std::string(std::strerror(errno)));
      if (std::memcmp(now.data(), original.data() + (s - h.offset), n) == 0) continue;
      const auto w = scan.wrote.find(s / kSector);
      if (w != scan.wrote.end()) {
        const std::uint64_t hash = sector_hash(now.data(), n);
        if (std::find(w->second.begin(), w->second.end(), hash) != w->second.end()) continue;
      }
      add(s, s + n);
    }
  }
  return changed;
}

std::string ranges_text(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges) {
  std::string text;
  const std::size_t shown = std::min<std::size_t>(ranges.size(), 3);
  for (std::size_t i = 0; i < shown; ++i)
    text += (i ? ", " : "") + std::to_string(ranges[i].first) + "-" + std::to_string(ranges[i].second - 1);
  if (ranges.size() > shown) text += " and " + std::to_string(ranges.size() - shown) + " more range(s)";
  return text;
}

void remove_journal(const std::string& jpath, int fd) {
  if (::unlink(jpath.c_str()) != 0 && errno != ENOENT)
    throw IoError("cannot remove " + quote_path(jpath) + ": " + std::strerror(errno));
  (void)::fremovexattr(fd, kJournalAttribute);
  sync_directory(jpath);
}

}  // namespace

std::string find_journal(const std::string& file, bool* by_attribute) {
  if (by_attribute != nullptr) *by_attribute = false;
  struct stat st {};
  const std::string beside = journal_path(file);
  if (::lstat(beside.c_str(), &st) == 0) return beside;
  // Written through another name (a hard link in another folder): the file names its journal.
  char value[4096];
  const ssize_t n = ::getxattr(file.c_str(), kJournalAttribute, value, sizeof value - 1);
  if (n <= 0) return "";
  const std::string pointed(value, static_cast<std::size_t>(n));
  if (::lstat(pointed.c_str(), &st) != 0) return "";  // a stale name: that journal was removed
  if (by_attribute != nullptr) *by_attribute = true;
  return pointed;
}

JournalClaim claim_of(int fd, const std::string& jpath) {
  OpenClaim c;
  open_claim(fd, jpath, c);
  return c.claim;
}

// Restores `file` (open as `fd`, locked by the caller) from its journal and removes the journal.
// Returns the note for the user.
std::string recover_locked(const std::string& file, int fd, const std::string& jpath, bool force) {
  // In a shared folder anyone may plant a file at the journal's name (issue 40): it is applied only
  // when it is a regular file that the file's owner or this user made, that no one else could have
  // written, made for this very file, whole, and consistent with the file as it is now. A refusal
  // keeps it and changes nothing.
  OpenClaim oc;
  open_claim(fd, jpath, oc);
  const JournalClaim& c = oc.claim;
  switch (c.kind) {
    case JournalClaim::kNone:
      return "";
    case JournalClaim::kForeign:
      if (c.why.rfind("it was written for another file", 0) == 0)
        throw InputError(quote_path(file) + " has a journal " + quote_path(jpath) +
                         " of a tessera run that died while writing a file of that name, but the file has been "
                         "replaced since (" +
                         c.why.substr(3) +
                         "), so the journal's saved bytes do not belong to it: if the file is as you want it, "
                         "remove the journal");
      throw InputError(quote_path(jpath) + " is not applied to " + quote_path(file) + ": " + c.why +
                       ", so it cannot be a journal tessera wrote for this file. The journal is kept and the file "
                       "untouched; remove the journal if it is not yours");
    case JournalClaim::kIncomplete:
      remove_journal(jpath, fd);
      return "removed " + quote_path(jpath) + ", an incomplete journal of a tessera run that died before it wrote to " +
             quote_path(file) + " (the file was not changed)";
    case JournalClaim::kDamaged: {
      char magic[sizeof kMagic] = {};
      if (read_all(oc.jfd, magic, sizeof magic, 0) && std::memcmp(magic, "TESSERA-JRNL-01", sizeof magic) == 0)
        throw InputError(quote_path(jpath) +
                         " is the journal of a run of an older tessera (format 01) that died "
                         "while writing " +
                         quote_path(file) +
                         ": restore the file with that version's `tessera recover`; this one leaves it as it is");
    }
      throw InputError(quote_path(jpath) + " (the journal of a tessera run that died while writing " +
                       quote_path(file) +
                       ") has a damaged header: nothing was restored and the journal is kept; without it the file "
                       "cannot be put back as it was: check the file (h5py, h5dump), and remove the journal once "
                       "you have it as you want it");
    case JournalClaim::kPending:
      break;
  }
  const Header& h = c.header;
  const std::string run = "a tessera run (host " + std::string(h.host) + ", pid " + std::to_string(h.pid) + ")";
  const Scan scan = scan_records(file, jpath, oc.jfd, oc.journal_size, h);
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw IoError("cannot stat " + quote_path(file) + ": " + std::strerror(errno));
  const auto size_now = static_cast<std::uint64_t>(st.st_size);
  // A run only appends past the original end, or cuts the file after saving what it cuts.
  if (h.original_size > size_now) {
    bool covered = scan.lowest_cut <= size_now;
    for (std::uint64_t page = size_now / kPage; covered && page * kPage < h.original_size; ++page)
      covered = scan.saved_page(page);
    if (!covered)
      throw InputError(quote_path(file) + " was changed after " + run + " died while writing it, or the journal " +
                       quote_path(jpath) + " is not its own: the file holds " + std::to_string(size_now) +
                       " bytes, fewer than the " + std::to_string(h.original_size) +
                       " the journal says it held before that run, and no run leaves a file shorter than it found it "
                       "without saving what it cut. Nothing was restored and the journal is kept; remove it if the "
                       "file is as you want it");
  }
  if (!force) {
    const auto changed = changed_since(fd, oc.jfd, scan, h.original_size, size_now);
    if (!changed.empty())
      throw InputError(quote_path(file) + " was changed after " + run + " died while writing it: byte(s) " +
                       ranges_text(changed) +
                       " hold neither what they held before that run nor what it wrote. Nothing was restored and "
                       "its journal " +
                       quote_path(jpath) +
                       " is kept: to keep the file as it is now, remove the journal; to put back the bytes it "
                       "held before that run anyway (undoing the later changes), run `tessera recover --force " +
                       file + "`");
  }
  const long long restored = apply_journal(fd, oc.jfd, h.original_size);
  if (restored < 0)
    throw IoError("cannot restore " + quote_path(file) + " from its journal " + quote_path(jpath) + ": " +
                  std::strerror(errno) + " (the journal is kept: run `tessera recover " + file + "` again)");
  remove_journal(jpath, fd);
  return "restored " + quote_path(file) + " as it was before " + run +
         " that died while writing it: " + std::to_string(restored) + " byte(s) put back and its size set to " +
         std::to_string(h.original_size) + " from " + quote_path(jpath);
}

[[noreturn]] void throw_locked(const std::string& file) {
  throw InputError(quote_path(file) +
                   " is being written by another tessera run (it holds the file's lock); wait for it to end, "
                   "or write the result elsewhere");
}

}  // namespace tessera::io::journal_format

namespace tessera::io {

using namespace journal_format;

std::string recover_interrupted_write(const std::string& file, bool force) {
  bool by_attribute = false;
  const std::string jpath = find_journal(file, &by_attribute);
  if (jpath.empty()) return "";
  const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK);
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
    std::string note;
    // A journal found through the file's attribute that is not this file's (a copy that carried
    // the attribute along) is none of its business: the file is left as it is.
    if (!by_attribute || claim_of(fd, jpath).kind == JournalClaim::kPending)
      note = recover_locked(file, fd, jpath, force);
    ::close(fd);
    return note;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

}  // namespace tessera::io
