#!/usr/bin/env bash
# Sanitizers and fuzzing (docs/sanitizers.md); scripts/test.sh runs this after the test suite.
# One CPU-only build with clang, AddressSanitizer + UndefinedBehaviorSanitizer and the libFuzzer
# targets of tests/fuzz, in its own folder; then
#   1. the unit and MPI tests under it (ctest -L unit, -L mpi): every sanitizer report is sorted
#      by tests/fuzz/triage.py, and one in tessera's code (or a failed test) is a failure
#   2. each fuzz target on its seeds, then fuzzed for a bounded time, side by side
#      (tests/fuzz/run_fuzzer.py): a finding in tessera's code is a failure; a crash, hang or
#      leak inside libhdf5 is reported with its input, and is not
# Exit status: 0 clean, 1 any finding in tessera's code or a failed test.
#
#   TESSERA_SANITIZE_BUILD_DIR  the build folder (default: build-sanitize)
#   TESSERA_FUZZ_SECONDS        fuzzing time of each target (default: 60)
#   TESSERA_SANITIZE_PARTS      what to run: "tests fuzz" (default), "tests" or "fuzz"
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_SANITIZE_BUILD_DIR:-$repo/build-sanitize}
fuzz_seconds=${TESSERA_FUZZ_SECONDS:-60}
parts=${TESSERA_SANITIZE_PARTS:-tests fuzz}
jobs=$(nproc)
export PYTHONDONTWRITEBYTECODE=1
# Instrumented processes start and run several times slower: tests that bound a whole process's
# time (a refusal "up front") scale their limits by this.
export TESSERA_TEST_TIME_SCALE=${TESSERA_TEST_TIME_SCALE:-4}

log() { echo "[sanitize] $*"; }
now() { date +%s; }
t_start=$(now)
summary=()
status=0

bash "$repo/scripts/setup.sh" --fuzz

# Symbolized stacks (function, file:line): triage.py sorts the reports by them.
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
  for s in llvm-symbolizer $(compgen -c llvm-symbolizer- 2>/dev/null | sort -rV) /usr/lib/llvm-*/bin/llvm-symbolizer; do
    if p=$(command -v "$s" 2>/dev/null); then export ASAN_SYMBOLIZER_PATH=$p; break; fi
  done
fi
ubsan_opts="print_stacktrace=1:halt_on_error=1"
lsan_opts="suppressions=$repo/tests/fuzz/lsan.supp:print_suppressions=0"

# ---- the build ---------------------------------------------------------------------------------
t0=$(now)
if [ ! -f "$build/CMakeCache.txt" ]; then
  # -O1 -g1: line tables for the reports, and half the build time of -O2 -g.
  cmake -S "$repo" -B "$build" -G Ninja -DTESSERA_WITH_CUDA=OFF \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DTESSERA_SANITIZE=address,undefined -DTESSERA_WITH_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" >/dev/null
fi
cmake --build "$build" -j "$jobs"
t1=$(now)
summary+=("build (clang, ASan+UBSan+libFuzzer, CPU only): $((t1 - t0)) s")

