#!/usr/bin/env bash
# Issue 30 (honest cuBLAS baselines, `auto` with cuBLAS among its candidates, clocks and power in
# `tessera bench`) on the 1-GPU H200 machine, in one call of under 9 minutes:
#   1. build tessera and the GPU tests (build-gpu/, Release, sm_90 + the sm_90a wgmma kernels);
#   2. `tessera tune` at 1024, 2048, 4096, 8192 and 4099x4097x4095, f32 and f64, cuBLAS among the
#      candidates: the regenerated tuned table, then copied to configs/tuned/ in this (copied) tree;
#   3. `tessera run` at 8192^3 f64 with default options (auto reads that table), once as a user
#      would and with --repeat 5, and the same with --kernel cublas and with --kernel dmma-128x128
#      (the old auto choice at 8192): kernel times against cuBLAS DGEMM's;
#   4. `tessera bench`, one call, medians of 10 launches after 2 warm-ups, at 4096, 8192, 16384:
#      FP32 and FP64 kernels against cuBLAS in FP32 / FP64 compute, the TF32 and BF16 kernels on
#      float32 data against cublas-tf32 and cublas-bf16 (rounding pass + BF16 GEMM), and
#      cublas-bf16-stored (the BF16 GEMM alone on BF16 data); SM clock and power per row (NVML);
#   5. the GPU tests (ctest -L gpu), the kernel-iterating cases restricted to the kernels touched,
#      and the end-to-end `tessera run` cases on the GPU (ctest -R '.cuda.').
# Each step has a timeout and a failed step does not stop the next ones.
#
#   bash scripts/gpu-issue30.sh OUTDIR
#
# OUTDIR gets 8 files: summary.txt (the numbers that decide the issue, each step's status, the
# machine), build.log, tune.log, tuned-<GPU>.json (the regenerated table, to be committed as
# configs/tuned/tuned-<GPU>.json), run.log, bench.log (the table), bench.json, tests.log.
set -uo pipefail
set -x

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
cd "$(dirname "$0")/.." || exit 2

export PATH="$PATH:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
unset TESSERA_TUNE_FILE  # the run must find the table where an installation or a checkout has it
budget=${GPU30_BUDGET:-520}  # seconds for everything, under the 9 minutes asked for
start=$SECONDS
build="build-gpu"
tessera=$build/tessera
tmp=$(mktemp -d)
data=/tmp/tessera-issue30
trap 'rm -rf "$tmp" "$data"' EXIT
mkdir -p "$data"
left() { echo $((budget - (SECONDS - start))); }

names=() statuses=() seconds=()
# step NAME LOG LIMIT COMMAND...: COMMAND, killed after LIMIT seconds (or what is left of the
# budget), its output appended to LOG.
step() {
  local name=$1 log=$2 limit=$3
  shift 3
  local room=$(($(left) - 5))
  [ "$room" -lt "$limit" ] && limit=$room
  if [ "$limit" -lt 10 ]; then
    names+=("$name") seconds+=(0) statuses+=("skipped: out of time")
    echo "==== $name: skipped, out of time" >>"$log"
    return 1
  fi
  echo "==== $name (limit ${limit}s): $*" >>"$log"
  local t0=$SECONDS rc
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  rc=$?
  names+=("$name") seconds+=($((SECONDS - t0)))
  if [ "$rc" -eq 0 ]; then statuses+=(ok)
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then statuses+=("TIMEOUT after ${limit}s")
  else statuses+=("FAILED (exit $rc)"); fi
  echo "==== $name: exit $rc after $((SECONDS - t0))s" >>"$log"
  return "$rc"
}

{
  echo "# gpu-issue30 $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
    --format=csv 2>&1
  nvcc --version 2>&1 | tail -n 1
} >"$tmp/environment.txt"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | tr -c 'A-Za-z0-9.\n-' '_')
gpu=${gpu:-NVIDIA_H200}
table="tuned-$gpu.json"

# ---- 1. build ---------------------------------------------------------------------------------------
: >"$out/build.log"
built=0
rm -rf "$build"
if step configure "$out/build.log" 90 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90; then
  step build "$out/build.log" 330 cmake --build "$build" -j "$(nproc)" --target tessera tessera_gpu_tests && built=1
fi
grep -E "warning" "$out/build.log" | grep -v "^ptxas info" | sort -u >"$tmp/warnings.txt"

