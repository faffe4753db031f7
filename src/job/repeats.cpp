#include "job/repeats.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "partition/partition.hpp"

namespace tessera::job {

namespace {
int warmup_of(const RunOptions& o) { return o.warmup.value_or(o.repeat > 1 ? 1 : 0); }
}  // namespace

void check_repeat_options(const RunOptions& o) {
  (void)output_layout(o);  // its refusals, before anything is read
  if (o.repeat < 1) throw InputError(fmt::format("--repeat {} is not a run count: it must be at least 1", o.repeat));
  if (o.warmup && *o.warmup < 0)
    throw InputError(fmt::format("--warmup {} is not a run count: it must be 0 or more", *o.warmup));
  if (o.repeat > 1 && (o.beta != 0 || o.beta_imag != 0))
    throw InputError(fmt::format(
        "--repeat {} with --beta {:g}: each run would add beta times the C that the run before it wrote, so no two "
        "runs would compute the same C; repeat with --beta 0",
        o.repeat, o.beta));
  // A warm-up commits C too, so the counted run would add beta times the warm-up's C, not C_old.
  if (warmup_of(o) > 0 && (o.beta != 0 || o.beta_imag != 0))
    throw InputError(fmt::format(
        "--warmup {} with --beta {:g}: each warm-up run commits C, so the run after it would add beta times the C "
        "that the warm-up wrote, not the C given; use --warmup 0 with --beta",
        warmup_of(o), o.beta));
}

io::WriteOptions output_layout(const RunOptions& o) {
  io::WriteOptions wo;
  const std::string& z = o.compression;
  if (o.compression_level != 0 && z != "gzip" && z != "zstd")
    throw InputError(fmt::format("--compression-level {} is gzip's or zstd's (--compression gzip|zstd); {} takes none",
                                 o.compression_level, z.empty() || z == "none" ? "no compression" : z));
  if (z == "gzip" && o.compression_level > 9)
    throw InputError(fmt::format("--compression-level {} is out of gzip's range, 1 to 9", o.compression_level));
  if (z == "gzip") {
    wo.gzip_level = o.compression_level > 0 ? static_cast<int>(o.compression_level) : 1;
  } else if (!z.empty() && z != "none") {
    wo.plugin_filter = io::filter_plugin_id(z);
    if (wo.plugin_filter == 0) throw InputError("--compression " + z + " is not one of none, gzip, lz4, zstd, bzip2");
    wo.plugin_level = static_cast<int>(o.compression_level);  // zstd's (0: its default)
  }
  if (o.shuffle && wo.gzip_level == 0 && wo.plugin_filter == 0)
    throw InputError("--shuffle rearranges C's bytes for a compression: give --compression too");
  wo.shuffle = o.shuffle;
  if (!o.chunk.empty()) {
    const partition::GridShape g = partition::parse_grid(o.chunk, "--chunk");  // the same "RxC" syntax
    wo.chunk = {g.rows, g.cols};
  }
  return wo;
}

RunSeries::RunSeries(const RunOptions& o, double began)
    : overwrite_(o.overwrite),
      layout_(output_layout(o)),
      compression_(o.compression.empty() ? "none" : o.compression),
      repeat_(o.repeat),
      warmup_(warmup_of(o)),
      began_(began) {
  repeats_.warmup = warmup_;
}

std::string RunSeries::name(int run) const {
  return counted(run) ? fmt::format("run {} of {}", run - warmup_ + 1, repeat_)
                      : fmt::format("warm-up {} of {}", run + 1, warmup_);
}

io::WriteOptions RunSeries::write_options(int run) const {
  io::WriteOptions wo = layout_;
  wo.overwrite = overwrite_ || run > 0;
  if (run > 0 && new_file_) wo.existing_file = io::ExistingFile::replace_file;
  return wo;
}

void RunSeries::first_output(const io::MatrixWriter& writer) { new_file_ = !writer.temporary_path().empty(); }

void RunSeries::record(int run, const report::JobReport& job) {
  if (!counted(run)) return;
  report::RunSample sample;
  sample.wall_seconds = job.wall_seconds;
  for (const auto& r : job.ranks) sample.ranks.push_back(r.phases);
  repeats_.runs.push_back(std::move(sample));
}

}  // namespace tessera::job
