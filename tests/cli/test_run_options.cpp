// The table of run options (src/job/run_options.hpp) and what derives from it, in-process: a row
// registered here, of the tests' own (as tests/job/one_rank.cpp registers an algorithm), reaches
// the command line, the config file's [run] keys, --help-json, the bash completion and the
// report's typed options with nothing else written for it; every choice of the table refuses a
// bad word at parse, in a config file and in the table's own set_value (libtessera's set), with
// the allowed words; a config file's every error is reported.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>

#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "cli/completion.hpp"
#include "cli/config_toml.hpp"
#include "cli/help_json.hpp"
#include "cli/options.hpp"
#include "core/words.hpp"
#include "job/run_options.hpp"

namespace {

using tessera::job::OptionKind;
using tessera::job::RunOption;

// The one row that adds the tests' option: its use is the checks below.
const tessera::job::RunOptionRegistration kFlavour{[] {
  RunOption row;
  row.name = "test-flavour";
  row.kind = OptionKind::choice;
  row.help = "a test-only option (tests/cli/test_run_options.cpp)";
  row.choices = [] { return std::vector<std::string>{"sweet", "sour"}; };
  return row;
}()};

// tessera's command line, as main.cpp builds it.
struct Cli {
  CLI::App app{"tessera", "tessera"};
  tessera::cli::Commands c;
  Cli() { tessera::cli::add_commands(app, c); }
  void parse(const std::string& line) { app.parse(line, false); }
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string parse_error(const std::string& line) {
  Cli cli;
  try {
    cli.parse(line);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a registered row is a run option everywhere with nothing else written for it", "[cli][options]") {
  Cli cli;
  cli.parse("run --dry-run --test-flavour sour");
  CHECK(cli.c.ro.extra.at("test-flavour") == "sour");
  CHECK(tessera::job::typed_options(cli.c.ro).at("test-flavour") == "sour");

  CHECK(
      contains(parse_error("run --test-flavour sweat"), "'sweat' is not one of: sweet, sour (did you mean 'sweet'?)"));

  const auto settings = tessera::cli::parse_config("[run]\ntest-flavour = \"sweet\"\n", "t.toml", cli.c.schema);
  REQUIRE(settings.size() == 1);
  CHECK(tessera::cli::show_lines(settings) == "run.test-flavour=sweet\n");
  CHECK_THROWS_WITH(tessera::cli::parse_config("[run]\ntest-flavour = \"bitter\"\n", "t.toml", cli.c.schema),
                    "t.toml:2: run.test-flavour: 'bitter' is not one of: sweet, sour");

  nlohmann::json allowed;
  const nlohmann::json doc = tessera::cli::describe_command(*cli.c.r);
  for (const auto& o : doc["options"])
    if (o["name"] == "test-flavour") allowed = o["allowed"];
  CHECK(allowed.dump() == R"(["sweet","sour"])");
  CHECK(contains(tessera::cli::bash_completion(cli.app), "\"run --test-flavour\") echo \"sweet sour\""));

  tessera::job::RunOptions o;
  const RunOption* row = tessera::job::find_run_option("test-flavour");
  REQUIRE(row != nullptr);
  tessera::job::set_value(o, *row, "sweet");
  CHECK(o.extra.at("test-flavour") == "sweet");
  CHECK_THROWS_AS(tessera::job::set_value(o, *row, "salty"), tessera::job::OptionError);
}

TEST_CASE("every choice, shape and size of the table refuses a bad value where it is typed", "[cli][options]") {
  int checked = 0;
  for (const RunOption& row : tessera::job::run_options()) {
    if (row.kind != OptionKind::choice && row.kind != OptionKind::shape && row.kind != OptionKind::size) continue;
    INFO("--" << row.name);
    const std::string bad = "bogus";
    // The command line (and so the dry run, which parses the same), with the words it takes.
    const std::string why = parse_error("run --dry-run --" + row.name + " " + bad);
    CHECK(contains(why, "--" + row.name));
    if (row.kind == OptionKind::choice)
      CHECK(contains(why, "'bogus' is not one of: " + tessera::join_words(tessera::job::choices_of(row))));
    // The config file (`tessera config show`, --config).
    Cli cli;
    CHECK_THROWS_AS(tessera::cli::parse_config("[run]\n" + row.name + " = \"" + bad + "\"\n", "t.toml", cli.c.schema),
                    tessera::cli::ConfigFileError);
    // The table's own setter (libtessera's Options::set and its typed setters).
    tessera::job::RunOptions o;
    CHECK_THROWS_AS(tessera::job::set_value(o, row, bad), tessera::job::OptionError);
    // What a program put in RunOptions itself: refused before the plan (asked_of checks it first).
    tessera::job::RunOptions direct;
    if (const auto* member = std::get_if<std::string tessera::job::RunOptions::*>(&row.member)) {
      direct.*(*member) = bad;
      CHECK_THROWS_AS(tessera::job::check_run_options(direct), tessera::job::OptionError);
    }
    ++checked;
  }
  CHECK(checked >= 10);  // backend, kernel, baseline, algorithm, dtype, comm, write, progress, grid, gpu-memory, ...
}

TEST_CASE("a config file's every error is reported, one a line, in the file's order", "[cli][options]") {
  Cli cli;
  const std::string text = "[run]\nkernel = \"nope\"\nrepeat = 0\nno-such-key = 1\nbackend = \"cpu\"\n[nope]\n";
  try {
    tessera::cli::parse_config(text, "t.toml", cli.c.schema);
    FAIL("no error");
  } catch (const tessera::cli::ConfigFileError& e) {
    const std::string what = e.what();
    CHECK(std::count(what.begin(), what.end(), '\n') == 3);  // four errors
    CHECK(what.find("t.toml:2: run.kernel") < what.find("t.toml:3: run.repeat"));
    CHECK(what.find("t.toml:3: run.repeat") < what.find("t.toml:4: run.no-such-key"));
    CHECK(contains(what, "t.toml:6: [nope]: unknown table"));
  }
}

TEST_CASE("a kernel named for a backend named is one of that backend's", "[cli][options]") {
  tessera::job::RunOptions o;
  o.backend = "cpu";
  o.kernel = "cpu-naive";
  CHECK_NOTHROW(tessera::job::check_run_options(o));
  o.kernel = "cpu-tiles";
  CHECK_THROWS_WITH(tessera::job::check_run_options(o),
                    Catch::Matchers::ContainsSubstring("did you mean 'cpu-tiled'?"));
  // A GPU kernel (a CUDA build lists them without a GPU) for --backend cpu.
  const std::vector<std::string> gpu = tessera::backend::kernel_names(tessera::backend::Kind::cuda);
  if (!gpu.empty()) {
    o.kernel = gpu.front();
    CHECK_THROWS_WITH(tessera::job::check_run_options(o),
                      Catch::Matchers::ContainsSubstring("(the kernels of --backend cpu)"));
  }
}
