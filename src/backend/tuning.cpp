// The tune file (tuning.hpp): where it is looked for, how it is read, and the nearest tuned size.
#include "backend/tuning.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/env.hpp"
#include "core/error.hpp"
#include "core/file_kind.hpp"
#include "core/version.hpp"

namespace tessera::backend {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string cache_dir() {
  const std::string xdg = env("XDG_CACHE_HOME");
  if (!xdg.empty()) return xdg + "/tessera";
  const std::string home = env("HOME");
  return (home.empty() ? std::string(".") : home) + "/.cache/tessera";
}

TunedChoice parse_choice(const nlohmann::json& j, const std::string& path) {
  TunedChoice c;
  try {
    const std::string dtype = j.at("dtype").get<std::string>();
    if (!parse_dtype(dtype, &c.dtype)) throw InputError("dtype '" + dtype + "'");
    c.m = j.at("m").get<std::int64_t>();
    c.n = j.at("n").get<std::int64_t>();
    c.k = j.at("k").get<std::int64_t>();
    c.kernel = j.at("kernel").get<std::string>();
    c.gflops = j.value("gflops", 0.0);
    if (j.contains("candidates"))
      for (const auto& [name, gflops] : j.at("candidates").items()) c.candidates[name] = gflops.get<double>();
  } catch (const std::exception& e) {
    throw InputError("tune file '" + path + "': a choice is malformed (" + e.what() + ")");
  }
  if (c.m < 1 || c.n < 1 || c.k < 1 || c.kernel.empty())
    throw InputError("tune file '" + path + "': a choice has a non-positive size or no kernel");
  return c;
}

}  // namespace

std::string sanitize_device_name(const std::string& gpu_name) {
  std::string name = gpu_name.substr(0, gpu_name.find(" ["));  // drop the PCI bus id
  std::string out;
  for (const char ch : name) {
    const auto u = static_cast<unsigned char>(ch);
    out += (std::isalnum(u) || ch == '-' || ch == '.') ? ch : '_';
  }
  return out.empty() ? std::string("gpu") : out;
}

namespace {

// share/tessera/tuned of the installation this code runs from: beside the shared library that
// holds it (dladdr), beside the executable (/proc/self/exe), then where `cmake --install` was
// configured to put it (the two first survive a relocated prefix: cmake --install --prefix).
// Code that runs from the build folder it was built in (not installed) also reads the repository's
// configs/tuned: the same files, wherever the working directory is (a user's data folder).
std::vector<std::string> installed_tuned_dirs() {
  std::vector<std::string> dirs;
  const auto add = [&dirs](const std::filesystem::path& dir) {
    const std::string d = dir.lexically_normal().string();
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  };
  const std::filesystem::path build_dir = std::filesystem::path(kBuildDir).lexically_normal();
  const auto in_build_dir = [&build_dir](const std::filesystem::path& binary) {
    const std::string b = binary.lexically_normal().string(), d = build_dir.string();
    return !d.empty() && d != "/" && b.size() > d.size() && b.compare(0, d.size(), d) == 0 && b[d.size()] == '/';
  };
  const auto add_prefix_of = [&](const std::filesystem::path& binary) {  // <prefix>/bin/tessera
    if (!binary.is_absolute()) return;
    add(binary.parent_path().parent_path() / "share" / "tessera" / "tuned");
    if (in_build_dir(binary)) add(std::filesystem::path(kSourceDir) / "configs" / "tuned");
  };
  static const int anchor = 0;
  Dl_info info{};
  if (dladdr(&anchor, &info) != 0 && info.dli_fname != nullptr) add_prefix_of(info.dli_fname);
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) add_prefix_of(exe);
  add(std::filesystem::path(kInstallDataDir) / "tuned");
  return dirs;
}

}  // namespace

