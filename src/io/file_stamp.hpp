#pragma once
// What identifies a file's contents without reading them: its size and modification time (for
// the provenance of a run's inputs, report/provenance.hpp).
#include <cstdint>
#include <string>

namespace tessera::io {

struct FileStamp {
  std::int64_t size_bytes = 0;
  std::int64_t modified_seconds = 0;  // since the Unix epoch
  std::int64_t modified_nanoseconds = 0;
};

// stat() of `file` (links followed). Throws IoError naming the file when it cannot be stat'ed.
FileStamp file_stamp(const std::string& file);

}  // namespace tessera::io
