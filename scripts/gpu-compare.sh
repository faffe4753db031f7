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
# start-up excluded). Each variant's `--dry-run` prediction of per-rank host and GPU memory is
# set against the peaks its run measured. Then end to end, HDF5 to HDF5 on 1 GPU: the whole
# `mpirun -np 1 tessera run` process against scripts/torch_baseline.py (h5py + torch), REPEATS
# times each, interleaved, page cache warm for both, and tessera without streaming
# (TESSERA_STREAM_CHUNKS=1). Writes OUTDIR/compare.md and the reports.
set -uo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
n=${2:-16384}
repeats=${3:-3}
# shellcheck source=scripts/gpu-bench-env.sh
source "$(dirname "$0")/gpu-bench-env.sh" || exit 1  # repo, build, data, $t
[ -f "$data/a$n.h5" ] || "$t" generate --out "$data/a$n.h5:/A" --rows "$n" --cols "$n" --seed 1 --dtype f32
[ -f "$data/b$n.h5" ] || "$t" generate --out "$data/b$n.h5:/B" --rows "$n" --cols "$n" --seed 2 --dtype f32
quarter=$(( 3 * n * n * 4 / 4 ))

variants=("np1-panels|1|--algorithm panels"
          "np2-summa-nccl|2|--algorithm summa --comm nccl"
          "np2-summa-host|2|--algorithm summa --comm host"
          "np2-ksplit-nccl|2|--algorithm ksplit --comm nccl"
          "np1-outofcore|1|--algorithm panels --gpu-memory $quarter")
for v in "${variants[@]}"; do
  IFS='|' read -r name np opts <<<"$v"
  # shellcheck disable=SC2086  # opts is a list of options
  "$t" run --dry-run --a "$data/a$n.h5:/A" --b "$data/b$n.h5:/B" --backend cuda --ranks "$np" $opts \
    --report "$out/$name-plan.json" >"$out/$name-plan.txt" 2>&1 || tail -3 "$out/$name-plan.txt"
done
for rep in $(seq 1 "$repeats"); do
  for v in "${variants[@]}"; do
    IFS='|' read -r name np opts <<<"$v"
    # shellcheck disable=SC2086  # opts is a list of options
    # Without streaming: the compute phase then holds no waiting for the file (I/O is excluded).
    TESSERA_STREAM_CHUNKS=1 mpirun -x TESSERA_STREAM_CHUNKS --bind-to none -np "$np" "$t" run \
      --a "$data/a$n.h5:/A" --b "$data/b$n.h5:/B" --c "$data/c-$name.h5:/C" \
      --backend cuda --overwrite -q $opts --report "$out/$name-$rep.json" >"$out/$name-$rep.log" 2>&1 ||
      { echo "$name run $rep failed:"; tail -5 "$out/$name-$rep.log"; }
  done
done

# End to end. CUDA start-up counts for tessera (in the process); torch_baseline.py starts its clock
# after initialising CUDA, so the comparison favours the baseline.
cat "$data/a$n.h5" "$data/b$n.h5" >/dev/null
for rep in $(seq 1 "$repeats"); do
  start=$(date +%s.%N)
  mpirun --bind-to none -np 1 "$t" run --a "$data/a$n.h5:/A" --b "$data/b$n.h5:/B" --c "$data/e2e.h5:/C" \
    --backend cuda --overwrite -q --report "$out/e2e-tessera-$rep.json" >"$out/e2e-tessera-$rep.log" 2>&1
  end=$(date +%s.%N)
  echo "tessera_e2e_seconds $(python3 -c "print(f'{$end - $start:.3f}')")" >"$out/e2e-$rep.txt"
  start=$(date +%s.%N)
  python3 "$repo/scripts/torch_baseline.py" "$data/a$n.h5:/A" "$data/b$n.h5:/B" "$data/torch.h5:/C" >>"$out/e2e-$rep.txt" 2>&1
  end=$(date +%s.%N)  # the whole python process, start-up included, as tessera's figure is
  echo "torch_process_seconds $(python3 -c "print(f'{$end - $start:.3f}')")" >>"$out/e2e-$rep.txt"
  # The same without streaming: all of A read before the GEMM, C written after it.
  start=$(date +%s.%N)
  TESSERA_STREAM_CHUNKS=1 mpirun -x TESSERA_STREAM_CHUNKS --bind-to none -np 1 "$t" run --a "$data/a$n.h5:/A" \
    --b "$data/b$n.h5:/B" --c "$data/e2e.h5:/C" --backend cuda --overwrite -q --report "$out/e2e-nostream-$rep.json" \
    >/dev/null 2>&1
  end=$(date +%s.%N)
  echo "nostream_e2e_seconds $(python3 -c "print(f'{$end - $start:.3f}')")" >>"$out/e2e-$rep.txt"
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
mib = lambda b: f"{b / 2**20:.0f}"
text += ["", "dry-run prediction vs measured peak (last run), MiB: host = resident memory, GPU = device memory in use",
         "", "| variant | rank 0 host pred / meas | other ranks host pred / meas (max) | rank 0 GPU pred / meas | other GPU pred / meas |",
         "|---|---|---|---|---|"]
