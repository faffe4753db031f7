// The algorithms tessera knows, by name (a new one: its file, and a line in each list below), and
// what more than one of them uses.
#include "algorithms/algorithm.hpp"
#include "core/error.hpp"

namespace tessera::algorithms {

std::unique_ptr<Algorithm> make_panels();  // panels.cpp
std::unique_ptr<Algorithm> make_summa();   // summa.cpp
std::unique_ptr<Algorithm> make_ksplit();  // ksplit.cpp

std::vector<std::string> algorithm_names() { return {"panels", "summa", "ksplit"}; }

std::unique_ptr<Algorithm> make_algorithm(const std::string& name) {
  if (name == "panels") return make_panels();
  if (name == "summa") return make_summa();
  if (name == "ksplit") return make_ksplit();
  throw InputError("invalid --algorithm '" + name + "' (choose: auto, panels, summa, ksplit)");
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
  s.flops = part.flops(rank);
  s.c_elements = part.c_elements(rank);
  return s;
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
