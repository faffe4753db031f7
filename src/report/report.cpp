#include "report/report.hpp"

#include "report/provenance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <stdexcept>

namespace tessera::report {

namespace {
nlohmann::json or_null(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }
}  // namespace

double RankRecord::phase(const std::string& name) const {
  for (const auto& [n, s] : phases)
    if (n == name) return s;
  return 0;
}
bool RankRecord::has_phase(const std::string& name) const {
  return std::any_of(phases.begin(), phases.end(), [&](const auto& p) { return p.first == name; });
}
double RankRecord::compute_seconds() const { return has_phase("kernel") ? phase("kernel") : phase("compute"); }
double RankRecord::gflops() const {
  const double s = compute_seconds();
  return s > 0 ? flops / s * 1e-9 : 0;
}

double RankRecord::read_gbps() const {
  const double s = phase("read");
  return s > 0 && read_bytes > 0 ? static_cast<double>(read_bytes) / s * 1e-9 : 0;
}

double RankRecord::write_gbps() const {
  const double s = phase("write");
  return s > 0 && write_bytes > 0 ? static_cast<double>(write_bytes) / s * 1e-9 : 0;
}

double JobReport::total_flops() const {
  const double per = dtype == "complex64" || dtype == "complex128" ? 8.0 : 2.0;  // a complex multiply-add: 4 real
  return per * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}
double JobReport::max_compute_seconds() const {
  double mx = 0;
  for (const auto& r : ranks)
    if (r.active) mx = std::max(mx, r.compute_seconds());
  return mx;
}
double JobReport::mean_compute_seconds() const {
  double sum = 0;
  int count = 0;
  for (const auto& r : ranks)
    if (r.active) {
      sum += r.compute_seconds();
      ++count;
    }
  return count > 0 ? sum / count : 0;
}
double JobReport::load_imbalance() const {
  const double mean = mean_compute_seconds();
  return mean > 0 ? max_compute_seconds() / mean : 1.0;
}
double JobReport::aggregate_gflops() const {
  const double s = max_compute_seconds();
  return s > 0 ? total_flops() / s * 1e-9 : 0;
}

std::string JobReport::bound_phase() const {
  if (ranks.empty()) return "";
  double start_s = 0, read_s = 0, compute_s = 0, write_s = 0;
  for (const auto& r : ranks) {
    start_s = std::max(start_s, r.startup_seconds);
    read_s = std::max(read_s, r.phase("read"));
    compute_s = std::max(compute_s, r.phase("compute"));
    write_s = std::max(write_s, r.phase("write") + r.phase("gather"));
  }
  const std::pair<double, const char*> phases[] = {
      {start_s, "start-up"}, {read_s, "read"}, {compute_s, "compute"}, {write_s, "write"}};
  return std::max_element(std::begin(phases), std::end(phases))->second;
}

nlohmann::json to_json(const RankRecord& r) {
  nlohmann::json phases = nlohmann::json::object();
  for (const auto& [n, s] : r.phases) phases[n] = s;
  nlohmann::json order = nlohmann::json::array();
  for (const auto& p : r.phases) order.push_back(p.first);
  nlohmann::json j = {{"rank", r.rank},
                      {"host", r.host},
                      {"device", r.device},
                      {"device_id", r.device_id},
                      {"device_uuid", or_null(r.device_uuid)},
                      {"device_pci_bus_id", or_null(r.device_pci_bus_id)},
                      {"active", r.active},
                      {"block", {{"row", r.block_row}, {"col", r.block_col}}},
                      {"rows", {r.row_begin, r.row_end}},
                      {"cols", {r.col_begin, r.col_end}},
                      {"flops", r.flops},
                      {"gflops", r.gflops()},
                      {"phases", phases},
                      {"phase_order", order},
                      {"warnings", r.warnings},
                      {"peak_host_bytes", r.peak_host_bytes},
                      {"peak_gpu_bytes", r.peak_gpu_bytes},
                      {"startup_seconds", r.startup_seconds},
                      {"cpus", r.cpus},
                      {"read_bytes", r.read_bytes},
                      {"write_bytes", r.write_bytes},
                      {"read_gbps", r.read_gbps()},
                      {"write_gbps", r.write_gbps()},
                      {"staged", r.staged}};
  if (!r.precision.empty()) j["precision"] = r.precision;
  if (!r.baseline_kernel.empty()) {
    const double s = r.compute_seconds();
    j["baseline"] = {{"kernel", r.baseline_kernel},
                     {"seconds", r.baseline_seconds},
                     {"speedup", s > 0 ? r.baseline_seconds / s : 0.0}};
  }
  return j;
}

RankRecord rank_from_json(const nlohmann::json& j) {
  RankRecord r;
  r.rank = j.at("rank").get<int>();
  r.host = j.at("host").get<std::string>();
  r.device = j.at("device").get<std::string>();
  r.device_id = j.at("device_id").get<int>();
  if (const auto u = j.find("device_uuid"); u != j.end() && u->is_string()) r.device_uuid = u->get<std::string>();
  if (const auto b = j.find("device_pci_bus_id"); b != j.end() && b->is_string())
    r.device_pci_bus_id = b->get<std::string>();
  r.active = j.at("active").get<bool>();
  r.block_row = j.at("block").at("row").get<int>();
  r.block_col = j.at("block").at("col").get<int>();
  r.row_begin = j.at("rows").at(0).get<std::int64_t>();
  r.row_end = j.at("rows").at(1).get<std::int64_t>();
  r.col_begin = j.at("cols").at(0).get<std::int64_t>();
  r.col_end = j.at("cols").at(1).get<std::int64_t>();
  r.flops = j.at("flops").get<double>();
  for (const auto& name : j.at("phase_order")) {
    const auto n = name.get<std::string>();
    r.phases.emplace_back(n, j.at("phases").at(n).get<double>());
  }
  r.warnings = j.at("warnings").get<std::vector<std::string>>();
  r.peak_host_bytes = j.value("peak_host_bytes", std::int64_t{0});
  r.peak_gpu_bytes = j.value("peak_gpu_bytes", std::int64_t{0});
  r.startup_seconds = j.value("startup_seconds", -1.0);
  r.cpus = j.value("cpus", 0);
  r.read_bytes = j.value("read_bytes", std::int64_t{0});
  r.write_bytes = j.value("write_bytes", std::int64_t{0});
  r.precision = j.value("precision", std::string());
  r.staged = j.value("staged", false);
  if (j.contains("baseline")) {
    r.baseline_kernel = j["baseline"].at("kernel").get<std::string>();
    r.baseline_seconds = j["baseline"].at("seconds").get<double>();
  }
  return r;
}

nlohmann::json job_provenance(const JobReport& r) {
  nlohmann::json p = provenance();
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& in : r.inputs) inputs.push_back(to_json(in));
  p["inputs"] = inputs;
  p.erase("devices");
  if (r.ranks.empty()) {  // C's attribute: written before the ranks' records reach rank 0
    p.erase("hosts");
    p.erase("gpus");
    return p;
  }
  std::vector<std::string> hosts;
  for (const auto& rr : r.ranks)
    if (std::find(hosts.begin(), hosts.end(), rr.host) == hosts.end()) hosts.push_back(rr.host);
  p["hosts"] = hosts;
  nlohmann::json used = nlohmann::json::array();
  for (const auto& rr : r.ranks)
    if (rr.device_id >= 0)
      used.push_back({{"rank", rr.rank},
                      {"host", rr.host},
                      {"device_id", rr.device_id},
                      {"name", rr.device},
                      {"uuid", or_null(rr.device_uuid)},
                      {"pci_bus_id", or_null(rr.device_pci_bus_id)}});
  p["gpus"] = used;
  return p;
}

