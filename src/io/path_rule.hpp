#pragma once
// What the path rule of every command (job/job_paths.hpp, commands/command_paths.hpp) shares: an
// input dataset put to the guard with every file its data lives in, the config file, and telling
// tessera's own files (which it may replace) from others.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/hdf5_io.hpp"
#include "io/path_guard.hpp"

namespace tessera::io {

struct GuardedPaths {
  PathGuard guard;                 // what was checked: is_read() protects inputs from clean-ups
  std::vector<std::string> notes;  // inputs read partly as a declared fill value (io::locate_data)
};

// `ref` and every file its data lives in (io::locate_data, which also refuses
// inputs HDF5 would silently fill), as files the command reads. `role` names it ("A", "C").
// A file read with a journal beside it (a run that died while writing it, or a file planted
// there) is refused, naming the journal and `tessera recover`: a file tessera is only asked to
// read is never written, not even restored (issue 40). The journal is not opened.
void guard_input(GuardedPaths& g, const DatasetRef& ref, const std::string& role);
// Refuses (InputError) to read `file` while it has a pending journal (io::pending_journal): a run
// died writing it. `what` names the file's role in the message ("A", "the external link ...").
void refuse_pending_journal(const std::string& file, const std::string& what);
// The output file, before a command writes it: a journal left by a tessera run that died while
// writing it (io/journal.hpp) is applied first, putting back the bytes the file held before that
// run, with a note for the user. Throws InputError while a live run holds it.
void recover_before_use(GuardedPaths& g, const std::string& file);
// The --config file, read and never written ("" = none).
void guard_config(PathGuard& guard, const std::string& config);

// The file's text when it is a regular file small enough to be one of tessera's own (a report of
// 100,000 ranks is ~150 MB); false otherwise.
bool read_small_file(const std::string& path, std::string& text);
// An empty file (nothing to lose), or a JSON object that `match` recognizes.
bool json_file_of(const std::string& path, const std::function<bool(const nlohmann::json&)>& match);

}  // namespace tessera::io
