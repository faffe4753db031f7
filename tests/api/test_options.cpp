// tessera::Options, Result and Plan (include/tessera/tessera.hpp) through the public header alone,
// linked against libtessera as a program is: the defaults, the typed setters, every option by
// its `tessera run` name, the refusals of set(), copies, and empty results. No MPI job needed.
#include <tessera/tessera.hpp>

#include <catch2/catch_test_macros.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <utility>

TEST_CASE("Options start with tessera run's defaults, quiet and without progress", "[api]") {
  const tessera::Options o;
  CHECK(o.get("quiet") == "true");
  CHECK(o.get("progress") == "off");
  for (const char* name : {"backend", "kernel", "dtype", "algorithm", "comm", "write"}) CHECK(o.get(name) == "auto");
  CHECK(o.get("alpha") == "1");
  CHECK(o.get("beta") == "0");
  CHECK(o.get("repeat") == "1");
  CHECK(o.get("warmup") == "");  // not given: 1 with repeat > 1, else 0
  CHECK(o.get("transpose-a") == "false");
  CHECK(o.get("a") == "");
}

TEST_CASE("The typed setters chain and set what their names get", "[api]") {
  tessera::Options o;
  o.a("a.h5:/A").b("b.h5:/B").c("c.h5:/C").transpose_a().alpha(2.5).beta(-1).overwrite().repeat(3).warmup(0);
  o.shape(10, 20, 30).write("gather").machine("default").panel_width(512).log_level("info");
  CHECK(o.get("a") == "a.h5:/A");
  CHECK(o.get("transpose-a") == "true");
  CHECK(o.get("transpose-b") == "false");
  CHECK(o.get("alpha") == "2.5");
  CHECK(o.get("beta") == "-1");
  CHECK(o.get("overwrite") == "true");
  CHECK(o.get("repeat") == "3");
  CHECK(o.get("warmup") == "0");
  CHECK(o.get("m") == "10");
  CHECK(o.get("k") == "30");
  CHECK(o.get("write") == "gather");
  CHECK(o.get("panel-width") == "512");
  CHECK(o.get("log-level") == "info");
}

TEST_CASE("Every option can be set by its name and reads back", "[api]") {
  // A value for each name: a name added to Options without one here fails this test.
  const std::map<std::string, std::string> sample = {{"a", "x.h5:/A"},
                                                     {"b", "x.h5:/B"},
                                                     {"c", "y.h5:/C"},
                                                     {"keep-going", "true"},
                                                     {"report", "r.json"},
                                                     {"algorithm", "summa"},
                                                     {"comm", "host"},
                                                     {"panel-width", "256"},
                                                     {"grid", "2x3"},
                                                     {"backend", "cpu"},
                                                     {"kernel", "openblas"},
                                                     {"dtype", "f64"},
                                                     {"baseline", "cpu-naive"},
                                                     {"overwrite", "true"},
                                                     {"quiet", "false"},
                                                     {"verify", "true"},
                                                     {"allow-nonfinite", "true"},
                                                     {"fail-on-nonfinite", "true"},
                                                     {"progress", "on"},
                                                     {"gpu-memory", "8G"},
                                                     {"write", "in-place"},
                                                     {"chunk", "64x128"},
                                                     {"compression", "gzip"},
                                                     {"c-dtype", "f16"},
                                                     {"compression-level", "6"},
                                                     {"shuffle", "true"},
                                                     {"machine", "h200-2gpu"},
                                                     {"transpose-a", "true"},
                                                     {"transpose-b", "true"},
                                                     {"alpha", "0.5"},
                                                     {"beta", "2"},
                                                     {"alpha-imag", "1.5"},
                                                     {"beta-imag", "-0.25"},
                                                     {"conjugate-a", "true"},
                                                     {"conjugate-b", "true"},
                                                     {"repeat", "4"},
                                                     {"warmup", "2"},
                                                     {"timeout", "60"},
                                                     {"m", "7"},
                                                     {"n", "8"},
                                                     {"k", "9"},
                                                     {"ranks", "16"},
                                                     {"ranks-per-node", "4"},
                                                     {"log-level", "debug"}};
  tessera::Options o;
  for (const auto& name : tessera::Options::names()) {
    INFO("option " << name);
    REQUIRE(sample.count(name) == 1);
    o.set(name, sample.at(name));
    CHECK(o.get(name) == sample.at(name));
  }
  CHECK(tessera::Options::names().size() == sample.size());
}