nlohmann::json to_json(const JobReport& r) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& rr : r.ranks) ranks.push_back(to_json(rr));
  nlohmann::json j = {{"schema", kReportSchema},
                      {"provenance", job_provenance(r)},
                      {"tessera_version", r.version},
                      {"started_at", r.started_at},
                      {"inputs", {{"a", r.a}, {"b", r.b}}},
                      {"output", r.c},
                      {"shape", {{"m", r.m}, {"n", r.n}, {"k", r.k}}},
                      {"dtype", r.dtype},
                      {"c_dtype", r.c_dtype.empty() ? r.dtype : r.c_dtype},
                      {"grid", {{"rows", r.grid_rows}, {"cols", r.grid_cols}}},
                      {"nranks", r.nranks},
                      {"algorithm", r.algorithm},
                      {"transpose_a", r.transpose_a},
                      {"transpose_b", r.transpose_b},
                      {"alpha", r.alpha},
                      {"beta", r.beta},
                      {"comm", r.comm},
                      {"stream_chunks", r.stream_chunks},
                      {"write", r.write},
                      {"nccl_transport", r.nccl_transport},
                      {"network", r.network},
                      {"backend", r.backend},
                      {"kernel", r.kernel},
                      {"totals",
                       {{"wall_seconds", r.wall_seconds},
                        {"flops", r.total_flops()},
                        {"aggregate_gflops", r.aggregate_gflops()},
                        {"max_compute_seconds", r.max_compute_seconds()},
                        {"mean_compute_seconds", r.mean_compute_seconds()},
                        {"load_imbalance", r.load_imbalance()}}},
                      {"verification", r.verification},
                      {"predicted", r.predicted},
                      {"settings", r.settings},
                      {"bound", r.bound_phase()},
                      {"warnings", r.warnings},
                      {"ranks", ranks}};
  if (r.repeats.repeated()) j["repeats"] = to_json(r.repeats);
  return j;
}

