#!/usr/bin/env bash
# shellcheck disable=SC2317  # the steps' functions run through step (bash -c)
# tessera on a bare GPU machine, in one call: build, test, measure; every step logged under OUT.
#
#   scripts/gpu.sh check OUT          build, the GPU tests, compute-sanitizer on the kernel tests
#   scripts/gpu.sh bench OUT          build, `tessera bench` (+ `tessera tune`, Nsight Compute)
#   scripts/gpu.sh e2e OUT [SECONDS]  build the tree and the base commits, whole `tessera run` processes
#                                     of each, alternated (scripts/e2e_bench.py); fails on a regression
#   scripts/gpu.sh carry-base REV...  (here, before the call) REV's sources into .ab/REV for a machine
#                                     without the git history: carry ".ab" with the call
#
# The build: build-gpu/, `cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release
# -DCMAKE_CUDA_ARCHITECTURES=90` (sm_90 and the sm_90a wgmma kernels; CUDA_ARCH=80 etc. for
# another GPU), warnings as errors. GPU_FRESH=0 keeps an existing build-gpu/ (a second call on a
# machine still warm). GPU_CMAKE_ARGS: more configure arguments; unset, those for what
# scripts/gpu-deps.sh put in .deps/ (toml++, lz4, libdeflate: the GPU machine has no packages of
# them; run it here before the call and carry ".deps"). Each step has a time
# limit; a failed step is recorded and the next still
# runs (those that need the build are skipped when it failed). OUT gets one log per step, the
# machine (environment.log) and summary.txt, the step table, printed last; the exit status is
# nonzero when a step failed or was skipped.
#
# check:  GPU_CTEST   ctest's selection (default "-L gpu": the GPU tests; "" = the whole suite)
#         GPU_SANITIZE_KERNELS  TESSERA_TEST_KERNELS for the sanitizer runs (default: every kernel)
#         GPU_SANITIZE=0  no sanitizer runs (a change that touches no kernel and no device buffer)
#         memcheck (every kernel, cuBLAS too: [small], and the summa / ksplit device products),
#         racecheck (tessera's own kernels, whose shared memory we synchronise: [sanitize]), the
#         tensor-core instructions in the SASS, start-up (whether a GPU run loads cuBLAS: it must not),
#         the start-up sweep (GPU_STARTUP_RUNS, default 20, short runs alone and as many under mpirun:
#         none may fail; CUDA starts beside MPI_Init, and a start-up race showed once, issue 39)
# bench:  GPU_BENCH   `tessera bench` options (default: the backend's sizes, every kernel)
#         GPU_TUNE=1  also `tessera tune` (GPU_TUNE_SIZES) into OUT/tune.json
#         GPU_NCU="kernel:dtype,..."  one launch of each at 8192 under Nsight Compute into ncu.log
# e2e:    the A/B gate (issue 39; docs/style.md): every whole-job case runs with the tree's build and
#         with each base's, alternated, in this one call, and the step fails when the tree's median
#         is more than GPU_E2E_GATE percent (default 5) slower than a base's; figures from another
#         call are another machine and prove nothing.
#         GPU_E2E_BASE  revisions to build and compare with (default HEAD~1; name the main you
#                        started from; "" = the tree alone, no gate): from .ab/REV (carry-base) where
#                        carried, else `git archive REV`; built in build-ab/REV (the executable only)
#         GPU_E2E_CASES  e2e_bench.py cases in order (default "16384 f64 gzip f16 proj 32768"), each
#                        run only when the SECONDS left (default 540) look enough for it
#         GPU_E2E_NPS, GPU_E2E_REPEATS, GPU_E2E_EXTRA, GPU_E2E_TORCH  the rank counts (default "1";
#                        ';'-separated; each may carry e2e_bench.py's variables and options:
#                        "0;1;1 TESSERA_STAGED=0"; 0 = tessera alone, without mpirun), --repeats
#                        (3, at least 3 for the gate), --extra, and the cases with torch (default "16384")
#         GPU_E2E_STAGED=1  compute-sanitizer memcheck of a staged run first
set -uo pipefail

