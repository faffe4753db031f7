// Unit tests of io/hdf5_io: references, round trips, layouts, attributes and every error path.
// Fixtures that tessera itself never writes (3-D, strings, integers, big-endian, float16...) are
// made with the HDF5 C API directly.
#include <unistd.h>

#include <hdf5.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/cleanup.hpp"
#include "io/data_sources.hpp"
#include "io/hdf5_io.hpp"

#include "temp_dir.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::ContainsSubstring;
using tessera::DType;
using tessera::InputError;
using tessera::IoError;
using tessera::io::Attribute;
using tessera::io::DatasetRef;
using tessera::io::MatrixWriter;
using tessera::io::WriteOptions;

namespace {

struct TempDir : tessera::test::TempDir {
  TempDir() : tessera::test::TempDir("tessera-io-test") {}
};

// Value of element (i, j) of the test matrices: distinct everywhere, exact in float32.
double value_at(std::int64_t i, std::int64_t j) { return static_cast<double>(i * 1000 + j) + 0.5; }

template <typename T>
std::vector<T> make_matrix(std::int64_t rows, std::int64_t cols) {
  std::vector<T> m(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) m[static_cast<std::size_t>(i * cols + j)] = static_cast<T>(value_at(i, j));
  return m;
}

template <typename T>
void write_matrix(const DatasetRef& ref, std::int64_t rows, std::int64_t cols, const WriteOptions& opts = {}) {
  const DType dt = sizeof(T) == 4 ? DType::f32 : DType::f64;
  const auto m = make_matrix<T>(rows, cols);
  MatrixWriter w(ref, rows, cols, dt, opts);
  w.write_block(0, 0, rows, cols, m.data());
  w.commit();
}

// Reads a block and checks every element against value_at.
template <typename T>
void check_block(const DatasetRef& ref, std::int64_t row0, std::int64_t nrows, std::int64_t col0, std::int64_t ncols) {
  const DType as = sizeof(T) == 4 ? DType::f32 : DType::f64;
  std::vector<T> out(static_cast<std::size_t>(nrows * ncols), static_cast<T>(-1));
  tessera::io::read_block(ref, row0, nrows, col0, ncols, as, out.data());
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < nrows; ++i)
    for (std::int64_t j = 0; j < ncols; ++j)
      if (out[static_cast<std::size_t>(i * ncols + j)] != static_cast<T>(value_at(row0 + i, col0 + j))) ++wrong;
  CHECK(wrong == 0);
}

// ---- raw HDF5 fixtures ---------------------------------------------------------------------

struct RawFile {
  hid_t id;
  explicit RawFile(const std::string& name) : id(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)) {
    REQUIRE(id >= 0);
  }
  ~RawFile() { H5Fclose(id); }
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;
};

// Creates `path` in `file` with the given shape, file type and optional dcpl; writes `data`
// (of memory type `mem_type`) when given.
void raw_dataset(hid_t file, const std::string& path, std::vector<hsize_t> dims, hid_t file_type, hid_t mem_type = -1,
                 const void* data = nullptr, hid_t dcpl = H5P_DEFAULT) {
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  REQUIRE(space >= 0);
  const hid_t dset = H5Dcreate2(file, path.c_str(), file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  REQUIRE(dset >= 0);
  if (data != nullptr) REQUIRE(H5Dwrite(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  H5Dclose(dset);
  H5Sclose(space);
}

// The message of the exception of type E that fn throws; anything else is reported as such so
// the comparison fails visibly.
template <typename E, typename Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(wrong exception type: ") + e.what() + ")";
  }
  return "(no exception)";
}

}  // namespace

// ---- DatasetRef ----------------------------------------------------------------------------

TEST_CASE("DatasetRef::parse splits file and dataset path", "[io]") {
  auto r = DatasetRef::parse("data.h5:/A");
  CHECK(r.file == "data.h5");
  CHECK(r.path == "/A");
  CHECK(r.str() == "data.h5:/A");

  r = DatasetRef::parse("dir/sub/file.h5:/group/inner/name");
  CHECK(r.file == "dir/sub/file.h5");
  CHECK(r.path == "/group/inner/name");

  // File names with ':' (and even ":/") split at the last ":/".
  r = DatasetRef::parse("run:3.h5:/x");
  CHECK(r.file == "run:3.h5");
  CHECK(r.path == "/x");
  r = DatasetRef::parse("C:/data/a.h5:/m/B");
  CHECK(r.file == "C:/data/a.h5");
  CHECK(r.path == "/m/B");
}

TEST_CASE("DatasetRef::parse: '\\:' is a ':' that never splits", "[io]") {
  // A dataset path holding ":/" (a group named "run:").
  auto r = DatasetRef::parse("f.h5:/run\\:/A");
  CHECK(r.file == "f.h5");
  CHECK(r.path == "/run:/A");
  // Escapes anywhere; "\\\\" is one backslash; any other backslash stays.
  r = DatasetRef::parse("d\\:/f.h5:/g\\:/h\\:/x");
  CHECK(r.file == "d:/f.h5");
  CHECK(r.path == "/g:/h:/x");
  r = DatasetRef::parse("a\\\\:/B");  // file "a\", dataset "/B"
  CHECK(r.file == "a\\");
  CHECK(r.path == "/B");
  r = DatasetRef::parse("a\\b.h5:/C");
  CHECK(r.file == "a\\b.h5");
  // Without an unescaped ":/" there is no dataset.
  CHECK_THROWS_AS(DatasetRef::parse("f.h5\\:/A"), InputError);
}