namespace {
std::string ms(double s) { return fmt::format("{:.1f}", s * 1e3); }

// "network: 2 nodes (node1: ranks 0-1, node2: ranks 2-3); MPI ob1: between nodes tcp, within a
// node vader (shared memory)"
std::string network_line(const JobReport& r) {
  std::vector<std::pair<std::string, std::vector<int>>> nodes;
  for (const auto& rr : r.ranks) {
    auto it = std::find_if(nodes.begin(), nodes.end(), [&](const auto& n) { return n.first == rr.host; });
    if (it == nodes.end()) it = nodes.insert(nodes.end(), {rr.host, {}});
    it->second.push_back(rr.rank);
  }
  std::string where;
  for (const auto& [host, ranks] : nodes) {
    std::string list;
    for (std::size_t i = 0; i < ranks.size();) {
      std::size_t j = i;
      while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
      list += (list.empty() ? "" : ",") + std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
      i = j + 1;
    }
    where += fmt::format("{}{}: rank{} {}", where.empty() ? "" : ", ", host, ranks.size() == 1 ? "" : "s", list);
  }
  const auto text = [&](const char* key) { return r.network.value(key, std::string("?")); };
  return fmt::format("network: {} node{} ({}); MPI {}: between nodes {}, within a node {}\n", nodes.size(),
                     nodes.size() == 1 ? "" : "s", where, text("pml"), text("between_nodes"), text("within_node"));
}
}  // namespace

