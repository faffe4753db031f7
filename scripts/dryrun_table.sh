#!/usr/bin/env bash
# The dry run's predictions as a markdown table, written down before a scaling run (issue #18):
# for each problem and rank count, every algorithm `auto` may choose and what auto takes, with the
# predicted time (end to end as the model sees it), grid and the most GPU and host memory a rank needs.
#
#   scripts/dryrun_table.sh TESSERA "M N K DTYPE" [...] -- RANKS...
#   e.g. scripts/dryrun_table.sh build/tessera "32768 32768 32768 f32" "16384 16384 16384 f64" -- 1 2 4 8
set -euo pipefail
t=$1
shift
problems=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do problems+=("$1"); shift; done
[ "${1:-}" = -- ] && shift
ranks=("$@")
report=$(mktemp)
trap 'rm -f "$report"' EXIT
echo "| problem | GPUs | --algorithm | runs as | grid | predicted s | GPU GiB / rank | host GiB / rank |"
echo "|---|---:|---|---|---|---:|---:|---:|"
for p in "${problems[@]}"; do
  read -r m n k dtype <<<"$p"
  for np in "${ranks[@]}"; do
    for alg in auto panels summa ksplit; do
      if ! "$t" run --dry-run --m "$m" --n "$n" --k "$k" --dtype "$dtype" --ranks "$np" --backend cuda \
          --algorithm "$alg" --report "$report" >/dev/null 2>&1; then
        echo "| ${m}×${n}×${k} $dtype | $np | $alg | refused | | | | |"
        continue
      fi
      python3 - "$report" "$m" "$n" "$k" "$dtype" "$np" "$alg" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m, n, k, dtype, np_, alg = sys.argv[2:]
gib = lambda b: b / 2**30
print(f"| {m}×{n}×{k} {dtype} | {np_} | {alg} | {d['algorithm']} / {d['comm']} | {d['grid']['rows']}x{d['grid']['cols']} | "
      f"{d['predicted_seconds']:.2f} | {gib(max(d['rank0']['gpu_bytes'], d['largest']['gpu_bytes'])):.1f} | "
      f"{gib(max(d['rank0']['host_bytes'], d['largest']['host_bytes'])):.1f} |")
PY
    done
  done
done
