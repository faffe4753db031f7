#pragma once
// Test hooks of the io layer, read from the environment once: where a test stops, fails or holds
// tessera's writes to an existing output file (tests/scripts/crash_sweep.py, writers.py and the
// local Slurm test's time-limit job). Unset, each is one comparison.
namespace tessera::io {

// Test hooks, for the crash tests (tests/scripts/crash_sweep.py), called before each write tessera
// makes to an existing output file (the journal's, HDF5's through the journal, C's elements, the
// commit's removal of the journal), counted from 1:
//   TESSERA_TEST_KILL_AT_WRITE=N[:TERM|INT|HUP]  the N-th is preceded by that signal to this
//                                                process (SIGKILL when none is named);
//   TESSERA_TEST_FAIL_AT_WRITE=N                 the N-th fails with ENOSPC, as on a full disk.
// Returns 0, or the errno the write must fail with.
int test_write_point();
//   TESSERA_TEST_PAUSE_BEFORE_COMMIT=SECONDS     the result's commit waits that long first (a
//                                                second writer, a disk filled meanwhile).
void test_pause_before_commit();
//   TESSERA_TEST_WAIT_IN_COMMIT=SECONDS          the commit into an existing file, signals held,
//                                                waits until a signal is pending (a job's time
//                                                limit), at most that long.
void test_wait_in_commit();

}  // namespace tessera::io
