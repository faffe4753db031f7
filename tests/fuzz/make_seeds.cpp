// Writes the seed corpora of the fuzz targets (run at build time, see CMakeLists.txt):
//   DIR/hdf5_input/*.h5  small HDF5 files, one per layout / type / shape the input layer meets
//   DIR/options/*.txt    command lines and TOML configs of `tessera run` (fuzz_options.cpp format)
// Files tessera writes itself go through its own MatrixWriter; the ones it never writes (integers,
// 3-D, compact, strings, big-endian, groups) through the HDF5 C API, as tests/unit does.
#include <hdf5.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5_io.hpp"

namespace fs = std::filesystem;
using tessera::DType;
using tessera::io::Attribute;
using tessera::io::DatasetRef;
using tessera::io::MatrixWriter;
using tessera::io::WriteOptions;

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("make_fuzz_seeds: " + what);
}

template <typename T>
std::vector<T> values(std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(static_cast<double>(i) * 0.5 - 3.0);
  return v;
}

void write_with_tessera(const std::string& file, const std::string& path, std::int64_t rows, std::int64_t cols,
                        DType dtype, const WriteOptions& opts, bool attributes) {
  MatrixWriter w(DatasetRef{file, path}, rows, cols, dtype, opts);
  const auto n = static_cast<std::size_t>(rows * cols);
  if (dtype == DType::f32) {
    const auto v = values<float>(n);
    w.write_block(0, 0, rows, cols, v.data());
  } else {
    const auto v = values<double>(n);
    w.write_block(0, 0, rows, cols, v.data());
  }
  if (attributes)
    w.set_attributes({Attribute::of("shape", std::vector<std::int64_t>{rows, cols}), Attribute::of("backend", "cpu"),
                      Attribute::of("nranks", std::int64_t{3}), Attribute::of("wall_seconds", 0.25),
                      Attribute::of("inputs", "a.h5:/A b.h5:/B \xce\xbc")});
  w.commit();
}

// One dataset written with the C API: any type, rank, layout; optional extras on the file.
struct RawDataset {
  std::string path = "/A";
  hid_t file_type = H5T_NATIVE_DOUBLE;
  hid_t mem_type = H5T_NATIVE_DOUBLE;
  std::vector<hsize_t> dims = {3, 4};
  std::vector<hsize_t> chunk;  // empty: contiguous (or compact)
  bool compact = false;
  bool shuffle_fletcher = false;
  bool scalar = false;
  bool null_space = false;
  bool latest_format = false;
  bool write_data = true;
};

void write_raw(const std::string& file, const std::vector<RawDataset>& sets, bool string_attrs = false) {
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (sets.front().latest_format) H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  const hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  check(f >= 0, "cannot create " + file);
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  for (const auto& s : sets) {
    hid_t space;
    hsize_t n = 1;
    if (s.null_space) {
      space = H5Screate(H5S_NULL);
    } else if (s.scalar) {
      space = H5Screate(H5S_SCALAR);
    } else {
      space = H5Screate_simple(static_cast<int>(s.dims.size()), s.dims.data(), nullptr);
      for (auto d : s.dims) n *= d;
    }
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (!s.chunk.empty()) {
      H5Pset_chunk(dcpl, static_cast<int>(s.chunk.size()), s.chunk.data());
      if (s.shuffle_fletcher) {
        H5Pset_shuffle(dcpl);
        H5Pset_fletcher32(dcpl);
        H5Pset_deflate(dcpl, 1);
      }
    } else if (s.compact) {
      H5Pset_layout(dcpl, H5D_COMPACT);
    }
    const hid_t d = H5Dcreate2(f, s.path.c_str(), s.file_type, space, lcpl, dcpl, H5P_DEFAULT);
    check(d >= 0, "cannot create " + file + ":" + s.path);
    if (s.write_data && !s.null_space && n > 0) {
      const auto v = values<double>(static_cast<std::size_t>(n));
      check(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0, "cannot write " + file);
    }
    if (string_attrs) {
      // A variable-length string and a space-padded fixed-length string array.
      const hid_t vstr = H5Tcopy(H5T_C_S1);
      H5Tset_size(vstr, H5T_VARIABLE);
      const hid_t one = H5Screate(H5S_SCALAR);
      const hid_t a1 = H5Acreate2(d, "note", vstr, one, H5P_DEFAULT, H5P_DEFAULT);
      const char* text = "variable-length";
      H5Awrite(a1, vstr, &text);
      H5Aclose(a1);
      const hid_t fstr = H5Tcopy(H5T_C_S1);
      H5Tset_size(fstr, 4);
      H5Tset_strpad(fstr, H5T_STR_SPACEPAD);
      const hsize_t two = 2;
      const hid_t pair = H5Screate_simple(1, &two, nullptr);
      const hid_t a2 = H5Acreate2(d, "tags", fstr, pair, H5P_DEFAULT, H5P_DEFAULT);
      H5Awrite(a2, fstr, "ab  cd  ");
      H5Aclose(a2);
      const hid_t a3 = H5Acreate2(d, "counts", H5T_STD_U16BE, pair, H5P_DEFAULT, H5P_DEFAULT);
      const unsigned short counts[2] = {7, 65535};
      H5Awrite(a3, H5T_NATIVE_USHORT, counts);
      H5Aclose(a3);
      H5Sclose(pair);
      H5Sclose(one);
      H5Tclose(fstr);
      H5Tclose(vstr);
    }
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(space);
  }
  H5Pclose(lcpl);
  H5Pclose(fapl);
  check(H5Fclose(f) >= 0, "cannot close " + file);
}

