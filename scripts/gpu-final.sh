#!/usr/bin/env bash
# One call on the 2-GPU machine that checks a tree and measures it end to end, within a time
# budget (the device time of a session is short): build, the GPU tests and the runs over NCCL,
# compute-sanitizer memcheck on the multi-GPU products, then scripts/e2e_bench.py on the cases
# that fit. Everything goes to OUTDIR as one tarball-friendly folder.
#
#   scripts/gpu-final.sh OUTDIR [SECONDS]     (SECONDS: the whole budget, default 540)
#
#   GPU_FINAL_CASES   e2e cases in order (default "16384 f64 gzip proj 32768"): each runs only if
#                     the time left looks enough for it
#   GPU_FINAL_TORCH   cases that also run the h5py + torch script (default "16384")
#   GPU_FINAL_TESTS   the ctest -R selection; GPU_FINAL_MEMCHECK=0 skips the memcheck step
#   GPU_FINAL_EXTRA   extra options of every e2e tessera run (e.g. "--machine h200-2gpu")
#   GPU_FINAL_REPEATS runs of each e2e case on each rank count (default 3; the median is reported)
#   GPU_FINAL_MEMCHECK_STAGED=1: compute-sanitizer memcheck of one staged run, before the e2e cases
#   GPU_FINAL_STARTUP=1: scripts/startup_probe.py (MPI start-up under several transports) first
#   GPU_FINAL_NPS     e2e_bench.py --nps (default "1,2"; "1 TESSERA_STAGED=0" or "2 --grid=2x1" add variants)
set -uo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
budget=${2:-540}
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export PATH="$PATH:/usr/local/cuda/bin"
start=$SECONDS
left() { echo $((budget - (SECONDS - start))); }
log() { echo "[$(date -u +%H:%M:%S) +$((SECONDS - start))s] $*" | tee -a "$out/steps.log"; }

{ date -u; nvidia-smi -L; nvcc --version | tail -1; } >"$out/environment.log" 2>&1
log "configure + build"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DTESSERA_WARNINGS_AS_ERRORS=ON >"$out/build.log" 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" >>"$out/build.log" 2>&1 || { log "build FAILED"; tail -30 "$out/build.log"; exit 1; }
grep -c "warning" "$out/build.log" | sed 's/^/build warnings: /' | tee -a "$out/steps.log"

log "GPU tests of the backend and the runs on GPUs (cuda|nccl), the write paths, start-up"
# The kernel tests did not change since their own GPU run (docs/performance.md): not repeated here.
timeout $(( $(left) * 40 / 100 )) ctest --test-dir build-gpu -j 3 --output-on-failure \
  -R "${GPU_FINAL_TESTS:-cuda|nccl|gpu:the cuda backend|gpu:the panel product|gpu:cuBLAS|gpu:k = 0|write\.|startup}" \
  >"$out/ctest.log" 2>&1
grep -E "tests passed|tests failed|\*\*\*Failed|\*\*\*Timeout" "$out/ctest.log" | tee -a "$out/steps.log"

if [ "${GPU_FINAL_MEMCHECK:-1}" = 1 ] && [ "$(left)" -gt 200 ] && command -v compute-sanitizer >/dev/null; then
  log "memcheck: the summa and ksplit device products"
  timeout 90 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1 \
    build-gpu/tests/tessera_gpu_tests "[summa],[ksplit]" >"$out/memcheck.log" 2>&1
  tail -3 "$out/memcheck.log" | tee -a "$out/steps.log"
fi

if [ "${GPU_FINAL_MEMCHECK_STAGED:-0}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  log "memcheck: a staged run (A, B and C through the staging rings, pieces of a few rows)"
  t=build-gpu/tessera
  rm -f /tmp/ms-a.h5 /tmp/ms-b.h5 /tmp/ms-c.h5
  $t generate --out /tmp/ms-a.h5:/A --rows 1021 --cols 1033 --dtype f32 --seed 1 >/dev/null &&
    $t generate --out /tmp/ms-b.h5:/B --rows 1033 --cols 1031 --dtype f32 --seed 2 >/dev/null &&
    TESSERA_STREAM_CHUNKS=4 TESSERA_STAGE_BYTES=300000 timeout 120 compute-sanitizer --tool memcheck \
      --error-exitcode 1 $t run --a /tmp/ms-a.h5:/A --b /tmp/ms-b.h5:/B --c /tmp/ms-c.h5:/C --overwrite \
      --backend cuda --report /tmp/ms.json >"$out/memcheck-staged.log" 2>&1
  echo "exit $?" >>"$out/memcheck-staged.log"
  grep -E "ERROR SUMMARY|staged|exit" "$out/memcheck-staged.log" | tail -3 | tee -a "$out/steps.log"
  grep -o '"staged": *[a-z]*' /tmp/ms.json | tee -a "$out/steps.log"
fi
if [ "${GPU_FINAL_STARTUP:-0}" = 1 ]; then
  log "start-up probe"
  timeout 150 python3 scripts/startup_probe.py "$out/startup" --tessera build-gpu/tessera --repeats 4 \
    >"$out/startup.log" 2>&1
  cat "$out/startup/startup.md" >>"$out/steps.log" 2>/dev/null
fi
for c in ${GPU_FINAL_CASES:-16384 f64 gzip proj 32768}; do
  # Rough cost of one case with 2 repeats on 1 and 2 GPUs, data made once (s), scaled to the repeats.
  case $c in 16384) need=70 ;; f64) need=45 ;; gzip) need=60 ;; proj) need=60 ;; 32768) need=170 ;; *) need=60 ;; esac
  repeats=${GPU_FINAL_REPEATS:-3}
  need=$((need * (repeats + 1) / 3))
  [ "$(left)" -gt $((need + 15)) ] || { log "e2e $c: skipped, $(left) s left"; continue; }
  torch=--no-torch
  case " ${GPU_FINAL_TORCH:-16384} " in *" $c "*) torch= ;; esac
  log "e2e $c"
  # shellcheck disable=SC2086  # torch is empty or one flag
  timeout $(( $(left) - 10 )) python3 scripts/e2e_bench.py "$out/e2e-$c" --cases "$c" --repeats "$repeats" --nps "${GPU_FINAL_NPS:-1,2}" \
    --tessera build-gpu/tessera --data /tmp/tessera-e2e --extra "${GPU_FINAL_EXTRA:-}" $torch >"$out/e2e-$c.log" 2>&1
  tail -3 "$out/e2e-$c.log" | tee -a "$out/steps.log"
done
log "done, $(left) s of the budget left"
