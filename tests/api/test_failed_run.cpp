// tessera::multiply after a failed run (issue 40): before it throws, rank 0 runs the recovery of
// the output file, as `tessera recover` does, and the MultiplyError says what it found. Through
// the public header and libtessera, under mpirun on one rank:
//   - a write into an existing file fails (TESSERA_TEST_FAIL_AT_WRITE, a full disk): the error
//     says the file needed no restoring, and the file is byte for byte as it was, no journal left;
//   - an earlier run killed mid-write (the tessera binary, TESSERA_TEST_KILL_AT_WRITE) left a
//     journal: a failed multiply on that output restores the file from it and says so;
//   - an output file that does not exist: said, nothing restored.
#include <hdf5.h>
#include <mpi.h>
#include <tessera/tessera.hpp>

#include <catch2/catch_test_macros.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::string temp_folder() {
  static std::string dir;
  if (dir.empty()) {
    char name[] = "/tmp/tessera-api-failed-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    dir = name;
  }
  return dir;
}

void write_matrix(const std::string& file, const char* name, hsize_t rows, hsize_t cols, unsigned create) {
  const hid_t f = create != 0 ? H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)
                              : H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(f >= 0);
  const hsize_t dims[2] = {rows, cols};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  const hid_t d = H5Dcreate2(f, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<double> values(rows * cols);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25 * static_cast<double>(i % 7) - 0.5;
  REQUIRE(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
  H5Dclose(d);
  H5Sclose(space);
  H5Fclose(f);
}

std::string bytes_of(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool exists(const std::string& file) { return std::ifstream(file).good(); }

// Inputs A (6x5), B (5x4) and an existing output file holding /keep; its bytes.
std::string make_files(const std::string& out) {
  const std::string dir = temp_folder();
  write_matrix(dir + "/a.h5", "/A", 6, 5, 1);
  write_matrix(dir + "/b.h5", "/B", 5, 4, 1);
  write_matrix(out, "/keep", 3, 3, 1);
  return bytes_of(out);
}

tessera::Options options(const std::string& out) {
  tessera::Options o;
  const std::string dir = temp_folder();
  o.a(dir + "/a.h5:/A").b(dir + "/b.h5:/B").c(out + ":/C").backend("cpu");
  return o;
}

}  // namespace

TEST_CASE("A failed write into an existing file: the error says it needed no restoring", "[api][recovery]") {
  const std::string out = temp_folder() + "/out.h5";
  const std::string before = make_files(out);
  // Read once by the io layer, at its first write: the third write tessera makes fails (ENOSPC).
  ::setenv("TESSERA_TEST_FAIL_AT_WRITE", "3", 1);
  bool threw = false;
  try {
    tessera::multiply(options(out), MPI_COMM_WORLD);
  } catch (const tessera::MultiplyError& e) {
    threw = true;
    INFO(e.what());
    CHECK(e.agreed());
    CHECK_FALSE(e.output_restored());
    CHECK(e.recovery().find("needed no restoring") != std::string::npos);
    CHECK(e.recovery().find(out) != std::string::npos);
    CHECK(std::string(e.what()).find(e.recovery()) != std::string::npos);
  }
  ::unsetenv("TESSERA_TEST_FAIL_AT_WRITE");
  CHECK(threw);
  CHECK(bytes_of(out) == before);
  CHECK_FALSE(exists(out + ".tessera-journal"));
}

TEST_CASE("A journal a killed run left is applied when multiply fails, and the error says so", "[api][recovery]") {
  const std::string out = temp_folder() + "/killed.h5";
  const std::string before = make_files(out);
  // The tessera binary, started alone with a clean environment (not as a rank of this job),
  // killed before its third write into the file: the journal stays beside it.
  const std::string dir = temp_folder();
  const std::string command = "env -i PATH=/usr/bin:/bin TESSERA_TEST_KILL_AT_WRITE=3 " + std::string(TESSERA_BINARY) +
                              " run --a " + dir + "/a.h5:/A --b " + dir + "/b.h5:/B --c " + out +
                              ":/C --backend cpu -q >/dev/null 2>&1";
  CHECK(std::system(command.c_str()) != 0);
  REQUIRE(exists(out + ".tessera-journal"));
  bool threw = false;
  try {
    tessera::Options o = options(out);
    o.a("");  // refused before the job starts: the failure of a pipeline's next step
    tessera::multiply(o, MPI_COMM_WORLD);
  } catch (const tessera::MultiplyError& e) {
    threw = true;
    INFO(e.what());
    CHECK(e.output_restored());
    CHECK(e.recovery().find("was restored from the run's journal") != std::string::npos);
    CHECK(std::string(e.what()).find("Options a is empty") != std::string::npos);
  }
  CHECK(threw);
  CHECK(bytes_of(out) == before);
  CHECK_FALSE(exists(out + ".tessera-journal"));
}

TEST_CASE("A failed run whose output file does not exist says so", "[api][recovery]") {
  const std::string out = temp_folder() + "/never.h5";
  make_files(temp_folder() + "/other.h5");
  tessera::Options o = options(out);
  o.a(temp_folder() + "/missing.h5:/A");
  try {
    tessera::multiply(o, MPI_COMM_WORLD);
    FAIL("multiply did not fail");
  } catch (const tessera::MultiplyError& e) {
    INFO(e.what());
    CHECK_FALSE(e.output_restored());
    CHECK(e.recovery().find("does not exist") != std::string::npos);
  }
  CHECK_FALSE(exists(out));
}
