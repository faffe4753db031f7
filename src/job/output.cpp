#include "job/output.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "job/gather.hpp"

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tessera::job {

namespace {

constexpr int kRoot = 0;

io::Stored stored_of(const std::string& word) {
  io::Stored s = io::Stored::same;
  if (!io::parse_stored(word, &s)) throw Error("rank 0's plan of C's route names no stored type");
  return s;
}

DType computed_of(const std::string& word) {
  DType t = DType::f64;
  if (!parse_any_dtype(word, &t)) throw Error("rank 0's plan of C's route names no dtype");
  return t;
}

std::uint64_t random_token() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd() ^
         static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace

std::unique_ptr<OutputRoute> OutputRoute::choose(const comm::Comm& comm, io::MatrixWriter* writer,
                                                 algorithms::WriteRoute want, DType dtype) {
  using algorithms::WriteRoute;
  const int rank = comm.rank();
  std::unique_ptr<OutputRoute> made(new OutputRoute());
  OutputRoute& route = *made;
  route.dtype_ = dtype;
  route.counted_.esize = dtype_size(dtype);
  route.counted_.dtype = dtype;
  // Rank 0 says where C lies in the file, or why the ranks cannot write there.
  nlohmann::json plan;
  comm.step([&] {
    if (rank != kRoot) return;
    const io::DirectTarget t = writer->direct_target();
    if (const std::optional<io::ChunkLayout> l = writer->chunk_layout()) {
      plan["chunks"] = {l->rows,    l->cols,  l->chunk_rows, l->chunk_cols,
                        l->esize,   l->shuffle, l->level,    static_cast<int>(l->codec)};
    }
    if (want == WriteRoute::gather) {
      plan["why"] = "--write gather";
    } else if (!t.valid()) {
      plan["why"] = writer->why_not_direct();
    } else {
      const std::uint64_t token = random_token();
      if (comm.size() > 1) io::write_token(t, token);
      plan = {{"file", t.file},
              {"base", t.base},
              {"rows", t.rows},
              {"cols", t.cols},
              {"esize", t.esize},
              {"token", token},
              {"fence", t.fence.path},
              {"fence_inode", t.fence.inode},
              {"fence_stamp_at", t.fence.stamp_at},
              {"fence_stamp", t.fence.stamp},
              {"computed", dtype_word(t.computed)},
              {"stored", io::stored_word(t.stored)}};
    }
  });
  plan = nlohmann::json::parse(comm.broadcast(plan.dump(), kRoot));
  if (plan.contains("chunks") && comm.size() > 1) {
    const nlohmann::json& l = plan["chunks"];
    route.chunks_ = io::ChunkLayout{l[0], l[1], l[2], l[3], l[4], l[5], l[6], static_cast<io::Codec>(l[7].get<int>())};
  }
  if (plan.contains("why")) {
    comm.step([&] {  // the same refusal on every rank
      if (want == WriteRoute::in_place)
        throw InputError("--write in-place is not possible: " + plan["why"].get<std::string>());
    });
    route.description_ = "gather (" + plan["why"].get<std::string>() + ")";
    if (route.chunks_)  // said by rank 0's writer as "C is compressed by rank 0's threads, ..."
      route.description_ =
          "gather (C is compressed chunk by chunk by every rank's threads, each its own block's "
          "chunks; rank 0 stores them)";
    route.sink_ = rank == kRoot ? writer : nullptr;
    route.counted_.inner = route.sink_;
    return made;
  }
  // Every rank must see the file rank 0 made (the same file system).
  // With the run's liveness token (io::Fence): every rank writes only while it is there.
  const io::DirectTarget t{
      plan["file"],
      plan["base"],
      plan["rows"],
      plan["cols"],
      plan["esize"],
      io::Fence{plan["fence"].get<std::string>(), plan["fence_inode"].get<std::uint64_t>(),
                plan["fence_stamp_at"].get<std::int64_t>(), plan["fence_stamp"].get<std::uint64_t>()},
      computed_of(plan["computed"].get<std::string>()),
      stored_of(plan["stored"].get<std::string>())};
  bool sees = true;
  if (rank != kRoot) {
    sees = io::sees_token(t, plan["token"].get<std::uint64_t>());
    if (sees) {
      try {
        route.own_ = std::make_unique<io::BlockFile>(t);
      } catch (const std::exception&) {
        sees = false;
      }
    }
  }
  const double blind = comm.min(sees ? comm.size() : rank);  // the lowest rank that cannot see it
  if (blind < comm.size()) {
    const std::string reason = "rank " + std::to_string(static_cast<int>(blind)) + " cannot see the output file '" +
                               t.file + "': no shared file system";
    comm.step([&] {
      if (want == WriteRoute::in_place) throw InputError("--write in-place is not possible: " + reason);
    });
    route.own_.reset();
    route.description_ = "gather (" + reason + ")";
    route.sink_ = rank == kRoot ? writer : nullptr;
    route.counted_.inner = route.sink_;
    return made;
  }
  route.in_place_ = true;
  route.description_ = comm.size() > 1 ? "in place (every rank writes its own block)" : "in place";
  route.sink_ = rank == kRoot ? static_cast<io::BlockSink*>(writer) : route.own_.get();
  route.counted_.inner = route.sink_;
  return made;
}

void OutputRoute::idle() {
  own_.reset();
  sink_ = nullptr;
  counted_.inner = nullptr;
}

void OutputRoute::use(backend::Backend* be, std::function<void(const std::string&)> progress) {
  be_ = be;
  progress_ = std::move(progress);
}

void OutputRoute::write_own_block(const comm::Comm& comm, std::int64_t row0, std::int64_t col0, std::int64_t rows,
                                  std::int64_t cols, const void* c, bool already_written, double write_seconds,
                                  report::Phases& phases) const {
  comm.step([&] {
    if (!sink_ || (!already_written && (rows == 0 || cols == 0))) return;
    const auto start = std::chrono::steady_clock::now();
    if (!already_written) counted_.write_block(row0, col0, rows, cols, c);
    if (own_) own_->sync();  // rank 0's writer makes its file durable when it commits
    phases.emplace_back(
        "write", write_seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  });
}

void OutputRoute::gather(const comm::Comm& comm, const partition::Partition& part, void* c, const Transport& transport,
                         bool root_written, report::Phases& phases) const {
  // Rank 0's second buffer: the blocks alternate between it and rank 0's own C (job/gather.hpp).
  backend::HostBuffer spare;
  comm.step([&] {
    if (comm.rank() == kRoot && part.grid().size() > 1 && be_)
      spare = be_->allocate_host(static_cast<std::size_t>(partition::gather_spare_elements(part)) * dtype_size(dtype_));
  });
  const auto progress = progress_ ? progress_ : [](const std::string&) {};
  // Each rank compresses its own chunks where its block travels by host MPI and is C's own (no
  // beta C_old is added on rank 0).
  const bool compressed_here = chunks_ && !transport.send && counted_.beta == 0.0;
  gather_and_write(comm, part, dtype_, c, spare.empty() ? nullptr : spare.data(), sink(), progress, phases, transport,
                   root_written, compressed_here ? &*chunks_ : nullptr);
}

void OutputRoute::add_old_c(const io::DatasetRef& old, std::complex<double> beta) {
  counted_.old = old;
  counted_.beta = beta;
}

namespace {
// out = c + beta old, elementwise over n elements of T (float, double or a std::complex of them).
template <typename T, typename B>
void add_scaled(const void* c, B beta, T* old, std::int64_t n) {
  const auto* x = static_cast<const T*>(c);
  const auto b = static_cast<T>(beta);
  for (std::int64_t i = 0; i < n; ++i) old[i] = x[i] + b * old[i];
}
}  // namespace

void OutputRoute::Counted::write_block(std::int64_t row0, std::int64_t col0, std::int64_t rows, std::int64_t cols,
                                       const void* data) {
  if (beta == 0.0 || rows == 0 || cols == 0) {
    inner->write_block(row0, col0, rows, cols, data);
  } else {
    // The old block, read just before this block of the temporary is written (the old dataset
    // itself stays until the commit moves the new one over it); in row pieces of about 64 MiB,
    // so a large block does not need twice its memory.
    const std::size_t row_bytes = static_cast<std::size_t>(cols) * esize;
    const std::int64_t step = std::max<std::int64_t>(1, static_cast<std::int64_t>((std::size_t{64} << 20) / row_bytes));
    std::vector<unsigned char> sum(static_cast<std::size_t>(std::min(step, rows)) * row_bytes);
    for (std::int64_t r = 0; r < rows; r += step) {
      const std::int64_t count = std::min(step, rows - r);
      const auto* c = static_cast<const unsigned char*>(data) + static_cast<std::size_t>(r) * row_bytes;
      io::read_block(old, row0 + r, count, col0, cols, dtype, sum.data());
      if (dtype == DType::f32)
        add_scaled(c, beta.real(), reinterpret_cast<float*>(sum.data()), count * cols);
      else if (dtype == DType::f64)
        add_scaled(c, beta.real(), reinterpret_cast<double*>(sum.data()), count * cols);
      else if (dtype == DType::c64)
        add_scaled(c, beta, reinterpret_cast<std::complex<float>*>(sum.data()), count * cols);
      else
        add_scaled(c, beta, reinterpret_cast<std::complex<double>*>(sum.data()), count * cols);
      inner->write_block(row0 + r, col0, count, cols, sum.data());
    }
  }
  bytes += rows * cols * static_cast<std::int64_t>(esize);
}

io::NonfiniteCount OutputRoute::nonfinite_written(const comm::Comm& comm) const {
  const io::NonfiniteCount mine = sink_ ? counted_.nonfinite_written() : io::NonfiniteCount{};
  io::NonfiniteCount all;
  all.count = comm.sum(mine.count);
  all.first = comm.min(mine.first);
  return all;
}

}  // namespace tessera::job