for name in names:
    try:
        plan = json.load(open(f"{out}/{name}-plan.json"))
        rep = json.load(open(f"{out}/{name}-{repeats}.json"))
    except (OSError, ValueError):
        continue
    r0 = rep["ranks"][0]
    others = [r for r in rep["ranks"][1:] if r["active"]]
    def pair(pred, meas):
        return f"{mib(pred)} / {mib(meas)} ({(pred - meas) / meas:+.0%})" if meas else f"{mib(pred)} / –"
    row = [pair(plan["rank0"]["host_bytes"], r0["peak_host_bytes"]),
           pair(plan["largest"]["host_bytes"], max(r["peak_host_bytes"] for r in others)) if others else "–",
           pair(plan["rank0"]["gpu_bytes"], r0.get("peak_gpu_bytes", 0)),
           pair(plan["largest"]["gpu_bytes"], max(r.get("peak_gpu_bytes", 0) for r in others)) if others else "–"]
    text.append(f"| {name} | " + " | ".join(row) + " |")
e2e = {"tessera": [], "torch": [], "nostream": [], "torch_process": []}
for i in range(1, repeats + 1):
    try:
        vals = dict(l.split()[:2] for l in open(f"{out}/e2e-{i}.txt") if l.strip() and l.split()[0].endswith("seconds"))
        e2e["tessera"].append(float(vals["tessera_e2e_seconds"]))
        e2e["torch"].append(float(vals["torch_total_seconds"]))
        e2e["nostream"].append(float(vals["nostream_e2e_seconds"]))
        e2e["torch_process"].append(float(vals["torch_process_seconds"]))
    except (OSError, KeyError, ValueError):
        pass
if e2e["tessera"] and e2e["torch"]:
    te, to = statistics.median(e2e["tessera"]), statistics.median(e2e["torch"])
    text += ["", f"end to end {n}^3 fp32, 1 GPU, HDF5 to HDF5 (median of {len(e2e['tessera'])}): tessera {te:.2f} s "
             f"(runs {', '.join(f'{x:.2f}' for x in e2e['tessera'])}), h5py + torch {to:.2f} s "
             f"(runs {', '.join(f'{x:.2f}' for x in e2e['torch'])}): tessera is {to / te:.2f}x as fast"]
    for what in ("tessera", "nostream"):
        try:
            rep = json.load(open(f"{out}/e2e-{what}-{repeats}.json"))
        except (OSError, ValueError):
            continue
        text.append(f"{what} phases (rank 0, last run, s): " + ", ".join(f"{k} {v:.3f}" for k, v in rep["ranks"][0]["phases"].items()))
    if e2e["torch_process"]:
        tp = statistics.median(e2e["torch_process"])
        text.append(f"whole processes (start-up included on both sides): tessera {te:.2f} s, h5py + torch {tp:.2f} s: "
                    f"tessera is {tp / te:.2f}x as fast")
    if e2e["nostream"]:
        text.append(f"tessera without streaming (TESSERA_STREAM_CHUNKS=1): {statistics.median(e2e['nostream']):.2f} s (median)")
    for i in range(1, repeats + 1):
        try:
            text.append(f"run {i}: " + " ".join(l.strip() for l in open(f"{out}/e2e-{i}.txt") if "seconds" in l))
        except OSError:
            pass
open(f"{out}/compare.md", "w").write("\n".join(text) + "\n")
print("\n".join(text))
PY