usage() { sed -n '3,47p' "$0"; exit 2; }
# A revision as a folder name: HEAD~1 -> HEAD-1.
base_dir_name() { printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '-'; }
if [ "${1:-}" = carry-base ]; then
  shift
  [ $# -ge 1 ] || usage
  cd "$(dirname "$0")/.." || exit 2
  grep -qx '/.ab/' .git/info/exclude 2>/dev/null || echo '/.ab/' >>.git/info/exclude
  for rev in "$@"; do
    dir=.ab/$(base_dir_name "$rev")
    rm -rf "$dir" && mkdir -p "$dir" && git archive "$rev" | tar -x -C "$dir" || exit 1
    git rev-parse --short "$rev" >"$dir/.commit"
    echo "$rev ($(cat "$dir/.commit")) in $dir: $(du -sh "$dir" | cut -f1)"
  done
  echo "carry \".ab\" with the device call, and set GPU_E2E_BASE=\"$*\""
  exit 0
fi
[ $# -ge 2 ] || usage
what=$1
case $what in check | bench | e2e) ;; *) usage ;; esac
mkdir -p "$2" || exit 2
out=$(cd "$2" && pwd)
budget=${3:-540}
cd "$(dirname "$0")/.." || exit 2

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export PATH="$PATH:/usr/local/cuda/bin"
build="build-gpu"
# Unset GPU_CMAKE_ARGS: what scripts/gpu-deps.sh put in .deps/ (toml++, lz4, libdeflate), for the
# tree and every base alike ("" keeps the machine's own packages only).
if [ -z "${GPU_CMAKE_ARGS+set}" ]; then
  GPU_CMAKE_ARGS=""
  [ -f .deps/tomlpp/toml++/toml.h ] && GPU_CMAKE_ARGS+=" -DTESSERA_TOMLPP_INCLUDE=$PWD/.deps/tomlpp"
  [ -f .deps/lz4/liblz4.a ] &&
    GPU_CMAKE_ARGS+=" -DTESSERA_LZ4_INCLUDE_DIR=$PWD/.deps/lz4 -DTESSERA_LZ4_LIBRARY=$PWD/.deps/lz4/liblz4.a"
  [ -f .deps/libdeflate/libdeflate.a ] &&
    GPU_CMAKE_ARGS+=" -DTESSERA_LIBDEFLATE_INCLUDE_DIR=$PWD/.deps/libdeflate -DTESSERA_LIBDEFLATE_LIBRARY=$PWD/.deps/libdeflate/libdeflate.a"
  export GPU_CMAKE_ARGS
  echo "GPU_CMAKE_ARGS (from .deps/):${GPU_CMAKE_ARGS:- none}"
fi
read -r -a cmake_extra <<<"${GPU_CMAKE_ARGS:-}"
tessera=$build/tessera
gpu_tests=$build/tests/tessera_gpu_tests
sanitizer=$(command -v compute-sanitizer || true)
start=$SECONDS
left() { echo $((budget - (SECONDS - start))); }

names=() statuses=() seconds=()
# step NAME LIMIT COMMAND...: COMMAND, killed after LIMIT seconds, its output in OUT/NAME.log.
step() {
  local name=$1 limit=$2
  shift 2
  echo "==== $name (limit ${limit}s): $*"
  local t0=$SECONDS rc
  # Through bash -c, so that COMMAND may be one of the functions below (exported).
  { echo "\$ $*"; timeout --kill-after=10 "$limit" bash -c '"$@"' "$name" "$@"; } >>"$out/$name.log" 2>&1
  rc=$?
  names+=("$name")
  seconds+=($((SECONDS - t0)))
  if [ "$rc" -eq 0 ]; then statuses+=(ok)
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then statuses+=("TIMEOUT after ${limit}s")
  else statuses+=("FAILED (exit $rc)"); fi
  tail -n 3 "$out/$name.log"
  return "$rc"
}
skip() {
  echo "==== $1: skipped ($2)"
  names+=("$1")
  seconds+=(0)
  statuses+=("skipped: $2")
}

{
  echo "# scripts/gpu.sh $what $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
    --format=csv 2>&1
  nvcc --version 2>&1 | tail -n 2
  cmake --version 2>&1 | head -n 1
  mpirun --version 2>&1 | head -n 1
} >"$out/environment.log"

# ---- the build ----------------------------------------------------------------------------------
built=0
build_targets=()
[ "$what" = check ] || build_targets=(--target tessera)  # bench, e2e: the executable alone
if [ "${GPU_FRESH:-1}" = 0 ] && [ -x "$tessera" ]; then
  step build 420 cmake --build "$build" -j "$(nproc)" "${build_targets[@]}" && built=1
