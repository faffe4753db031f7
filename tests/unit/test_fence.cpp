// Fencing (issue 40 item 3): a process writes its blocks of C only while its run's liveness
// token (io::Fence: the existing file's journal, the new file's temporary) is the one it learned
// at the start; a token gone, or another run's (another inode at the same path), stops it before
// the next piece, with nothing of that piece written.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/direct_io.hpp"
#include "temp_dir.hpp"

using Catch::Matchers::ContainsSubstring;
namespace io = tessera::io;

namespace {

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void make_file(const std::string& path, std::size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out << std::string(bytes, '\0');
}

}  // namespace

TEST_CASE("a block is written only while the run's token is there, and is its own", "[io][fence]") {
  tessera::test::TempDir dir;
  const std::string out = dir.file("c.bin"), token = dir.file("c.bin.tessera-journal");
  constexpr std::int64_t rows = 8, cols = 4, base = 64;
  make_file(out, base + rows * cols * sizeof(double));
  make_file(token, 0);
  io::DirectTarget target{out, base, rows, cols, sizeof(double), io::fence_of(token)};
  io::BlockFile file(target);
  const std::vector<double> block(rows * cols, 1.5);  // as large as any block written below (6x2 included)

  file.write_block(0, 0, 2, cols, block.data());  // live: written
  const std::string written = contents(out);
  CHECK(written != std::string(written.size(), '\0'));

  SECTION("the token removed (the run committed or rolled back elsewhere): nothing more is written") {
    REQUIRE(std::remove(token.c_str()) == 0);
    CHECK_THROWS_WITH(file.write_block(2, 0, 2, cols, block.data()), ContainsSubstring("no longer live"));
    CHECK(contents(out) == written);
  }
  SECTION("another run's token at the same path (another inode): nothing more is written") {
    REQUIRE(std::rename(token.c_str(), dir.file("old").c_str()) == 0);
    make_file(token, 0);
    CHECK_THROWS_WITH(file.write_block(2, 2, 6, 2, block.data()), ContainsSubstring("no longer live"));
    CHECK(contents(out) == written);
  }
  SECTION("a process that joins after the token is gone opens nothing") {
    REQUIRE(std::remove(token.c_str()) == 0);
    CHECK_THROWS_WITH(io::BlockFile(target), ContainsSubstring("no longer writes its output"));
  }
  SECTION("a token that is another file than the writer's is refused at the start") {
    io::DirectTarget other = target;
    other.fence.inode += 1;
    CHECK_THROWS_AS(io::BlockFile(other), tessera::IoError);
  }
}

TEST_CASE("a token with the same inode number but another run's stamp is not this run's", "[io][fence]") {
  // A file system may give the next run's journal the inode number the rolled-back run's journal
  // just freed: the journal's random stamp tells them apart.
  tessera::test::TempDir dir;
  const std::string out = dir.file("c.bin"), token = dir.file("c.bin.tessera-journal");
  constexpr std::int64_t rows = 4, cols = 4, base = 0;
  make_file(out, rows * cols * sizeof(double));
  {
    std::ofstream t(token, std::ios::binary);
    t << std::string(512, 'a');
  }
  io::DirectTarget target{out, base, rows, cols, sizeof(double), io::fence_of(token, 480)};
  io::BlockFile file(target);
  const std::vector<double> block(cols, 2.5);
  file.write_block(0, 0, 1, cols, block.data());
  const std::string written = contents(out);
  {  // the same file (so the same inode), another run's stamp
    std::fstream t(token, std::ios::binary | std::ios::in | std::ios::out);
    t.seekp(480);
    t << "bbbbbbbb";
  }
  CHECK_THROWS_WITH(file.write_block(1, 0, 1, cols, block.data()), ContainsSubstring("no longer live"));
  CHECK(contents(out) == written);
  CHECK_THROWS_AS(io::BlockFile(target), tessera::IoError);
}

TEST_CASE("a transfer looks at the fence before it writes, whole rows and column blocks alike", "[io][fence]") {
  // Every thread of a transfer looks at the token before its first piece and again before each
  // later one past kFencePiece bytes; reads are never fenced.
  tessera::test::TempDir dir;
  const std::string out = dir.file("c.bin"), token = dir.file("token");
  constexpr std::int64_t rows = 64, cols = 96;
  make_file(token, 0);
  {
    std::ofstream o(out, std::ios::binary);
  }
  const io::FenceCheck live(io::fence_of(token));
  std::vector<double> block(static_cast<std::size_t>(rows * cols), 2.0);
  const int fd = ::open(out.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  CHECK(io::transfer_direct(fd, true, 0, cols, 0, rows, 0, cols, sizeof(double), block.data(), &live) == 0);
  REQUIRE(std::remove(token.c_str()) == 0);
  CHECK(io::transfer_direct(fd, true, 0, cols, 0, rows, 0, cols, sizeof(double), block.data(), &live) == io::kFenced);
  CHECK(io::transfer_direct(fd, true, 0, cols, 0, rows, 0, cols / 2, sizeof(double), block.data(), &live) ==
        io::kFenced);
  ::close(fd);
  const int rd = ::open(out.c_str(), O_RDONLY);
  REQUIRE(rd >= 0);
  CHECK(io::transfer_direct(rd, false, 0, cols, 0, rows, 0, cols, sizeof(double), block.data(), &live) == 0);
  ::close(rd);
}
