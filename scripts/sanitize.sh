#!/usr/bin/env bash
# Sanitizers and fuzzing (docs/sanitizers.md); scripts/test.sh runs this after the test suite.
#   1. a CPU-only AddressSanitizer + UndefinedBehaviorSanitizer build (gcc), and the unit and MPI
#      tests under it (ctest -L unit, -L mpi); every sanitizer report is a failure
#   2. the libFuzzer targets of tests/fuzz (clang, ASan + UBSan), each fuzzed for a bounded time,
#      side by side; a finding in tessera's code is a failure, one inside libhdf5 is reported with
#      its input and is not
# Exit status: 0 clean, 1 any finding or failed test.
#
#   TESSERA_SANITIZE_BUILD_DIR  ASan + UBSan build folder (default: build-sanitize)
#   TESSERA_FUZZ_BUILD_DIR      fuzz build folder (default: build-fuzz)
#   TESSERA_FUZZ_SECONDS        fuzzing time of each target (default: 60)
#   TESSERA_SANITIZE_PARTS      what to run: "tests fuzz" (default), "tests" or "fuzz"
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
asan_build=${TESSERA_SANITIZE_BUILD_DIR:-$repo/build-sanitize}
fuzz_build=${TESSERA_FUZZ_BUILD_DIR:-$repo/build-fuzz}
fuzz_seconds=${TESSERA_FUZZ_SECONDS:-60}
parts=${TESSERA_SANITIZE_PARTS:-tests fuzz}
jobs=$(nproc)
supp="$repo/tests/fuzz/lsan.supp"

log() { echo "[sanitize] $*"; }
now() { date +%s; }
t_start=$(now)
summary=()
status=0

bash "$repo/scripts/setup.sh" --fuzz

# Symbolized stacks (function, file:line) in every report: the fuzz runs are sorted by them.
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
  for s in llvm-symbolizer $(compgen -c llvm-symbolizer- 2>/dev/null | sort -rV) /usr/lib/llvm-*/bin/llvm-symbolizer; do
    if p=$(command -v "$s" 2>/dev/null); then export ASAN_SYMBOLIZER_PATH=$p; break; fi
  done
fi
common_ubsan="print_stacktrace=1:halt_on_error=1"
common_lsan="suppressions=$supp:print_suppressions=0"

# ---- 1. ASan + UBSan build, unit and MPI tests ----------------------------------------------
if [[ " $parts " == *" tests "* ]]; then
  t0=$(now)
  if [ ! -f "$asan_build/CMakeCache.txt" ]; then
    # -O1 -g1: line tables for the reports, and a build that takes half the time of -O2 -g.
    cmake -S "$repo" -B "$asan_build" -G Ninja -DTESSERA_WITH_CUDA=OFF -DTESSERA_SANITIZE=address,undefined \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" >/dev/null
  fi
  cmake --build "$asan_build" -j "$jobs"
  t1=$(now)
  summary+=("ASan+UBSan build (gcc, CPU only): $((t1 - t0)) s")

  # Reports go to files, one per process (also from ranks under mpirun, and from tests that expect
  # tessera to fail): any file there is a finding, whatever the test concluded.
  reports="$asan_build/sanitizer-reports"
  rm -rf "$reports"
  mkdir -p "$reports"
  set +e
  ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1:log_path=$reports/asan" \
  UBSAN_OPTIONS="$common_ubsan:log_path=$reports/ubsan" \
  LSAN_OPTIONS="$common_lsan" \
    ctest --test-dir "$asan_build" --output-on-failure -j "$jobs" -L '^(unit|mpi)$' | tee "$asan_build/ctest-sanitize.log"
  ctest_rc=${PIPESTATUS[0]}
  set -e
  t2=$(now)
  tests_line=$(grep -E '^[0-9]+% tests passed' "$asan_build/ctest-sanitize.log" || echo "no test summary")
  nreports=$(find "$reports" -type f | wc -l)
  if [ "$nreports" -gt 0 ]; then
    log "sanitizer reports from tessera under test ($nreports file(s) in $reports):"
    for f in "$reports"/*; do
      echo "---- $f"
      head -n 60 "$f"
    done
    status=1
  fi
  [ "$ctest_rc" = 0 ] || status=1
  summary+=("unit + MPI tests under ASan+UBSan: $tests_line; sanitizer reports: $nreports ($((t2 - t1)) s)")
fi

# ---- 2. libFuzzer targets --------------------------------------------------------------------
if [[ " $parts " == *" fuzz "* ]]; then
  t0=$(now)
  if [ ! -f "$fuzz_build/CMakeCache.txt" ]; then
    cmake -S "$repo" -B "$fuzz_build" -G Ninja -DTESSERA_WITH_CUDA=OFF -DTESSERA_WITH_TESTS=OFF \
      -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DTESSERA_SANITIZE=address,undefined \
      -DTESSERA_WITH_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" >/dev/null
  fi
  cmake --build "$fuzz_build" -j "$jobs" --target fuzz_hdf5_input fuzz_options
  t1=$(now)
  summary+=("fuzz build (clang, ASan+UBSan+libFuzzer): $((t1 - t0)) s")

  # allocator_may_return_null: a size a damaged file claims makes malloc fail as it does outside
  # ASan (HDF5 then reports an error) instead of ending the run.
  export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
  export UBSAN_OPTIONS="$common_ubsan"
  export LSAN_OPTIONS="$common_lsan"
  # Every seed once: the targets work and nothing known-bad came back.
  if ! ctest --test-dir "$fuzz_build" --output-on-failure -L '^fuzz$'; then status=1; fi

  pids=()
  for target in hdf5_input options; do
    work="$fuzz_build/fuzz-run/$target"
    mkdir -p "$work"
    python3 "$repo/tests/fuzz/run_fuzzer.py" --fuzzer "$fuzz_build/fuzz_$target" \
      --seeds "$fuzz_build/tests/fuzz/seeds/$target" --dict "$repo/tests/fuzz/$target.dict" \
      --work "$work" --source-dir "$repo" --seconds "$fuzz_seconds" -- -max_len=8192 \
      > "$work/summary.txt" 2>&1 &
    pids+=($!)
  done
  i=0
  for target in hdf5_input options; do
    if ! wait "${pids[$i]}"; then status=1; fi
    i=$((i + 1))
    cat "$fuzz_build/fuzz-run/$target/summary.txt"
    summary+=("$(tail -n 1 "$fuzz_build/fuzz-run/$target/summary.txt")")
  done
  summary+=("fuzzing: $(( $(now) - t1 )) s")
fi

log "summary ($(( $(now) - t_start )) s in all):"
for line in "${summary[@]}"; do log "  $line"; done
if [ "$status" = 0 ]; then log "clean"; else log "FAILED: see above"; fi
exit "$status"
