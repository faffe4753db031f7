# shellcheck shell=bash
# Sourced by the GPU benchmark scripts (gpu-compare.sh, gpu-scaling.sh): where the repository,
# the build and the benchmark data are, the MPI/NCCL settings they run with, and $t, the built
# tessera (the caller stops if it is missing). TESSERA_BUILD_DIR and TESSERA_SCALING_DATA
# override the folders.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$repo/build-gpu}
data=${TESSERA_SCALING_DATA:-/tmp/tessera-scaling}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
mkdir -p "$data"
t=$build/tessera
[ -x "$t" ] || { echo "build $t first"; return 1; }
