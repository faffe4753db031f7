// Unit tests of a dataset's window in its reference (io/hdf5_io.hpp's Slice, issue 43 item 3):
// numpy's bounds (left out, negative), written back the same, placed in the dataset by resolve();
// steps, single indices and bounds outside the dataset refused; a bracket that is no window stays
// in the name.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "core/error.hpp"
#include "io/hdf5_io.hpp"

using Catch::Matchers::ContainsSubstring;
using tessera::InputError;
using tessera::io::DatasetRef;
using tessera::io::resolve;

TEST_CASE("a window after the dataset path is read, written back and placed", "[slice]") {
  const DatasetRef r = DatasetRef::parse("in.h5:/A[10:20, 3:]");
  CHECK(r.file == "in.h5");
  CHECK(r.path == "/A");
  REQUIRE(r.slice);
  CHECK(r.slice->text == "[10:20, 3:]");
  CHECK(r.str() == "in.h5:/A[10:20, 3:]");
  CHECK(DatasetRef::parse(r.text()).str() == r.str());
  const auto w = resolve(*r.slice, 100, 50, "A");
  CHECK(w.row0 == 10);
  CHECK(w.rows == 10);
  CHECK(w.col0 == 3);
  CHECK(w.cols == 47);

  const auto neg = resolve(*DatasetRef::parse("f.h5:/g/B[-5:, :-1]").slice, 30, 8, "B");
  CHECK(neg.row0 == 25);
  CHECK(neg.rows == 5);
  CHECK(neg.col0 == 0);
  CHECK(neg.cols == 7);
  CHECK(DatasetRef::parse("f.h5:/g/B[:,:]").slice->text == "[:, :]");
  CHECK(DatasetRef::parse("f.h5:/B [0:1,0:1]").path == "/B");
}

TEST_CASE("a bracket that is no window is part of the name", "[slice]") {
  CHECK(DatasetRef::parse("f.h5:/run[a]").path == "/run[a]");
  CHECK(DatasetRef::parse("f.h5:/run[3x]").path == "/run[3x]");  // neither a window nor an index: a name
  CHECK(DatasetRef::parse("f.h5:/x[1:2]/A").path == "/x[1:2]/A");  // not at the end
}

TEST_CASE("one matrix of a 3-D dataset is named by its index, with or without a window", "[slice]") {
  const DatasetRef r = DatasetRef::parse("in.h5:/batch/A[3]");
  CHECK(r.path == "/batch/A");
  REQUIRE(r.slice);
  CHECK(r.slice->index == 3);
  CHECK_FALSE(r.slice->row_begin);
  CHECK(r.str() == "in.h5:/batch/A[3]");
  const DatasetRef w = DatasetRef::parse("in.h5:/A[-1, 0:10, 2:]");
  CHECK(w.slice->index == -1);
  CHECK(w.slice->text == "[-1, 0:10, 2:]");
  CHECK(DatasetRef::parse(w.text()).str() == w.str());
  CHECK(tessera::io::resolve_index(*w.slice, 5, "A") == 4);
  CHECK(tessera::io::resolve_index(*r.slice, 5, "A") == 3);
  CHECK_THROWS_WITH(tessera::io::resolve_index(*r.slice, 3, "A"), ContainsSubstring("holds 3 matrices (0 to 2)"));
  CHECK_THROWS_WITH(DatasetRef::parse("f.h5:/A[1, 2, 3]"), ContainsSubstring("single index"));
  CHECK_THROWS_WITH(DatasetRef::parse("f.h5:/A[1, 0:2]"), ContainsSubstring("single index"));
}

TEST_CASE("steps, single indices, one axis and bounds outside the dataset are refused", "[slice]") {
  CHECK_THROWS_WITH(DatasetRef::parse("f.h5:/A[0:10:2, :]"), ContainsSubstring("step"));
  CHECK_THROWS_WITH(DatasetRef::parse("f.h5:/A[3, :]"), ContainsSubstring("single index"));
  CHECK_THROWS_WITH(DatasetRef::parse("f.h5:/A[0:3]"), ContainsSubstring("rows and columns"));
  CHECK_THROWS_WITH(DatasetRef::parse("f.h5:/A[0:3, 1:2, :]"), ContainsSubstring("rows and columns"));
  const auto s = *DatasetRef::parse("f.h5:/A[0:101, :]").slice;
  CHECK_THROWS_WITH(resolve(s, 100, 5, "A"), ContainsSubstring("outside 0:100"));
  CHECK_THROWS_WITH(resolve(*DatasetRef::parse("f.h5:/A[5:5, :]").slice, 100, 5, "A"), ContainsSubstring("empty"));
  CHECK_THROWS_WITH(resolve(*DatasetRef::parse("f.h5:/A[:, -9:]").slice, 100, 5, "A"),
                    ContainsSubstring("columns -4:5"));
  CHECK_THROWS_AS(resolve(*DatasetRef::parse("f.h5:/A[7:3, :]").slice, 100, 5, "A"), InputError);
}
