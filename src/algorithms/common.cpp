// What more than one algorithm uses: a block's share, the search for the fastest bands, the check
// that the plan holds, the settings as the dry run and the report show them.
#include "algorithms/algorithm.hpp"
#include "core/error.hpp"

namespace tessera::algorithms {

nlohmann::json Algorithm::describe(const Setting& s) const {
  return {{"backend", backend::kind_name(s.backend())},
          {"kernel", s.kernel},
          {"comm", s.comm_name()},
          {"write", s.in_place_write ? "in place" : "gather"},
          {"bands", s.bands}};
}

Share block_share(const Problem& p, int rank, std::int64_t gemm_k) {
  const partition::Partition part(p.m, p.n, p.k, p.ranks, p.grid);
  Share s;
  s.active = part.active(rank);
  const int who = s.active ? rank : 0;  // idle ranks choose the kernel of the largest block
  s.gemm_m = part.rows_of(who).size();
  s.gemm_n = part.cols_of(who).size();
  s.gemm_k = gemm_k;
  if (!s.active) return s;
  s.block_row = part.block_row(rank);
  s.block_col = part.block_col(rank);
  s.rows = part.rows_of(rank);
  s.cols = part.cols_of(rank);
  s.flops = part.flops(rank) * real_work(p.dtype);
  s.c_elements = part.c_elements(rank);
  return s;
}

void check_backend(const RankRun& run) {
  run.comm.step([&] {
    if (!run.share.active || (run.be.kind() == backend::Kind::cuda) == run.setting.gpu) return;
    throw Error("rank " + std::to_string(run.comm.rank()) + " started the " + run.be.name() +
                " backend, but the plan was settled for " + (run.setting.gpu ? "GPUs" : "CPUs") + " on every rank");
  });
}

bool write_own_block_in_place(RankRun& run, double written_seconds) {
  if (!run.out.in_place()) {
    run.progress("gathering and writing C");
    return false;
  }
  run.progress("writing C blocks on every rank");
  const Share& s = run.share;
  run.out.write_own_block(run.comm, s.rows.begin, s.cols.begin, s.rows.size(), s.cols.size(), run.c.data(),
                          run.c_written, written_seconds, run.me.phases);
  return true;
}

int fastest_bands(int first, int most, const std::function<double(int)>& seconds,
                  const std::function<bool(int)>& allowed) {
  int best = first;
  double best_s = seconds(first);
  for (int b = first * 2; b <= most && allowed(b); b *= 2)
    if (const double t = seconds(b); t < best_s) {
      best = b;
      best_s = t;
    }
  return best;
}

}  // namespace tessera::algorithms
