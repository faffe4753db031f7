// Unit tests of the rollback journal (io/journal.hpp), on plain files: original bytes come back
// after writes inside and past the original end and after truncation; a process that dies
// without rolling back leaves a journal that recover_interrupted_write undoes; a torn last record
// is ignored; the lock keeps a second writer out; a journal that no longer matches its file (the
// file replaced) is refused, not applied. Issue 40: a file changed after the crash (an edit, a
// copy over it) is refused unless forced; a damaged record, a damaged header or a size no run
// could leave is refused with the journal kept; the journal is found through symbolic and hard
// links; a reader sees a pending journal, not a planted one.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/journal.hpp"
#include "io/journal_format.hpp"

#include "temp_dir.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::ContainsSubstring;
using tessera::InputError;
using tessera::io::journal_path;
using tessera::io::recover_interrupted_write;
using tessera::io::RollbackJournal;

namespace {

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

// A file of `n` bytes of a pattern no write below repeats.
std::string make_file(const std::string& path, std::size_t n) {
  std::string text(n, '\0');
  for (std::size_t i = 0; i < n; ++i) text[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
  std::ofstream(path, std::ios::binary) << text;
  return text;
}

// What HDF5's driver does: the journal saves, then the bytes are written.
void overwrite(RollbackJournal& j, std::uint64_t at, std::size_t n, char c) {
  const std::string data(n, c);
  j.before_write(at, data.data(), n);
  REQUIRE(::pwrite(j.fd(), data.data(), n, static_cast<off_t>(at)) == static_cast<ssize_t>(n));
}

int message_count(const std::string& text, const std::string& part) {
  int n = 0;
  for (auto p = text.find(part); p != std::string::npos; p = text.find(part, p + 1)) ++n;
  return n;
}

// A run that dies (as a kill -9 leaves it) after writing 'K' over bytes [100, 8100) of `name`
// and 'L' past its end: the journal stays.
void crash_while_writing(const std::string& name) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    RollbackJournal* j = new RollbackJournal(name);
    overwrite(*j, 100, 8000, 'K');
    overwrite(*j, 9000, 4096, 'L');
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(fs::exists(journal_path(name)));
}

void poke(const std::string& path, std::uint64_t at, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(at)) == static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

std::string refusal_of(const std::string& name, bool force = false) {
  try {
    recover_interrupted_write(name, force);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}


}  // namespace

TEST_CASE("a rollback puts back every original byte and the original size", "[io][journal]") {
  tessera::test::TempDir dir("tessera-journal-test");
  const std::string name = dir.file("f.bin");
  const std::string before = make_file(name, 3 * 4096 + 100);
  {
    RollbackJournal j(name);
    CHECK(j.original_size() == before.size());
    CHECK(fs::exists(journal_path(name)));
    overwrite(j, 10, 5, 'X');                    // inside the first page
    overwrite(j, 4090, 20, 'Y');                 // across a page boundary
    overwrite(j, 4095, 3, 'Z');                  // the same pages again: saved once
    overwrite(j, before.size() - 50, 200, 'W');  // across the original end
    overwrite(j, 10 * 4096, 10, 'V');            // far past it
    j.before_truncate(2048);                     // shorter than it was: saved first
    REQUIRE(::ftruncate(j.fd(), 2048) == 0);
    CHECK(bytes_of(name) != before);
  }  // destroyed without commit: rolled back
  CHECK(bytes_of(name) == before);
  CHECK_FALSE(fs::exists(journal_path(name)));
}

TEST_CASE("a committed journal keeps the new bytes and goes", "[io][journal]") {
  tessera::test::TempDir dir("tessera-journal-test");
  const std::string name = dir.file("f.bin");
  const std::string before = make_file(name, 5000);
  {
    RollbackJournal j(name);
    overwrite(j, 0, 4, 'N');
    j.commit();
  }
  const std::string after = bytes_of(name);
  CHECK(after.substr(0, 4) == "NNNN");
  CHECK(after.substr(4) == before.substr(4));
  CHECK_FALSE(fs::exists(journal_path(name)));
}

TEST_CASE("a process that dies without rolling back is undone by the next one", "[io][journal]") {
  tessera::test::TempDir dir("tessera-journal-test");
  const std::string name = dir.file("f.bin");
  const std::string before = make_file(name, 9000);
  crash_while_writing(name);  // as a kill -9 leaves it: the journal and a changed file
  CHECK(bytes_of(name) != before);
  const std::string note = recover_interrupted_write(name);
  CHECK_THAT(note, ContainsSubstring("restored '" + name + "' as it was"));
  CHECK(bytes_of(name) == before);
  CHECK_FALSE(fs::exists(journal_path(name)));
  CHECK(recover_interrupted_write(name).empty());  // nothing more to do
}

TEST_CASE("a torn last record is one whose write never happened", "[io][journal]") {
  tessera::test::TempDir dir("tessera-journal-test");
  const std::string name = dir.file("f.bin");
  const std::string before = make_file(name, 8192);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    RollbackJournal* j = new RollbackJournal(name);
    overwrite(*j, 0, 10, 'A');
    j->before_write(4096, "0123456789", 10);  // saved, and the crash comes before the write
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  // A record whose append a crash cut short: its head and part of its bytes, past the end of the
  // records the journal's header counts.
  tessera::io::journal_format::RecordHead torn{tessera::io::journal_format::kRecordMagic, 0, 1, 4096, 4096, 4096};
  std::ofstream(journal_path(name), std::ios::binary | std::ios::app)
      << std::string(reinterpret_cast<const char*>(&torn), sizeof torn) << std::string(100, 'x');
  recover_interrupted_write(name);
  CHECK(bytes_of(name) == before);
}

TEST_CASE("a second writer of the same file is refused while the first holds it", "[io][journal]") {
  tessera::test::TempDir dir("tessera-journal-test");
  const std::string name = dir.file("f.bin");
  make_file(name, 100);
  RollbackJournal first(name);
  try {
    RollbackJournal second(name);
    FAIL("a second journal on a locked file was made");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), ContainsSubstring("being written by another tessera run"));
  }
  // Nor may anyone restore it from under the live writer.
  try {
    recover_interrupted_write(name);
    FAIL("a live run's journal was recovered");
  } catch (const InputError& e) {
    CHECK(message_count(e.what(), "another tessera run") == 1);
  }
}

