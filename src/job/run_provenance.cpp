#include "job/run_provenance.hpp"

#include <cstdint>
#include <string>

#include "io/file_stamp.hpp"

namespace tessera::job {

report::InputRecord input_record(const std::string& role, const io::DatasetRef& asked) {
  const io::DatasetRef ref = asked.absolute();
  const io::DatasetInfo info = io::inspect(ref);
  const io::FileStamp stamp = io::file_stamp(ref.file);
  report::InputRecord r;
  r.role = role;
  r.reference = ref.text();
  r.file = ref.file;
  r.size_bytes = stamp.size_bytes;
  r.modified_seconds = stamp.modified_seconds;
  r.modified_nanoseconds = stamp.modified_nanoseconds;
  r.rows = info.rows;
  r.cols = info.cols;
  r.stored_type = info.stored_type;
  r.layout = info.layout;
  r.chunk = info.chunk;
  r.filters = info.filters;
  return r;
}

std::vector<report::InputRecord> input_records(const JobOptions& o) {
  std::vector<report::InputRecord> inputs = {input_record("a", o.a.ref), input_record("b", o.b.ref)};
  if (o.beta != 0 || o.beta_imag != 0) inputs.push_back(input_record("c", o.c));
  return inputs;
}

std::vector<io::Attribute> provenance_attributes(const report::JobReport& job) {
  const nlohmann::json p = report::job_provenance(job);
  std::vector<io::Attribute> attrs = {io::Attribute::of("git_id", p["git_id"].get<std::string>()),
                                      io::Attribute::of("provenance", p.dump())};
  if (p["slurm_job_id"].is_string())
    attrs.push_back(io::Attribute::of("slurm_job_id", p["slurm_job_id"].get<std::string>()));
  if (p["working_directory"].is_string())
    attrs.push_back(io::Attribute::of("working_directory", p["working_directory"].get<std::string>()));
  for (const report::InputRecord& in : job.inputs) {
    const std::string prefix = in.role == "c" ? "input_c_old" : "input_" + in.role;
    attrs.push_back(io::Attribute::of(prefix + "_bytes", in.size_bytes));
    attrs.push_back(io::Attribute::of(prefix + "_modified",
                                      report::utc_timestamp_ns(in.modified_seconds, in.modified_nanoseconds)));
  }
  return attrs;
}

}  // namespace tessera::job
