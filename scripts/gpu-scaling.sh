#!/usr/bin/env bash
# Strong- and weak-scaling sweeps on the GPUs of one machine, turned into tables and plots by
# scripts/scaling_report.py (kept in docs/ for the 2-GPU H200 machine).
#
#   scripts/gpu-scaling.sh OUTDIR [ALGORITHM] [RANKS...]    (ALGORITHM default auto; RANKS 1 2)
#
# strong: C = A B at 16384^3 and 32768^3 fp32 on each rank count (one rank runs panels, the plain
#         product on one GPU; more ranks run ALGORITHM);
# weak:   M = 16384 P, N = K = 16384 fp32: the work per rank is constant.
# Times are compute + communication (the slowest rank's `compute` + rank 0's `gather`): file I/O
# and start-up excluded. Writes OUTDIR/{strong-16384,strong-32768,weak}.{md,png} and the reports.
#   SCALING_SIZES="16384 32768"  the strong-scaling sizes; SCALING_WEAK=16384 the weak base size
#   SCALING_BACKEND=cuda         cpu: the same sweeps on CPU ranks (checks the scripts at 4 and 8
#                                ranks on a machine without that many GPUs; times mean nothing there)
set -uo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
algorithm=${2:-auto}
shift $(( $# >= 2 ? 2 : 1 ))
ranks=("$@")
[ ${#ranks[@]} -gt 0 ] || ranks=(1 2)
# shellcheck source=scripts/gpu-bench-env.sh
source "$(dirname "$0")/gpu-bench-env.sh" || exit 1  # repo, build, data, $t

sizes=${SCALING_SIZES:-16384 32768}
weak=${SCALING_WEAK:-16384}
backend=${SCALING_BACKEND:-cuda}
matrix() {  # FILE ROWS COLS SEED
  [ -f "$1" ] || "$t" generate --out "$1:/X" --rows "$2" --cols "$3" --seed "$4" --dtype f32 >/dev/null
}
run() {  # NP A B REPORT
  local alg=$algorithm
  [ "$1" = 1 ] && alg=panels
  # Without streaming, so the 1-GPU panels' compute phase holds no waiting for the file.
  TESSERA_STREAM_CHUNKS=1 mpirun -x TESSERA_STREAM_CHUNKS --bind-to none -np "$1" "$t" run --a "$2:/X" --b "$3:/X" \
    --c "$data/c.h5:/C" --backend "$backend" \
    --algorithm "$alg" --overwrite -q --report "$4" || echo "run failed: np $1 $2"
}

for n in $sizes; do
  matrix "$data/sa$n.h5" $n $n 1
  matrix "$data/sb$n.h5" $n $n 2
  for np in "${ranks[@]}"; do run "$np" "$data/sa$n.h5" "$data/sb$n.h5" "$out/strong-$n-np$np.json"; done
  python3 "$repo/scripts/scaling_report.py" --time compute --out "$out/strong-$n" "$out"/strong-$n-np*.json
done
for np in "${ranks[@]}"; do
  matrix "$data/wa$np-$weak.h5" $((weak * np)) "$weak" 3
  matrix "$data/sb$weak.h5" "$weak" "$weak" 2
  run "$np" "$data/wa$np-$weak.h5" "$data/sb$weak.h5" "$out/weak-np$np.json"
done
python3 "$repo/scripts/scaling_report.py" --weak --time compute --out "$out/weak" "$out"/weak-np*.json
