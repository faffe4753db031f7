// Unit tests of io/chunked_read: chunked inputs (deflate, shuffle, both, none; float32 and float64;
// edge chunks; blocks that cut chunks) read by the parallel chunk reader must equal what HDF5's
// own H5Dread returns (TESSERA_HDF5_DIRECT=0 turns the reader off), and a chunk the file does not
// hold or cannot decompress is an error, never a fill value.
#include <unistd.h>

#include <hdf5.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/chunked_read.hpp"
#include "io/hdf5_io.hpp"
#include "io/lz4_filter.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::ContainsSubstring;
using tessera::DType;
using tessera::io::DatasetRef;

namespace {

struct Scratch : tessera::test::TempDir {
  Scratch() : tessera::test::TempDir("tessera-chunked") {}
};

struct Layout {
  hsize_t chunk_rows, chunk_cols;
  bool shuffle, deflate;
};

// Writes a rows x cols random matrix of `type` (H5T_NATIVE_FLOAT/DOUBLE) chunked as `l`; when
// `skip_chunk`, the chunk at the origin is left unwritten.
template <typename T>
std::vector<T> write_chunked(const std::string& file, hsize_t rows, hsize_t cols, const Layout& l,
                             bool skip_chunk = false) {
  std::mt19937 gen(static_cast<unsigned>(rows * 131 + cols));
  std::normal_distribution<double> d;
  std::vector<T> m(rows * cols);
  for (auto& v : m) v = static_cast<T>(d(gen));
  const hid_t type = sizeof(T) == 4 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
  const hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dims[2] = {rows, cols};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  const hsize_t chunk[2] = {l.chunk_rows, l.chunk_cols};
  H5Pset_chunk(dcpl, 2, chunk);
  if (l.shuffle) H5Pset_shuffle(dcpl);
  if (l.deflate) H5Pset_deflate(dcpl, 4);
  const hid_t ds = H5Dcreate2(f, "/M", type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (skip_chunk) {  // everything but the first chunk
    const hid_t fs_ = H5Dget_space(ds);
    H5Sselect_all(fs_);
    const hsize_t start[2] = {0, 0}, count[2] = {l.chunk_rows, l.chunk_cols};
    H5Sselect_hyperslab(fs_, H5S_SELECT_NOTB, start, nullptr, count, nullptr);
    H5Dwrite(ds, type, fs_, fs_, H5P_DEFAULT, m.data());  // the same selection in memory
    H5Sclose(fs_);
  } else {
    H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.data());
  }
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(f);
  return m;
}

// read_block through the chunk reader (direct on) and through HDF5 (direct off).
template <typename Out>
std::pair<std::vector<Out>, std::vector<Out>> read_both(const DatasetRef& ref, std::int64_t r0, std::int64_t nr,
                                                        std::int64_t c0, std::int64_t nc) {
  const DType as = sizeof(Out) == 4 ? DType::f32 : DType::f64;
  std::vector<Out> fast(static_cast<std::size_t>(nr * nc)), slow(fast.size());
  ::unsetenv("TESSERA_HDF5_DIRECT");
  tessera::io::read_block(ref, r0, nr, c0, nc, as, fast.data());
  ::setenv("TESSERA_HDF5_DIRECT", "0", 1);
  tessera::io::read_block(ref, r0, nr, c0, nc, as, slow.data());
  ::unsetenv("TESSERA_HDF5_DIRECT");
  return {fast, slow};
}

}  // namespace

TEST_CASE("chunked reader equals HDF5 on every filter combination, type and block", "[io][chunked]") {
  const Scratch s;
  const auto layout = GENERATE(Layout{64, 50, false, true}, Layout{100, 33, true, true}, Layout{7, 13, true, false},
                               Layout{128, 128, false, false}, Layout{1, 1, false, true});
  const std::string file = s.file("m.h5");
  const hsize_t rows = 257, cols = 131;  // prime-ish: edge chunks on both sides
  const auto m = write_chunked<float>(file, rows, cols, layout);
  const DatasetRef ref{file, "/M"};
  // Whole, row blocks, column blocks, a block cutting chunks, one element, the last row.
  const std::vector<std::array<std::int64_t, 4>> blocks = {{0, 257, 0, 131}, {100, 57, 0, 131}, {0, 257, 31, 70},
                                                           {63, 77, 49, 51}, {256, 1, 130, 1},  {256, 1, 0, 131}};
  for (const auto& [r0, nr, c0, nc] : blocks) {
    const auto [fast32, slow32] = read_both<float>(ref, r0, nr, c0, nc);
    CHECK(fast32 == slow32);
    for (std::int64_t i = 0; i < nr; ++i)  // and against what was written
      for (std::int64_t j = 0; j < nc; ++j)
        REQUIRE(fast32[static_cast<std::size_t>(i * nc + j)] == m[static_cast<std::size_t>((r0 + i) * cols + c0 + j)]);
    const auto [fast64, slow64] = read_both<double>(ref, r0, nr, c0, nc);  // float32 stored, read as float64
    CHECK(fast64 == slow64);
  }
}

