// Unit tests of C written as a new dataset of an existing HDF5 file (io/dataset_in_file.hpp,
// MatrixWriter with ExistingFile::add_dataset): what else the file holds is kept, --overwrite
// replaces the dataset alone, refusals come from the constructor, nothing is left behind by a
// writer that never commits, a dead run's leftover is removed by the next, and every rank can
// write its rows in place. Attributes are variable-length UTF-8 strings, as h5py writes str.
#include <unistd.h>

#include <hdf5.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/cleanup.hpp"
#include "io/direct_io.hpp"
#include "io/hdf5_io.hpp"
#include "io/journal.hpp"

#include "temp_dir.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::ContainsSubstring;
using tessera::DType;
using tessera::InputError;
using tessera::io::Attribute;
using tessera::io::DatasetRef;
using tessera::io::MatrixWriter;
using tessera::io::WriteOptions;

namespace {

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

struct TempDir : tessera::test::TempDir {
  TempDir() : tessera::test::TempDir("tessera-infile-test") {}
};

// A file as other tools leave it: a dataset with an attribute, a group holding another dataset.
void make_existing(const std::string& name) {
  const hid_t f = H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(f >= 0);
  const hsize_t dims[2] = {3, 4};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  std::vector<double> v(12);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) * 1.5;
  for (const char* path : {"/other", "/grp/inner"}) {
    const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    const hid_t d = H5Dcreate2(f, path, H5T_IEEE_F64LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(d >= 0);
    REQUIRE(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0);
    const hid_t as = H5Screate(H5S_SCALAR);
    const int units = 7;
    const hid_t a = H5Acreate2(d, "units", H5T_STD_I32LE, as, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT, &units);
    H5Aclose(a);
    H5Sclose(as);
    H5Dclose(d);
    H5Pclose(lcpl);
  }
  H5Sclose(space);
  H5Fclose(f);
}

std::vector<double> read_all(const DatasetRef& ref, std::int64_t rows, std::int64_t cols) {
  std::vector<double> out(static_cast<std::size_t>(rows * cols));
  tessera::io::read_block(ref, 0, rows, 0, cols, DType::f64, out.data());
  return out;
}

// The root group's links, in name order.
std::vector<std::string> root_links(const std::string& name) {
  std::vector<std::string> names;
  const hid_t f = H5Fopen(name.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(f >= 0);
  hsize_t idx = 0;
  H5Literate(
      f, H5_INDEX_NAME, H5_ITER_INC, &idx,
      [](hid_t, const char* n, const H5L_info_t*, void* data) -> herr_t {
        static_cast<std::vector<std::string>*>(data)->emplace_back(n);
        return 0;
      },
      &names);
  H5Fclose(f);
  return names;
}

void write_c(const DatasetRef& ref, std::int64_t rows, std::int64_t cols, double base, bool overwrite = false) {
  WriteOptions o;
  o.overwrite = overwrite;
  MatrixWriter w(ref, rows, cols, DType::f64, o);
  std::vector<double> m(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = base + static_cast<double>(i);
  w.write_block(0, 0, rows, cols, m.data());
  w.set_attributes({Attribute::of("algorithm", "panels"), Attribute::of("nranks", std::int64_t{2})});
  w.commit();
}

template <typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace

TEST_CASE("C becomes a new dataset of an existing file, groups made as needed", "[io][infile]") {
  TempDir dir;
  const std::string name = dir.file("data.h5");
  make_existing(name);
  const auto other = read_all({name, "/other"}, 3, 4);
  write_c({name, "/results/run1/C"}, 5, 3, 100);
  CHECK(dir.entries() == 1);  // no temporary file beside it
  CHECK(read_all({name, "/other"}, 3, 4) == other);
  CHECK(read_all({name, "/grp/inner"}, 3, 4) == other);
  const auto c = read_all({name, "/results/run1/C"}, 5, 3);
  CHECK(c[0] == 100);
  CHECK(c[14] == 114);
  CHECK(root_links(name) == std::vector<std::string>{"grp", "other", "results"});
  const auto attrs = tessera::io::read_attributes({name, "/other"});
  CHECK(attrs == std::vector<std::pair<std::string, std::string>>{{"units", "7"}});
}

TEST_CASE("an existing dataset is refused up front, replaced alone with overwrite", "[io][infile]") {
  TempDir dir;
  const std::string name = dir.file("data.h5");
  make_existing(name);
  write_c({name, "/C"}, 2, 2, 1);
  const auto size_before = fs::file_size(name);
  CHECK(message_of([&] {
          MatrixWriter w({name, "/C"}, 2, 2, DType::f64, {});
        }) == "output dataset '" + name +
                  ":/C' exists; pass --overwrite to replace it (that dataset only: the rest of the "
                  "file is kept)");
  CHECK(fs::file_size(name) == size_before);  // refused before anything was written
  CHECK(root_links(name) == std::vector<std::string>{"C", "grp", "other"});
  // A different shape replaces it; the siblings stay.
  write_c({name, "/C"}, 3, 5, 50, true);
  const auto c = read_all({name, "/C"}, 3, 5);
  CHECK(c.front() == 50);
  CHECK(tessera::io::inspect({name, "/C"}).cols == 5);
  CHECK(root_links(name) == std::vector<std::string>{"C", "grp", "other"});
  CHECK(read_all({name, "/other"}, 3, 4)[11] == 16.5);
}

TEST_CASE("what is in the way of C is refused by name", "[io][infile]") {
  TempDir dir;
  const std::string name = dir.file("data.h5");
  make_existing(name);
  WriteOptions ow;
  ow.overwrite = true;
  CHECK_THAT(message_of([&] {
               MatrixWriter w({name, "/grp"}, 2, 2, DType::f64, ow);
             }),
             ContainsSubstring("exists and is a group"));
  CHECK_THAT(message_of([&] {
               MatrixWriter w({name, "/other/C"}, 2, 2, DType::f64, ow);
             }),
             ContainsSubstring("'" + name + ":/other' is not a group"));
  {
    const hid_t f = H5Fopen(name.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(H5Lcreate_external("elsewhere.h5", "/x", f, "/ext", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    REQUIRE(H5Lcreate_soft("/other", f, "/soft", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    H5Fclose(f);
  }
  CHECK_THAT(message_of([&] {
               MatrixWriter w({name, "/ext/C"}, 2, 2, DType::f64, ow);
             }),
             ContainsSubstring("is an external link"));
  CHECK_THAT(message_of([&] {
               MatrixWriter w({name, "/soft"}, 2, 2, DType::f64, ow);
             }),
             ContainsSubstring("is a soft link"));
  std::ofstream(dir.file("notes.h5")) << "not hdf5";
  CHECK_THAT(message_of([&] {
               MatrixWriter w({dir.file("notes.h5"), "/C"}, 2, 2, DType::f64, ow);
             }),
             ContainsSubstring("exists and is not an HDF5 file"));
  WriteOptions chunked;  // chunks into a window of an existing dataset: its storage is its own
  chunked.chunk = {2, 2};
  chunked.overwrite = true;
  CHECK_THAT(message_of([&] {
               MatrixWriter w({name, "/C", tessera::io::parse_slice("0:2, 0:2")}, 2, 2, DType::f64, chunked);
             }),
             ContainsSubstring("takes no --chunk"));
  CHECK(root_links(name) == std::vector<std::string>{"ext", "grp", "other", "soft"});
}

TEST_CASE("a writer that never commits leaves the file as it was, byte for byte", "[io][infile]") {
  TempDir dir;
  const std::string name = dir.file("data.h5");
  make_existing(name);
  const std::string before = bytes_of(name);
  {
    MatrixWriter w({name, "/C"}, 4, 4, DType::f64, {});
    CHECK(w.temporary_path().empty());
    const auto links = root_links(name);  // the file is closed while the job computes
    REQUIRE(links.size() == 3);
    CHECK_THAT(links[0], ContainsSubstring("C.tessera-partial-"));
    CHECK(fs::exists(tessera::io::journal_path(name)));  // its journal, while the run lasts
    const std::vector<double> m(16, 2.0);
    w.write_block(0, 0, 4, 4, m.data());
  }
  CHECK(bytes_of(name) == before);
  CHECK(dir.entries() == 1);
}

TEST_CASE("every process writes its rows into the existing file in place", "[io][infile]") {
  TempDir dir;
  const std::string name = dir.file("data.h5");
  make_existing(name);
  MatrixWriter w({name, "/C"}, 6, 5, DType::f64, {});
  const tessera::io::DirectTarget t = w.direct_target();
  REQUIRE(t.valid());
  CHECK(t.file == name);
  {
    tessera::io::BlockFile other(t);  // another rank's handle
    const std::vector<double> rows(15, 3.0);
    other.write_block(3, 0, 3, 5, rows.data());
    other.sync();
  }
  const std::vector<double> mine(15, 1.0);
  w.write_block(0, 0, 3, 5, mine.data());
  w.commit();
  const auto c = read_all({name, "/C"}, 6, 5);
  CHECK(c[0] == 1.0);
  CHECK(c[29] == 3.0);
  CHECK(read_all({name, "/other"}, 3, 4)[1] == 1.5);
}

TEST_CASE("HDF5 writes the blocks into an existing file without direct I/O", "[io][infile]") {
  TempDir dir;
  const std::string name = dir.file("data.h5");
  make_existing(name);
  ::setenv("TESSERA_HDF5_DIRECT", "0", 1);
  {
    MatrixWriter w({name, "/C"}, 2, 3, DType::f64, {});
    CHECK_FALSE(w.direct_target().valid());
    const std::vector<double> a = {1, 2, 3}, b = {4, 5, 6};
    w.write_block(0, 0, 1, 3, a.data());
    w.write_block(1, 0, 1, 3, b.data());
    w.commit();
  }
  ::unsetenv("TESSERA_HDF5_DIRECT");
  CHECK(read_all({name, "/C"}, 2, 3) == std::vector<double>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("a dead run's temporary dataset is removed by the next writer, through its journal", "[io][infile]") {
  TempDir dir;
  const std::string name = dir.file("data.h5");
  make_existing(name);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string h(host);
  for (char& ch : h)
    if (ch == '-' || ch == '/') ch = '_';
  const std::string dead = "C.tessera-partial-" + h.substr(0, 64) + "-999999999";
  const std::string live = "D.tessera-partial-" + h.substr(0, 64) + "-" + std::to_string(::getpid());
  {
    const hid_t f = H5Fopen(name.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t g1 = H5Gcreate2(f, dead.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t g2 = H5Gcreate2(f, live.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g1);
    H5Gclose(g2);
    H5Fclose(f);
  }
  const std::string before = bytes_of(name);
  {  // a run that fails puts the leftover back with everything else
    MatrixWriter w({name, "/C"}, 1, 1, DType::f64, {});
    REQUIRE(w.notes().size() == 2);
  }
  CHECK(bytes_of(name) == before);
  MatrixWriter w({name, "/C"}, 1, 1, DType::f64, {});
  REQUIRE(w.notes().size() == 2);
  const std::string all = w.notes()[0] + "\n" + w.notes()[1];
  CHECK_THAT(all, ContainsSubstring("removed dataset '" + name + ":/" + dead + "'"));
  CHECK_THAT(all, ContainsSubstring("found dataset '" + name + ":/" + live + "'"));
  const double one = 1;
  w.write_block(0, 0, 1, 1, &one);
  w.commit();
  CHECK(root_links(name) == std::vector<std::string>{"C", live, "grp", "other"});
}

TEST_CASE("text attributes are variable-length UTF-8, as h5py writes str", "[io][attributes]") {
  TempDir dir;
  const std::string name = dir.file("c.h5");
  {
    MatrixWriter w({name, "/C"}, 1, 1, DType::f64, {});
    const double v = 1;
    w.write_block(0, 0, 1, 1, &v);
    w.set_attributes({Attribute::of("algorithm", "panels"), Attribute::of("note", "größe ✓")});
    w.commit();
  }
  const hid_t f = H5Fopen(name.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t d = H5Dopen2(f, "/C", H5P_DEFAULT);
  const hid_t a = H5Aopen(d, "algorithm", H5P_DEFAULT);
  const hid_t t = H5Aget_type(a);
  CHECK(H5Tget_class(t) == H5T_STRING);
  CHECK(H5Tis_variable_str(t) > 0);
  CHECK(H5Tget_cset(t) == H5T_CSET_UTF8);
  H5Tclose(t);
  H5Aclose(a);
  H5Dclose(d);
  H5Fclose(f);
  const auto attrs = tessera::io::read_attributes({name, "/C"});
  CHECK(attrs == std::vector<std::pair<std::string, std::string>>{{"algorithm", "panels"}, {"note", "größe ✓"}});
}

TEST_CASE("dataset references round trip through text() and absolute()", "[io]") {
  for (const DatasetRef& ref : {DatasetRef{"a.h5", "/A"}, DatasetRef{"x:/y.h5", "/run:/A"},
                                DatasetRef{"back\\", "/p\\:/q"}, DatasetRef{"f:", "/g\\\\h"}}) {
    const DatasetRef back = DatasetRef::parse(ref.text());
    CHECK(back.file == ref.file);
    CHECK(back.path == ref.path);
  }
  CHECK(DatasetRef{"a.h5", "/A"}.text() == "a.h5:/A");
  const DatasetRef abs = DatasetRef{"sub/../a.h5", "/A"}.absolute();
  CHECK(abs.file == (fs::current_path() / "a.h5").string());
  CHECK(abs.path == "/A");
}
