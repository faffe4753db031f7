// libFuzzer target: option strings, as `tessera` takes them. The first byte says what the rest is:
//   0  a command line, one argument per line ('\n' or '\0'), parsed by tessera's own command line
//      (cli/options.hpp, built as main.cpp builds it; --config on the command line is dropped: the
//      fuzzer must not open arbitrary files)
//   1  a TOML config: through cli::parse_config directly, and as `tessera run --config FILE`
//   2  one string: partition::parse_grid and io::DatasetRef::parse
// After a successful parse the values go where the run layer sends them: DatasetRef::parse of
// --a/--b/--c/--out, parse_grid of --grid/--chunk, partition::Partition of the grid on small sizes.
//
// Expected outcomes: success, a CLI::Error (the usage message), a cli::ConfigFileError (a config
// file's FILE:LINE message) or a tessera::Error. Any other exception is a finding
// ("tessera-fuzz: FINDING ...", abort): main would print an unclear line.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>
#include <vector>

#include "cli/config_toml.hpp"
#include "cli/options.hpp"
#include "core/error.hpp"
#include "io/hdf5_io.hpp"
#include "partition/partition.hpp"

namespace {

namespace io = tessera::io;
namespace partition = tessera::partition;
namespace cli = tessera::cli;

std::string g_config;  // the TOML text of mode 1, written to a tmpfs

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "tessera-fuzz: FINDING %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

template <typename F>
void call(const char* what, const std::string& input, F&& f) {
  try {
    f();
  } catch (const tessera::Error&) {
  } catch (const CLI::Error&) {
  } catch (const cli::ConfigFileError&) {
  } catch (const std::exception& e) {
    finding(std::string(what) + " on '" + input + "' threw " + typeid(e).name() + ": " + e.what());
  }
}

// The values of a parsed command line, checked as the run layer checks them.
void check_refs_and_grid(const std::vector<std::string>& refs, const std::string& grid) {
  for (const auto& r : refs)
    if (!r.empty()) call("DatasetRef::parse", r, [&] { (void)io::DatasetRef::parse(r); });
  if (grid.empty()) return;
  call("parse_grid", grid, [&] {
    const auto g = partition::parse_grid(grid);
    // Any grid against a few problem sizes and rank counts: accepted or refused, never UB.
    for (const std::int64_t dim : {std::int64_t{1}, std::int64_t{7}, std::int64_t{1} << 40}) {
      for (const int ranks : {1, 6, 1 << 30}) {
        call("Partition", grid, [&] {
          const partition::Partition part(dim, dim + 1, dim, ranks, g);
          for (const int r : {0, part.grid().size() - 1}) {
            (void)part.rows_of(r);
            (void)part.cols_of(r);
            (void)part.a_elements(r);
            (void)part.b_elements(r);
            (void)part.c_elements(r);
          }
        });
      }
    }
  });
}

// tessera's command line, as main.cpp builds it (cli::add_commands).
struct App {
  CLI::App app{"tessera", "tessera"};
  cli::Commands c;

  App() { cli::add_commands(app, c); }

  void parse_and_check(std::vector<std::string> args, const std::string& input) {
    // CLI11 takes the arguments in reverse order (as its parse(std::vector<std::string>&) wants).
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    bool parsed = false;
    call("CLI::App::parse", input, [&] {
      app.parse(reversed);
      parsed = true;
    });
    if (!parsed) return;
    if (*c.r) check_refs_and_grid({c.ro.a, c.ro.b, c.ro.c}, c.ro.grid);
    if (*c.g) check_refs_and_grid({c.gen.out}, c.gen.chunk);
  }
};

void write_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) finding("cannot write " + path);
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) finding("cannot write " + path);
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

void remove_config() {
  if (!g_config.empty()) ::unlink(g_config.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (tmp != nullptr ? tmp : "/tmp");
  g_config = dir + "/tessera-fuzz-" + std::to_string(::getpid()) + ".toml";
  std::atexit(remove_config);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] % 3;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);

  if (mode == 0) {
    std::vector<std::string> args;
    std::string cur;
    for (const char c : text) {
      if (c == '\n' || c == '\0') {
        args.push_back(cur);
        cur.clear();
      } else {
        cur.push_back(c);
      }
    }
    args.push_back(cur);
    std::vector<std::string> kept;
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i].rfind("--config", 0) == 0) {  // never read a file named by the input
        if (args[i] == "--config") ++i;
        continue;
      }
      kept.push_back(args[i]);
    }
    App().parse_and_check(kept, text);
  } else if (mode == 1) {
    call("cli::parse_config", text, [&] {
      App app;
      const auto settings = cli::parse_config(text, "fuzz.toml", app.c.schema);
      (void)cli::show_json(settings);
      call("cli::show_lines", text, [&] { (void)cli::show_lines(settings); });
    });
    write_file(g_config, text);
    App().parse_and_check({"run", "--config", g_config}, text);
  } else {
    check_refs_and_grid({text}, text);
  }
  return 0;
}