else
  rm -rf "$build"
  if step configure 120 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" -DTESSERA_WARNINGS_AS_ERRORS=ON "${cmake_extra[@]}"; then
    step build 420 cmake --build "$build" -j "$(nproc)" "${build_targets[@]}" && built=1
  else
    skip build "configure failed"
  fi
fi

# ---- e2e: the base commits, built beside the tree ------------------------------------------------
base_bins=()
base_srcs=()
build_base() {  # build_base REV: its executable in build-ab/REV/tessera
  local rev=$1 name src extra
  name=$(base_dir_name "$rev")
  read -r -a extra <<<"${GPU_CMAKE_ARGS:-}"
  src=.ab/$name
  if [ ! -f "$src/CMakeLists.txt" ]; then
    src=build-ab/src-$name
    rm -rf "$src" && mkdir -p "$src" && git archive "$rev" | tar -x -C "$src" || return 1
  fi
  cmake -S "$src" -B "build-ab/$name" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
    "${extra[@]}" >/dev/null && cmake --build "build-ab/$name" -j "$(nproc)" --target tessera
}
export -f build_base base_dir_name
if [ "$what" = e2e ] && [ "$built" = 1 ]; then
  for rev in ${GPU_E2E_BASE-HEAD~1}; do
    if step "build-$(base_dir_name "$rev")" 420 build_base "$rev"; then
      base_bins+=("build-ab/$(base_dir_name "$rev")/tessera")
      if [ -f ".ab/$(base_dir_name "$rev")/CMakeLists.txt" ]; then base_srcs+=("$PWD/.ab/$(base_dir_name "$rev")")
      else base_srcs+=("$PWD/build-ab/src-$(base_dir_name "$rev")"); fi
    fi
  done
fi