TEST_CASE("temporary names fit any legal output name", "[io][writer]") {
  TempDir dir;
  for (const std::size_t length : {1u, 100u, 163u, 164u, 200u, 233u, 255u}) {
    INFO("name length " << length);
    const std::string name(length, 'c');
    const std::string temp = tessera::io::temporary_name(dir.file(name));
    CHECK(fs::path(temp).filename().string().size() <= 255);
    CHECK(fs::path(temp).parent_path() == dir.path());
    // The same for every run: leftovers are found by their prefix.
    CHECK(temp == tessera::io::temporary_name(dir.file(name)));
    const DatasetRef ref{dir.file(name), "/C"};
    MatrixWriter w(ref, 2, 2, DType::f64, {});
    const auto m = make_matrix<double>(2, 2);
    w.write_block(0, 0, 2, 2, m.data());
    w.commit();
    check_block<double>(ref, 0, 2, 0, 2);
    fs::remove(ref.file);
  }
  // Two long names that share their first 200 bytes get different temporaries.
  const std::string one(200, 'x'), two = std::string(199, 'x') + "y";
  CHECK(tessera::io::temporary_name(one) != tessera::io::temporary_name(two));
}

TEST_CASE("the writer counts the NaN and Inf it writes", "[io][writer]") {
  TempDir dir;
  const DatasetRef ref{dir.file("c.h5"), "/C"};
  for (const bool direct : {true, false}) {
    INFO((direct ? "contiguous (pwrite)" : "chunked (HDF5)"));
    WriteOptions opts;
    if (!direct) opts.chunk = {2, 2};
    MatrixWriter w(ref, 4, 5, DType::f32, opts);
    std::vector<float> top(2 * 5, 1.0f), bottom(2 * 5, 2.0f);
    bottom[3] = std::numeric_limits<float>::infinity();   // (2, 3)
    bottom[9] = std::numeric_limits<float>::quiet_NaN();  // (3, 4)
    w.write_block(2, 0, 2, 5, bottom.data());
    CHECK(w.nonfinite_written().count == 2);
    w.write_block(0, 0, 2, 5, top.data());
    const auto seen = w.nonfinite_written();
    CHECK(seen.count == 2);
    CHECK(seen.first == 2 * 5 + 3);  // row-major index of (2, 3)
  }
}

TEST_CASE("DatasetRef::parse rejects malformed references", "[io]") {
  for (const char* bad : {"", "data.h5", "data.h5:", "data.h5:A", ":/A", "/A", "data.h5/A"}) {
    INFO("reference: '" << bad << "'");
    CHECK_THROWS_AS(DatasetRef::parse(bad), InputError);
    CHECK_THROWS_WITH(DatasetRef::parse(bad), ContainsSubstring("invalid dataset reference '" + std::string(bad) +
                                                                "': expected FILE:/PATH, e.g. data.h5:/A"));
  }
}

// ---- round trips ---------------------------------------------------------------------------

TEST_CASE("float64 round trip, full and partial blocks", "[io]") {
  TempDir dir;
  const DatasetRef ref{dir.file("a.h5"), "/A"};
  write_matrix<double>(ref, 7, 13);

  const auto info = tessera::io::inspect(ref);
  CHECK(info.rows == 7);
  CHECK(info.cols == 13);
  CHECK(info.stored_type == "float64");
  CHECK(info.natural == DType::f64);
  CHECK_FALSE(info.is_integer);
  CHECK(info.layout == "contiguous");
  CHECK(info.chunk.empty());
  CHECK(info.filters.empty());

  check_block<double>(ref, 0, 7, 0, 13);
  check_block<double>(ref, 2, 3, 4, 5);
  check_block<double>(ref, 6, 1, 12, 1);
  check_block<double>(ref, 0, 7, 12, 1);  // one column
  check_block<double>(ref, 3, 1, 0, 13);  // one row
  // float64 read as float32: values are exact in float32.
  check_block<float>(ref, 1, 5, 2, 9);
  // Nothing but the target remains in the directory.
  CHECK(dir.entries() == 1);
}

TEST_CASE("float32 round trip and conversion to float64", "[io]") {
  TempDir dir;
  const DatasetRef ref{dir.file("b.h5"), "/deep/group/B"};
  write_matrix<float>(ref, 13, 7);
  const auto info = tessera::io::inspect(ref);
  CHECK(info.rows == 13);
  CHECK(info.cols == 7);
  CHECK(info.stored_type == "float32");
  CHECK(info.natural == DType::f32);
  check_block<float>(ref, 0, 13, 0, 7);
  check_block<float>(ref, 5, 8, 3, 4);
  check_block<double>(ref, 0, 13, 0, 7);
}

TEST_CASE("1x1 matrix round trip", "[io]") {
  TempDir dir;
  const DatasetRef ref{dir.file("one.h5"), "/x"};
  MatrixWriter w(ref, 1, 1, DType::f64, {});
  const double v = -3.25;
  w.write_block(0, 0, 1, 1, &v);
  w.commit();
  double out = 0;
  tessera::io::read_block(ref, 0, 1, 0, 1, DType::f64, &out);
  CHECK(out == -3.25);
}

TEST_CASE("matrix written block by block reads back whole", "[io]") {
  TempDir dir;
  const DatasetRef ref{dir.file("blocks.h5"), "/C"};
  const std::int64_t rows = 10, cols = 9;
  {
    MatrixWriter w(ref, rows, cols, DType::f64, {});
    // A 2x2 grid of unequal blocks.
    const std::int64_t rs[] = {0, 4, 10}, cs[] = {0, 5, 9};
    for (int bi = 0; bi < 2; ++bi)
      for (int bj = 0; bj < 2; ++bj) {
        const auto nr = rs[bi + 1] - rs[bi], nc = cs[bj + 1] - cs[bj];
        std::vector<double> b(static_cast<std::size_t>(nr * nc));
        for (std::int64_t i = 0; i < nr; ++i)
          for (std::int64_t j = 0; j < nc; ++j)
            b[static_cast<std::size_t>(i * nc + j)] = value_at(rs[bi] + i, cs[bj] + j);
        w.write_block(rs[bi], cs[bj], nr, nc, b.data());
      }
    w.commit();
  }
  check_block<double>(ref, 0, rows, 0, cols);
}