std::string format_table(const JobReport& r) {
  // Columns: every phase any rank reported, in first-seen order.
  std::vector<std::string> names;
  for (const auto& rr : r.ranks)
    for (const auto& p : rr.phases)
      if (std::find(names.begin(), names.end(), p.first) == names.end()) names.push_back(p.first);
  const bool baseline =
      std::any_of(r.ranks.begin(), r.ranks.end(), [](const auto& x) { return !x.baseline_kernel.empty(); });

  std::string out = fmt::format(
      "tessera {}: C({}x{}) = A({}x{}) * B({}x{}), {}, {} on a {}x{} grid of {} rank{} (comm {}), {} / {}\n", r.version,
      r.m, r.n, r.m, r.k, r.k, r.n,
      r.c_dtype.empty() || r.c_dtype == r.dtype ? r.dtype : r.dtype + ", C stored as " + r.c_dtype, r.algorithm,
      r.grid_rows, r.grid_cols, r.nranks, r.nranks == 1 ? "" : "s",
      r.comm + (r.nccl_transport.empty() ? "" : ", " + r.nccl_transport), r.backend, r.kernel);
  if (r.stream_chunks > 1) out += fmt::format("streaming: A read in {} pieces while the GEMM ran\n", r.stream_chunks);
  out += fmt::format("C written: {}\n", r.write);
  if (r.nranks > 1 && r.network.is_object()) out += network_line(r);
  out += fmt::format("{:>4}  {:<12} {:<24} {:>7} {:>19} {:>10} {:>8} {:>8}", "rank", "host", "device", "block",
                     "rows x cols", "GFLOP/s", "rd GB/s", "wr GB/s");
  for (const auto& n : names) out += fmt::format(" {:>9}", n + "/ms");
  if (baseline) out += fmt::format(" {:>12}", "x baseline");
  out += "\n";
  for (const auto& rr : r.ranks) {
    std::string dev = rr.device.size() > 24 ? rr.device.substr(0, 23) + "~" : rr.device;
    std::string host = rr.host.size() > 12 ? rr.host.substr(0, 11) + "~" : rr.host;
    if (!rr.active) {
      out += fmt::format("{:>4}  {:<12} {:<24} {:>7}   idle: the {}x{} grid needs {} of {} ranks\n", rr.rank, host, dev,
                         "-", r.grid_rows, r.grid_cols, r.grid_rows * r.grid_cols, r.nranks);
      continue;
    }
    const auto rate = [](double gbps) { return gbps > 0 ? fmt::format("{:.2f}", gbps) : std::string("-"); };
    out += fmt::format("{:>4}  {:<12} {:<24} {:>7} {:>19} {:>10.1f} {:>8} {:>8}", rr.rank, host, dev,
                       fmt::format("({},{})", rr.block_row, rr.block_col),
                       fmt::format("{}x{}", rr.row_end - rr.row_begin, rr.col_end - rr.col_begin), rr.gflops(),
                       rate(rr.read_gbps()), rate(rr.write_gbps()));
    for (const auto& n : names) out += fmt::format(" {:>9}", rr.has_phase(n) ? ms(rr.phase(n)) : "-");
    if (baseline) {
      const double s = rr.compute_seconds();
      out += rr.baseline_kernel.empty() || s <= 0 ? fmt::format(" {:>12}", "-")
                                                  : fmt::format(" {:>11.2f}x", rr.baseline_seconds / s);
    }
    out += "\n";
  }
  out += fmt::format(
      "total: wall {:.3f} s, {:.1f} GFLOP/s aggregate (2MNK / slowest rank's compute), load imbalance {:.2f} (max/mean "
      "compute)\n",
      r.wall_seconds, r.aggregate_gflops(), r.load_imbalance());
  if (baseline) {
    for (const auto& rr : r.ranks)
      if (!rr.baseline_kernel.empty()) {
        out += fmt::format("baseline: speedup of {} over {} on the same block, per rank (GPU: kernel time)\n", r.kernel,
                           rr.baseline_kernel);
        break;
      }
  }
  double startup = -1;
  for (const auto& rr : r.ranks) startup = std::max(startup, rr.startup_seconds);
  if (startup >= 0)
    out +=
        fmt::format("before the job: {:.3f} s of process start-up (launch, libraries, MPI), slowest rank\n", startup);
  out += fmt::format("bounded by: {}", r.bound_phase());
  if (r.predicted.is_object() && r.predicted.contains("seconds"))
    out += fmt::format(" (predicted: {:.2f} s, bounded by {}, machine {})", r.predicted["seconds"].get<double>(),
                       r.predicted.value("bound", std::string("?")), r.predicted.value("machine", std::string("?")));
  out += "\n";
  if (r.repeats.repeated()) out += format_repeats(r.repeats);
  for (const auto& rr : r.ranks)
    if (!rr.precision.empty()) out += fmt::format("precision (rank {}): {}\n", rr.rank, rr.precision);
  for (const auto& rr : r.ranks)
    for (const auto& w : rr.warnings) out += fmt::format("warning (rank {}): {}\n", rr.rank, w);
  for (const auto& w : r.warnings) out += fmt::format("warning: {}\n", w);
  return out;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace tessera::report