std::vector<std::string> tune_file_candidates(const std::string& gpu_name) {
  const std::string file = "tuned-" + sanitize_device_name(gpu_name) + ".json";
  std::vector<std::string> paths;
  const std::string explicit_path = tessera::env::word("TESSERA_TUNE_FILE").value_or("");
  if (!explicit_path.empty()) paths.push_back(explicit_path);
  paths.push_back(cache_dir() + "/" + file);
  paths.push_back("configs/tuned/" + file);
  for (const std::string& dir : installed_tuned_dirs()) paths.push_back(dir + "/" + file);
  return paths;
}

std::string default_tune_output(const std::string& gpu_name) {
  const std::string explicit_path = tessera::env::word("TESSERA_TUNE_FILE").value_or("");
  if (!explicit_path.empty()) return explicit_path;
  return cache_dir() + "/tuned-" + sanitize_device_name(gpu_name) + ".json";
}

TuneTable read_tune_file(const std::string& path) {
  // Not waited on (a fifo) nor read whole if huge: a tune file is a few kB, a planted one anything.
  constexpr off_t kLargest = off_t{16} << 20;
  const SmallFile f = read_small_file(path, kLargest);
  if (f.error != 0) throw InputError("tune file '" + path + "' cannot be read");
  if (!f.not_regular.empty()) throw InputError("tune file '" + path + "' is not a regular file");
  if (f.too_large > 0)
    throw InputError("tune file '" + path + "' is " + std::to_string(f.too_large) +
                     " bytes, more than a tune file's 16 MiB at most");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f.text);
  } catch (const std::exception& e) {
    throw InputError("tune file '" + path + "' is not valid JSON: " + e.what());
  }
  if (!j.is_object() || j.value("format", std::string()) != kTuneFileFormat || !j.contains("choices") ||
      !j["choices"].is_array())
    throw InputError("tune file '" + path + "' is not a " + kTuneFileFormat + " file (written by `tessera tune`)");
  TuneTable table;
  table.path = path;
  table.device = j.value("device", std::string());
  table.architecture = j.value("architecture", std::string());
  for (const auto& c : j["choices"]) table.choices.push_back(parse_choice(c, path));
  if (j.contains("libraries")) {
    try {
      for (const auto& [name, lib] : j.at("libraries").items()) {
        const double seconds = lib.at("load_seconds").get<double>();
        if (!std::isfinite(seconds) || seconds < 0) throw InputError("load_seconds " + std::to_string(seconds));
        table.load_seconds[name] = seconds;
      }
    } catch (const std::exception& e) {
      throw InputError("tune file '" + path + "': 'libraries' is malformed (" + e.what() + ")");
    }
  }
  return table;
}

TuneTable load_tune_table(const std::string& gpu_name, const std::string& architecture,
                          std::vector<std::string>* skipped) {
  const std::vector<std::string> candidates = tune_file_candidates(gpu_name);
  for (const std::string& path : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return read_tune_file(path);
  }
  if (architecture.empty()) return {};
  // A sibling's: the folders of the candidates above ($TESSERA_TUNE_FILE names a file, not a folder).
  std::vector<std::filesystem::path> dirs;
  const bool explicit_first = !tessera::env::word("TESSERA_TUNE_FILE").value_or("").empty();
  for (std::size_t i = explicit_first ? 1 : 0; i < candidates.size(); ++i) {
    const std::filesystem::path dir = std::filesystem::path(candidates[i]).parent_path();
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }
  for (const std::filesystem::path& dir : dirs) {
    std::error_code ec;
    std::vector<std::string> files;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::error_code regular;
      if (name.rfind("tuned-", 0) == 0 && name.size() > 11 && name.compare(name.size() - 5, 5, ".json") == 0 &&
          it->is_regular_file(regular))
        files.push_back(it->path().string());
    }
    std::sort(files.begin(), files.end());
    for (const std::string& path : files) {
      try {
        TuneTable table = read_tune_file(path);
        if (table.architecture != architecture) continue;
        table.sibling = true;
        return table;
      } catch (const std::exception& e) {
        if (skipped) skipped->push_back(e.what());
      }
    }
  }
  return {};
}

