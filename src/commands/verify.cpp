#include "commands/verify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "commands/command_paths.hpp"
#include "core/error.hpp"
#include "io/hdf5_io.hpp"
#include "io/operand.hpp"
#include "job/freivalds.hpp"
#include "kernels/cpu_gemm.hpp"
#include "partition/partition.hpp"

namespace tessera::commands {

namespace {
struct Shapes {
  std::int64_t m = 0, n = 0, k = 0;
  int dtype = 1;
};

// Rank 0: where A, B and C live (refused where HDF5 would fill them: commands/command_paths.hpp),
// their shapes, and the precision C was computed in. Throws InputError.
Shapes inspect(const VerifyOptions& o, const io::Operand& aop, const io::Operand& bop, const io::DatasetRef& cref) {
  const auto& aref = aop.ref;
  const auto& bref = bop.ref;
  Shapes s;
  for (const auto& note : guard_verify_paths(o).notes) std::fprintf(stderr, "tessera: note: %s\n", note.c_str());
  const auto a = io::inspect_operand(aop), b = io::inspect_operand(bop), c = io::inspect(cref);
  if (a.cols != b.rows)
    throw InputError(fmt::format("inner dimensions disagree: A '{}' is {}x{} but B '{}' is {}x{}", aref.str(), a.rows,
                                 a.cols, bref.str(), b.rows, b.cols));
  if (c.rows != a.rows || c.cols != b.cols)
    throw InputError(fmt::format("C '{}' is {}x{} but A*B is {}x{}", cref.str(), c.rows, c.cols, a.rows, b.cols));
  if (a.rows < 1 || a.cols < 1 || b.cols < 1) throw InputError("A or B has a zero dimension");
  for (const auto& [name, info] : {std::pair{"A", &a}, std::pair{"B", &b}, std::pair{"C", &c}})
    if (is_complex(info->natural))
      throw InputError(std::string(name) + " is " + info->stored_type +
                       ": `tessera verify` checks real products only; check a complex product as it is made, "
                       "with `tessera run --verify`");
  // A C that tessera made with beta != 0 holds beta C_old too, and C_old is gone: nothing to
  // check it against (docs/output.md, "beta and the old C"), so it is refused rather than called wrong.
  const auto attrs = io::read_attributes(cref);
  const auto attribute = [&attrs](const std::string& name) -> const std::string* {
    const auto it = std::find_if(attrs.begin(), attrs.end(), [&](const auto& attr) { return attr.first == name; });
    return it == attrs.end() ? nullptr : &it->second;
  };
  if (const std::string* beta = attribute("beta"); beta != nullptr && attribute("tessera_version") != nullptr) {
    char* end = nullptr;
    if (const double value = std::strtod(beta->c_str(), &end); end != beta->c_str() && value != 0)
      throw InputError("C '" + cref.str() + "' was made with beta = " + *beta +
                       " (its attribute 'beta'): it holds beta * C_old, which is gone, so verify cannot check it");
  }
  s = {a.rows, b.cols, a.cols, static_cast<int>(c.natural)};
  DType asked = DType::f64;
  if (parse_dtype(o.dtype, &asked))
    s.dtype = static_cast<int>(asked);
  else if (!o.dtype.empty())
    throw InputError("invalid --dtype '" + o.dtype + "' (choose: f32, f64)");
  return s;
}

}  // namespace

VerifyResult verify(const VerifyOptions& o, const comm::Comm& comm) {
  const io::Operand aop{io::DatasetRef::parse(o.a), o.transpose_a};
  const io::Operand bop{io::DatasetRef::parse(o.b), o.transpose_b};
  const auto cref = io::DatasetRef::parse(o.c);
  Shapes s;
  comm.step([&] {
    if (comm.rank() == 0) s = inspect(o, aop, bop, cref);
  });
  TESSERA_MPI_CHECK(MPI_Bcast(&s, sizeof s, MPI_BYTE, 0, comm.get()));
  const DType dtype = static_cast<DType>(s.dtype);
  const partition::Partition part(s.m, s.n, s.k, comm.size(), partition::choose_grid(s.m, s.n, s.k, comm.size()));

  if (!o.full) {
    std::vector<double> a, b, c;
    comm.step([&] {
      const int r = comm.rank();
      if (!part.active(r)) return;
      const auto rows = part.rows_of(r), cols = part.cols_of(r);
      a.resize(static_cast<std::size_t>(rows.size() * s.k));
      b.resize(static_cast<std::size_t>(s.k * cols.size()));
      c.resize(static_cast<std::size_t>(rows.size() * cols.size()));
      io::read_operand_block(aop, rows.begin, rows.size(), 0, s.k, DType::f64, a.data());
      io::read_operand_block(bop, 0, s.k, cols.begin, cols.size(), DType::f64, b.data());
      if (o.alpha != 1)
        for (auto& x : b) x *= o.alpha;
      io::read_block(cref, rows.begin, rows.size(), cols.begin, cols.size(), DType::f64, c.data());
    });
    const auto fr = job::freivalds(comm, part, DType::f64, dtype, a.data(), b.data(), c.data(), o.vectors,
                                   o.safety > 0 ? o.safety : job::kFreivaldsSafety, o.seed);
    return {fr.passed, "verify " + std::string(fr.passed ? "PASSED" : "FAILED") + ": " + o.c + ": " + fr.summary};
  }

  const double safety = o.safety > 0 ? o.safety : 2.0;
  double err2 = 0, ref2 = 0, max_norm = 0, nonfinite = 0;
  const double bound = safety * gamma_bound(dtype, s.k) + 4 * gamma_bound(DType::f64, s.k);
  comm.step([&] {
    const int r = comm.rank();
    if (!part.active(r)) return;
    const auto rows = part.rows_of(r), cols = part.cols_of(r);
    const auto mr = rows.size(), nc = cols.size();
    std::vector<double> a(static_cast<std::size_t>(mr * s.k)), b(static_cast<std::size_t>(s.k * nc)),
        c(static_cast<std::size_t>(mr * nc)), ref(c.size()), mag(c.size());
    io::read_operand_block(aop, rows.begin, mr, 0, s.k, DType::f64, a.data());
    io::read_operand_block(bop, 0, s.k, cols.begin, nc, DType::f64, b.data());
    if (o.alpha != 1)
      for (auto& x : b) x *= o.alpha;
    io::read_block(cref, rows.begin, mr, cols.begin, nc, DType::f64, c.data());
    kernels::openblas_gemm<double>(mr, nc, s.k, a.data(), b.data(), ref.data());
    for (auto& x : a) x = std::fabs(x);
    for (auto& x : b) x = std::fabs(x);
    kernels::openblas_gemm<double>(mr, nc, s.k, a.data(), b.data(), mag.data());
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (!std::isfinite(c[i])) {
        nonfinite += 1;
        continue;
      }
      const double d = std::fabs(c[i] - ref[i]);
      err2 += d * d;
      ref2 += ref[i] * ref[i];
      // An element whose |A||B| is 0 must come out exactly 0.
      const double norm = mag[i] > 0 ? d / mag[i] : (d > 0 ? INFINITY : 0.0);
      max_norm = std::max(max_norm, norm);
    }
  });
  err2 = comm.sum(err2);
  ref2 = comm.sum(ref2);
  const double worst = comm.max(max_norm);
  const auto bad = static_cast<long long>(comm.sum(nonfinite));
  const double rel = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  VerifyResult res;
  res.passed = bad == 0 && worst <= bound && (o.tolerance <= 0 || rel <= o.tolerance);
  res.summary = fmt::format(
      "verify {}: {} vs float64 A*B ({}x{}x{}): rel. Frobenius error {:.3e}{}, max |C-AB|/(|A||B|) {:.3e} {} bound "
      "{:.3e} "
      "({} x gamma_K for {}, K={}){}",
      res.passed ? "PASSED" : "FAILED", o.c, s.m, s.n, s.k, rel,
      o.tolerance > 0 ? fmt::format(" (tolerance {:.1e})", o.tolerance) : "", worst, worst <= bound ? "<=" : ">", bound,
      safety, dtype_name(dtype), s.k, bad ? fmt::format(", {} non-finite elements", bad) : "");
  return res;
}

}  // namespace tessera::commands
