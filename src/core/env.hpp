// The TESSERA_* environment variables, in one place (docs/usage.md, "Environment variables"):
// those tessera itself reads, each with what it accepts, and those only the scripts and the
// Python package read. main() checks the environment once at start-up (check()): a variable of
// tessera's own holding a value it does not accept is a usage error (exit 2) naming the variable,
// the value and what it accepts, and a TESSERA_* name that nothing reads (a misspelling) is
// warned about. The readers then take their values through the getters below, which parse them
// with the same rule. TESSERA_TEST_* are the crash tests' hooks (io/test_hooks.hpp): neither
// checked here nor warned about.
#pragma once

#include <unistd.h>  // environ (g++ defines _GNU_SOURCE)

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace tessera::env {

// What a variable of tessera's accepts: any text (a path), one of a few words, or a whole number.
struct Variable {
  const char* name;
  std::vector<const char*> words;  // the words it accepts (none: see low/high or any text)
  std::int64_t low = 0, high = 0;  // a whole number from low to high (when high > 0)
};

inline const std::vector<Variable>& variables() {
  static const std::vector<Variable> kVariables = {
      {"TESSERA_MACHINE_FILE", {}},                      // algorithms/machine.cpp: a machine name or file
      {"TESSERA_TUNE_FILE", {}},                         // backend/tuning.cpp: a path
      {"TESSERA_MPI_TRANSPORTS", {"auto", "open-mpi"}},  // comm/mpi_start.cpp
      {"TESSERA_GPU_EARLY", {"0", "1"}},                 // cli/main.cpp
      {"TESSERA_KEEP_BINDING", {"0", "1"}},              // comm/cpu_share.cpp
      {"TESSERA_STAGED", {"0", "1"}},                    // job/run_job.cpp
      {"TESSERA_READ_AHEAD", {"0", "1", "force"}},       // job/read_ahead.cpp
      {"TESSERA_STAGE_BYTES", {}, 1, INT64_MAX},         // backend/staged.cpp
      {"TESSERA_STREAM_CHUNKS", {}, 1, 1 << 20},         // algorithms/row_streams.cpp
      {"TESSERA_BANDS", {}, 1, 1 << 20},                 // job/plan.cpp
      {"TESSERA_HDF5_DIRECT", {"0", "1"}},               // io/direct_io.cpp
      {"TESSERA_IO_THREADS", {}, 1, 1024},               // io/direct_io.cpp
      {"TESSERA_HOST_MEMORY", {"pinned", "pageable"}},   // backend/cuda_device.cpp
      {"TESSERA_HELD_HOST", {"0", "1"}},                 // backend/cuda_backend.cpp
      {"TESSERA_PIN_MIN_BYTES", {}, 0, INT64_MAX},       // backend/cuda_device.cpp
      {"TESSERA_STAGE_MIN_BYTES", {}, 0, INT64_MAX},     // backend/cuda_host_staging.cpp
      {"TESSERA_OZAKI_MODULI", {}, 1, 20},               // kernels/ozaki_gpu.cu
      {"TESSERA_OZAKI_GUARD", {}, 0, 60},                // kernels/ozaki_gpu.cu
      {"TESSERA_OZAKI_PROFILE", {"0", "1"}},             // kernels/ozaki_gpu.cu
      // libtessera_scalapack (src/scalapack/pgemm.cpp, which parses them by the same rules): the
      // binary reads none of them, but a job that sets them for its ScaLAPACK program is no typo
      {"TESSERA_SCALAPACK", {"auto", "tessera", "scalapack"}},
      {"TESSERA_SCALAPACK_BACKEND", {"auto", "cpu", "cuda"}},
      {"TESSERA_SCALAPACK_MIN_FLOPS", {}, 0, INT64_MAX},
      {"TESSERA_SCALAPACK_VERBOSE", {"0", "1"}},
  };
  return kVariables;
}

// Read by the scripts, the Slurm jobs and the Python package, never by the binary: set in a
// job's environment as a matter of course, so not warned about.
inline const std::vector<const char*>& script_variables() {
  static const std::vector<const char*> kNames = {"TESSERA",
                                                  "TESSERA_BIN",
                                                  "TESSERA_LAUNCHER",
                                                  "TESSERA_CONFIG",
                                                  "TESSERA_OUT",
                                                  "TESSERA_HOME",
                                                  "TESSERA_MODULES",
                                                  "TESSERA_ARRAY_LIST",
                                                  "TESSERA_SCALING_COUNTS",
                                                  "TESSERA_SCALING_NODES",
                                                  "TESSERA_PYTHON",
                                                  "TESSERA_BUILD_DIR",
                                                  "TESSERA_DEMO_DIR",
                                                  "TESSERA_DEMO_SIZE",
                                                  "TESSERA_SKIP_SANITIZE",
                                                  "TESSERA_FUZZ_SECONDS",
                                                  "TESSERA_SANITIZE_PARTS",
                                                  "TESSERA_SCALING_DATA"};
  return kNames;
}

inline const Variable* find(const std::string& name) {
  for (const Variable& v : variables())
    if (name == v.name) return &v;
  return nullptr;
}

// What `v` accepts, in words: "0 or 1", "auto or open-mpi", "a whole number from 1 to 1024".
inline std::string accepted(const Variable& v) {
  if (!v.words.empty()) {
    std::string text;
    for (std::size_t i = 0; i < v.words.size(); ++i)
      text += (i == 0 ? "" : i + 1 == v.words.size() ? " or " : ", ") + std::string(v.words[i]);
    return text;
  }
  if (v.high > 0) return "a whole number from " + std::to_string(v.low) + " to " + std::to_string(v.high);
  return "any path";
}

// The value of `name` when set and not empty (an empty value is as if unset).
inline std::optional<std::string> raw(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// "" when `value` is one `v` accepts, else the one-line refusal.
inline std::string refusal(const Variable& v, const std::string& value) {
  bool ok = v.words.empty() && v.high == 0;
  for (const char* w : v.words) ok = ok || value == w;
  if (v.high > 0 && !value.empty() && value.find_first_not_of("0123456789") == std::string::npos) {
    errno = 0;
    const unsigned long long n = std::strtoull(value.c_str(), nullptr, 10);
    ok = errno != ERANGE && n >= static_cast<unsigned long long>(v.low) && n <= static_cast<unsigned long long>(v.high);
  }
  if (ok) return {};
  return "the environment variable " + std::string(v.name) + "='" + value + "' is not " + accepted(v) +
         " (unset it for the default; docs/usage.md, \"Environment variables\")";
}

// The environment at start-up: the refusal of the first variable of tessera's holding a value it
// does not accept ("" when none), and a warning for each TESSERA_* name nothing reads.
struct Check {
  std::string error;
  std::vector<std::string> warnings;
};
inline Check check() {
  Check c;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("TESSERA", 0) != 0 || (name != "TESSERA" && name.rfind("TESSERA_", 0) != 0)) continue;
    if (name.rfind("TESSERA_TEST_", 0) == 0) continue;  // the crash tests' hooks
    if (const Variable* v = find(name)) {
      const std::string value = entry.substr(name.size() + 1);
      if (!value.empty() && c.error.empty()) c.error = refusal(*v, value);
      continue;
    }
    bool script = false;
    for (const char* s : script_variables()) script = script || name == s;
    if (!script)
      c.warnings.push_back("the environment variable " + name +
                           " is set, but tessera reads no such variable (a misspelling? the variables: "
                           "docs/usage.md, \"Environment variables\")");
  }
  return c;
}

// The getters: a value check() accepted, parsed by the same rule; nullopt when unset or empty.
// A value refused here (a process that did not start through main: the C++ API) throws the
// refusal as an InputError.
inline std::optional<std::string> word(const char* name) {
  const std::optional<std::string> value = raw(name);
  const Variable* v = find(name);
  if (value && v != nullptr)
    if (std::string why = refusal(*v, *value); !why.empty()) throw InputError(why);
  return value;
}
inline std::optional<std::int64_t> whole(const char* name) {
  const std::optional<std::string> value = word(name);
  if (!value) return std::nullopt;
  return static_cast<std::int64_t>(std::strtoll(value->c_str(), nullptr, 10));
}
// A 0-or-1 variable: its value, or `otherwise` when unset.
inline bool flag(const char* name, bool otherwise) {
  const std::optional<std::string> value = word(name);
  return value ? *value == "1" : otherwise;
}

}  // namespace tessera::env
