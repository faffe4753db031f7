#pragma once
// What a run adds to its provenance (report/provenance.hpp, docs/report.md): its options typed,
// the identity of the files it reads, and the provenance attributes C carries.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/hdf5_io.hpp"
#include "job/job_options.hpp"
#include "report/provenance.hpp"
#include "report/report.hpp"

namespace tessera::job {

// The dataset `ref` as found now, as the provenance's input `role` ("a", "b", "c").
report::InputRecord input_record(const std::string& role, const io::DatasetRef& ref);

// Rank 0, before anything is read: A and B, and C_old when --beta reads it, as found now (file
// size and modification time, the dataset's stored shape, type and storage). Throws as
// io::inspect does.
std::vector<report::InputRecord> input_records(const JobOptions& o);

// C's provenance attributes: `git_id`, `slurm_job_id` (only under Slurm), `working_directory`,
// `input_a_bytes`, `input_a_modified` (and B's, C_old's), and `provenance`: the report's
// provenance block (schema #/$defs/provenance) as JSON text, with this job's inputs.
std::vector<io::Attribute> provenance_attributes(const report::JobReport& job);

}  // namespace tessera::job