# ---- check: the GPU tests and the sanitizers ----------------------------------------------------
sass_counts() {  # HGMMA = wgmma, DMMA = FP64 mma.sync, HMMA = mma.sync: instructions per mnemonic
  cuobjdump -sass "$build/kernels/libtessera_cuda_kernels.a" | grep -oE "(HGMMA|DMMA|HMMA)\.[A-Z0-9.x]+" | sort | uniq -c
}
startup() {  # whole processes that do no job, and whether a GPU run of tessera's own kernels loads cuBLAS
  for i in 1 2 3; do /usr/bin/time -f "tessera --version %e s" "$tessera" --version >/dev/null; done
  for np in 1 2; do
    /usr/bin/time -f "mpirun -np $np tessera info %e s" timeout 60 mpirun -np "$np" "$tessera" info >/dev/null ||
      return 1
  done
  local d loads
  d=$(mktemp -d)
  "$tessera" generate --out "$d/a.h5:/A" --rows 512 --cols 512 >/dev/null || return 1
  loads=$(LD_DEBUG=files timeout 60 mpirun -x LD_DEBUG -np 1 "$tessera" run --a "$d/a.h5:/A" --b "$d/a.h5:/A" \
    --c "$d/c.h5:/C" --backend cuda --kernel warptile-64x64 -q 2>&1 | grep -c "file=libcublas")
  echo "libcublas loads in a GPU run of warptile-64x64: $loads"
  # `auto` on a product cuBLAS would not finish sooner with its load counted (issue 39): no cuBLAS.
  local auto_loads
  "$tessera" generate --out "$d/b.h5:/B" --rows 2048 --cols 2048 >/dev/null || return 1
  auto_loads=$(LD_DEBUG=files timeout 60 "$tessera" run --a "$d/b.h5:/B" --b "$d/b.h5:/B" --c "$d/c2.h5:/C" -q \
    --report "$d/r.json" 2>&1 | grep -c "file=libcublas")
  echo "libcublas loads in a 2048^3 f32 run with --kernel auto ($(grep -o '"kernel": *"[^"]*"' "$d/r.json" | head -n 1)): $auto_loads"
  rm -rf "$d"
  [ "$loads" = 0 ] && [ "$auto_loads" = 0 ]
}
startup_sweep() {  # many short GPU runs, alone and under mpirun: a crash at start-up shows as a failed run
  local d i rc failed=0 runs=${GPU_STARTUP_RUNS:-20}
  d=$(mktemp -d)
  "$tessera" generate --out "$d/a.h5:/A" --rows 512 --cols 512 --dtype f64 >/dev/null || return 1
  for i in $(seq 1 "$runs"); do
    timeout 60 "$tessera" run --a "$d/a.h5:/A" --b "$d/a.h5:/A" --c "$d/c.h5:/C" --overwrite -q >"$d/log" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { failed=$((failed + 1)); echo "alone, run $i: exit $rc"; tail -n 3 "$d/log"; }
    timeout 60 mpirun -np 1 "$tessera" run --a "$d/a.h5:/A" --b "$d/a.h5:/A" --c "$d/c.h5:/C" --overwrite -q \
      >"$d/log" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { failed=$((failed + 1)); echo "mpirun -np 1, run $i: exit $rc"; tail -n 3 "$d/log"; }
  done
  rm -rf "$d"
  echo "start-up sweep: $failed of $((2 * runs)) runs failed"
  [ "$failed" = 0 ]
}
check() {
  step info 60 "$tessera" info
  # shellcheck disable=SC2086  # GPU_CTEST is a list of arguments
  step ctest 420 ctest --test-dir "$build" --output-on-failure -j 4 ${GPU_CTEST--L gpu}
  if [ -z "$sanitizer" ] || [ "${GPU_SANITIZE:-1}" = 0 ]; then
    skip memcheck "compute-sanitizer not found or GPU_SANITIZE=0"
    skip racecheck "compute-sanitizer not found or GPU_SANITIZE=0"
  else
    # [small]: shapes cheap enough to run instrumented in a minute or two; racecheck instruments
    # every shared-memory access, so only the [sanitize] odd shapes and tessera's own kernels.
    [ -z "${GPU_SANITIZE_KERNELS:-}" ] || export TESSERA_TEST_KERNELS=$GPU_SANITIZE_KERNELS
    step memcheck 240 "$sanitizer" --tool memcheck --leak-check full --error-exitcode 1 "$gpu_tests" \
      "[small],[summa],[ksplit]"
    step racecheck 180 "$sanitizer" --tool racecheck --kernel-name kns=tessera --error-exitcode 1 "$gpu_tests" \
      "[sanitize]"
    unset TESSERA_TEST_KERNELS
  fi
  if command -v cuobjdump >/dev/null; then step sass 60 sass_counts; else skip sass "cuobjdump not found"; fi
  step startup 120 startup
  step startup-sweep 240 startup_sweep
}

# ---- bench: the kernels' table ------------------------------------------------------------------
bench_table() {  # the numbers that matter from bench.json: TFLOP/s and % of the row's baseline
  python3 - "$out/bench.json" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
cols = list(dict.fromkeys((r["size"], r["dtype"]) for r in rows))
kernels = list(dict.fromkeys(r["kernel"] for r in rows))
cell = {}
for r in rows:
    if r["status"] == "skipped":
        continue
    pct = r["percent_of_vendor"]
    mark = "" if r["status"] == "ok" else "!"
    cell[(r["kernel"], r["size"], r["dtype"])] = f"{(r['gflops'] or 0) / 1e3:6.1f} " + (
        f"{pct:4.0f}%{mark}" if pct is not None else f"   - {mark}")
print("TFLOP/s and % of the row's baseline (bench.json 'baseline'); ! = accuracy FAIL")
print(f"{'kernel':<28}" + "".join(f"{s + ' ' + d:>24}" for s, d in cols))
for k in kernels:
    print(f"{k:<28}" + "".join(f"{cell.get((k, s, d), '-'):>24}" for s, d in cols))
EOF
}
bench() {
  # shellcheck disable=SC2086  # GPU_BENCH is a list of arguments
  step bench 420 "$tessera" bench --json "$out/bench.json" --csv "$out/bench.csv" ${GPU_BENCH:-} &&
    step bench-table 30 bench_table
  if [ "${GPU_TUNE:-0}" = 1 ]; then
    step tune 300 "$tessera" tune --sizes "${GPU_TUNE_SIZES:-1024,2048,4096,8192,4099x4097x4095}" --out "$out/tune.json"
  fi
  if [ -n "${GPU_NCU:-}" ] && command -v ncu >/dev/null; then
    for spec in ${GPU_NCU//,/ }; do
      step ncu 120 ncu --clock-control none --kernel-name regex:'warptile_gemm|wgmma_gemm|tensorcore_gemm' \
        --launch-skip 1 --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
        --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats \
        "$tessera" bench --dtypes "${spec#*:}" --sizes 8192 --warmup 1 --repeats 1 --kernels "${spec%%:*}"
    done
  fi
}

# ---- e2e: whole processes, HDF5 to HDF5 ---------------------------------------------------------
staged_memcheck() {  # A, B and C through the staging rings, pieces of a few rows
  local d=/tmp/tessera-gpu-staged
  rm -rf "$d" && mkdir -p "$d" || return 1
  "$tessera" generate --out "$d/a.h5:/A" --rows 1021 --cols 1033 --dtype f32 --seed 1 >/dev/null &&
    "$tessera" generate --out "$d/b.h5:/B" --rows 1033 --cols 1031 --dtype f32 --seed 2 >/dev/null &&
    TESSERA_STREAM_CHUNKS=4 TESSERA_STAGE_BYTES=300000 "$sanitizer" --tool memcheck --error-exitcode 1 \
      "$tessera" run --a "$d/a.h5:/A" --b "$d/b.h5:/B" --c "$d/c.h5:/C" --backend cuda --report "$d/r.json" &&
    grep -o '"staged": *true' "$d/r.json"
}
e2e() {
  if [ "${GPU_E2E_STAGED:-0}" = 1 ] && [ -n "$sanitizer" ]; then step memcheck-staged 120 staged_memcheck; fi
  local c need torch repeats=${GPU_E2E_REPEATS:-3} nps="" np gate=()
  # Each rank count with the tree's build, then with each base's: alternated in every repeat.
  local counts
  IFS=';' read -r -a counts <<<"${GPU_E2E_NPS:-1}"
  # A base runs in its own source folder, so that it reads its own configs/ (machine files, tune
  # files), as an installed copy of it would: `auto` is part of what is compared.
  local i
  for np in "${counts[@]}"; do
    nps+="${nps:+;}$np"
    for i in "${!base_bins[@]}"; do nps+=";$np bin=$PWD/${base_bins[$i]} cwd=${base_srcs[$i]}"; done
  done
  [ ${#base_bins[@]} -eq 0 ] || gate=(--gate "${GPU_E2E_GATE:-5}")
  for c in ${GPU_E2E_CASES:-16384 f64 gzip f16 proj 32768}; do
    # Rough cost of a case with 2 repeats on 1 and 2 GPUs, data made once (s), scaled to the repeats.
    case $c in 16384) need=70 ;; f64) need=45 ;; f16) need=90 ;; 32768) need=170 ;; *) need=60 ;; esac
    # (Those figures were for two variants; each build is one more per rank count.)
    need=$((need * (repeats + 1) * ${#counts[@]} * (${#base_bins[@]} + 1) / 6))
    if [ "$(left)" -le $((need + 15)) ]; then skip "e2e-$c" "$(left) s left"; continue; fi
    torch=--no-torch
    case " ${GPU_E2E_TORCH:-16384} " in *" $c "*) torch= ;; esac
    # shellcheck disable=SC2086  # torch is empty or one flag
    step "e2e-$c" $(($(left) - 10)) python3 scripts/e2e_bench.py "$out/e2e-$c" --cases "$c" --repeats "$repeats" \
      --nps "$nps" --tessera "$tessera" --data /tmp/tessera-e2e --extra "${GPU_E2E_EXTRA:-}" $torch "${gate[@]}"
  done
}

export build tessera out sanitizer
export -f sass_counts startup startup_sweep bench_table staged_memcheck
if [ "$built" = 1 ]; then
  "$what"
else
  skip "$what" "build failed"
fi

{
  echo "scripts/gpu.sh $what: $(date -u +%Y-%m-%dT%H:%M:%SZ), $((SECONDS - start)) s, logs in $out"
  printf '%-16s %-30s %7s\n' step status seconds
  for i in "${!names[@]}"; do printf '%-16s %-30s %7s\n' "${names[$i]}" "${statuses[$i]}" "${seconds[$i]}"; done
} | tee "$out/summary.txt"
failed=0
for s in "${statuses[@]}"; do case "$s" in ok) ;; *) failed=1 ;; esac; done
exit "$failed"
