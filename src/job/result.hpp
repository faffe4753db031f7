#pragma once
// The attributes every result C carries, and the check it passes before it is committed,
// whichever algorithm made it.
#include <string>
#include <vector>

#include "core/version.hpp"
#include "io/hdf5_io.hpp"
#include "job/job_options.hpp"
#include "report/report.hpp"

namespace tessera::job {

// What the report says of the job before it runs: the version, when, the operands, the ranks.
inline report::JobReport job_header(const JobOptions& o, int nranks) {
  report::JobReport job;
  job.version = kVersion;
  job.started_at = report::utc_timestamp();
  job.a = o.a.ref.text();
  job.b = o.b.ref.text();
  job.c = o.c.text();
  job.nranks = nranks;
  job.transpose_a = o.a.transposed;
  job.transpose_b = o.b.transposed;
  job.alpha = o.alpha;
  job.beta = o.beta;
  return job;
}

// `grid`: how the work was split ("2x3" for panels, "1x1xP" for ksplit).
inline std::vector<io::Attribute> result_attributes(const report::JobReport& job, const std::string& grid) {
  return {io::Attribute::of("shape", std::vector<std::int64_t>{job.m, job.n}),
          io::Attribute::of("dtype", job.dtype),
          io::Attribute::of("process_grid", grid),
          io::Attribute::of("nranks", std::int64_t{job.nranks}),
          io::Attribute::of("algorithm", job.algorithm),
          io::Attribute::of("transpose_a", std::int64_t{job.transpose_a ? 1 : 0}),
          io::Attribute::of("transpose_b", std::int64_t{job.transpose_b ? 1 : 0}),
          io::Attribute::of("alpha", job.alpha),
          io::Attribute::of("beta", job.beta),
          io::Attribute::of("backend", job.backend),
          io::Attribute::of("kernel", job.kernel),
          io::Attribute::of("input_a", io::DatasetRef::parse(job.a).absolute().text()),
          io::Attribute::of("input_b", io::DatasetRef::parse(job.b).absolute().text()),
          io::Attribute::of("tessera_version", kVersion),
          io::Attribute::of("created", job.started_at),
          io::Attribute::of("wall_seconds", job.wall_seconds)};
}

// Rank 0, in place of writer.commit(). A product of finite inputs can still overflow, and NaN or
// Inf in C must not go unnoticed: the writer counted them as it wrote C. With
// --fail-on-nonfinite such a C is an error (throws; nothing is committed, the temporary file
// goes); otherwise it is committed with a warning, on stderr and in job.warnings (the report),
// naming the count and the first (row, col). job.n and job.dtype must be set.
// `written`: NaN and Inf in all of C as written (the writer's own count, or OutputRoute's over
// the ranks that wrote their blocks in place).
void commit_result(const JobOptions& o, io::MatrixWriter& writer, report::JobReport& job,
                   const io::NonfiniteCount& written);

}  // namespace tessera::job