TEST_CASE("chunked reader reads float64 and converts it to float32 as HDF5 does", "[io][chunked]") {
  const Scratch s;
  const std::string file = s.file("d.h5");
  write_chunked<double>(file, 90, 61, Layout{16, 16, true, true});
  const DatasetRef ref{file, "/M"};
  const auto [f64, s64] = read_both<double>(ref, 3, 80, 5, 50);
  CHECK(f64 == s64);
  const auto [f32, s32] = read_both<float>(ref, 0, 90, 0, 61);
  CHECK(f32 == s32);
}

TEST_CASE("chunked reader splits the chunks over the threads it is given", "[io][chunked]") {
  const Scratch s;
  const std::string file = s.file("t.h5");
  write_chunked<float>(file, 300, 200, Layout{32, 32, false, true});
  const DatasetRef ref{file, "/M"};
  for (const char* threads : {"1", "3", "64"}) {
    ::setenv("TESSERA_IO_THREADS", threads, 1);
    CHECK(tessera::io::io_threads() == std::atoi(threads));
    const auto [fast, slow] = read_both<float>(ref, 0, 300, 0, 200);
    CHECK(fast == slow);
  }
  ::unsetenv("TESSERA_IO_THREADS");
}

TEST_CASE("a block with a chunk the file never wrote is left to HDF5", "[io][chunked]") {
  // Whether such an input may be read at all is decided before the run (io/data_sources); the
  // reader only must not invent data: it returns what HDF5 returns.
  const Scratch s;
  const std::string file = s.file("hole.h5");
  const auto m = write_chunked<float>(file, 40, 40, Layout{10, 10, false, true}, /*skip_chunk=*/true);
  const DatasetRef ref{file, "/M"};
  const auto [with_hole, hdf5] = read_both<float>(ref, 0, 40, 0, 40);
  CHECK(with_hole == hdf5);
  const auto [written, hdf5_written] = read_both<float>(ref, 10, 30, 0, 40);  // only written chunks
  CHECK(written == hdf5_written);
  CHECK(written[0] == m[10 * 40]);
}

TEST_CASE("a chunk that does not decompress is an error naming the dataset", "[io][chunked]") {
  const Scratch s;
  const std::string file = s.file("bad.h5");
  write_chunked<float>(file, 64, 64, Layout{64, 64, false, true});
  // Find the chunk and overwrite the middle of its compressed bytes.
  haddr_t addr = 0;
  hsize_t size = 0;
  {
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t ds = H5Dopen2(f, "/M", H5P_DEFAULT);
    const hsize_t origin[2] = {0, 0};
    unsigned mask = 0;
    REQUIRE(H5Dget_chunk_info_by_coord(ds, origin, &mask, &addr, &size) >= 0);
    H5Dclose(ds);
    H5Fclose(f);
  }
  {
    std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(addr + size / 2));
    const std::string junk(16, '\x5a');
    io.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  std::vector<float> out(64 * 64);
  ::unsetenv("TESSERA_HDF5_DIRECT");
  CHECK_THROWS_WITH(tessera::io::read_block(DatasetRef{file, "/M"}, 0, 64, 0, 64, DType::f32, out.data()),
                    ContainsSubstring(file) && ContainsSubstring("/M"));
}