TEST_CASE("a journal of a file that was replaced since is refused, not applied", "[io][journal]") {
  tessera::test::TempDir dir("tessera-journal-test");
  const std::string name = dir.file("f.bin");
  make_file(name, 5000);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    RollbackJournal* j = new RollbackJournal(name);
    overwrite(*j, 0, 100, 'Q');
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  fs::rename(name, name + ".kept");                      // kept, so the new file cannot reuse its inode
  const std::string replacement = make_file(name, 300);  // another file under the same name
  try {
    recover_interrupted_write(name);
    FAIL("the journal was applied to another file");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), ContainsSubstring("has been replaced since"));
  }
  CHECK(bytes_of(name) == replacement);
  CHECK(fs::exists(journal_path(name)));
}


TEST_CASE("a file changed after the crash is not rolled back over the change", "[io][journal]") {
  tessera::test::TempDir dir("tessera-journal-test");
  const std::string name = dir.file("d.h5");
  const std::string before = make_file(name, 9000);
  crash_while_writing(name);
  poke(name, 50, "edited");  // e.g. h5py changing an attribute after the crash
  const std::string changed = bytes_of(name);
  const std::string why = refusal_of(name);
  CHECK_THAT(why, ContainsSubstring("was changed after a tessera run"));
  CHECK_THAT(why, ContainsSubstring("byte(s) 0-511"));
  CHECK_THAT(why, ContainsSubstring("tessera recover --force"));
  CHECK(bytes_of(name) == changed);
  CHECK(fs::exists(journal_path(name)));
  // Forced, the bytes from before the run come back and the journal goes.
  CHECK_THAT(recover_interrupted_write(name, true), ContainsSubstring("restored"));
  CHECK(bytes_of(name) == before);
  CHECK_FALSE(fs::exists(journal_path(name)));
}

TEST_CASE("another file copied over the crashed one keeps its bytes", "[io][journal]") {
  tessera::test::TempDir dir("tessera-journal-test");
  const std::string name = dir.file("d.h5");
  make_file(name, 9000);
  crash_while_writing(name);
  std::string other(7000, 'o');  // `cp other.h5 d.h5`: the same inode, other content
  {
    std::ofstream out(name, std::ios::binary | std::ios::trunc);
    out << other;
  }
  CHECK_THAT(refusal_of(name), ContainsSubstring("was changed after"));
  CHECK(bytes_of(name) == other);
  CHECK(fs::exists(journal_path(name)));
}

TEST_CASE("a damaged journal is refused and kept, never half applied", "[io][journal]") {
  tessera::test::TempDir dir("tessera-journal-test");
  const std::string name = dir.file("d.h5");
  make_file(name, 9000);
  using namespace tessera::io::journal_format;
  SECTION("a flipped byte in a record that a valid record follows") {
    crash_while_writing(name);
    const std::string crashed = bytes_of(name);
    poke(journal_path(name), kHeaderBytes + sizeof(RecordHead) + 7, "\x5a");
    CHECK_THAT(refusal_of(name), ContainsSubstring("is damaged at byte 512"));
    CHECK(bytes_of(name) == crashed);
    CHECK(fs::exists(journal_path(name)));
  }
  SECTION("a flipped bit in the header") {
    crash_while_writing(name);
    const std::string crashed = bytes_of(name);
    poke(journal_path(name), 20, "\x01");
    CHECK_THAT(refusal_of(name), ContainsSubstring("damaged header"));
    CHECK(bytes_of(name) == crashed);
    CHECK(fs::exists(journal_path(name)));
  }
  SECTION("an original size no run could have left (a crafted 2^40)") {
    crash_while_writing(name);
    Header h{};
    const int jfd = ::open(journal_path(name).c_str(), O_RDWR);
    REQUIRE(::pread(jfd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h));
    h.original_size = std::uint64_t{1} << 40;
    h.crc = crc32(0, &h, offsetof(Header, crc));
    REQUIRE(::pwrite(jfd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h));
    ::close(jfd);
    CHECK_THAT(refusal_of(name), ContainsSubstring("fewer than the 1099511627776"));
    CHECK(fs::file_size(name) < 20000);
    CHECK(fs::exists(journal_path(name)));
  }
}

