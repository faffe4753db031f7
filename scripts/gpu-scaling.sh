#!/usr/bin/env bash
# GPU scaling figures for docs/performance.md (issue "scale across GPUs"), on a 2-GPU machine:
#  1. 1 rank vs 2 ranks at 16384^3 and 32768^3 fp32: compute (H2D + kernel + D2H) + communication
#     (gather to rank 0), file I/O excluded: max over ranks of `compute` + rank 0's `gather`.
#  2. End to end HDF5 -> HDF5 at 16384^3 fp32 on 1 GPU: tessera (whole process, mpirun included)
#     against the h5py + torch script a user would write (scripts/torch_baseline.py), same files.
#  With ALGORITHM ksplit (or auto) the 2-rank runs split K and sum C over NVLink with NCCL; the
#  1-rank baseline always runs panels (the plain product on one GPU). For ksplit
#  `compute` holds h2d + kernel + reduce + d2h (compute and communication), and there is no gather.
# Usage: scripts/gpu-scaling.sh OUTDIR [KERNEL] [ALGORITHM]    (KERNEL default: auto; ALGORITHM
#        default: panels; also ksplit or auto)
set -uo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
kernel=${2:-auto}
algorithm=${3:-panels}
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$repo/build-gpu}
data=${TESSERA_SCALING_DATA:-/tmp/tessera-scaling}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
mkdir -p "$data"
if [ ! -x "$build/tessera" ]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null &&
    cmake --build "$build" -j "$(nproc)" --target tessera >/dev/null || { echo "build failed"; exit 1; }
fi
t=$build/tessera
py=$(command -v python3)
for n in 16384 32768; do
  [ -f "$data/a$n.h5" ] || "$t" generate --out "$data/a$n.h5:/A" --rows $n --cols $n --seed 1
  [ -f "$data/b$n.h5" ] || "$t" generate --out "$data/b$n.h5:/B" --rows $n --cols $n --seed 2
  for np in 1 2; do
    alg=$algorithm
    [ "$np" = 1 ] && alg=panels
    mpirun --bind-to none -np $np "$t" run --a "$data/a$n.h5:/A" --b "$data/b$n.h5:/B" --c "$data/c$n-$np.h5:/C" \
      --backend cuda --kernel "$kernel" --algorithm "$alg" --overwrite --report "$out/run-$n-np$np.json" |
      tee "$out/run-$n-np$np.txt"
  done
done

# End to end at 16384: warm the page cache for both the same way (each reads the files once first).
n=16384
cat "$data/a$n.h5" "$data/b$n.h5" >/dev/null
start=$(date +%s.%N)
mpirun --bind-to none -np 1 "$t" run --a "$data/a$n.h5:/A" --b "$data/b$n.h5:/B" --c "$data/e2e.h5:/C" \
  --backend cuda --kernel "$kernel" --overwrite -q --report "$out/e2e-tessera.json"
end=$(date +%s.%N)
"$py" -c "print(f'tessera_e2e_seconds {$end - $start:.3f}')" | tee "$out/e2e.txt"
"$py" "$repo/scripts/torch_baseline.py" "$data/a$n.h5:/A" "$data/b$n.h5:/B" "$data/torch.h5:/C" | tee -a "$out/e2e.txt"

"$py" - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def cc(rep):  # compute + communication, file I/O excluded
    comp = max(r["phases"].get("compute", 0) for r in rep["ranks"] if r["active"])
    gather = rep["ranks"][0]["phases"].get("gather", 0)
    return comp, gather
lines = ["| n | ranks | kernel | compute s (max) | gather s (rank 0) | compute+comm s | wall s | speedup (compute+comm) |", "|---|---|---|---|---|---|---|---|"]
for n in (16384, 32768):
    base = None
    for np_ in (1, 2):
        rep = json.load(open(f"{out}/run-{n}-np{np_}.json"))
        comp, gather = cc(rep)
        total = comp + gather
        base = base or total
        lines.append(f"| {n} | {np_} | {rep['kernel']} | {comp:.3f} | {gather:.3f} | {total:.3f} | {rep['totals']['wall_seconds']:.2f} | {base / total:.2f} |")
e2e = dict(l.split()[:2] for l in open(f"{out}/e2e.txt") if l.strip() and len(l.split()) >= 2 and l.split()[0].endswith("seconds"))
lines.append("")
lines.append(f"end to end 16384^3 fp32 1 GPU: tessera {float(e2e['tessera_e2e_seconds']):.2f} s, h5py+torch {float(e2e['torch_total_seconds']):.2f} s: ratio {float(e2e['torch_total_seconds']) / float(e2e['tessera_e2e_seconds']):.2f}x")
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