void write_text(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary);
  out << text;
  check(static_cast<bool>(out), "cannot write " + file.string());
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_seeds DIR\n");
    return 2;
  }
  const fs::path dir = argv[1];
  const fs::path h5 = dir / "hdf5_input";
  const fs::path opt = dir / "options";
  fs::create_directories(h5);
  fs::create_directories(opt);
  const auto at = [&](const char* name) { return (h5 / name).string(); };

  // tessera's own writer: contiguous with attributes, chunked, gzip.
  write_with_tessera(at("contiguous-f64.h5"), "/A", 4, 3, DType::f64, {}, true);
  WriteOptions chunked;
  chunked.chunk = {2, 3};
  write_with_tessera(at("chunked-f32.h5"), "/A", 5, 7, DType::f32, chunked, false);
  WriteOptions gzip;
  gzip.chunk = {3, 3};
  gzip.gzip_level = 4;
  write_with_tessera(at("gzip-f64.h5"), "/x", 6, 6, DType::f64, gzip, false);

  // The C API: what tessera reads but never writes.
  RawDataset i32;
  i32.file_type = H5T_STD_I32LE;
  write_raw(at("int32.h5"), {i32});
  RawDataset u8;
  u8.path = "/x";
  u8.file_type = H5T_STD_U8LE;
  u8.dims = {2, 5};
  write_raw(at("uint8.h5"), {u8});
  RawDataset be;
  be.file_type = H5T_IEEE_F64BE;
  be.dims = {2, 2};
  write_raw(at("f64-big-endian.h5"), {be}, true);
  RawDataset cube;
  cube.dims = {2, 2, 2};
  write_raw(at("3d.h5"), {cube});
  RawDataset compact;
  compact.compact = true;
  compact.dims = {2, 3};
  write_raw(at("compact.h5"), {compact});
  RawDataset filters;
  filters.file_type = H5T_IEEE_F32LE;
  filters.dims = {4, 4};
  filters.chunk = {2, 4};
  filters.shuffle_fletcher = true;
  filters.latest_format = true;  // superblock v2/v3, new-style object headers and chunk indexes
  write_raw(at("latest-shuffle-fletcher.h5"), {filters});
  RawDataset nested;
  nested.path = "/group/sub/M";
  nested.dims = {3, 2};
  RawDataset scalar;
  scalar.path = "/x";
  scalar.scalar = true;
  RawDataset null_space;
  null_space.path = "/A";
  null_space.null_space = true;
  write_raw(at("groups-scalar-null.h5"), {nested, scalar, null_space});
  RawDataset empty;
  empty.dims = {0, 5};
  empty.chunk = {1, 5};
  RawDataset u16;
  u16.path = "/x";
  u16.file_type = H5T_STD_U16LE;
  u16.dims = {1, 1};
  write_raw(at("zero-rows.h5"), {empty, u16});
  // A header may claim any shape: 2^40 x 2^40, chunked, nothing stored (reads give the fill value).
  RawDataset huge;
  huge.dims = {hsize_t{1} << 40, hsize_t{1} << 40};
  huge.chunk = {1, 1};
  huge.write_data = false;
  write_raw(at("huge-dims.h5"), {huge});

  // fuzz_options: first byte selects the mode (0 argv lines, 1 TOML, 2 single strings).
  write_text(opt / "argv-minimal.txt", std::string("\x00", 1) + "run\n--a\na.h5:/A\n--b\nb.h5:/B\n--c\nc.h5:/C\n");
  write_text(opt / "argv-all.txt",
             std::string("\x00", 1) +
                 "run\n--a=in.h5:/g/A\n--b\nin.h5:/B\n--c\nout.h5:/C\n--grid\n2x3\n--backend\ncpu\n--kernel\n"
                 "cpu-tiled\n--dtype\nf32\n--baseline\ncpu-naive\n--overwrite\n-q\n--verify\n--allow-nonfinite\n"
                 "--report\nr.json\n");
  write_text(opt / "argv-generate.txt", std::string("\x00", 1) +
                                            "generate\n--out\ng.h5:/A\n--rows\n17\n--cols\n4\n--chunk\n4x2\n"
                                            "--gzip\n3\n--dtype\nf64\n--low\n-2.5\n--high\n1e3\n");
  write_text(opt / "toml-demo.txt", std::string("\x01", 1) +
                                        "# demo\n[run]\na = \"demo/a.h5:/A\"\nb = \"demo/b.h5:/B\"\n"
                                        "c = \"demo/c.h5:/C\"\nreport = \"demo/report.json\"\nbackend = \"auto\"\n"
                                        "kernel = \"auto\"\noverwrite = true\ngrid = \"1x2\"\n");
  write_text(opt / "toml-quoted.txt", std::string("\x01", 1) +
                                          "[run]\na = 'x:y.h5:/A'\nb = \"\"\"b.h5:/B\"\"\"\nc = \"c.h5:/C\" # out\n"
                                          "dtype = f64\nverify = false\n[run.extra]\nkey = [1, 2]\n");
  write_text(opt / "grid.txt", std::string("\x02", 1) + "12x7");
  write_text(opt / "grid-huge.txt", std::string("\x02", 1) + "999999x999999");  // int overflow before the fix
  write_text(opt / "dataset-ref.txt", std::string("\x02", 1) + "dir/file:with:colons.h5:/group/A");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "make_fuzz_seeds: %s\n", e.what());
  return 1;
}
