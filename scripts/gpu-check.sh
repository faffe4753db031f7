#!/usr/bin/env bash
# tessera: the whole GPU check on a bare GPU machine, every step logged.
#
#   scripts/gpu-check.sh LOGDIR
#
# Builds from scratch in build-gpu/ (Release, sm_90 unless CUDA_ARCH says otherwise), runs all
# tests (unit, gpu, mpi), compute-sanitizer memcheck and racecheck over the GPU tests tagged
# [small], and `tessera bench` (JSON and CSV into LOGDIR). One log per step in LOGDIR; a failing
# step is recorded and the next one still runs (steps that need the build are skipped when it
# failed). Prints a summary table last and exits nonzero if any step failed.
#   GPU_CHECK_STEPS   steps after the build (default: info ctest memcheck racecheck bench startup)
#   GPU_CHECK_CTEST   extra ctest arguments (e.g. "-L gpu -j 4")
#   GPU_CHECK_FRESH=0 keep an existing build-gpu/ (a second call on a machine still warm)
set -uo pipefail

if [ $# -ne 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,10p' "$0"
  exit 2
fi
mkdir -p "$1" || exit 2
logdir=$(cd "$1" && pwd)
cd "$(dirname "$0")/.." || exit 2

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0
export PATH="$PATH:/usr/local/cuda/bin"
build="build-gpu"
arch=${CUDA_ARCH:-90}
jobs=$(nproc)

names=() statuses=() seconds=()

# step NAME COMMAND...: runs COMMAND, output to the terminal and LOGDIR/NAME.log.
step() {
  local name=$1
  shift
  echo "==== $name: $*"
  local start=$SECONDS rc
  { echo "\$ $*"; "$@"; } 2>&1 | tee "$logdir/$name.log"
  rc=${PIPESTATUS[0]}
  names+=("$name")
  seconds+=($((SECONDS - start)))
  if [ "$rc" -eq 0 ]; then statuses+=(ok); else statuses+=("FAILED (exit $rc)"); fi
  return "$rc"
}

skip() {
  echo "==== $1: skipped ($2)" | tee "$logdir/$1.log"
  names+=("$1")
  seconds+=(0)
  statuses+=("skipped: $2")
}

# Context for whoever reads the logs; not a step.
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  git rev-parse HEAD 2>/dev/null
  nvidia-smi 2>&1
  nvcc --version 2>&1
  cmake --version 2>&1 | head -n1
  ninja --version 2>&1
  mpirun --version 2>&1 | head -n1
} >"$logdir/environment.log" 2>&1

steps=${GPU_CHECK_STEPS:-info ctest memcheck racecheck bench startup}
want() { case " $steps " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
[ "${GPU_CHECK_FRESH:-1}" = 0 ] || rm -rf "$build"
built=0
if step configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="$arch"; then
  step build cmake --build "$build" -j "$jobs" && built=1
else
  skip build "configure failed"
fi

gpu_tests=$build/tests/tessera_gpu_tests
sanitizer=$(command -v compute-sanitizer || true)
if [ "$built" = 1 ]; then
  ! want info || step info "$build/tessera" info
  # shellcheck disable=SC2086  # GPU_CHECK_CTEST is a list of arguments
  ! want ctest || step ctest ctest --test-dir "$build" --output-on-failure ${GPU_CHECK_CTEST:-}
  if ! want memcheck; then
    :
  elif [ -z "$sanitizer" ]; then
    skip memcheck "compute-sanitizer not found"
    skip racecheck "compute-sanitizer not found"
  else
    # [small]: shapes cheap enough to run instrumented in a minute or two. memcheck checks every
    # kernel (cuBLAS too: it catches wrong leading dimensions); racecheck only tessera's own
    # (their mangled names contain "tessera"), the ones whose shared memory we synchronise, on
    # the [sanitize] odd shapes (racecheck instruments every shared-memory access: the
    # 2.1M-row case of [small] would take minutes with the multi-stage kernels).
    step memcheck "$sanitizer" --tool memcheck --leak-check full --error-exitcode 1 \
      "$gpu_tests" "[small]"
    step racecheck "$sanitizer" --tool racecheck --kernel-name kns=tessera --error-exitcode 1 \
      "$gpu_tests" "[sanitize]"
  fi
  ! want bench || step bench "$build/tessera" bench --json "$logdir/bench.json" --csv "$logdir/bench.csv"
  # Start-up: whole processes that do no job (MPI, CUDA and libraries), and whether a GPU run of
  # tessera's own kernels ever loads cuBLAS (it must not: kernels/cublas_library.hpp; named, since
  # `auto` may choose cuBLAS).
  startup_probe() {
    for i in 1 2 3; do /usr/bin/time -f "tessera --version %e s" "$build/tessera" --version >/dev/null; done
    for np in 1 2; do
      for i in 1 2 3; do /usr/bin/time -f "mpirun -np $np tessera info %e s" mpirun -np "$np" "$build/tessera" info >/dev/null; done
    done
    local d
    d=$(mktemp -d)
    "$build/tessera" generate --out "$d/a.h5:/A" --rows 512 --cols 512 >/dev/null &&
      LD_DEBUG=files mpirun -x LD_DEBUG -np 1 "$build/tessera" run --a "$d/a.h5:/A" --b "$d/a.h5:/A" --c "$d/c.h5:/C" \
        --backend cuda --kernel warptile-64x64 -q 2>&1 | grep -c "file=libcublas" | sed 's/^/libcublas loads in a GPU run: /'
    rm -rf "$d"
  }
  ! want startup || step startup startup_probe
else
  for s in $steps; do skip "$s" "build failed"; done
fi

failed=0
{
  echo
  echo "gpu-check summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), logs in $logdir)"
  printf '%-12s %-38s %8s  %s\n' step status seconds log
  for i in "${!names[@]}"; do
    printf '%-12s %-38s %8s  %s\n' "${names[$i]}" "${statuses[$i]}" "${seconds[$i]}" "${names[$i]}.log"
  done
} | tee "$logdir/summary.log"
for s in "${statuses[@]}"; do  # a skipped step checked nothing: that fails the check too
  case "$s" in ok) ;; *) failed=1 ;; esac
done
exit "$failed"
