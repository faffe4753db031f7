#!/usr/bin/env bash
# tessera across two simulated nodes on the GPU machine (issue 29, item 5; docs/cluster.md).
#
#   scripts/gpu-cluster.sh OUT
#
# On the GPU machine (Ubuntu 24.04, CUDA 13, Open MPI 4.1.6 not CUDA-aware, no Slurm, root):
# builds tessera with CUDA in build-gpu-cluster/ (no tests), makes two nodes node1 and node2 that
# share the machine's GPU(s) (tests/cluster/cluster.py --no-slurm: namespaces on a bridge, and
# again on the loopback as in the issue's recipe), then runs, 2 nodes x 2 ranks through mpirun's
# rsh agent (--mca plm rsh: the machine sets OMPI_MCA_plm=isolated):
#   1. a plain MPI program calling MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) (what tessera did
#      and hung in before this branch: the library's node split on this layout),
#   2. tessera run --backend cpu and --backend cuda --comm host, panels and summa, each checked
#      against numpy, each rank's GPU checked (node-local rank mod GPUs, node-local ranks counted
#      by host name) and its report's network (tcp between nodes, vader within).
# A run still going after its time limit is a hang: every rank's kernel stack and wait channel
# (and gdb backtraces, where gdb is installed) are saved, then it is killed.
# Into OUT (8 files at most): summary.txt (one line per check: read this first), build.log,
# probe.log, runs-bridge.log, runs-loopback.log, reports.json, hangs.log, cluster.log.
# Under 9 minutes: each run is limited, and runs are skipped once 8 minutes have gone.
set -uo pipefail
if [ $# -ne 1 ]; then sed -n '2,21p' "$0"; exit 2; fi
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
cd "$(dirname "$0")/.." || exit 2
export PATH="$PATH:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
start=$SECONDS

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi -L 2>&1
  mpirun --version 2>&1 | head -n1
  ompi_info 2>/dev/null | grep -iE "pmix|ompi:.*version" | head -n 5
  env | grep -E '^OMPI_|^PMIX_' | sort
  echo "\$ cmake -S . -B build-gpu-cluster -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90} -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCHMARKS=OFF"
  cmake -S . -B build-gpu-cluster -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
    -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCHMARKS=OFF -DTESSERA_WITH_CUDA=ON 2>&1 | tail -n 20
  cmake --build build-gpu-cluster -j "$(nproc)" 2>&1 | tail -n 30
} > "$out/build.log" 2>&1
if [ ! -x build-gpu-cluster/tessera ]; then
  echo "build FAILED after $((SECONDS - start)) s (build.log)" | tee "$out/summary.txt"
  exit 1
fi
echo "build: ok ($((SECONDS - start)) s)" > "$out/summary.txt"

python3 tests/cluster/gpu_cluster.py --tessera build-gpu-cluster/tessera --out "$out" --deadline $((480 - (SECONDS - start)))
rc=$?
echo "total: $((SECONDS - start)) s, exit $rc" >> "$out/summary.txt"
cat "$out/summary.txt"
exit $rc
