#pragma once
// Temporary output files and fatal signals. A run killed by SIGTERM / SIGINT / SIGHUP (mpirun
// ends the remaining ranks with SIGTERM when one dies) removes its temporary output file before
// dying, so nothing half-written stays behind. SIGKILL cannot be caught: a file it leaves is
// named "<output>.tessera-partial-<host>-<pid>" and the next run writing that output removes it
// (same host, process gone) or reports it.
#include <functional>
#include <string>
#include <vector>

namespace tessera::io {

// "<dir>/<name>.tessera-" for `file`: what its sidecar files (the journal) are named from, within
// 255 bytes as temporary_name's are.
std::string sidecar_prefix(const std::string& file);

// Fatal signals (TERM, INT, HUP, XFSZ) held off while a write that must not be cut is under way:
// one that arrives meanwhile is raised again by the last release. Nests; any thread.
void hold_fatal_signals();
void release_fatal_signals();
// Whether a held signal waits to be acted on; which (0: none).
bool fatal_signal_pending();
int pending_fatal_signal();
// The held signal that waits, taken so that no release acts on it (0 if none): for a commit that
// completed while it waited, after which the signal has nothing left to stop.
int take_pending_signal();
// hold_fatal_signals() for a scope.
class SignalsHeld {
 public:
  SignalsHeld() { hold_fatal_signals(); }
  ~SignalsHeld() noexcept(false) { release_fatal_signals(); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;
};
// A function the signal handler calls first (async-signal-safe): the journal's rollback.
void set_signal_rollback(void (*fn)() noexcept);

// Register / forget a temporary path to unlink on a fatal signal. At most a few at once.
void register_temporary(const std::string& path);
void forget_temporary(const std::string& path);

// "<file>.tessera-partial-<host>-<pid>" for this process, in `file`'s directory. Always a legal
// name where `file` is: a file name too long to take the suffix within 255 bytes is shortened
// and ends in a hash of the whole name (the same for every run), e.g. "<first 146 bytes>~<16 hex>".
std::string temporary_name(const std::string& file);

// Whether a name of temporary_name's form (a file's, or a temporary dataset's link name) was left
// by a process of this host that is gone; anything else (a live process, another host, not such
// a name) is not.
bool left_by_dead_process(const std::string& name);

// Looks for leftovers of `file` from earlier runs: removes those of dead processes of this
// host, and returns one line per leftover (removed or kept) for the user. A leftover for which
// `keep` returns true (e.g. a file this run reads) is never removed. (Temporary datasets such
// runs left inside an existing HDF5 file are removed by the writer, through the file's journal.)
std::vector<std::string> clean_stale_temporaries(const std::string& file,
                                                 const std::function<bool(const std::string&)>& keep = {});

}  // namespace tessera::io
