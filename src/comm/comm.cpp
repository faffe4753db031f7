#include "comm/comm.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support
#endif

namespace tessera::comm {

void abort_job(const std::string& what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "tessera: error (rank %d): %s\n", rank, what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; should it, the process ends here
}

bool mpi_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

void throw_mpi_error(const char* call, const char* file, int line, int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw CommError(std::string("MPI call failed: ") + call + " (" + file + ":" + std::to_string(line) +
                  "): " + std::string(text, static_cast<std::size_t>(len)));
}

Comm::Comm(MPI_Comm comm) : comm_(comm) {
  TESSERA_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  TESSERA_MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

Comm::~Comm() {
  if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

Comm::Comm(Comm&& other) noexcept
    : comm_(other.comm_), owned_(other.owned_), rank_(other.rank_), size_(other.size_), node_(std::move(other.node_)) {
  other.comm_ = MPI_COMM_NULL;
  other.owned_ = false;
}

Comm Comm::split(int color) const {
  MPI_Comm sub = MPI_COMM_NULL;
  TESSERA_MPI_CHECK(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, rank_, &sub));
  Comm out;
  if (sub == MPI_COMM_NULL) return out;
  out.comm_ = sub;
  out.owned_ = true;
  TESSERA_MPI_CHECK(MPI_Comm_rank(sub, &out.rank_));
  TESSERA_MPI_CHECK(MPI_Comm_size(sub, &out.size_));
  return out;
}

Comm Comm::split_node() const { return split(node().index); }

void Comm::sum_in_place(double* values, std::size_t count) const {
  for (std::size_t done = 0; done < count;) {
    const std::size_t n = std::min<std::size_t>(count - done, std::size_t{1} << 27);
    TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values + done, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm_));
    done += n;
  }
}

NodeInfo Comm::node() const {
  if (node_) return *node_;
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  TESSERA_MPI_CHECK(MPI_Get_processor_name(name, &len));
  std::vector<char> all(static_cast<std::size_t>(size_) * MPI_MAX_PROCESSOR_NAME);
  TESSERA_MPI_CHECK(
      MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm_));
  std::vector<std::string> hosts;
  for (int r = 0; r < size_; ++r) hosts.emplace_back(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
  node_ = node_of(hosts, rank_);
  return *node_;
}

NodeInfo node_of(const std::vector<std::string>& hosts, int rank) {
  NodeInfo info;
  info.host = hosts.at(static_cast<std::size_t>(rank));
  std::vector<std::string> seen;  // nodes in the order of their lowest rank
  info.local_rank = info.local_size = 0;
  for (int r = 0; r < static_cast<int>(hosts.size()); ++r) {
    const std::string& h = hosts[static_cast<std::size_t>(r)];
    if (std::find(seen.begin(), seen.end(), h) == seen.end()) seen.push_back(h);
    if (h != info.host) continue;
    if (r < rank) ++info.local_rank;
    ++info.local_size;
  }
  info.index = static_cast<int>(std::find(seen.begin(), seen.end(), info.host) - seen.begin());
  info.count = static_cast<int>(seen.size());
  return info;
}

void Comm::step(const std::function<void()>& body) const {
  std::string error;
  try {
    body();
  } catch (const JobError&) {
    throw;  // already agreed on by every rank
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "unknown error";
  }
  // Lowest failing rank wins so the message is deterministic.
  int mine = error.empty() ? INT_MAX : rank_;
  int first = INT_MAX;
  TESSERA_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm_));
  if (first == INT_MAX) return;
  throw JobError(broadcast(error, first), first);
}

namespace {
constexpr std::size_t kMaxMessage = std::size_t{1} << 30;
}

void Comm::send_bytes(const void* data, std::size_t bytes, int dest, int tag) const {
  const auto* p = static_cast<const char*>(data);
  do {
    const std::size_t n = std::min(bytes, kMaxMessage);
    TESSERA_MPI_CHECK(MPI_Send(p, static_cast<int>(n), MPI_BYTE, dest, tag, comm_));
    p += n;
    bytes -= n;
  } while (bytes > 0);
}

void Comm::recv_bytes(void* data, std::size_t bytes, int source, int tag) const {
  auto* p = static_cast<char*>(data);
  do {
    const std::size_t n = std::min(bytes, kMaxMessage);
    TESSERA_MPI_CHECK(MPI_Recv(p, static_cast<int>(n), MPI_BYTE, source, tag, comm_, MPI_STATUS_IGNORE));
    p += n;
    bytes -= n;
  } while (bytes > 0);
}

void Comm::await_message(int source, int tag) const {
  for (int arrived = 0;;) {
    TESSERA_MPI_CHECK(MPI_Iprobe(source, tag, comm_, &arrived, MPI_STATUS_IGNORE));
    if (arrived) return;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

void Comm::exchange_bytes(const std::vector<Parcel>& sends, const std::vector<Parcel>& receives, int tag) const {
  std::vector<MPI_Request> requests;
  const auto post = [&](const Parcel& parcel, bool send) {
    if (parcel.peer == rank_) throw Error("exchange_bytes: a parcel to this rank itself");
    auto* p = static_cast<char*>(parcel.data);
    for (std::size_t done = 0; done < parcel.bytes; done += kMaxMessage) {
      const int n = static_cast<int>(std::min(parcel.bytes - done, kMaxMessage));
      requests.emplace_back();
      if (send)
        TESSERA_MPI_CHECK(MPI_Isend(p + done, n, MPI_BYTE, parcel.peer, tag, comm_, &requests.back()));
      else
        TESSERA_MPI_CHECK(MPI_Irecv(p + done, n, MPI_BYTE, parcel.peer, tag, comm_, &requests.back()));
    }
  };
  for (const Parcel& r : receives) post(r, false);
  for (const Parcel& s : sends) post(s, true);
  if (!requests.empty())
    TESSERA_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
}

std::string Comm::broadcast(std::string text, int root) const {
  std::uint64_t len = text.size();
  TESSERA_MPI_CHECK(MPI_Bcast(&len, 1, MPI_UINT64_T, root, comm_));
  text.resize(len);
  if (len > 0) TESSERA_MPI_CHECK(MPI_Bcast(text.data(), static_cast<int>(len), MPI_CHAR, root, comm_));
  return text;
}

std::vector<std::string> Comm::gather(const std::string& text, int root) const {
  const int len = static_cast<int>(text.size());
  std::vector<int> lens(rank_ == root ? static_cast<std::size_t>(size_) : 0);
  TESSERA_MPI_CHECK(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, root, comm_));
  std::vector<int> displs(lens.size());
  std::string all;
  if (rank_ == root) {
    int offset = 0;
    for (std::size_t r = 0; r < lens.size(); ++r) {
      displs[r] = offset;
      offset += lens[r];
    }
    all.resize(static_cast<std::size_t>(offset));
  }
  TESSERA_MPI_CHECK(
      MPI_Gatherv(text.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, root, comm_));
  std::vector<std::string> out;
  for (std::size_t r = 0; r < lens.size(); ++r)
    out.push_back(all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(lens[r])));
  return out;
}

double Comm::max(double v) const {
  double r = 0;
  TESSERA_MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, comm_));
  return r;
}
double Comm::min(double v) const {
  double r = 0;
  TESSERA_MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MIN, comm_));
  return r;
}
double Comm::sum(double v) const {
  double r = 0;
  TESSERA_MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_SUM, comm_));
  return r;
}

}  // namespace tessera::comm
