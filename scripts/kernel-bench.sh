#!/usr/bin/env bash
# tessera: build, check and time the GPU kernels on a bare GPU machine, in one call (< 9 min on
# an H200). Every step is logged; a failing step is recorded and the next one still runs.
#
#   scripts/kernel-bench.sh OUTDIR
#
# Steps: build (build-gpu/, Release, sm_90 unless CUDA_ARCH says otherwise, which also builds the
# sm_90a wgmma kernels: tessera and the GPU tests only; or, with KB_PREBUILT=DIR, the tessera and
# tessera_gpu_tests found there when they run on this machine); the GPU tests for the kernels in
# KB_TEST_KERNELS (default: the fast ones); compute-sanitizer memcheck and racecheck on the
# [sanitize] odd shapes for KB_SANITIZE_KERNELS; SASS counts of the instructions that matter;
# `tessera bench` f32 at KB_F32_SIZES (kernels KB_F32_KERNELS), f32 at 16384 (KB_F32_BIG_KERNELS),
# f64 at KB_F64_SIZES (KB_F64_KERNELS); `tessera tune` when KB_TUNE=1 (KB_TUNE_DTYPES, starting
# from the choices in KB_TUNE_BASE). OUTDIR gets at most 8
# files: summary.txt (the numbers that matter, the step table, the machine), build.log,
# tests.log, sanitizer.log, bench.log, bench.json (all bench rows), tune.log, tune.json. Prints a
# compact table last; exits nonzero if a step failed. KB_NCU adds ncu.txt (see below).
set -uo pipefail

