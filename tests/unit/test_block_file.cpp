// Unit tests of io::BlockFile, the handle each rank writes its part of C through: whole rows go
// around the page cache (O_DIRECT, whole 4 KiB pages through aligned bounce buffers, the partial
// pages at either end through the cache) where the file system allows it, and the bytes in the
// file are the same whichever way they went: blocks of odd sizes at an unaligned base, written by
// several handles at once, column blocks beside them, TESSERA_O_DIRECT=0, and a file system that
// refuses O_DIRECT (tmpfs).
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "io/direct_io.hpp"

#include "temp_dir.hpp"

namespace {

using tessera::io::BlockFile;
using tessera::io::DirectTarget;

// A file of `prefix` bytes of 0x5a then room for the matrix (zeros), as an output whose dataset
// starts at an offset that is not a multiple of 4096.
DirectTarget make_target(const std::string& file, std::int64_t prefix, std::int64_t rows, std::int64_t cols) {
  std::ofstream out(file, std::ios::binary);
  const std::string head(static_cast<std::size_t>(prefix), '\x5a');
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  const std::vector<char> zeros(static_cast<std::size_t>(rows * cols) * sizeof(double), 0);
  out.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  DirectTarget t;
  t.file = file;
  t.base = prefix;
  t.rows = rows;
  t.cols = cols;
  t.esize = sizeof(double);
  return t;
}

std::vector<double> random_matrix(std::int64_t rows, std::int64_t cols, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> m(static_cast<std::size_t>(rows * cols));
  for (auto& x : m) x = u(gen);
  return m;
}

std::string file_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What the file must hold: the prefix, then the matrix's bytes.
std::string expected_bytes(std::int64_t prefix, const std::vector<double>& m) {
  std::string e(static_cast<std::size_t>(prefix), '\x5a');
  e.append(reinterpret_cast<const char*>(m.data()), m.size() * sizeof(double));
  return e;
}

bool o_direct_works(const std::string& dir) {
#ifdef O_DIRECT
  const std::string probe = dir + "/o-direct-probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_DIRECT, 0600);
  if (fd >= 0) ::close(fd);
  ::unlink(probe.c_str());
  return fd >= 0;
#else
  (void)dir;
  return false;
#endif
}

// Rows [r0, r1) of `m` through a handle of its own (as one rank would), in blocks of `step` rows.
void write_rows(const DirectTarget& t, const std::vector<double>& m, std::int64_t r0, std::int64_t r1,
                std::int64_t step, std::int64_t* uncached) {
  BlockFile f(t);
  for (std::int64_t r = r0; r < r1; r += step) {
    const std::int64_t n = std::min(step, r1 - r);
    f.write_block(r, 0, n, t.cols, m.data() + r * t.cols);
  }
  f.sync();
  *uncached = f.uncached_bytes();
}

}  // namespace

TEST_CASE("block file: whole rows from several handles at once land byte for byte, around the cache",
          "[io][blockfile]") {
  tessera::test::TempDir dir("tessera-blockfile-test");
  // 1237 x 1031 doubles (10.2 MB) at byte 1234: no row and no block starts on a page.
  const std::int64_t rows = 1237, cols = 1031, prefix = 1234;
  const DirectTarget t = make_target(dir.file("c.bin"), prefix, rows, cols);
  const auto m = random_matrix(rows, cols, 7);
  // Three "ranks" of 413, 411 and 413 rows, each in blocks of 150 rows (1.2 MB) or all at once.
  const std::int64_t cut1 = 413, cut2 = 824;
  std::int64_t u0 = 0, u1 = 0, u2 = 0;
  std::thread a(write_rows, std::cref(t), std::cref(m), 0, cut1, 150, &u0);
  std::thread b(write_rows, std::cref(t), std::cref(m), cut1, cut2, cut2 - cut1, &u1);
  std::thread c(write_rows, std::cref(t), std::cref(m), cut2, rows, 150, &u2);
  a.join(), b.join(), c.join();
  CHECK(file_bytes(t.file) == expected_bytes(prefix, m));
  if (o_direct_works(std::filesystem::path(t.file).parent_path().string())) {
    CHECK(u0 > 0);
    CHECK(u1 > 0);
    CHECK(u2 > 0);
    // Whole pages only: each block leaves at most a page at either end to the cache.
    CHECK(u1 > (cut2 - cut1) * cols * 8 - 2 * 4096);
  } else {
    WARN("O_DIRECT is not available in " << dir.file("") << ": only the cached path was checked");
  }
}

