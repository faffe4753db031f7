#include "job/result.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "core/error.hpp"
#include "core/log.hpp"

namespace tessera::job {

void commit_result(const JobOptions& o, io::MatrixWriter& writer, report::JobReport& job,
                   const io::NonfiniteCount& written) {
  const io::NonfiniteCount& bad = written;
  if (bad.count > 0) {
    const auto first = static_cast<std::int64_t>(bad.first);
    const auto n = std::max<std::int64_t>(job.n, 1);
    const std::string message =
        fmt::format("C '{}' holds {} non-finite value(s) (NaN/Inf), the first at ({}, {}){}", o.c.text(),
                    static_cast<long long>(bad.count), first / n, first % n,
                    o.allow_nonfinite ? std::string(" (--allow-nonfinite)")
                                      : ", although A and B are finite: the products or their sums overflow " +
                                            (job.c_dtype.empty() || job.c_dtype == job.dtype
                                                 ? job.dtype
                                                 : job.c_dtype + " (C's stored type; computed in " + job.dtype + ")"));
    if (o.fail_on_nonfinite) throw Error(message + "; nothing written (--fail-on-nonfinite)");
    log::warn(message + "; written anyway (--fail-on-nonfinite refuses such a result)");
    job.warnings.push_back(message);
  }
  writer.commit();
}

}  // namespace tessera::job
