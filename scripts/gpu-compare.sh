#!/usr/bin/env bash
# Compute + communication of each multi-GPU path at one size, same run, against 1 GPU; and the
# out-of-core cost. For docs/performance.md (issue "scale across GPUs"), on the 2-GPU machine.
#
#   scripts/gpu-compare.sh OUTDIR [N] [REPEATS]      (N default 16384, REPEATS default 3)
#
# Runs, REPEATS times each, interleaved, fp32 N^3 from HDF5 files made by `tessera generate`:
#   np1  panels                      1 GPU, in core: the baseline
#   np2  summa  --comm nccl|host     2 GPUs
#   np2  ksplit --comm nccl          2 GPUs
#   np1  panels --gpu-memory Q       Q = a quarter of what in core needs (3 N^2 words)
# "compute+comm" = max over ranks of the `compute` phase plus rank 0's `gather` (file I/O and
# start-up excluded). Writes OUTDIR/compare.md (medians) and each run's JSON report.
set -uo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
n=${2:-16384}
repeats=${3:-3}
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$repo/build-gpu}
data=${TESSERA_SCALING_DATA:-/tmp/tessera-scaling}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
mkdir -p "$data"
t=$build/tessera
[ -x "$t" ] || { echo "build $t first"; exit 1; }
[ -f "$data/a$n.h5" ] || "$t" generate --out "$data/a$n.h5:/A" --rows "$n" --cols "$n" --seed 1 --dtype f32
[ -f "$data/b$n.h5" ] || "$t" generate --out "$data/b$n.h5:/B" --rows "$n" --cols "$n" --seed 2 --dtype f32
quarter=$(( 3 * n * n * 4 / 4 ))

variants=("np1-panels|1|--algorithm panels"
          "np2-summa-nccl|2|--algorithm summa --comm nccl"
          "np2-summa-host|2|--algorithm summa --comm host"
          "np2-ksplit-nccl|2|--algorithm ksplit --comm nccl"
          "np1-outofcore|1|--algorithm panels --gpu-memory $quarter")
for rep in $(seq 1 "$repeats"); do
  for v in "${variants[@]}"; do
    IFS='|' read -r name np opts <<<"$v"
    # shellcheck disable=SC2086  # opts is a list of options
    mpirun --bind-to none -np "$np" "$t" run --a "$data/a$n.h5:/A" --b "$data/b$n.h5:/B" --c "$data/c-$name.h5:/C" \
      --backend cuda --overwrite -q $opts --report "$out/$name-$rep.json" >"$out/$name-$rep.log" 2>&1 ||
      { echo "$name run $rep failed:"; tail -5 "$out/$name-$rep.log"; }
  done
done

python3 - "$out" "$n" "$repeats" <<'PY'
import json, statistics, sys
out, n, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names = ["np1-panels", "np2-summa-nccl", "np2-summa-host", "np2-ksplit-nccl", "np1-outofcore"]
def cc(rep):
    active = [r for r in rep["ranks"] if r["active"]]
    comp = max(r["phases"].get("compute", 0) for r in active)
    return comp + rep["ranks"][0]["phases"].get("gather", 0), active[0]["phases"]
rows, base = [], None
for name in names:
    runs = []
    for i in range(1, repeats + 1):
        try:
            rep = json.load(open(f"{out}/{name}-{i}.json"))
        except (OSError, ValueError):
            continue
        runs.append((cc(rep), rep))
    if not runs:
        rows.append(f"| {name} | failed | | | | |")
        continue
    med = statistics.median(r[0][0] for r in runs)
    base = base if base is not None else med
    phases = runs[-1][0][1]
    parts = ", ".join(f"{k} {v * 1e3:.0f}" for k, v in phases.items() if k not in ("read", "write"))
    rep = runs[-1][1]
    ratio = f"{base / med:.2f}x faster" if name.startswith("np2") else f"{med / base:.2f}x the time"
    rows.append(f"| {name} | {rep['algorithm']} / {rep['comm']} | {len(runs)} | {med:.3f} | {ratio} | {parts} |")
text = [f"{n}^3 fp32, compute+comm seconds (median of runs), vs np1-panels", "",
        "| variant | algorithm / comm | runs | compute+comm s | vs 1 GPU in core | phases of rank 0, last run (ms) |",
        "|---|---|---|---|---|---|"] + rows
open(f"{out}/compare.md", "w").write("\n".join(text) + "\n")
print("\n".join(text))
PY