TEST_CASE("chunked gzip dataset: inspect and partial reads", "[io]") {
  TempDir dir;
  const DatasetRef ref{dir.file("z.h5"), "/Z"};
  WriteOptions opts;
  opts.chunk = {4, 5};
  opts.gzip_level = 6;
  write_matrix<double>(ref, 23, 17, opts);

  const auto info = tessera::io::inspect(ref);
  CHECK(info.layout == "chunked");
  CHECK(info.chunk == std::vector<std::int64_t>{4, 5});
  CHECK(info.filters == std::vector<std::string>{"deflate"});
  // Blocks crossing chunk boundaries, inside one chunk, and the ragged last chunks.
  check_block<double>(ref, 0, 23, 0, 17);
  check_block<double>(ref, 3, 6, 4, 7);
  check_block<double>(ref, 1, 2, 1, 2);
  check_block<double>(ref, 20, 3, 15, 2);
  check_block<float>(ref, 7, 9, 0, 17);
}

TEST_CASE("gzip without chunk picks a default chunk clamped to the shape", "[io]") {
  TempDir dir;
  WriteOptions opts;
  opts.gzip_level = 1;
  const DatasetRef small{dir.file("s.h5"), "/S"};
  write_matrix<float>(small, 30, 7, opts);
  auto info = tessera::io::inspect(small);
  CHECK(info.layout == "chunked");
  CHECK(info.chunk == std::vector<std::int64_t>{30, 7});
  CHECK(info.filters == std::vector<std::string>{"deflate"});
  check_block<float>(small, 0, 30, 0, 7);

  const DatasetRef big{dir.file("big.h5"), "/B"};
  write_matrix<float>(big, 300, 260, opts);
  info = tessera::io::inspect(big);
  CHECK(info.chunk == std::vector<std::int64_t>{256, 256});
  check_block<float>(big, 250, 50, 250, 10);

  // A chunk larger than the matrix is clamped to it; chunking without gzip has no filters.
  WriteOptions chunk_only;
  chunk_only.chunk = {100, 3};
  const DatasetRef clamped{dir.file("c.h5"), "/C"};
  write_matrix<double>(clamped, 5, 8, chunk_only);
  info = tessera::io::inspect(clamped);
  CHECK(info.chunk == std::vector<std::int64_t>{5, 3});
  CHECK(info.filters.empty());
  check_block<double>(clamped, 1, 4, 2, 6);
}

TEST_CASE("inspect reports compact layout and filter names", "[io]") {
  TempDir dir;
  const std::string name = dir.file("raw.h5");
  const auto m = make_matrix<double>(3, 4);
  {
    RawFile f(name);
    const hid_t compact = H5Pcreate(H5P_DATASET_CREATE);
    REQUIRE(H5Pset_layout(compact, H5D_COMPACT) >= 0);
    raw_dataset(f.id, "/compact", {3, 4}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, m.data(), compact);
    H5Pclose(compact);

    const hid_t filtered = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[2] = {2, 2};
    REQUIRE(H5Pset_chunk(filtered, 2, chunk) >= 0);
    REQUIRE(H5Pset_shuffle(filtered) >= 0);
    REQUIRE(H5Pset_deflate(filtered, 4) >= 0);
    REQUIRE(H5Pset_fletcher32(filtered) >= 0);
    raw_dataset(f.id, "/filtered", {3, 4}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, m.data(), filtered);
    H5Pclose(filtered);
  }
  auto info = tessera::io::inspect({name, "/compact"});
  CHECK(info.layout == "compact");
  CHECK(info.chunk.empty());
  check_block<double>({name, "/compact"}, 1, 2, 1, 3);

  info = tessera::io::inspect({name, "/filtered"});
  CHECK(info.layout == "chunked");
  CHECK(info.chunk == std::vector<std::int64_t>{2, 2});
  CHECK(info.filters == std::vector<std::string>{"shuffle", "deflate", "fletcher32"});
  check_block<double>({name, "/filtered"}, 0, 3, 0, 4);
}

TEST_CASE("a dataset needing an unavailable filter is refused by name", "[io][errors]") {
  TempDir dir;
  const std::string name = dir.file("lzf.h5");
  {
    RawFile f(name);
    // An optional filter HDF5 does not know (LZF, id 32000) may be put in the pipeline.
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[2] = {2, 2};
    REQUIRE(H5Pset_chunk(dcpl, 2, chunk) >= 0);
    REQUIRE(H5Pset_filter(dcpl, 32000, H5Z_FLAG_OPTIONAL, 0, nullptr) >= 0);
    raw_dataset(f.id, "/L", {4, 4}, H5T_IEEE_F64LE, -1, nullptr, dcpl);
    H5Pclose(dcpl);
  }
  if (H5Zfilter_avail(32000) > 0) SKIP("an LZF plugin is installed here");
  CHECK_THROWS_AS(tessera::io::inspect({name, "/L"}), InputError);
  CHECK_THROWS_WITH(tessera::io::inspect({name, "/L"}),
                    ContainsSubstring("'" + name + ":/L' is stored with the HDF5 filter 'lzf' (id 32000)"));
}