bool rows_aligned(DType dtype, std::int64_t n, std::int64_t k) {
  const auto bytes = static_cast<std::int64_t>(dtype_size(dtype));
  return n * bytes % 16 == 0 && k * bytes % 16 == 0;
}

std::string tune_winner(const std::map<std::string, double>& seconds_of) {
  std::string fastest;  // among finite, positive times (a NaN would win every comparison it loses)
  for (const auto& [kernel, seconds] : seconds_of)
    if (std::isfinite(seconds) && seconds > 0 && (fastest.empty() || seconds < seconds_of.at(fastest)))
      fastest = kernel;
  if (fastest.empty()) return fastest;
  const auto vendor = seconds_of.find("cublas");
  if (vendor != seconds_of.end() && seconds_of.at(fastest) * (1 + kOwnKernelMargin) >= vendor->second)
    return vendor->first;
  return fastest;
}

const TunedChoice* tuned_choice(const TuneTable& table, DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) {
  const auto dist = [](std::int64_t x, std::int64_t y) {
    return std::fabs(std::log(static_cast<double>(std::max<std::int64_t>(x, 1)) /
                              static_cast<double>(std::max<std::int64_t>(y, 1))));
  };
  // The nearest choice of the same dtype and row alignment; of the same dtype when the table has
  // none of that alignment. (4500^3 is nearer 4099 x 4097 x 4095 than 4096^3 in log distance, but
  // the kernels, cuBLAS's too, run 16-byte copies on the one and not on the other: 41 against 61
  // TFLOP/s for DGEMM on the H200.)
  const bool aligned = rows_aligned(dtype, n, k);
  const TunedChoice* best = nullptr;
  bool best_same_class = false;
  double best_d = std::numeric_limits<double>::infinity();
  for (const TunedChoice& c : table.choices) {
    if (c.dtype != dtype) continue;
    const bool same_class = rows_aligned(c.dtype, c.n, c.k) == aligned;
    const double d = dist(m, c.m) + dist(n, c.n) + dist(k, c.k);
    if ((same_class && !best_same_class) || (same_class == best_same_class && d < best_d)) {
      best_d = d;
      best = &c;
      best_same_class = same_class;
    }
  }
  return best;
}

std::string tuned_kernel(const TuneTable& table, DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) {
  const TunedChoice* c = tuned_choice(table, dtype, m, n, k);
  return c ? c->kernel : std::string();
}

std::string whole_job_kernel(const TunedChoice& tuned, double flops, double load_seconds,
                             const std::function<bool(const std::string&)>& needs_library,
                             const std::function<bool(const std::string&)>& allowed) {
  const auto seconds = [&](const std::string& kernel, double gflops) {
    if (!(gflops > 0) || !std::isfinite(gflops)) return std::numeric_limits<double>::infinity();
    return flops / (gflops * 1e9) + (needs_library(kernel) ? load_seconds : 0.0);
  };
  const auto winner = tuned.candidates.find(tuned.kernel);
  const double winner_gflops = winner != tuned.candidates.end() ? winner->second : tuned.gflops;
  std::string best = tuned.kernel;
  double best_seconds = seconds(tuned.kernel, winner_gflops);
  if (!needs_library(tuned.kernel)) return best;  // its rate was the best, and nothing to load
  for (const auto& [kernel, gflops] : tuned.candidates) {
    if (kernel == tuned.kernel || needs_library(kernel) || !allowed(kernel)) continue;
    const double s = seconds(kernel, gflops) * (1 + kOwnKernelMargin);  // as tune_winner: a tie stays cuBLAS's
    if (s < best_seconds) best = kernel, best_seconds = s;
  }
  return best;
}

}  // namespace tessera::backend