TEST_CASE("the journal is found through symbolic and hard links", "[io][journal]") {
  tessera::test::TempDir dir("tessera-journal-test");
  const std::string name = dir.file("d.h5");
  const std::string before = make_file(name, 9000);
  SECTION("recover through a symbolic link") {
    crash_while_writing(name);
    fs::create_symlink(name, dir.file("link.h5"));
    CHECK(journal_path(dir.file("link.h5")) == journal_path(name));
    CHECK_THAT(recover_interrupted_write(dir.file("link.h5")), ContainsSubstring("restored"));
    CHECK(bytes_of(name) == before);
  }
  SECTION("a run through a hard link undoes the dead run first") {
    crash_while_writing(name);
    fs::create_directory(dir.file("elsewhere"));
    const std::string alias = dir.file("elsewhere/alias.h5");
    fs::create_hard_link(name, alias);
    CHECK(tessera::io::pending_journal(alias) == journal_path(name));
    {
      RollbackJournal j(alias);  // the dead run's journal applied before this one starts
      CHECK(bytes_of(name) == before);
      overwrite(j, 0, 4, 'C');
      j.commit();
    }
    CHECK_FALSE(fs::exists(journal_path(name)));
    CHECK(recover_interrupted_write(name).empty());  // the second run's C stays
    CHECK(bytes_of(name).substr(0, 4) == "CCCC");
  }
}

TEST_CASE("a reader sees a pending journal, not a planted or incomplete one", "[io][journal]") {
  tessera::test::TempDir dir("tessera-journal-test");
  const std::string name = dir.file("a.h5");
  make_file(name, 9000);
  CHECK(tessera::io::pending_journal(name).empty());
  std::ofstream(journal_path(name), std::ios::binary) << std::string(200, 'j');  // no header: nothing written
  CHECK(tessera::io::pending_journal(name).empty());
  fs::remove(journal_path(name));
  crash_while_writing(name);
  CHECK(tessera::io::pending_journal(name) == journal_path(name));
  fs::permissions(journal_path(name), fs::perms::others_write, fs::perm_options::add);
  CHECK(tessera::io::pending_journal(name).empty());  // anyone could have written it: not provably its own
}

// Any damage to a real crash's journal (a flipped bit anywhere, a cut, a byte dropped or added):
// recovery either refuses, leaving the file as the crash left it and the journal in place, or
// restores the file to exactly what it was before the run. Never anything in between.
TEST_CASE("a damaged journal never restores wrongly", "[io][journal]") {
  tessera::test::TempDir dir("tessera-journal-test");
  const std::string name = dir.file("d.h5");
  const std::string before = make_file(name, 9000);
  crash_while_writing(name);
  const std::string crashed = bytes_of(name), journal = bytes_of(journal_path(name));
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  const auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int refused = 0, restored = 0;
  for (int round = 0; round < 400; ++round) {
    std::string j = journal;
    const std::size_t at = static_cast<std::size_t>(next() % j.size());
    switch (round % 4) {
      case 0:
      case 1:
        j[at] = static_cast<char>(j[at] ^ (1 << (next() % 8)));
        break;
      case 2:
        j.resize(at);
        break;
      default:
        if (next() % 2 != 0)
          j.erase(at, 1);
        else
          j.insert(at, 1, static_cast<char>(next()));
    }
    {  // the crashed file in place again (the same inode), and the damaged journal beside it
      std::fstream out(name, std::ios::binary | std::ios::in | std::ios::out);
      out.write(crashed.data(), static_cast<std::streamsize>(crashed.size()));
    }
    fs::resize_file(name, crashed.size());
    std::ofstream(journal_path(name), std::ios::binary | std::ios::trunc) << j;
    bool threw = false;
    try {
      recover_interrupted_write(name);
    } catch (const InputError&) {
      threw = true;
    }
    if (threw) {
      ++refused;
      CHECK(bytes_of(name) == crashed);
      CHECK(fs::exists(journal_path(name)));
    } else if (bytes_of(name) != crashed) {
      ++restored;
      CHECK(bytes_of(name) == before);
    } else {  // an incomplete header (a cut inside it): nothing was written, the journal goes
      CHECK(j.size() <= 512);
    }
  }
  INFO("refused " << refused << ", restored " << restored);
  CHECK(refused > 100);
  CHECK(restored > 0);
}
