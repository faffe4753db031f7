// The whole job's footprint from each rank's (Algorithm::rank_footprint), and its end-to-end
// prediction.
#include <algorithm>

#include "algorithms/algorithm.hpp"

namespace tessera::algorithms {

std::string Prediction::bound() const {
  const std::pair<double, const char*> phases[] = {
      {startup, "start-up"}, {read, "read"}, {compute, "compute"}, {write, "write"}};
  return std::max_element(std::begin(phases), std::end(phases))->second;
}

namespace {

// Rank 0 receiving every other block (one after the other; those of other nodes through its node's
// link at the internode rate, with a latency each).
double gather_receive_seconds(const Footprint& f, const Problem& p, const MachineModel& m) {
  const auto es = static_cast<std::int64_t>(dtype_size(p.dtype));
  const double others = static_cast<double>(p.c_bytes() - f.root.rows * f.root.cols * es);
  const bool on_devices = f.root.gathers_on_devices;
  if (on_devices || !p.multi_node()) return others / (on_devices ? m.device_link_bytes_per_s : m.network_bytes_per_s);
  const partition::Partition part(p.m, p.n, p.k, p.ranks, f.grid);
  double local = 0, remote = 0;
  int remote_blocks = 0;
  for (int r = 1; r < f.grid.size(); ++r) {
    const double bytes = static_cast<double>(part.c_elements(r) * es);
    if (p.node_of(r) == p.node_of(0)) {
      local += bytes;
    } else {
      remote += bytes;
      ++remote_blocks;
    }
  }
  return local / m.network_bytes_per_s + remote / m.internode_bytes_per_s + remote_blocks * m.internode_latency_seconds;
}

Prediction predict(const Footprint& f, const Problem& p, const MachineModel& m, bool gathered) {
  Prediction at;
  const int groups = std::max(f.root.nccl_groups, f.largest.nccl_groups);
  const double joining = groups * m.nccl_group_seconds;
  const bool hidden = f.root.groups_join_while_reading && f.largest.groups_join_while_reading;
  at.startup = m.startup_seconds + (hidden ? 0.0 : joining);
  if (f.setting.gpu && f.busy > 1) at.startup += m.multi_gpu_seconds;
  const RankFootprint& slow = f.root.seconds() >= f.largest.seconds() ? f.root : f.largest;
  at.read = std::max(f.root.read_seconds, f.largest.read_seconds);
  if (hidden) at.read = std::max(at.read, joining);
  at.compute = slow.compute_seconds;
  at.write = slow.write_seconds;
  at.communication = slow.comm_seconds;
  if (gathered) {
    // Rank 0 receives the blocks and writes C, a block while the next arrives.
    const double receive = gather_receive_seconds(f, p, m);
    at.write += std::max(receive, static_cast<double>(p.c_bytes()) / m.write_bytes_per_s);
    at.communication = std::max(at.communication, receive);
  }
  // The storage makes all of C durable before the commit, from the first write on, at what its
  // writers reach together: rank 0 alone when C goes to it (gathered, or summed onto it), else
  // every busy rank.
  // Blocks side by side (a grid of more than one column) write into the same rows of the file: they
  // add no rate of their own (measured on the H200: 1x2 grids 0.2-1.6 s slower than 2x1).
  const int writers = f.setting.in_place_write ? std::max(1, std::min(f.busy, f.grid.rows)) : 1;
  const double durable_rate = std::min(m.durable_write_bytes_per_s, writers * m.durable_write_bytes_per_s_one_rank);
  const double durable = static_cast<double>(p.c_bytes()) / durable_rate;
  at.write = std::max(at.write, durable - at.compute);
  // A compressed C is compressed on rank 0 as its blocks arrive, and stored chunk by chunk: the
  // write takes at least that long (random data barely shrinks, so the bytes stored are taken as C's).
  at.compress = m.compress_seconds(p.compression, static_cast<double>(p.c_bytes()), p.compress_threads);
  at.write = std::max(at.write, at.compress);
  return at;
}

}  // namespace

Footprint footprint(const Algorithm& alg, const Problem& p, const Setting& s, const MachineModel& m) {
  Footprint f;
  f.algorithm = alg.name();
  f.setting = s;
  f.grid = alg.grid(p);
  f.ranks = p.ranks;
  f.busy = alg.busy_ranks(p);
  const auto plan = [&](int r) {
    RankFootprint rf = alg.rank_footprint(p, s, m, r);
    // A GPU rank page-locks its blocks where it reads them, and frees them at the end.
    if (s.gpu && !rf.staged) rf.read_seconds += static_cast<double>(rf.host_bytes) / m.page_lock_bytes_per_s;
    rf.host_bytes += m.host_overhead_bytes + (s.gpu ? m.gpu_host_overhead_bytes : 0);
    return rf;
  };
  f.root = plan(0);
  if (f.busy == 1) f.largest = f.root;
  RankFootprint most;                 // "others up to": the most any other rank holds and reads
  for (int r = 0; r < f.busy; ++r) {  // at most 100,000 ranks: look at each
    const RankFootprint rf = r == 0 ? f.root : plan(r);
    f.total_read_bytes += rf.read_bytes;
    f.total_comm_bytes += rf.send_bytes + rf.recv_bytes;
    f.max_send_bytes = std::max(f.max_send_bytes, rf.send_bytes);
    f.max_recv_bytes = std::max(f.max_recv_bytes, rf.recv_bytes);
    if (r == 0) continue;
    if (r == 1 || rf.seconds() > f.largest.seconds()) f.largest = rf;
    most.host_bytes = std::max(most.host_bytes, rf.host_bytes);
    most.gpu_bytes = std::max(most.gpu_bytes, rf.gpu_bytes);
    most.read_bytes = std::max(most.read_bytes, rf.read_bytes);
  }
  if (f.busy > 1) {
    f.largest.host_bytes = most.host_bytes;
    f.largest.gpu_bytes = most.gpu_bytes;
    f.largest.read_bytes = most.read_bytes;
  }
  // Gathered C: rank 0 receives every other block into a spare buffer while it writes the one
  // before (job/gather.cpp), after the compute.
  const bool gathered = alg.gathers_blocks() && !s.in_place_write && f.busy > 1;
  if (gathered) {
    const partition::Partition part(p.m, p.n, p.k, p.ranks, f.grid);
    f.root.host_bytes += partition::gather_spare_elements(part) * static_cast<std::int64_t>(dtype_size(p.dtype));
  }
  f.predicted = predict(f, p, m, gathered);
  return f;
}

}  // namespace tessera::algorithms
