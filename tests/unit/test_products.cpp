// Unit tests of many products per launch's naming (issue 42): io/dataset_pattern (wildcard levels
// matched against the groups a file holds, in name order; only datasets at the last level) and
// job/products (A's matches, B shared or named by A's words, C named by them; the refusals).
#include <hdf5.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/dataset_pattern.hpp"
#include "job/products.hpp"

#include "temp_dir.hpp"

using Catch::Matchers::ContainsSubstring;
using tessera::InputError;
using tessera::io::DatasetRef;
using tessera::job::expand_products;

namespace {

// A file holding a 2x3 float64 dataset at each of `datasets` and an empty group at each of `groups`
// (parents created as needed).
void make_file(const std::string& file, const std::vector<std::string>& datasets,
               const std::vector<std::string>& groups = {}) {
  const hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(f >= 0);
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  for (const auto& g : groups) H5Gclose(H5Gcreate2(f, g.c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT));
  const hsize_t dims[2] = {2, 3};
  const double values[6] = {1, 2, 3, 4, 5, 6};
  for (const auto& d : datasets) {
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t dset = H5Dcreate2(f, d.c_str(), H5T_IEEE_F64LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(dset >= 0);
    H5Dwrite(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
    H5Dclose(dset);
    H5Sclose(space);
  }
  H5Pclose(lcpl);
  H5Fclose(f);
}

}  // namespace

TEST_CASE("a wildcard level matches the datasets in name order, with the words it took", "[products]") {
  tessera::test::TempDir dir;
  const std::string in = dir.file("in.h5");
  make_file(in, {"/runs/r2/A", "/runs/r10/A", "/runs/r1/A", "/runs/r1/B", "/other/A", "/runs/x/A"},
            {"/runs/empty", "/runs/r3/A"});  // r3/A is a group, not a dataset
  const auto m = tessera::io::match_datasets(DatasetRef::parse(in + ":/runs/r*/A"));
  REQUIRE(m.size() == 3);
  CHECK(m[0].ref.path == "/runs/r1/A");
  CHECK(m[1].ref.path == "/runs/r10/A");
  CHECK(m[2].ref.path == "/runs/r2/A");
  CHECK(m[0].words == std::vector<std::string>{"r1"});
  const auto two = tessera::io::match_datasets(DatasetRef::parse(in + ":/*/*"));
  REQUIRE(two.size() == 1);  // /other/A; /runs/* are groups at the last level
  CHECK(two[0].words == std::vector<std::string>{"other", "A"});
  CHECK(tessera::io::match_datasets(DatasetRef::parse(in + ":/nothing/*/A")).empty());
  CHECK(tessera::io::match_datasets(DatasetRef::parse(in + ":/runs/r1/A")).size() == 1);
  CHECK(tessera::io::expand_like(DatasetRef::parse("o.h5:/out/*/C"), {"r7"}).path == "/out/r7/C");
  CHECK(tessera::io::wildcard_levels("/a/*/b/r[12]/c?") == 3);
}

TEST_CASE("products: one without wildcards, one per match with a shared or matching B", "[products]") {
  tessera::test::TempDir dir;
  const std::string in = dir.file("in.h5"), out = dir.file("out.h5");
  make_file(in, {"/runs/a/A", "/runs/a/B", "/runs/b/A", "/runs/b/B", "/shared"});

  const auto one = expand_products(in + ":/runs/a/A", in + ":/runs/a/B", out + ":/C");
  REQUIRE(one.size() == 1);
  CHECK(one[0].c == out + ":/C");

  const auto many = expand_products(in + ":/runs/*/A", in + ":/runs/*/B", out + ":/res/*/C");
  REQUIRE(many.size() == 2);
  CHECK(many[0].a == in + ":/runs/a/A");
  CHECK(many[0].b == in + ":/runs/a/B");
  CHECK(many[0].c == out + ":/res/a/C");
  CHECK(many[1].c == out + ":/res/b/C");

  const auto shared = expand_products(in + ":/runs/*/A", in + ":/shared", out + ":/*");
  REQUIRE(shared.size() == 2);
  CHECK(shared[1].b == in + ":/shared");
  CHECK(shared[1].c == out + ":/b");
}

TEST_CASE("products: what cannot name one C per product is refused by option", "[products]") {
  tessera::test::TempDir dir;
  const std::string in = dir.file("in.h5"), out = dir.file("out.h5");
  make_file(in, {"/runs/a/A", "/runs/a/B", "/runs/b/A"});
  CHECK_THROWS_WITH(expand_products(in + ":/runs/*/A", in + ":/runs/*/B", out + ":/C"),
                    ContainsSubstring("--c") && ContainsSubstring("0 wildcard levels"));
  CHECK_THROWS_WITH(expand_products(in + ":/runs/a/A", in + ":/runs/*/B", out + ":/*/C"),
                    ContainsSubstring("--b") && ContainsSubstring("--a names one dataset"));
  CHECK_THROWS_WITH(expand_products(in + ":/none/*/A", in + ":/runs/a/B", out + ":/*/C"),
                    ContainsSubstring("matches no dataset"));
  // runs/b has an A but no B: named, with the A it was for.
  CHECK_THROWS_WITH(expand_products(in + ":/runs/*/A", in + ":/runs/*/B", out + ":/*/C"),
                    ContainsSubstring("/runs/b/B") && ContainsSubstring("/runs/b/A") &&
                        ContainsSubstring("is not a dataset"));
  CHECK_THROWS_AS(expand_products(dir.file("missing.h5") + ":/*/A", in + ":/B", out + ":/*/C"), InputError);
}