# ---- 1. unit and MPI tests ---------------------------------------------------------------------
if [[ " $parts " == *" tests "* ]]; then
  # Every report goes to a file, one per process (also from the ranks under mpirun, and from tests
  # that expect tessera to fail), and triage.py decides whose it is. exitcode=0: a leak Open MPI
  # leaves (in components it unloads before the leak check at exit, so no suppression can name
  # them) must not fail a test by itself; tessera's own leaks and every error still fail the run.
  reports="$build/sanitizer-reports"
  rm -rf "$reports"
  mkdir -p "$reports"
  chmod 1777 "$reports"  # error.output-dir-not-writable runs tessera as 'nobody'
  # dryrun.memory compares predicted memory with the measured peak RSS, which ASan changes. Of the
  # crash sweeps (tests/scripts/crash_sweep.py: ~25 s each under the sanitizers, ~50 s on 3 ranks)
  # the journal's paths run under them once each: a new dataset killed, a full disk, SIGTERM and
  # SIGINT, two writers; the other files and the 3-rank sweeps run in the main suite only. The kill
  # and full-disk sweeps stop at every third write here (TESSERA_TEST_CRASH_SWEEP_STRIDE; the main suite
  # stops at every one): ~25-70 s each under the sanitizers otherwise, most of this stage. The
  # command-line tests (cli.*: hundreds of 2-rank launches, 210 s under the sanitizers on 2 cores,
  # each holding both) run in the main suite only: fuzz_options runs the same parser under them.
  # Twice as many tests as cores, as in the main suite (scripts/test.sh): the MPI tests wait on
  # their launches more than they compute.
  set +e
  TESSERA_TEST_CRASH_SWEEP_STRIDE=3 \
  ASAN_OPTIONS="detect_leaks=1:exitcode=0:check_initialization_order=1:strict_init_order=1:log_path=$reports/asan" \
  UBSAN_OPTIONS="$ubsan_opts:log_path=$reports/ubsan" LSAN_OPTIONS="$lsan_opts" \
    ctest --test-dir "$build" --output-on-failure -j "$((2 * jobs))" -L '^(unit|mpi)$' \
      -E '^dryrun\.memory|^cli\.|^crash\..*\.np3$|^crash\.(kill|enospc)\.(overwrite|beta|leftover|latest)\.' \
    > "$build/ctest-sanitize.log" 2>&1
  ctest_rc=$?
  set -e
  t2=$(now)
  if [ "$ctest_rc" != 0 ]; then
    status=1
    cat "$build/ctest-sanitize.log"
    python3 "$repo/scripts/ctest_tails.py" "$build" || true
  fi
  tests_line=$(grep -E '^[0-9]+% tests passed' "$build/ctest-sanitize.log" || echo "no test summary")
  if ! python3 "$repo/tests/fuzz/triage.py" --source-dir "$repo" "$reports" > "$build/triage.txt"; then
    status=1
  fi
  cat "$build/triage.txt"
  summary+=("unit + MPI tests: $tests_line; $(tail -n 1 "$build/triage.txt") ($((t2 - t1)) s)")
fi

# ---- 2. fuzzing --------------------------------------------------------------------------------
if [[ " $parts " == *" fuzz "* ]]; then
  t2=$(now)
  # allocator_may_return_null: a size a damaged file claims makes malloc fail as it does without
  # ASan (HDF5 then reports an error) instead of ending the run.
  export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
  export UBSAN_OPTIONS="$ubsan_opts"
  export LSAN_OPTIONS="$lsan_opts"
  # Every seed once: the targets work and nothing known-bad came back.
  if ! ctest --test-dir "$build" --output-on-failure -L '^fuzz$' > "$build/ctest-fuzz.log" 2>&1; then
    cat "$build/ctest-fuzz.log"
    status=1
  fi
  pids=()
  for target in hdf5_input options; do
    work="$build/fuzz-run/$target"
    mkdir -p "$work"
    python3 "$repo/tests/fuzz/run_fuzzer.py" --fuzzer "$build/fuzz_$target" \
      --seeds "$build/tests/fuzz/seeds/$target" --dict "$repo/tests/fuzz/$target.dict" \
      --work "$work" --source-dir "$repo" --seconds "$fuzz_seconds" -- -max_len=8192 \
      > "$work/summary.txt" 2>&1 &
    pids+=($!)
  done
  i=0
  for target in hdf5_input options; do
    if ! wait "${pids[$i]}"; then status=1; fi
    i=$((i + 1))
    cat "$build/fuzz-run/$target/summary.txt"
    summary+=("$(tail -n 1 "$build/fuzz-run/$target/summary.txt")")
  done
  summary+=("fuzzing: $(( $(now) - t2 )) s")
fi

log "summary ($(( $(now) - t_start )) s in all):"
for line in "${summary[@]}"; do log "  $line"; done
if [ "$status" = 0 ]; then log "clean"; else log "FAILED: see above"; fi
exit "$status"