TEST_CASE("integer datasets are read as float64 exactly", "[io]") {
  TempDir dir;
  const std::string name = dir.file("ints.h5");
  const std::vector<std::int32_t> i32 = {-2147483647 - 1, -1, 0, 1, 2147483647, 123456789};
  const std::vector<std::uint8_t> u8 = {0, 1, 127, 128, 254, 255};
  const std::vector<std::int64_t> i64 = {(std::int64_t{1} << 53), -(std::int64_t{1} << 53), 42, -42};
  const std::vector<std::uint16_t> u16be = {0, 65535, 256, 1};
  {
    RawFile f(name);
    raw_dataset(f.id, "/i32", {2, 3}, H5T_STD_I32LE, H5T_NATIVE_INT32, i32.data());
    raw_dataset(f.id, "/u8", {3, 2}, H5T_STD_U8LE, H5T_NATIVE_UINT8, u8.data());
    raw_dataset(f.id, "/i64", {2, 2}, H5T_STD_I64LE, H5T_NATIVE_INT64, i64.data());
    raw_dataset(f.id, "/u16be", {1, 4}, H5T_STD_U16BE, H5T_NATIVE_UINT16, u16be.data());
  }
  auto info = tessera::io::inspect({name, "/i32"});
  CHECK(info.stored_type == "int32");
  CHECK(info.is_integer);
  CHECK(info.natural == DType::f64);
  std::vector<double> out(6);
  tessera::io::read_block({name, "/i32"}, 0, 2, 0, 3, DType::f64, out.data());
  for (std::size_t k = 0; k < 6; ++k) CHECK(out[k] == static_cast<double>(i32[k]));
  // A partial block of the integer dataset.
  std::vector<double> part(2);
  tessera::io::read_block({name, "/i32"}, 1, 1, 1, 2, DType::f64, part.data());
  CHECK(part[0] == 2147483647.0);
  CHECK(part[1] == 123456789.0);

  CHECK(tessera::io::inspect({name, "/u8"}).stored_type == "uint8");
  tessera::io::read_block({name, "/u8"}, 0, 3, 0, 2, DType::f64, out.data());
  for (std::size_t k = 0; k < 6; ++k) CHECK(out[k] == static_cast<double>(u8[k]));

  CHECK(tessera::io::inspect({name, "/i64"}).stored_type == "int64");
  tessera::io::read_block({name, "/i64"}, 0, 2, 0, 2, DType::f64, out.data());
  for (std::size_t k = 0; k < 4; ++k) CHECK(out[k] == static_cast<double>(i64[k]));

  info = tessera::io::inspect({name, "/u16be"});
  CHECK(info.stored_type == "uint16");
  tessera::io::read_block({name, "/u16be"}, 0, 1, 0, 4, DType::f64, out.data());
  for (std::size_t k = 0; k < 4; ++k) CHECK(out[k] == static_cast<double>(u16be[k]));
}

TEST_CASE("big-endian float datasets are converted", "[io]") {
  TempDir dir;
  const std::string name = dir.file("be.h5");
  const auto m = make_matrix<double>(4, 3);
  {
    RawFile f(name);
    raw_dataset(f.id, "/be64", {4, 3}, H5T_IEEE_F64BE, H5T_NATIVE_DOUBLE, m.data());
    raw_dataset(f.id, "/be32", {4, 3}, H5T_IEEE_F32BE, H5T_NATIVE_DOUBLE, m.data());
  }
  CHECK(tessera::io::inspect({name, "/be64"}).stored_type == "float64");
  CHECK(tessera::io::inspect({name, "/be32"}).stored_type == "float32");
  check_block<double>({name, "/be64"}, 0, 4, 0, 3);
  check_block<float>({name, "/be32"}, 1, 2, 1, 2);
}

// ---- attributes ----------------------------------------------------------------------------

TEST_CASE("attributes round trip in the order written", "[io]") {
  TempDir dir;
  const DatasetRef ref{dir.file("attrs.h5"), "/C"};
  {
    MatrixWriter w(ref, 2, 2, DType::f32, {});
    const std::vector<float> m = {1, 2, 3, 4};
    w.write_block(0, 0, 2, 2, m.data());
    w.set_attributes({Attribute::of("tool", "tessera 0.1.0"), Attribute::of("k", std::int64_t{-77}),
                      Attribute::of("seconds", 0.125), Attribute::of("grid", std::vector<std::int64_t>{2, 3, 4}),
                      Attribute::of("empty", ""), Attribute::of("none", std::vector<std::int64_t>{}),
                      Attribute::of("pi", 3.141592653589793)});
    // Setting an attribute again replaces it.
    w.set_attributes({Attribute::of("k", std::int64_t{5000000000})});
    w.commit();
  }
  const auto attrs = tessera::io::read_attributes(ref);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"tool", "tessera 0.1.0"},   {"seconds", "0.125"}, {"grid", "2,3,4"}, {"empty", ""}, {"none", ""},
      {"pi", "3.141592653589793"}, {"k", "5000000000"}};
  CHECK(attrs == expected);
}