TEST_CASE("a chunk index recording more bytes than any filter makes is a corrupt file, refused before allocating",
          "[io][chunked]") {
  // The fuzzer's input (tests/fuzz/regressions/hdf5_input/chunk-index-size-huge.h5): an index that
  // records 4294967295 bytes for a 72-byte chunk had the reader zero-fill a 4 GiB buffer before
  // HDF5 failed to read it. Here: the size in a deflated chunk's B-tree key (v1: size, filter mask,
  // offsets) raised to 2^32 - 1.
  const Scratch s;
  const std::string file = s.file("huge.h5");
  write_chunked<float>(file, 32, 32, Layout{32, 32, false, true});
  hsize_t size = 0;
  {
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t ds = H5Dopen2(f, "/M", H5P_DEFAULT);
    const hsize_t origin[2] = {0, 0};
    unsigned mask = 0;
    haddr_t addr = 0;
    REQUIRE(H5Dget_chunk_info_by_coord(ds, origin, &mask, &addr, &size) >= 0);
    H5Dclose(ds);
    H5Fclose(f);
  }
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // The key: the 32-bit size, a zero filter mask and three zero 64-bit offsets (row, column, element).
  std::string key(4 + 4 + 24, '\0');
  const auto size32 = static_cast<std::uint32_t>(size);
  std::memcpy(key.data(), &size32, 4);
  const auto at = bytes.find(key);
  REQUIRE(at != std::string::npos);
  REQUIRE(bytes.find(key, at + 1) == std::string::npos);
  const std::uint32_t huge = 0xffffffffu;
  std::memcpy(bytes.data() + at, &huge, 4);
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::vector<float> out(32 * 32);
  ::unsetenv("TESSERA_HDF5_DIRECT");
  CHECK_THROWS_AS(tessera::io::read_block(DatasetRef{file, "/M"}, 0, 32, 0, 32, DType::f32, out.data()),
                  tessera::IoError);
  CHECK_THROWS_WITH(tessera::io::read_block(DatasetRef{file, "/M"}, 0, 32, 0, 32, DType::f32, out.data()),
                    ContainsSubstring(file + ":/M") && ContainsSubstring("4294967295 bytes") &&
                        ContainsSubstring("the file is corrupt"));
}

TEST_CASE("LZ4 in tiny blocks, stored at five times the raw chunk, is read, not refused as corrupt", "[io][chunked]") {
  // HDF5's LZ4 format stores each block with a 4-byte length (a block LZ4 cannot shrink as it is):
  // blocks of 1 byte make a 32 KiB chunk about 160 KiB, past 2 x raw + 64 KiB; the chunk-size
  // check counts each filter's own growth (Layout::most_stored).
  if (!tessera::io::lz4_built()) SKIP("this build has no liblz4");
  tessera::io::hdf5::register_lz4_filter();
  const Scratch s;
  const std::string file = s.file("lz4-tiny.h5");
  const hsize_t rows = 64, cols = 256;
  std::mt19937 gen(5);
  std::normal_distribution<float> d;
  std::vector<float> m(rows * cols);
  for (auto& v : m) v = d(gen);
  {
    const hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[2] = {rows, cols}, chunk[2] = {32, 256};  // 32 KiB chunks
    const hid_t space = H5Screate_simple(2, dims, nullptr), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    REQUIRE(H5Pset_chunk(dcpl, 2, chunk) >= 0);
    const unsigned block = 1;
    REQUIRE(H5Pset_filter(dcpl, 32004, H5Z_FLAG_MANDATORY, 1, &block) >= 0);
    const hid_t ds = H5Dcreate2(f, "/M", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    REQUIRE(ds >= 0);
    REQUIRE(H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.data()) >= 0);
    const hsize_t origin[2] = {0, 0};
    hsize_t size = 0;
    REQUIRE(H5Dget_chunk_storage_size(ds, origin, &size) >= 0);
    CHECK(size > 2 * 32 * 1024 + 64 * 1024);  // what the first form of the check refused
    H5Dclose(ds), H5Pclose(dcpl), H5Sclose(space), H5Fclose(f);
  }
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t ds = H5Dopen2(f, "/M", H5P_DEFAULT);
  std::vector<float> out(rows * cols, -1.0f);
  const bool raw = tessera::io::read_chunked(ds, file + ":/M", 0, rows, 0, cols, DType::f32, out.data());
  H5Dclose(ds);
  H5Fclose(f);
  CHECK(raw);
  CHECK(out == m);
}

TEST_CASE("only filtered chunks are fetched raw; unfiltered ones are left to HDF5", "[io][chunked]") {
  // H5Dread_chunk trusts the length in the chunk index; for an unfiltered chunk nothing checks it
  // against the chunk's size, and a damaged index made HDF5 write past the buffer (the fuzzer's
  // input in tests/fuzz/regressions). HDF5's own read of such a chunk stays within it.
  const Scratch s;
  const auto layout = GENERATE(Layout{16, 16, false, false}, Layout{16, 16, true, false}, Layout{16, 16, false, true});
  const std::string file = s.file("u.h5");
  write_chunked<float>(file, 40, 40, layout);
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t ds = H5Dopen2(f, "/M", H5P_DEFAULT);
  std::vector<float> out(40 * 40);
  const bool raw = tessera::io::read_chunked(ds, file + ":/M", 0, 40, 0, 40, DType::f32, out.data());
  H5Dclose(ds);
  H5Fclose(f);
  CHECK(raw == (layout.shuffle || layout.deflate));
}