if [ $# -ne 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,16p' "$0"
  exit 2
fi
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
cd "$(dirname "$0")/.." || exit 2

export PATH="$PATH:/usr/local/cuda/bin"
build=build-gpu
arch=${CUDA_ARCH:-90}
jobs=$(nproc)
tessera=$build/tessera
tests=$build/tests/tessera_gpu_tests
warptiles="warptile-128x128,warptile-128x64,warptile-64x64,warptile-128x256,warptile-128x256-db,warptile-128x128-8x16,warptile-128x256-split2,warptile-128x128-8x16-split4"
mma="tf32,bf16,dmma,dmma-128x128,dmma-64x64"
wgmma="tf32-wgmma,tf32-wgmma-rawa,tf32-wgmma-128x128,bf16-wgmma,bf16-wgmma-128x128"
test_kernels=${KB_TEST_KERNELS:-$warptiles,$mma,$wgmma,cublas}
sanitize_kernels=${KB_SANITIZE_KERNELS:-$warptiles,$mma,$wgmma}
f32_sizes=${KB_F32_SIZES:-1024,4096,8192,4099x4097x4095}
f32_kernels=${KB_F32_KERNELS:-$warptiles,$mma,$wgmma,cublas,cublas-tf32,cublas-bf16,cublas-bf16-stored}
f32_big_kernels=${KB_F32_BIG_KERNELS:-warptile-128x256,warptile-128x256-db,warptile-128x128-8x16,$wgmma,cublas,cublas-tf32,cublas-bf16,cublas-bf16-stored}
f64_sizes=${KB_F64_SIZES:-4096,8192,4099x4097x4095}
f64_kernels=${KB_F64_KERNELS:-dmma,dmma-128x128,dmma-64x64,warptile-128x128,cublas}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$out/bench.log"
: >"$out/sanitizer.log"
: >"$tmp/sass.txt"

names=() statuses=() seconds=()
# step NAME LOG LIMIT COMMAND...: runs COMMAND (killed after LIMIT seconds), appending to LOG.
step() {
  local name=$1 log=$2 limit=$3
  shift 3
  echo "==== $name: $*" | tee -a "$log"
  local start=$SECONDS rc
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  rc=$?
  names+=("$name")
  seconds+=($((SECONDS - start)))
  if [ "$rc" -eq 0 ]; then statuses+=(ok)
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then statuses+=("TIMEOUT after ${limit}s")
  else statuses+=("FAILED (exit $rc)"); fi
  tail -n 3 "$log"
  return "$rc"
}
skip() {
  names+=("$1")
  seconds+=(0)
  statuses+=("skipped: $2")
}

start_all=$SECONDS
{
  echo "# kernel-bench $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo '+local changes')"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv 2>&1
  nvcc --version 2>&1 | tail -n 2
} >"$tmp/environment.txt"

built=0
: >"$out/build.log"
if [ -n "${KB_PREBUILT:-}" ] && "$KB_PREBUILT/tessera" --version >>"$out/build.log" 2>&1 &&
   "$KB_PREBUILT/tessera_gpu_tests" --list-tests >/dev/null 2>>"$out/build.log"; then
  echo "using the binaries in $KB_PREBUILT (built elsewhere; they run here)" | tee -a "$out/build.log"
  tessera=$KB_PREBUILT/tessera
  tests=$KB_PREBUILT/tessera_gpu_tests
  built=1
else
  rm -rf "$build"
  if step configure "$out/build.log" 120 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES="$arch"; then
    step build "$out/build.log" 420 cmake --build "$build" -j "$jobs" --target tessera tessera_gpu_tests && built=1
  else
    skip build "configure failed"
  fi
fi
grep -E "warning" "$out/build.log" | grep -v "^ptxas info" | sort -u >"$tmp/warnings.txt"

if [ "$built" = 1 ]; then
  # What the compiler made of the tensor-core kernels: HGMMA = wgmma, DMMA = FP64 mma.sync,
  # HMMA = mma.sync; the instruction counts per mnemonic.
  lib=$build/kernels/libtessera_cuda_kernels.a
  [ -f "$lib" ] || lib=$tests
  if command -v cuobjdump >/dev/null; then
    cuobjdump -sass "$lib" 2>/dev/null | grep -oE "(HGMMA|DMMA|HMMA)\.[A-Z0-9.x]+" | sort | uniq -c >"$tmp/sass.txt"
  fi

  : >"$out/tests.log"
  # [small], [large] and [sanitize] for the kernels of this issue (the others are unchanged).
  export TESSERA_TEST_KERNELS=$test_kernels
  step gpu-tests "$out/tests.log" 180 "$tests" --durations yes
  export TESSERA_TEST_KERNELS=$sanitize_kernels
  sanitizer=$(command -v compute-sanitizer || true)
  if [ -z "$sanitizer" ]; then
    skip memcheck "compute-sanitizer not found"
    skip racecheck "compute-sanitizer not found"
  else
    step memcheck "$out/sanitizer.log" 150 "$sanitizer" --tool memcheck --error-exitcode 1 \
      "$tests" "[sanitize]"
    if [ "${KB_RACECHECK:-1}" = 1 ]; then
      step racecheck "$out/sanitizer.log" 120 "$sanitizer" --tool racecheck --error-exitcode 1 \
        --kernel-name kns=tessera "$tests" "[sanitize]"
    fi
  fi
  unset TESSERA_TEST_KERNELS

  step bench-f32 "$out/bench.log" 200 "$tessera" bench --dtypes f32 --sizes "$f32_sizes" \
    --kernels "$f32_kernels" --json "$tmp/bench-f32.json"
  step bench-f32-16k "$out/bench.log" 150 "$tessera" bench --dtypes f32 --sizes 16384 --warmup 1 --repeats 5 \
    --kernels "$f32_big_kernels" --json "$tmp/bench-f32-16k.json"
  step bench-f64 "$out/bench.log" 150 "$tessera" bench --dtypes f64 --sizes "$f64_sizes" \
    --kernels "$f64_kernels" --json "$tmp/bench-f64.json"
  # KB_NCU="kernel:dtype,...": one launch of each at 8192 under Nsight Compute (clocks left as
  # they are), into ncu.txt: what bounds it (issue slots, shared memory, L2, tensor pipes).
  if [ -n "${KB_NCU:-}" ] && command -v ncu >/dev/null; then
    : >"$out/ncu.txt"
    for spec in ${KB_NCU//,/ }; do
      step "ncu-${spec%%:*}" "$out/ncu.txt" 120 ncu --clock-control none \
        --kernel-name regex:'warptile_gemm|wgmma_gemm|tensorcore_gemm' --launch-skip 1 --launch-count 1 \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats \
        --section SchedulerStats --section WarpStateStats \
        "$tessera" bench --dtypes "${spec#*:}" --sizes 8192 --warmup 1 --repeats 1 --kernels "${spec%%:*}"
    done
  fi
  if [ "${KB_TUNE:-0}" = 1 ]; then
    # KB_TUNE_BASE: a tune file whose choices for the dtypes not re-tuned (KB_TUNE_DTYPES) are kept.
    : >"$out/tune.log"
    [ -f "${KB_TUNE_BASE:-}" ] && cp "$KB_TUNE_BASE" "$out/tune.json"
    step tune "$out/tune.log" 200 "$tessera" tune --sizes 1024,2048,4096,8192,4099x4097x4095 \
      --dtypes "${KB_TUNE_DTYPES:-f32,f64}" --out "$out/tune.json"
  fi
else
  for s in gpu-tests memcheck racecheck bench-f32 bench-f32-16k bench-f64 tune; do skip "$s" "build failed"; done
fi

# ---- summary: the numbers that matter, in one file --------------------------------------------
python3 - "$tmp" "$out" <<'EOF' >"$tmp/tables.txt" 2>&1 || echo "(python3 failed: see bench.log)" >>"$tmp/tables.txt"
import json, os, sys
tmp, out = sys.argv[1], sys.argv[2]
rows = []
for f in ("bench-f32.json", "bench-f32-16k.json", "bench-f64.json"):
    p = os.path.join(tmp, f)
    if os.path.exists(p):
        doc = json.load(open(p))
        rows += doc["results"]
json.dump({"results": rows}, open(os.path.join(out, "bench.json"), "w"), indent=1)
cols = []
for r in rows:
    c = (r["size"], r["dtype"])
    if c not in cols: cols.append(c)
kernels = []
for r in rows:
    if r["kernel"] not in kernels: kernels.append(r["kernel"])
cell = {}
for r in rows:
    if r["status"] == "skipped": continue
    tf = r["gflops"] / 1e3 if r["gflops"] else float("nan")
    pct = r["percent_of_vendor"]
    bad = "" if r["status"] == "ok" else "!"
    cell[(r["kernel"], r["size"], r["dtype"])] = f"{tf:6.1f} {pct:4.0f}%{bad}" if pct is not None else f"{tf:6.1f}   - {bad}"
def short(c):
    s, d = c
    return (s.split("x")[0] if len(set(s.split("x"))) == 1 else s) + " " + d
print("TFLOP/s and % of the row's cuBLAS baseline (bench.json 'baseline': the fastest honest call); ! = accuracy FAIL")
print(f"{'kernel':<20}" + "".join(f"{short(c):>17}" for c in cols))
for k in kernels:
    print(f"{k:<20}" + "".join(f"{cell.get((k, c[0], c[1]), '-'):>17}" for c in cols))
fails = [f"{r['kernel']} {r['size']} {r['dtype']}: rel. err {r['rel_error']} > {r['tolerance']}" for r in rows if r["status"] == "FAIL"]
print("accuracy failures: " + ("; ".join(fails) if fails else "none"))
errs = {}
for r in rows:
    if r["status"] != "skipped" and r["rel_error"] is not None:
        errs.setdefault(r["kernel"], []).append(r["rel_error"])
print("max rel. error vs float64: " + ", ".join(f"{k} {max(v):.1e}" for k, v in errs.items()))
p = os.path.join(out, "tune.json")
if os.path.exists(p):
    t = json.load(open(p))
    print("tuned: " + ", ".join(f"{c['dtype']} {c['m']}: {c['kernel']} {c['gflops']/1e3:.1f}" for c in t["choices"]))
EOF

{
  cat "$tmp/environment.txt"
  echo
  cat "$tmp/tables.txt"
  echo
  echo "test summary: $(grep -E '^(All tests passed|test cases:)' "$out/tests.log" 2>/dev/null | tail -n 1)"
  echo "sanitizer: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer.log" 2>/dev/null | tr '\n' ' ')"
  echo "build warnings: $(wc -l <"$tmp/warnings.txt")"; head -n 5 "$tmp/warnings.txt"
  echo "SASS tensor-core instructions: $(tr -s ' ' <"$tmp/sass.txt" | tr '\n' ';')"
  echo
  printf '%-14s %-26s %7s\n' step status seconds
  for i in "${!names[@]}"; do printf '%-14s %-26s %7s\n' "${names[$i]}" "${statuses[$i]}" "${seconds[$i]}"; done
  echo "total $((SECONDS - start_all)) s"
} >"$out/summary.txt"
cat "$out/summary.txt"

failed=0
for s in "${statuses[@]}"; do case "$s" in ok) ;; *) failed=1 ;; esac; done
exit "$failed"