TEST_CASE("read_attributes reads attributes written by other tools", "[io]") {
  TempDir dir;
  const std::string name = dir.file("other.h5");
  {
    RawFile f(name);
    const auto m = make_matrix<double>(2, 2);
    raw_dataset(f.id, "/D", {2, 2}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, m.data());
    const hid_t dset = H5Dopen2(f.id, "/D", H5P_DEFAULT);
    const hid_t scalar = H5Screate(H5S_SCALAR);
    // Variable-length UTF-8 string, as h5py writes a Python str.
    const hid_t vstr = H5Tcopy(H5T_C_S1);
    H5Tset_size(vstr, H5T_VARIABLE);
    H5Tset_cset(vstr, H5T_CSET_UTF8);
    const char* text = "h\xc3\xa9llo";
    hid_t a = H5Acreate2(dset, "note", vstr, scalar, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(H5Awrite(a, vstr, &text) >= 0);
    H5Aclose(a);
    // Unsigned and float32 arrays.
    const hsize_t three = 3;
    const hid_t vec = H5Screate_simple(1, &three, nullptr);
    const std::uint16_t u[3] = {1, 2, 65535};
    a = H5Acreate2(dset, "u16", H5T_STD_U16LE, vec, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(H5Awrite(a, H5T_NATIVE_UINT16, u) >= 0);
    H5Aclose(a);
    const float fl[3] = {0.5f, -1.0f, 2.0f};
    a = H5Acreate2(dset, "f32", H5T_IEEE_F32LE, vec, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(H5Awrite(a, H5T_NATIVE_FLOAT, fl) >= 0);
    H5Aclose(a);
    H5Sclose(vec);
    H5Tclose(vstr);
    H5Sclose(scalar);
    H5Dclose(dset);
  }
  // No creation order tracked: sorted by name.
  const auto attrs = tessera::io::read_attributes({name, "/D"});
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"f32", "0.5,-1,2"}, {"note", "h\xc3\xa9llo"}, {"u16", "1,2,65535"}};
  CHECK(attrs == expected);
}

// ---- reading errors ------------------------------------------------------------------------

TEST_CASE("missing input file", "[io][errors]") {
  TempDir dir;
  const DatasetRef ref{dir.file("nope.h5"), "/A"};
  CHECK_THROWS_AS(tessera::io::inspect(ref), InputError);
  CHECK(message_of<InputError>([&] { tessera::io::inspect(ref); }) == "cannot open '" + ref.file + "': no such file");
  double x = 0;
  CHECK_THROWS_AS(tessera::io::read_block(ref, 0, 1, 0, 1, DType::f64, &x), InputError);
  CHECK_THROWS_AS(tessera::io::read_attributes(ref), InputError);
  // A directory is not a file either.
  CHECK_THROWS_WITH(tessera::io::inspect({dir.path().string(), "/A"}), ContainsSubstring("is a directory"));
}

TEST_CASE("garbage, empty and truncated files are refused", "[io][errors]") {
  TempDir dir;
  const std::string garbage = dir.file("garbage.h5");
  {
    std::ofstream f(garbage, std::ios::binary);
    for (int i = 0; i < 4096; ++i) f.put(static_cast<char>((i * 37 + 11) & 0xff));
  }
  CHECK_THROWS_AS(tessera::io::inspect({garbage, "/A"}), InputError);
  CHECK(message_of<InputError>([&] {
          tessera::io::inspect({garbage, "/A"});
        }) == "'" + garbage + "' is not an HDF5 file (or is truncated/corrupt)");

  const std::string empty = dir.file("empty.h5");
  std::ofstream(empty).close();
  CHECK_THROWS_WITH(tessera::io::inspect({empty, "/A"}), ContainsSubstring("is not an HDF5 file"));

  const DatasetRef truncated{dir.file("trunc.h5"), "/A"};
  write_matrix<double>(truncated, 64, 64);
  const auto size = fs::file_size(truncated.file);
  REQUIRE(size > 64 * 64 * 8);
  fs::resize_file(truncated.file, size / 2);
  CHECK_THROWS_AS(tessera::io::inspect(truncated), InputError);
  CHECK_THROWS_WITH(tessera::io::inspect(truncated),
                    ContainsSubstring("'" + truncated.file + "' is not an HDF5 file (or is truncated/corrupt)"));
  std::vector<double> buf(64 * 64);
  CHECK_THROWS_AS(tessera::io::read_block(truncated, 0, 64, 0, 64, DType::f64, buf.data()), InputError);
}

TEST_CASE("missing datasets and non-datasets", "[io][errors]") {
  TempDir dir;
  const std::string name = dir.file("g.h5");
  write_matrix<double>({name, "/grp/sub/A"}, 2, 2);

  CHECK(message_of<InputError>([&] {
          tessera::io::inspect({name, "/B"});
        }) == "dataset '/B' not found in '" + name + "'");
  // Missing intermediate groups and paths through a dataset are "not found", not a crash.
  CHECK_THROWS_AS(tessera::io::inspect({name, "/nope/deeper/A"}), InputError);
  CHECK_THROWS_WITH(tessera::io::inspect({name, "/nope/deeper/A"}),
                    ContainsSubstring("dataset '/nope/deeper/A' not found in '" + name + "'"));
  CHECK_THROWS_WITH(tessera::io::inspect({name, "/grp/sub/A/x"}),
                    ContainsSubstring("dataset '/grp/sub/A/x' not found"));

  CHECK_THROWS_AS(tessera::io::inspect({name, "/grp/sub"}), InputError);
  CHECK(message_of<InputError>([&] {
          tessera::io::inspect({name, "/grp/sub"});
        }) == "'" + name + ":/grp/sub' is a group, not a dataset");
  CHECK_THROWS_AS(tessera::io::inspect({name, "/"}), InputError);
  CHECK_THROWS_AS(tessera::io::read_attributes({name, "/grp"}), InputError);

  // The nested dataset itself is fine.
  CHECK(tessera::io::inspect({name, "/grp/sub/A"}).rows == 2);
}

TEST_CASE("wrong rank and unsupported types are refused", "[io][errors]") {
  TempDir dir;
  const std::string name = dir.file("bad.h5");
  {
    RawFile f(name);
    raw_dataset(f.id, "/cube", {4, 5, 6}, H5T_IEEE_F64LE);
    raw_dataset(f.id, "/vec", {5}, H5T_IEEE_F32LE);
    const hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 8);
    raw_dataset(f.id, "/strings", {2, 2}, str);
    H5Tclose(str);
    // float16, as h5py and numpy store it.
    const hid_t half = H5Tcopy(H5T_IEEE_F32LE);
    REQUIRE(H5Tset_fields(half, 15, 10, 5, 0, 10) >= 0);
    REQUIRE(H5Tset_size(half, 2) >= 0);
    REQUIRE(H5Tset_ebias(half, 15) >= 0);
    raw_dataset(f.id, "/half", {2, 2}, half);
    H5Tclose(half);
    const hid_t odd16 = H5Tcopy(H5T_IEEE_F32LE);  // 1 + 6 + 9 bits: neither float16 nor bfloat16
    REQUIRE(H5Tset_fields(odd16, 15, 9, 6, 0, 9) >= 0);
    REQUIRE(H5Tset_size(odd16, 2) >= 0);
    REQUIRE(H5Tset_ebias(odd16, 31) >= 0);
    raw_dataset(f.id, "/odd16", {2, 2}, odd16);
    H5Tclose(odd16);
    // complex, as h5py stores it.
    const hid_t complex = H5Tcreate(H5T_COMPOUND, 16);
    H5Tinsert(complex, "r", 0, H5T_IEEE_F64LE);
    H5Tinsert(complex, "i", 8, H5T_IEEE_F64LE);
    raw_dataset(f.id, "/complex", {2, 2}, complex);
    H5Tclose(complex);
    // A compound of other fields, and a complex of half-precision parts: refused.
    const hid_t pair = H5Tcreate(H5T_COMPOUND, 16);
    H5Tinsert(pair, "x", 0, H5T_IEEE_F64LE);
    H5Tinsert(pair, "y", 8, H5T_IEEE_F64LE);
    raw_dataset(f.id, "/pair", {2, 2}, pair);
    H5Tclose(pair);
    const hid_t half_part = H5Tcopy(H5T_IEEE_F32LE);
    REQUIRE(H5Tset_fields(half_part, 15, 10, 5, 0, 10) >= 0);
    REQUIRE(H5Tset_size(half_part, 2) >= 0);
    REQUIRE(H5Tset_ebias(half_part, 15) >= 0);
    const hid_t complex32 = H5Tcreate(H5T_COMPOUND, 4);
    H5Tinsert(complex32, "r", 0, half_part);
    H5Tinsert(complex32, "i", 2, half_part);
    raw_dataset(f.id, "/complex32", {2, 2}, complex32);
    H5Tclose(complex32);
    H5Tclose(half_part);
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const hid_t d = H5Dcreate2(f.id, "/scalar", H5T_IEEE_F64LE, scalar, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(d);
    H5Sclose(scalar);
    raw_dataset(f.id, "/empty_rows", {0, 5}, H5T_IEEE_F64LE);
  }
  // A 3-D dataset is a batch of matrices: named whole, their stack (4 x 5 x 6: 20 x 6).
  const auto cube = tessera::io::inspect({name, "/cube"});
  CHECK(cube.stacked());
  CHECK(cube.rows == 20);
  CHECK(cube.cols == 6);
  CHECK(cube.stored_rows == 5);
  CHECK(cube.stored_matrices == 4);
  CHECK(tessera::io::inspect(tessera::io::DatasetRef::parse(name + ":/cube[-1]")).index == 3);
  CHECK_THROWS_WITH(tessera::io::inspect({name, "/vec"}), ContainsSubstring("is 1-D (5); tessera needs a 2-D matrix"));
  CHECK_THROWS_AS(tessera::io::inspect({name, "/scalar"}), InputError);

  CHECK(message_of<InputError>([&] {
          tessera::io::inspect({name, "/strings"});
        }) == "'" + name +
                  ":/strings' has unsupported type string; use float16, bfloat16, float32, float64, an "
                  "integer type, or complex64 / complex128 (h5py's compound of r and i)");
  CHECK_THROWS_AS(tessera::io::inspect({name, "/strings"}), InputError);
  const auto half_info = tessera::io::inspect({name, "/half"});  // read widened to float32
  CHECK(half_info.stored_type == "float16");
  CHECK(half_info.natural == tessera::DType::f32);
  CHECK_THROWS_WITH(tessera::io::inspect({name, "/odd16"}),
                    ContainsSubstring("unsupported type a 16-bit float of 6 exponent and 9 mantissa bits"));
  // complex128 as h5py stores it is read (issue 43 item 2); other compounds are refused.
  const auto complex = tessera::io::inspect({name, "/complex"});
  CHECK(complex.stored_type == "complex128");
  CHECK(complex.natural == tessera::DType::c128);
  CHECK_THROWS_WITH(tessera::io::inspect({name, "/pair"}), ContainsSubstring("unsupported type compound"));
  CHECK_THROWS_WITH(tessera::io::inspect({name, "/complex32"}),
                    ContainsSubstring("unsupported type complex of 16-bit parts"));
  double x = 0;
  CHECK_THROWS_AS(tessera::io::read_block({name, "/strings"}, 0, 1, 0, 1, DType::f64, &x), InputError);

  // Zero-size dimensions are reported, not refused, at this level.
  const auto info = tessera::io::inspect({name, "/empty_rows"});
  CHECK(info.rows == 0);
  CHECK(info.cols == 5);
}

TEST_CASE("read_block refuses blocks outside the matrix", "[io][errors]") {
  TempDir dir;
  const DatasetRef ref{dir.file("a.h5"), "/A"};
  write_matrix<double>(ref, 4, 6);
  std::vector<double> buf(64);
  CHECK_THROWS_AS(tessera::io::read_block(ref, 0, 5, 0, 6, DType::f64, buf.data()), InputError);
  CHECK_THROWS_AS(tessera::io::read_block(ref, 0, 4, 1, 6, DType::f64, buf.data()), InputError);
  CHECK_THROWS_AS(tessera::io::read_block(ref, -1, 2, 0, 2, DType::f64, buf.data()), InputError);
  CHECK_THROWS_AS(tessera::io::read_block(ref, 0, 2, 0, -2, DType::f64, buf.data()), InputError);
  CHECK_THROWS_AS(tessera::io::read_block(ref, 4, INT64_MAX, 0, 1, DType::f64, buf.data()), InputError);
  CHECK_THROWS_WITH(tessera::io::read_block(ref, 3, 2, 0, 1, DType::f64, buf.data()),
                    ContainsSubstring("outside '" + ref.str() + "' (4x6)"));
  // Empty blocks at the edge are allowed and touch nothing.
  CHECK_NOTHROW(tessera::io::read_block(ref, 4, 0, 6, 0, DType::f64, nullptr));
}

// ---- writing -------------------------------------------------------------------------------

TEST_CASE("writer uses a temporary file until commit", "[io][writer]") {
  TempDir dir;
  const DatasetRef ref{dir.file("c.h5"), "/C"};
  MatrixWriter w(ref, 3, 3, DType::f64, {});
  CHECK(w.temporary_path() == tessera::io::temporary_name(ref.file));
  CHECK(fs::exists(w.temporary_path()));
  CHECK_FALSE(fs::exists(ref.file));
  const auto m = make_matrix<double>(3, 3);
  w.write_block(0, 0, 3, 3, m.data());
  w.commit();
  CHECK(fs::exists(ref.file));
  CHECK_FALSE(fs::exists(w.temporary_path()));
  check_block<double>(ref, 0, 3, 0, 3);
  CHECK(dir.entries() == 1);
}

TEST_CASE("writer destroyed without commit leaves nothing behind", "[io][writer]") {
  TempDir dir;
  const DatasetRef ref{dir.file("c.h5"), "/C"};
  std::string temp;
  {
    MatrixWriter w(ref, 4, 4, DType::f32, {});
    temp = w.temporary_path();
    const auto m = make_matrix<float>(2, 4);
    w.write_block(0, 0, 2, 4, m.data());
    REQUIRE(fs::exists(temp));
  }
  CHECK_FALSE(fs::exists(temp));
  CHECK_FALSE(fs::exists(ref.file));
  CHECK(dir.entries() == 0);

  // Same when an exception unwinds through the writer.
  try {
    MatrixWriter w(ref, 4, 4, DType::f32, {});
    temp = w.temporary_path();
    throw std::runtime_error("compute failed");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(fs::exists(temp));
  CHECK(dir.entries() == 0);
}

TEST_CASE("writer refuses an existing output file unless overwrite (replace_file)", "[io][writer]") {
  TempDir dir;
  const DatasetRef ref{dir.file("c.h5"), "/C"};
  write_matrix<double>(ref, 2, 2);
  WriteOptions whole;
  whole.existing_file = tessera::io::ExistingFile::replace_file;
  CHECK_THROWS_AS(MatrixWriter(ref, 2, 2, DType::f64, whole), InputError);
  CHECK(message_of<InputError>([&] { MatrixWriter w(ref, 2, 2, DType::f64, whole); }) ==
        "output file '" + ref.file + "' exists; pass --overwrite to replace it");
  CHECK(dir.entries() == 1);  // no temporary file was created

  // With overwrite the old file is replaced, and by a different shape.
  WriteOptions opts = whole;
  opts.overwrite = true;
  {
    MatrixWriter w(ref, 3, 5, DType::f32, opts);
    // The old file stays intact until commit.
    CHECK(tessera::io::inspect(ref).cols == 2);
    const auto m = make_matrix<float>(3, 5);
    w.write_block(0, 0, 3, 5, m.data());
    w.commit();
  }
  const auto info = tessera::io::inspect(ref);
  CHECK(info.rows == 3);
  CHECK(info.cols == 5);
  CHECK(info.stored_type == "float32");
  check_block<float>(ref, 0, 3, 0, 5);
  CHECK(dir.entries() == 1);
}

TEST_CASE("commit refuses an output that appeared meanwhile", "[io][writer]") {
  TempDir dir;
  const DatasetRef ref{dir.file("c.h5"), "/C"};
  std::string temp;
  {
    MatrixWriter w(ref, 1, 1, DType::f64, {});
    temp = w.temporary_path();
    const double v = 1;
    w.write_block(0, 0, 1, 1, &v);
    std::ofstream(ref.file) << "someone else's file";
    CHECK(message_of<InputError>([&] { w.commit(); }) ==
          "output file '" + ref.file + "' appeared while tessera was running; pass --overwrite to replace it");
    // The failed commit is final.
    CHECK_THROWS_AS(w.commit(), IoError);
  }
  // The other file is untouched and the temporary file is gone.
  std::ifstream in(ref.file);
  std::string content;
  std::getline(in, content);
  CHECK(content == "someone else's file");
  CHECK_FALSE(fs::exists(temp));
}

TEST_CASE("writer checks the output directory", "[io][writer]") {
  TempDir dir;
  const std::string missing = dir.file("no/such/dir");
  CHECK_THROWS_AS(MatrixWriter({missing + "/c.h5", "/C"}, 2, 2, DType::f64, {}), InputError);
  CHECK(message_of<InputError>([&] {
          MatrixWriter w({missing + "/c.h5", "/C"}, 2, 2, DType::f64, {});
        }) == "output directory '" + missing + "' does not exist");

  // The target is a directory.
  fs::create_directory(dir.file("sub"));
  CHECK_THROWS_AS(MatrixWriter({dir.file("sub"), "/C"}, 2, 2, DType::f64, {}), InputError);

  // A relative name without a directory part writes to ".".
  {
    struct CwdGuard {
      fs::path old = fs::current_path();
      ~CwdGuard() { fs::current_path(old); }
    } guard;
    fs::current_path(dir.path());
    write_matrix<double>({"rel.h5", "/R"}, 2, 3);
  }
  check_block<double>({dir.file("rel.h5"), "/R"}, 0, 2, 0, 3);

  if (::geteuid() != 0) {
    const std::string ro = dir.file("readonly");
    fs::create_directory(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    CHECK(message_of<InputError>([&] {
            MatrixWriter w({ro + "/c.h5", "/C"}, 2, 2, DType::f64, {});
          }) == "output directory '" + ro + "' is not writable");
    fs::permissions(ro, fs::perms::owner_all);
  }
}

TEST_CASE("writer rejects bad options and blocks", "[io][writer]") {
  TempDir dir;
  const DatasetRef ref{dir.file("c.h5"), "/C"};
  WriteOptions bad_gzip;
  bad_gzip.gzip_level = 10;
  CHECK_THROWS_AS(MatrixWriter(ref, 2, 2, DType::f64, bad_gzip), InputError);
  WriteOptions bad_chunk;
  bad_chunk.chunk = {0, 2};
  CHECK_THROWS_AS(MatrixWriter(ref, 2, 2, DType::f64, bad_chunk), InputError);
  bad_chunk.chunk = {2};
  CHECK_THROWS_AS(MatrixWriter(ref, 2, 2, DType::f64, bad_chunk), InputError);
  CHECK_THROWS_AS(MatrixWriter({ref.file, "/"}, 2, 2, DType::f64, {}), InputError);
  CHECK_THROWS_AS(MatrixWriter(ref, -1, 2, DType::f64, {}), InputError);
  CHECK(dir.entries() == 0);

  MatrixWriter w(ref, 3, 4, DType::f64, {});
  std::vector<double> m(16, 1.0);
  CHECK_THROWS_AS(w.write_block(0, 0, 4, 4, m.data()), InputError);
  CHECK_THROWS_AS(w.write_block(2, 3, 1, 2, m.data()), InputError);
  CHECK_THROWS_AS(w.write_block(-1, 0, 1, 1, m.data()), InputError);
  w.write_block(2, 3, 1, 1, m.data());
  w.commit();
  CHECK_THROWS_AS(w.write_block(0, 0, 1, 1, m.data()), IoError);
  CHECK(dir.entries() == 1);
}

TEST_CASE("writer names a stale temporary file it cannot replace", "[io][writer]") {
  TempDir dir;
  const DatasetRef ref{dir.file("c.h5"), "/C"};
  const std::string stale = tessera::io::temporary_name(ref.file);
  std::ofstream(stale) << "stale";
  CHECK_THROWS_AS(MatrixWriter(ref, 2, 2, DType::f64, {}), IoError);
  CHECK_THROWS_WITH(MatrixWriter(ref, 2, 2, DType::f64, {}), ContainsSubstring(stale));
  // It is not ours: it must not be removed.
  CHECK(fs::exists(stale));
}

TEST_CASE("library version and parallel flag", "[io]") {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  CHECK(tessera::io::library_version() ==
        std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release));
  CHECK(major == 1);
#ifdef H5_HAVE_PARALLEL
  CHECK(tessera::io::library_is_parallel());
#else
  CHECK_FALSE(tessera::io::library_is_parallel());
#endif
}

// The direct (pread) path reads contiguous datasets at their offset in the named file; a dataset
// reached through an external link lives in another file, at an offset of that file. It must be
// read from there (HDF5 does it), not from the link's file at that offset.
TEST_CASE("a dataset behind an external link is read from its own file", "[io]") {
  TempDir dir;
  const std::string target = dir.file("target.h5"), link = dir.file("link.h5");
  const auto m = make_matrix<double>(9, 11);
  {
    RawFile f(target);
    const std::vector<double> pad(300, -7.0);  // moves /A's data away from the start of the file
    raw_dataset(f.id, "/pad", {300}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, pad.data());
    raw_dataset(f.id, "/A", {9, 11}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, m.data());
  }
  {
    RawFile f(link);
    const std::vector<double> junk(2000, 99.0);  // what the link's file holds at that offset
    raw_dataset(f.id, "/junk", {2000}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, junk.data());
    REQUIRE(H5Lcreate_external(target.c_str(), "/A", f.id, "/A", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  }
  check_block<double>(DatasetRef::parse(link + ":/A"), 0, 9, 0, 11);
  check_block<double>(DatasetRef::parse(link + ":/A"), 2, 5, 3, 4);
  check_block<double>(DatasetRef::parse(target + ":/A"), 2, 5, 3, 4);  // the direct path on the file itself
}

// ---- where an input's data lives (io/data_sources.hpp) ---------------------------------------

TEST_CASE("locate_data lists the files behind external links and virtual datasets", "[io][sources]") {
  TempDir dir;
  const std::string src = dir.file("src.h5"), link = dir.file("link.h5"), virt = dir.file("virt.h5");
  const auto m = make_matrix<double>(4, 3);
  {
    RawFile f(src);
    raw_dataset(f.id, "/A", {4, 3}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, m.data());
  }
  {
    RawFile f(link);
    REQUIRE(H5Lcreate_external(src.c_str(), "/A", f.id, "/EL", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  }
  {
    RawFile f(virt);
    const hsize_t dims[2] = {4, 3};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    REQUIRE(H5Pset_virtual(dcpl, space, "src.h5", "/A", space) >= 0);
    raw_dataset(f.id, "/V", {4, 3}, H5T_IEEE_F64LE, -1, nullptr, dcpl);
    H5Pclose(dcpl);
    H5Sclose(space);
  }
  const auto has = [](const tessera::io::DataSources& s, const std::string& name) {
    for (const auto& file : s.files)
      if (fs::path(file).filename() == name) return true;
    return false;
  };
  const auto through_link = tessera::io::locate_data({link, "/EL"}, "A");
  CHECK(through_link.files.front() == link);
  CHECK(has(through_link, "src.h5"));
  const auto through_vds = tessera::io::locate_data({virt, "/V"}, "A");
  CHECK(has(through_vds, "src.h5"));
  CHECK(through_vds.notes.empty());
  fs::remove(src);
  CHECK_THAT(message_of<InputError>([&] {
               tessera::io::locate_data({virt, "/V"}, "A");
             }),
             ContainsSubstring("A '" + virt + ":/V' is a virtual dataset whose source file 'src.h5'"));
}

TEST_CASE("locate_data refuses chunks never written unless a fill value is declared", "[io][sources]") {
  TempDir dir;
  const std::string file = dir.file("part.h5");
  const auto m = make_matrix<double>(2, 3);
  for (const bool declared : {false, true}) {
    {
      RawFile f(file);
      const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
      const hsize_t chunk[2] = {2, 3};
      REQUIRE(H5Pset_chunk(dcpl, 2, chunk) >= 0);
      const double fill = 0.25;
      if (declared) REQUIRE(H5Pset_fill_value(dcpl, H5T_NATIVE_DOUBLE, &fill) >= 0);
      raw_dataset(f.id, "/A", {6, 3}, H5T_IEEE_F64LE, -1, nullptr, dcpl);
      H5Pclose(dcpl);
      const hid_t dset = H5Dopen2(f.id, "/A", H5P_DEFAULT);
      const hsize_t start[2] = {0, 0}, count[2] = {2, 3};
      const hid_t fspace = H5Dget_space(dset), mspace = H5Screate_simple(2, count, nullptr);
      H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr);
      REQUIRE(H5Dwrite(dset, H5T_NATIVE_DOUBLE, mspace, fspace, H5P_DEFAULT, m.data()) >= 0);
      H5Sclose(mspace);
      H5Sclose(fspace);
      H5Dclose(dset);
    }
    if (declared) {
      const auto sources = tessera::io::locate_data({file, "/A"}, "A");
      REQUIRE(sources.notes.size() == 1);
      CHECK_THAT(sources.notes[0], ContainsSubstring("2 of its 3 chunks never written"));
      CHECK_THAT(sources.notes[0], ContainsSubstring("declared fill value 0.25"));
    } else {
      CHECK_THAT(message_of<InputError>([&] {
                   tessera::io::locate_data({file, "/A"}, "A");
                 }),
                 ContainsSubstring("has 2 of its 3 chunks never written"));
    }
  }
}