TEST_CASE("set() and get() refuse unknown names and values of the wrong type", "[api]") {
  tessera::Options o;
  CHECK_THROWS_AS(o.set("no-such-option", "1"), std::invalid_argument);
  CHECK_THROWS_AS(o.get("no-such-option"), std::invalid_argument);
  CHECK_THROWS_AS(o.set("alpha", "x"), std::invalid_argument);
  CHECK_THROWS_AS(o.set("alpha", "inf"), std::invalid_argument);
  CHECK_THROWS_AS(o.set("alpha", ""), std::invalid_argument);
  CHECK_THROWS_AS(o.set("repeat", "1.5"), std::invalid_argument);
  CHECK_THROWS_AS(o.set("panel-width", "-1"), std::invalid_argument);
  CHECK_THROWS_AS(o.set("overwrite", "maybe"), std::invalid_argument);
  CHECK(o.get("alpha") == "1");  // a refused value changes nothing
}

TEST_CASE("Options copy and move as values", "[api]") {
  tessera::Options o;
  o.a("first.h5:/A");
  tessera::Options copy = o;
  copy.a("second.h5:/A");
  CHECK(o.get("a") == "first.h5:/A");
  tessera::Options moved = std::move(copy);
  CHECK(moved.get("a") == "second.h5:/A");
  o = moved;
  CHECK(o.get("a") == "second.h5:/A");
}

TEST_CASE("An empty Result and Plan read as zero and empty", "[api]") {
  const tessera::Result r;
  CHECK(r.json().empty());
  CHECK(r.seconds() == 0);
  CHECK(r.m() == 0);
  CHECK(r.ranks() == 0);
  CHECK(r.algorithm().empty());
  CHECK(r.phase_names(0).empty());
  CHECK(r.phase_seconds(0, "compute") == 0);
  const tessera::Plan p;
  CHECK(p.text().empty());
  CHECK(p.grid_rows() == 0);
  CHECK(p.settings_json().empty());
}

TEST_CASE("every choice, shape and size is refused where it is set, naming the words it takes", "[api]") {
  // Issue 41: the same table and checks as the command line (src/job/run_options.cpp).
  tessera::Options o;
  for (const char* name :
       {"backend", "kernel", "baseline", "algorithm", "dtype", "comm", "write", "progress", "grid", "gpu-memory"}) {
    INFO("option " << name);
    const std::string before = o.get(name);
    CHECK_THROWS_AS(o.set(name, "bogus"), std::invalid_argument);
    CHECK(o.get(name) == before);  // a refused value changes nothing
  }
  CHECK_THROWS_AS(o.backend("gpu"), std::invalid_argument);
  CHECK_THROWS_AS(o.kernel("nope"), std::invalid_argument);
  CHECK_THROWS_AS(o.grid("2y2"), std::invalid_argument);
  CHECK_THROWS_AS(o.repeat(0), std::invalid_argument);
  try {
    o.algorithm("sumaa");
    FAIL("algorithm sumaa was taken");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("'sumaa' is not one of: auto, panels, summa, ksplit (did you mean 'summa'?)") != std::string::npos);
  }
  // "" stands for auto (for off in progress), "auto" for no grid; the other spelling of a name is read.
  o.backend("").kernel("cpu-tiled").grid("auto").set("panel_width", "64");
  CHECK(o.get("backend") == "auto");
  CHECK(o.get("kernel") == "cpu-tiled");
  CHECK(o.get("grid") == "");
  CHECK(o.get("panel-width") == "64");
}
