#!/usr/bin/env bash
# tessera: build, check and time the GPU kernels on a bare GPU machine, in one call (< 9 min on
# an H200). Every step is logged; a failing step is recorded and the next one still runs.
#
#   scripts/kernel-bench.sh OUTDIR
#
# Steps: build (build-gpu/, Release, sm_90 unless CUDA_ARCH says otherwise: tessera and the GPU
# tests only); the GPU tests for every kernel; compute-sanitizer memcheck and racecheck on the
# [sanitize] odd shapes for the new kernels; `tessera bench` f32 at 1024, 4096, 8192, 4099x4097x4095
# (every kernel but naive16/tiled16, tensor cores included) and 16384 (the fast ones), f64 at
# 8192; `tessera tune`. OUTDIR gets at most 8 files: summary.txt (the numbers that matter, the
# step table, the machine), build.log, tests.log, sanitizer.log, bench.log, bench.json (all
# bench rows), tune.log, tune.json. Prints a compact table last; exits nonzero if a step failed.
set -uo pipefail

if [ $# -ne 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,13p' "$0"
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
new_kernels="regtile,vectorized,warptile-128x128,warptile-128x64,warptile-64x64,tf32,bf16,dmma"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$out/bench.log"
: >"$out/sanitizer.log"

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

rm -rf "$build"
built=0
: >"$out/build.log"
if step configure "$out/build.log" 120 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="$arch"; then
  step build "$out/build.log" 300 cmake --build "$build" -j "$jobs" --target tessera tessera_gpu_tests && built=1
else
  skip build "configure failed"
fi
grep -E "warning" "$out/build.log" | grep -v "^ptxas info" | sort -u >"$tmp/warnings.txt"

if [ "$built" = 1 ]; then
  : >"$out/tests.log"
  # Every kernel, every shape ([small] and [large]); the hidden [huge] and [pinning] cases are not run.
  step gpu-tests "$out/tests.log" 240 "$tests" --durations yes

  sanitizer=$(command -v compute-sanitizer || true)
  if [ -z "$sanitizer" ]; then
    skip memcheck "compute-sanitizer not found"
    skip racecheck "compute-sanitizer not found"
  else
    # Only the new kernels (TESSERA_TEST_KERNELS), on the odd shapes sized for the sanitizers.
    export TESSERA_TEST_KERNELS=$new_kernels
    step memcheck "$out/sanitizer.log" 150 "$sanitizer" --tool memcheck --error-exitcode 1 \
      "$tests" "[sanitize]"
    step racecheck "$out/sanitizer.log" 150 "$sanitizer" --tool racecheck --error-exitcode 1 \
      --kernel-name kns=tessera "$tests" "[sanitize]"
    unset TESSERA_TEST_KERNELS
  fi

  fast="tiled32,regtile,vectorized,warptile-128x128,warptile-128x64,warptile-64x64"
  tc="tf32,bf16,cublas-tf32,cublas-bf16"
  step bench-f32 "$out/bench.log" 150 "$tessera" bench --dtypes f32 --sizes 1024,4096,8192,4099x4097x4095 \
    --kernels "naive,$fast,$tc,cublas" --json "$tmp/bench-f32.json"
  step bench-f32-16k "$out/bench.log" 120 "$tessera" bench --dtypes f32 --sizes 16384 --warmup 1 --repeats 5 \
    --kernels "$fast,$tc,cublas" --json "$tmp/bench-f32-16k.json"
  step bench-f64 "$out/bench.log" 120 "$tessera" bench --dtypes f64 --sizes 8192 \
    --kernels "$fast,dmma,cublas" --json "$tmp/bench-f64.json"
  : >"$out/tune.log"
  step tune "$out/tune.log" 150 "$tessera" tune --sizes 1024,2048,4096,8192 --dtypes f32,f64 --out "$out/tune.json"
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
print("TFLOP/s and % of the matching cuBLAS baseline (cublas; tf32 -> cublas-tf32; bf16 -> cublas-bf16); ! = accuracy FAIL")
print(f"{'kernel':<17}" + "".join(f"{short(c):>17}" for c in cols))
for k in kernels:
    print(f"{k:<17}" + "".join(f"{cell.get((k, c[0], c[1]), '-'):>17}" for c in cols))
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
  echo
  printf '%-14s %-26s %7s\n' step status seconds
  for i in "${!names[@]}"; do printf '%-14s %-26s %7s\n' "${names[$i]}" "${statuses[$i]}" "${seconds[$i]}"; done
  echo "total $((SECONDS - start_all)) s"
} >"$out/summary.txt"
cat "$out/summary.txt"

failed=0
for s in "${statuses[@]}"; do case "$s" in ok) ;; *) failed=1 ;; esac; done
exit "$failed"
