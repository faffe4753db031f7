// libFuzzer target: a mutated HDF5 file through tessera's input layer, the way `tessera run` uses
// it: io::inspect, the plan (partition::choose_grid, partition::Partition), io::read_block of every rank's A
// panel and B panel, io::read_attributes. Tried on "/A", "/x" and the first dataset in the file.
//
// Expected outcomes: success, or a tessera::Error (a clear message). Findings, besides what the
// sanitizers and libFuzzer report (crash, leak, timeout, out of memory):
//   * any other exception out of the input layer (main would print an unclear message), and
//   * an HDF5 identifier (file, group, dataset, dataspace, datatype, attribute, property list)
//     still open after a call returns or throws: tessera owns every one it opens (io::Handle).
// Both print "tessera-fuzz: FINDING ..." and abort, so libFuzzer saves the input.
//
// Sizes are bounded so an input costs milliseconds and little memory: a dataset is read only
// when it has at most kMaxElements elements and chunks of at most kMaxChunkElements; larger ones
// (a few header bytes can claim 2^40 x 2^40) are only inspected and probed with a 1x1 read.
#include <fcntl.h>
#include <unistd.h>

#include <hdf5.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <typeinfo>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5_io.hpp"
#include "partition/partition.hpp"

namespace {

using tessera::DType;
namespace io = tessera::io;
namespace partition = tessera::partition;

constexpr std::int64_t kMaxElements = std::int64_t{2} << 20;       // 16 MiB as float64
constexpr std::int64_t kMaxChunkElements = std::int64_t{8} << 20;  // a 64 MiB chunk
constexpr int kRanks = 3;                                          // odd: uneven blocks

std::string g_file;  // the input, written to a tmpfs

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "tessera-fuzz: FINDING %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Open identifiers of every kind tessera's io layer creates.
constexpr std::array<H5I_type_t, 7> kIdKinds = {H5I_FILE,    H5I_GROUP, H5I_DATATYPE,   H5I_DATASPACE,
                                                H5I_DATASET, H5I_ATTR,  H5I_GENPROP_LST};
const char* const kIdNames[] = {"file", "group", "datatype", "dataspace", "dataset", "attribute", "property list"};

std::array<hsize_t, kIdKinds.size()> open_ids() {
  std::array<hsize_t, kIdKinds.size()> n{};
  for (std::size_t i = 0; i < kIdKinds.size(); ++i)
    if (H5Inmembers(kIdKinds[i], &n[i]) < 0) n[i] = 0;
  H5Eclear2(H5E_DEFAULT);
  return n;
}

// Runs one input-layer call; returns false when it threw a tessera::Error (an expected outcome).
template <typename F>
bool call(const char* what, const std::string& path, F&& f) {
  const auto before = open_ids();
  bool ok = true;
  try {
    f();
  } catch (const tessera::Error&) {
    ok = false;
  } catch (const std::exception& e) {
    finding(std::string(what) + " on '" + path + "' threw " + typeid(e).name() +
            " (not a tessera::Error): " + e.what());
  }
  const auto after = open_ids();
  for (std::size_t i = 0; i < kIdKinds.size(); ++i)
    if (after[i] != before[i])
      finding(std::string(what) + " on '" + path + "' left " + std::to_string(after[i] - before[i]) + " HDF5 " +
              kIdNames[i] + " identifier(s) open");
  return ok;
}

bool fits(std::int64_t rows, std::int64_t cols, std::int64_t limit) {
  return rows >= 0 && cols >= 0 && (rows == 0 || cols <= limit / rows);
}

void read(const io::DatasetRef& ref, std::int64_t r0, std::int64_t nr, std::int64_t c0, std::int64_t nc, DType as) {
  // Exactly the size asked for: a write past it lands in ASan's redzone (HDF5 copies with memcpy,
  // which ASan checks even though libhdf5 itself is not instrumented).
  const std::size_t n = nr > 0 && nc > 0 ? static_cast<std::size_t>(nr * nc) : 0;
  if (as == DType::f32) {
    std::vector<float> out(n);
    call("read_block", ref.path, [&] { io::read_block(ref, r0, nr, c0, nc, as, out.empty() ? nullptr : out.data()); });
  } else {
    std::vector<double> out(n);
    call("read_block", ref.path, [&] { io::read_block(ref, r0, nr, c0, nc, as, out.empty() ? nullptr : out.data()); });
  }
}

void exercise(const std::string& path) {
  const io::DatasetRef ref{g_file, path};
  io::DatasetInfo info;
  if (!call("inspect", path, [&] { info = io::inspect(ref); })) return;
  call("read_attributes", path, [&] { (void)io::read_attributes(ref); });

  const DType other = info.natural == DType::f32 ? DType::f64 : DType::f32;
  // Requests outside the matrix must be refused, not read.
  read(ref, info.rows, 1, 0, 1, info.natural);
  read(ref, 0, 1, -1, 1, info.natural);
  read(ref, 0, 0, 0, 0, info.natural);

  if (info.rows < 1 || info.cols < 1) return;
  // The plan of `tessera run` with this dataset as A (M x K: row panels) and as B (K x N: column
  // panels) on kRanks ranks, the grid chosen as the pipeline chooses it. Pure index math: done
  // for any shape a header claims, however large.
  const std::int64_t m = info.rows, n = info.cols, k = info.cols;
  partition::GridShape grid;
  call("choose_grid", path, [&] { grid = partition::choose_grid(m, n, k, kRanks); });
  std::optional<partition::Partition> part;
  call("Partition", path, [&] { part.emplace(m, n, k, kRanks, grid); });

  std::int64_t chunk = 1;
  for (auto c : info.chunk) chunk = c > 0 && chunk <= kMaxChunkElements / c ? chunk * c : kMaxChunkElements + 1;
  if (chunk > kMaxChunkElements) return;
  read(ref, 0, 1, 0, 1, other);
  if (!part || !fits(info.rows, info.cols, kMaxElements)) return;
  for (int r = 0; r < kRanks; ++r) {
    if (!part->active(r)) continue;
    const partition::Range rows = part->rows_of(r), cols = part->cols_of(r);
    if (part->block_col(r) == 0) read(ref, rows.begin, rows.size(), 0, info.cols, info.natural);
    if (part->block_row(r) == 0) read(ref, 0, info.rows, cols.begin, cols.size(), info.natural);
  }
  read(ref, 0, info.rows, 0, info.cols, other);
}

// The first dataset of the file, found with the HDF5 API directly (not through tessera).
herr_t find_dataset(hid_t group, const char* name, const H5L_info_t* /*info*/, void* data) {
  auto* found = static_cast<std::pair<std::string, int>*>(data);
  if (++found->second > 64) return 1;  // a damaged file may list many links: enough
  const hid_t obj = H5Oopen(group, name, H5P_DEFAULT);
  if (obj < 0) return 0;
  const bool dataset = H5Iget_type(obj) == H5I_DATASET;
  H5Oclose(obj);
  if (!dataset) return 0;
  found->first = std::string("/") + name;
  return 1;
}

std::string first_dataset() {
  std::pair<std::string, int> found;
  if (H5Fis_hdf5(g_file.c_str()) > 0) {
    const hid_t f = H5Fopen(g_file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f >= 0) {
      (void)H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, find_dataset, &found);
      H5Fclose(f);
    }
  }
  H5Eclear2(H5E_DEFAULT);
  return found.first;
}

void remove_input() {
  if (!g_file.empty()) ::unlink(g_file.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // A tmpfs keeps the per-input write cheap; TMPDIR otherwise.
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (tmp != nullptr ? tmp : "/tmp");
  g_file = dir + "/tessera-fuzz-" + std::to_string(::getpid()) + ".h5";
  std::atexit(remove_input);
  (void)io::library_version();  // tessera's HDF5 setup (error printing off) before the first count
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = ::open(g_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) finding("cannot write the input to " + g_file);
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) finding("cannot write the input to " + g_file);
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);

  exercise("/A");
  exercise("/x");
  const std::string first = first_dataset();
  if (!first.empty() && first != "/A" && first != "/x") exercise(first);
  // Names the input layer must refuse cleanly.
  call("inspect", "/", [] { (void)io::inspect(io::DatasetRef{g_file, "/"}); });
  return 0;
}