TEST_CASE("block file: column blocks and small blocks go through the cache beside uncached rows",
          "[io][blockfile]") {
  tessera::test::TempDir dir("tessera-blockfile-test");
  const std::int64_t rows = 600, cols = 700, prefix = 4096 + 8;  // the base one element past a page
  const DirectTarget t = make_target(dir.file("c.bin"), prefix, rows, cols);
  const auto m = random_matrix(rows, cols, 9);
  BlockFile f(t);
  // Rows 0..299 whole (1.7 MB: uncached), rows 300..599 as two column blocks (through the cache),
  // then row 599 again alone (5.6 kB: below the threshold, through the cache).
  f.write_block(0, 0, 300, cols, m.data());
  std::vector<double> left, right;
  for (std::int64_t r = 300; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j) (j < 333 ? left : right).push_back(m[r * cols + j]);
  f.write_block(300, 0, 300, 333, left.data());
  f.write_block(300, 333, 300, cols - 333, right.data());
  f.write_block(599, 0, 1, cols, m.data() + 599 * cols);
  f.sync();
  CHECK(file_bytes(t.file) == expected_bytes(prefix, m));
  if (o_direct_works(std::filesystem::path(t.file).parent_path().string()))
    CHECK(f.uncached_bytes() > 0);
  CHECK(f.uncached_bytes() <= 300 * cols * 8);
}

TEST_CASE("block file: TESSERA_O_DIRECT=0 writes every byte through the cache; other values are refused",
          "[io][blockfile]") {
  tessera::test::TempDir dir("tessera-blockfile-test");
  const std::int64_t rows = 513, cols = 509, prefix = 777;
  const DirectTarget t = make_target(dir.file("c.bin"), prefix, rows, cols);
  const auto m = random_matrix(rows, cols, 11);
  ::setenv("TESSERA_O_DIRECT", "0", 1);
  {
    BlockFile f(t);
    f.write_block(0, 0, rows, cols, m.data());
    f.sync();
    CHECK(f.uncached_bytes() == 0);
  }
  CHECK(file_bytes(t.file) == expected_bytes(prefix, m));
  ::setenv("TESSERA_O_DIRECT", "yes", 1);
  CHECK_THROWS_WITH(BlockFile(t), Catch::Matchers::ContainsSubstring("TESSERA_O_DIRECT='yes' is not 0 or 1"));
  ::unsetenv("TESSERA_O_DIRECT");
}

TEST_CASE("block file: a file system without O_DIRECT (tmpfs) takes every byte through the cache",
          "[io][blockfile]") {
  const std::filesystem::path shm = "/dev/shm";
  if (!std::filesystem::is_directory(shm) || ::access(shm.c_str(), W_OK) != 0) {
    SKIP("no writable /dev/shm here");
  }
  if (o_direct_works(shm.string())) SKIP("/dev/shm takes O_DIRECT here: nothing to fall back from");
  const std::string file = (shm / ("tessera-blockfile-" + std::to_string(::getpid()) + ".bin")).string();
  const std::int64_t rows = 400, cols = 900, prefix = 100;
  const DirectTarget t = make_target(file, prefix, rows, cols);
  const auto m = random_matrix(rows, cols, 13);
  {
    BlockFile f(t);
    f.write_block(0, 0, rows, cols, m.data());
    f.sync();
    CHECK(f.uncached_bytes() == 0);
  }
  CHECK(file_bytes(file) == expected_bytes(prefix, m));
  std::filesystem::remove(file);
}
