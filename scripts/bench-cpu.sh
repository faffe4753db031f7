#!/usr/bin/env bash
# CPU benchmarks of the core pipeline (issue "core pipeline"), figures for docs/performance.md:
#  1. `tessera run` with the openblas kernel on 1 rank vs a direct cblas_sgemm call, 2048^3 f32:
#     median compute phase of REPEATS runs vs median of REPEATS direct calls, same thread count.
#  2. cpu-tiled vs cpu-naive at 1024^3 f32 (median compute phase of REPEATS runs each).
# Usage: scripts/bench-cpu.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
repeats=${2:-5}
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && flags+=(--allow-run-as-root)
threads=$(nproc)
export OPENBLAS_NUM_THREADS=$threads

median_compute() {  # kernel size repeats
  local kernel=$1 n=$2 reps=$3 i
  rm -f "$work/a$n.h5" "$work/b$n.h5"  # made afresh: generate adds to an existing file
  "$build/tessera" generate --out "$work/a$n.h5:/A" --rows "$n" --cols "$n" --seed 1
  "$build/tessera" generate --out "$work/b$n.h5:/B" --rows "$n" --cols "$n" --seed 2
  # one warm-up run, then the timed ones
  for i in $(seq 0 "$reps"); do
    rm -f "$work/c.h5"  # every run writes a new file (--overwrite would replace C inside the old one)
    mpirun "${flags[@]}" -np 1 "$build/tessera" run --a "$work/a$n.h5:/A" --b "$work/b$n.h5:/B" \
      --c "$work/c.h5:/C" --backend cpu --kernel "$kernel" --quiet --report "$work/r$i.json"
  done
  $py - "$work" "$reps" <<'PY'
import json, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
t = [json.load(open(f"{work}/r{i}.json"))["ranks"][0]["phases"]["compute"] for i in range(1, reps + 1)]
print(f"{statistics.median(t):.6f}")
PY
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown), date: $(date -u +%F)"
t_run=$(median_compute openblas 2048 "$repeats")
t_direct=$("$build/openblas_direct" 2048 "$repeats" f32)
$py -c "
r, d = $t_run, $t_direct
print(f'2048^3 f32, {$threads} threads: tessera run openblas compute {r*1e3:.1f} ms ({2*2048**3/r/1e9:.1f} GFLOP/s), direct cblas_sgemm {d*1e3:.1f} ms ({2*2048**3/d/1e9:.1f} GFLOP/s): ratio {r/d:.3f}')"
t_naive=$(median_compute cpu-naive 1024 3)
t_tiled=$(median_compute cpu-tiled 1024 "$repeats")
$py -c "
nv, tl = $t_naive, $t_tiled
print(f'1024^3 f32: cpu-naive {nv*1e3:.0f} ms ({2*1024**3/nv/1e9:.2f} GFLOP/s), cpu-tiled {tl*1e3:.0f} ms ({2*1024**3/tl/1e9:.2f} GFLOP/s): speedup {nv/tl:.1f}x')"
