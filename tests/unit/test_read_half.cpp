// io::read_block_half: a dataset stored as float16 / bfloat16 read as its 2-byte values, not
// widened (the staged GEMM uploads them so): exactly the stored bits of the block asked for, on
// every route the reader takes — contiguous (pread), gzip-chunked (tessera's decoder), a window
// (FILE:/X[r0:r1, c0:c1]), one matrix of a 3-D dataset, HDF5's own read (TESSERA_HDF5_DIRECT=0),
// and a big-endian float16 (through HDF5's exact conversion); a dataset of another type refused.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <hdf5.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5_io.hpp"
#include "io/stored_type.hpp"
#include "temp_dir.hpp"

using tessera::DType;
using tessera::io::DatasetRef;
using tessera::io::Stored;

namespace {

constexpr hsize_t kRows = 37, kCols = 29;

// The bits of element (r, c) of matrix `m`: finite values of either type (sign, exponent and
// mantissa all vary; never all-ones exponents).
std::uint16_t bits_at(std::size_t m, std::size_t r, std::size_t c) {
  const auto v = static_cast<std::uint16_t>((m * 7919 + r * 131 + c * 17) & 0x3fffu);
  return static_cast<std::uint16_t>(v | ((r + c) % 2 ? 0x8000u : 0u));
}

// `type` (float16 or bfloat16, little- or big-endian) as HDF5 describes it.
hid_t half_type(Stored s, bool big_endian) {
  const hid_t t = tessera::io::stored_file_type(s, DType::f32);
  if (big_endian) H5Tset_order(t, H5T_ORDER_BE);
  return t;
}

// Writes `name`: `matrices` x kRows x kCols (2-D where matrices is 0), chunked and gzipped where
// asked, from the bits above in the little-endian type (HDF5 converts them for a big-endian one).
void write(const std::string& file, const char* name, Stored s, std::size_t matrices, bool gzip, bool big_endian) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const int rank = matrices ? 3 : 2;
  const hsize_t dims3[3] = {matrices, kRows, kCols}, dims2[2] = {kRows, kCols};
  const hid_t space = H5Screate_simple(rank, matrices ? dims3 : dims2, nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (gzip) {
    const hsize_t chunk[2] = {8, 16};
    H5Pset_chunk(dcpl, 2, chunk);
    H5Pset_deflate(dcpl, 4);
  }
  const hid_t file_type = half_type(s, big_endian), memory_type = half_type(s, false);
  const hid_t d = H5Dcreate2(f, name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  std::vector<std::uint16_t> all;
  for (std::size_t m = 0; m < (matrices ? matrices : 1); ++m)
    for (std::size_t r = 0; r < kRows; ++r)
      for (std::size_t c = 0; c < kCols; ++c) all.push_back(bits_at(m, r, c));
  REQUIRE(H5Dwrite(d, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()) >= 0);
  for (const hid_t h : {file_type, memory_type}) H5Tclose(h);
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(f);
}

// The block read as stored, against the bits written (matrix m, rows r0.., cols c0..).
void check_block(const DatasetRef& ref, Stored s, std::size_t m, std::int64_t r0, std::int64_t nrows,
                 std::int64_t c0, std::int64_t ncols, std::size_t window_r0 = 0, std::size_t window_c0 = 0) {
  std::vector<std::uint16_t> out(static_cast<std::size_t>(nrows * ncols), 0xffffu);
  tessera::io::read_block_half(ref, r0, nrows, c0, ncols, s, out.data());
  std::size_t wrong = 0;
  for (std::int64_t r = 0; r < nrows; ++r)
    for (std::int64_t c = 0; c < ncols; ++c)
      wrong += out[static_cast<std::size_t>(r * ncols + c)] !=
               bits_at(m, window_r0 + static_cast<std::size_t>(r0 + r), window_c0 + static_cast<std::size_t>(c0 + c));
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("read_block_half reads 16-bit floats as stored on every route", "[io][half]") {
  const tessera::test::TempDir dir("tessera-half");
  const std::string file = dir.file("h.h5");
  H5Fclose(H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  for (const Stored s : {Stored::f16, Stored::bf16}) {
    INFO(tessera::io::stored_word(s));
    const std::string tag = tessera::io::stored_word(s);
    write(file, ("/plain" + tag).c_str(), s, 0, false, false);
    write(file, ("/gzip" + tag).c_str(), s, 0, true, false);
    write(file, ("/stack" + tag).c_str(), s, 3, false, false);
    write(file, ("/big" + tag).c_str(), s, 0, false, true);
    for (const char* direct : {"1", "0"}) {
      INFO("TESSERA_HDF5_DIRECT=" << direct);
      ::setenv("TESSERA_HDF5_DIRECT", direct, 1);
      for (const char* name : {"/plain", "/gzip", "/big"}) {
        INFO(name);
        const DatasetRef ref{file, name + tag};
        check_block(ref, s, 0, 0, kRows, 0, kCols);  // whole
        check_block(ref, s, 0, 3, 11, 0, kCols);     // whole rows
        check_block(ref, s, 0, 5, 9, 7, 13);         // a block of columns
        check_block(ref, s, 0, kRows - 1, 1, kCols - 1, 1);
        // A window: FILE:/X[4:30, 2:27]; the block's coordinates are the window's.
        const DatasetRef window = DatasetRef::parse(file + ":" + name + tag + "[4:30, 2:27]");
        check_block(window, s, 0, 1, 20, 3, 19, 4, 2);
      }
      const DatasetRef second = DatasetRef::parse(file + ":/stack" + tag + "[1]");  // one matrix of three
      check_block(second, s, 1, 2, 30, 1, 25);
    }
    ::unsetenv("TESSERA_HDF5_DIRECT");
  }
  // The kept type must be the dataset's kind: a float32 dataset, or an integer one, is refused.
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const hsize_t dims[2] = {2, 2};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  H5Dclose(H5Dcreate2(f, "/f32", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Sclose(space);
  H5Fclose(f);
  std::vector<std::uint16_t> out(4);
  CHECK_THROWS_AS(tessera::io::read_block_half(DatasetRef{file, "/f32"}, 0, 2, 0, 2, Stored::f16, out.data()),
                  tessera::InputError);
  CHECK_THROWS_AS(tessera::io::read_block_half(DatasetRef{file, "/plainf16"}, 0, 2, 0, 2, Stored::f32, out.data()),
                  std::invalid_argument);
}