if [ "$built" = 1 ]; then
  # ---- 2. the tuned table, cuBLAS among the candidates -------------------------------------------
  : >"$out/tune.log"
  if step tune "$out/tune.log" 170 "$tessera" tune --sizes 1024,2048,4096,8192,4099x4097x4095 --dtypes f32,f64 \
      --repeats 10 --out "$out/$table"; then
    cp "$out/$table" "configs/tuned/$table"  # what committing it does: the run below reads it
    echo "configs/tuned/$table replaced by the regenerated table" >>"$out/tune.log"
  else
    echo "tune failed: the run below uses the committed configs/tuned/$table" >>"$out/tune.log"
  fi

  # ---- 3. tessera run at 8192^3 f64, default options, against cuBLAS ------------------------------
  : >"$out/run.log"
  if step generate "$out/run.log" 60 "$tessera" generate --out "$data/a.h5:/A" --rows 8192 --cols 8192 --dtype f64 \
      --seed 1 &&
    step generate "$out/run.log" 60 "$tessera" generate --out "$data/b.h5:/B" --rows 8192 --cols 8192 --dtype f64 \
      --seed 2; then
    io=(--a "$data/a.h5:/A" --b "$data/b.h5:/B" --c "$data/c.h5:/C" --overwrite)
    # One rank under mpirun, as docs/performance.md measures whole processes.
    run=(mpirun --bind-to none -np 1 "$tessera" run "${io[@]}")
    # As a user would run it: one run, default options; the whole process timed too.
    timed=()
    [ -x /usr/bin/time ] && timed=(/usr/bin/time -f "whole process %e s")
    step run-default "$out/run.log" 60 "${timed[@]}" "${run[@]}" --report "$tmp/run-default.json"
    step run-default-x5 "$out/run.log" 60 "${run[@]}" --repeat 5 --report "$tmp/run-default-x5.json"
    step run-cublas-x5 "$out/run.log" 60 "${run[@]}" --kernel cublas --repeat 5 --report "$tmp/run-cublas-x5.json"
    step run-dmma-x5 "$out/run.log" 60 "${run[@]}" --kernel dmma-128x128 --repeat 5 --report "$tmp/run-dmma-x5.json"
    # The old default's whole process, for the cost of loading cuBLAS (~0.3 s, beside the reads).
    step run-dmma "$out/run.log" 60 "${timed[@]}" "${run[@]}" --kernel dmma-128x128 --report "$tmp/run-dmma.json"
    rm -f "$data"/*.h5
  fi

  # ---- 4. the bench: one call, medians of 10 --------------------------------------------------------
  kernels=warptile-128x256-db,warptile-128x128,cublas,dmma,dmma-128x128,dmma-64x64
  kernels=$kernels,tf32-wgmma,tf32-wgmma-rawa,cublas-tf32,bf16-wgmma,bf16,cublas-bf16,cublas-bf16-stored
  : >"$out/bench.log"
  step bench "$out/bench.log" 200 "$tessera" bench --dtypes f32,f64 --sizes 4096,8192,16384 --warmup 2 \
    --repeats 10 --kernels "$kernels" --json "$out/bench.json"

  # ---- 5. the GPU tests ---------------------------------------------------------------------------
  : >"$out/tests.log"
  # The cases that loop over every kernel take the ones this issue touched (and their neighbours).
  export TESSERA_TEST_KERNELS=cublas,cublas-tf32,cublas-bf16,cublas-bf16-stored,dmma,dmma-128x128,tf32,bf16,bf16-wgmma,warptile-128x128
  step gpu-tests "$out/tests.log" 200 ctest --test-dir "$build" -L gpu -j 2 --timeout 150 --output-on-failure
  unset TESSERA_TEST_KERNELS
  # Whole `tessera run`s on the GPU (auto now means cuBLAS): the 1-GPU end-to-end cases; those
  # that need 2 GPUs skip, visibly.
  step run-tests "$out/tests.log" 150 ctest --test-dir "$build" -R '[.]cuda[.]' -j 2 --timeout 100 --output-on-failure
else
  for s in tune run bench gpu-tests run-tests; do names+=("$s") seconds+=(0) statuses+=("skipped: build failed"); done
fi

# ---- summary: the numbers that decide the issue -------------------------------------------------------
python3 - "$out" "$tmp" "$table" >"$tmp/tables.txt" 2>&1 <<'EOF' || echo "(summary script failed)" >>"$tmp/tables.txt"
import json, os, statistics, sys
out, tmp, table = sys.argv[1:4]

def num(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"

def load(path):
    try:
        return json.load(open(path))
    except Exception as e:
        print(f"({os.path.basename(path)}: {e})")
        return None

bench = load(os.path.join(out, "bench.json"))
rows = bench["results"] if bench else []
print("== tessera bench (median of 10; TFLOP/s, % of the baseline named, SM clock MHz, board W)")
if bench:
    t = bench.get("telemetry", {})
    print(f"clocks: recorded {t.get('recorded')} ({t.get('source')}); SM max {t.get('sm_clock_max_mhz')} MHz, "
          f"power limit {t.get('power_limit_w')} W")
print(f"{'size':<16}{'dtype':<6}{'kernel':<20}{'TFLOP/s':>9}{'%':>8}  {'vs':<20}{'rel.err':>9}{'MHz':>6}{'W':>5}  status")
for r in rows:
    if r["status"] == "skipped":
        continue
    clk = (r.get("sm_clock_mhz") or {}).get("median")
    pw = (r.get("power_w") or {}).get("median")
    pct = r.get("percent_of_vendor")
    tf = r["gflops"] / 1e3 if isinstance(r["gflops"], (int, float)) else None
    print(f"{r['size']:<16}{r['dtype']:<6}{r['kernel']:<20}{num(tf, '.1f'):>9}{num(pct, '.1f'):>8}  "
          f"{r.get('baseline') or '-':<20}{num(r['rel_error'], '.1e'):>9}{num(clk, '.0f'):>6}{num(pw, '.0f'):>5}  "
          f"{r['status']}")
fails = [f"{r['kernel']} {r['size']} {r['dtype']}" for r in rows if r["status"] == "FAIL"]
print("accuracy failures: " + (", ".join(fails) if fails else "none"))

def bench_ms(kernel, size, dtype):
    for r in rows:
        if r["kernel"] == kernel and r["size"] == size and r["dtype"] == dtype and r["median_ms"] is not None:
            return r["median_ms"]
    return None

print("\n== tessera run 8192^3 f64 (kernel time = the report's kernel phase, 4 row tiles of 2048 rows)")
dgemm = bench_ms("cublas", "8192x8192x8192", "f64")
print(f"cuBLAS DGEMM in tessera bench (median of 10): {dgemm} ms")
verdicts = []
for name, label in (("run-default", "default options, one run"), ("run-default-x5", "default options, median of 5"),
                    ("run-cublas-x5", "--kernel cublas, median of 5"), ("run-dmma", "--kernel dmma-128x128, one run"),
                    ("run-dmma-x5", "--kernel dmma-128x128, median of 5")):
    rep = load(os.path.join(tmp, name + ".json"))
    if not rep:
        continue
    if "repeats" in rep:
        kernel_s = rep["repeats"]["phases"]["kernel"]["median"]
        wall = rep["repeats"]["wall_seconds"]["median"]
    else:
        kernel_s = rep["ranks"][0]["phases"]["kernel"]
        wall = rep["totals"]["wall_seconds"]
    ratio = kernel_s * 1e3 / dgemm if dgemm else float("nan")
    print(f"{label:<36} kernel {rep['kernel']:<14} {kernel_s * 1e3:8.2f} ms = {ratio:5.3f} x bench DGEMM;"
          f" wall {wall:.3f} s")
    if name.startswith("run-default"):
        verdicts.append((label, ratio))
for label, ratio in verdicts:
    print(f"DONE-CHECK {label}: kernel time within 5% of cuBLAS DGEMM's: {'PASS' if ratio <= 1.05 else 'FAIL'}"
          f" ({ratio:.3f})")

tuned = load(os.path.join(out, table))
if tuned:
    print("\n== regenerated tuned table (winner, TFLOP/s, runner-up)")
    for c in tuned["choices"]:
        cands = sorted(((v, k) for k, v in c.get("candidates", {}).items() if k != c["kernel"]), reverse=True)
        second = f"{cands[0][1]} {cands[0][0] / 1e3:.1f}" if cands else "-"
        print(f"{c['dtype']} {c['m']}x{c['n']}x{c['k']}: {c['kernel']} {c['gflops'] / 1e3:.1f}; runner-up {second}")
EOF

{
  cat "$tmp/environment.txt"
  echo
  cat "$tmp/tables.txt"
  echo
  echo "tests (gpu, then run): $(grep -E 'tests passed|tests failed' "$out/tests.log" 2>/dev/null | tr '\n' ' ')"
  grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|Not Run|SEGFAULT)' "$out/tests.log" 2>/dev/null | head -n 20
  echo "build warnings: $(wc -l <"$tmp/warnings.txt")"
  head -n 5 "$tmp/warnings.txt"
  echo "whole processes (run-default, then run-dmma): $(grep -E "whole process" "$out/run.log" 2>/dev/null | tr '\n' ' ')"
  echo
  printf '%-16s %-28s %7s\n' step status seconds
  for i in "${!names[@]}"; do printf '%-16s %-28s %7s\n' "${names[$i]}" "${statuses[$i]}" "${seconds[$i]}"; done
  echo "total $((SECONDS - start)) s"
} >"$out/summary.txt"
cat "$out/summary.txt"

failed=0
for s in "${statuses[@]}"; do case "$s" in ok) ;; *) failed=1 ;; esac; done
exit "$failed"
