#pragma once
// `tessera run --repeat N --warmup W` (docs/usage.md, "Repeated runs"): the whole job (plan, start, read,
// compute, verify, deliver, commit) runs W + N times in one launch. Every run commits C; the first
// as the options say, each later one replacing what the first wrote (the dataset it added to an
// existing file, or the file it created), without --overwrite. The W warm-ups are in no statistic;
// the report describes the last run and the spread of the N counted ones (report/repeats.hpp).
#include <string>

#include "io/hdf5_io.hpp"
#include "job/run_job.hpp"
#include "report/report.hpp"

namespace tessera::job {

// Refuses, with InputError (the same on every rank), --repeat < 1, --warmup < 0, and --repeat > 1
// or --warmup > 0 with --beta != 0 (each run would add beta times the C that the run before it
// wrote).
void check_repeat_options(const RunOptions& o);

// C's storage as the options ask (--chunk, --compression, --compression-level, --shuffle): the
// WriteOptions fields of a new dataset's layout. Throws InputError (the same on every rank) for a
// level without gzip, a shuffle without compression, or a chunk shape that is not RxC.
io::WriteOptions output_layout(const RunOptions& o);

class RunSeries {
 public:
  // `began`: MPI_Wtime() before the first run (a rank's process start-up is measured up to it).
  RunSeries(const RunOptions& o, double began);

  int size() const { return warmup_ + repeat_; }  // every run, warm-ups first
  bool last(int run) const { return run == size() - 1; }
  bool counted(int run) const { return run >= warmup_; }
  double began() const { return began_; }
  // "warm-up 1 of 1", "run 2 of 5": rank 0 prints it as the run starts (unless --quiet).
  std::string name(int run) const;

  // How rank 0 writes C in run `run`: the first as the options say, a later one replacing the
  // first run's output (the file, when the first created it; else the dataset).
  io::WriteOptions write_options(int run) const;
  // --compression as given (none, gzip, lz4, bzip2): what the model charges rank 0 for.
  const std::string& compression() const { return compression_; }
  // Rank 0, once the first run's writer exists: whether it writes a new file (renamed into place).
  void first_output(const io::MatrixWriter& writer);

  // Once a run's records have reached rank 0 (job.ranks there; job.wall_seconds, the slowest
  // rank's, on every rank): a counted run's times join the series.
  void record(int run, const report::JobReport& job);
  // The counted runs so far, and the warm-ups before them.
  const report::Repeats& repeats() const { return repeats_; }

 private:
  bool overwrite_;
  io::WriteOptions layout_;  // output_layout's
  std::string compression_;
  int repeat_, warmup_;
  double began_;
  bool new_file_ = false;  // rank 0: the first run created the output file
  report::Repeats repeats_;
};

}  // namespace tessera::job
