#!/usr/bin/env bash
# The README's first command: set up, build, generate demo inputs and run tessera on 2 MPI ranks
# (GPU when one is visible, CPU otherwise), print the report, and verify the result.
#   TESSERA_BUILD_DIR  build folder (default: build)
#   TESSERA_DEMO_DIR   where demo/ with inputs, C and report.json is made (default: the repo)
#   TESSERA_DEMO_SIZE  M=N=K of the demo problem (default 2048)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$repo/build}
work=${TESSERA_DEMO_DIR:-$repo}
size=${TESSERA_DEMO_SIZE:-2048}

bash "$repo/scripts/setup.sh"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
if ! log=$(cmake --build "$build" --target tessera -j "$(nproc)" 2>&1); then
  echo "$log" >&2
  echo "[demo] build failed: cmake --build $build" >&2
  exit 1
fi
tessera="$build/tessera"

# hwloc's OpenCL and GL plugins cost mpirun ~0.3 s on a GPU machine and are of no use here
# (docs/usage.md, "MPI start-up").
export HWLOC_COMPONENTS="${HWLOC_COMPONENTS:--opencl,-gl}"
mpi_flags=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpi_flags+=(--allow-run-as-root)

cd "$work"
mkdir -p demo
echo "[demo] generating A ($size x $size) and B ($size x $size), float32, in $work/demo"
# The demo's own files, made afresh (--overwrite replaces a dataset inside the old file, whose
# space HDF5 does not give back: each run would grow them).
rm -f demo/a.h5 demo/b.h5 demo/c.h5
"$tessera" generate --out demo/a.h5:/A --rows "$size" --cols "$size" --seed 1
"$tessera" generate --out demo/b.h5:/B --rows "$size" --cols "$size" --seed 2
echo "[demo] mpirun -np 2 tessera run --config configs/demo.toml"
mpirun "${mpi_flags[@]}" -np 2 "$tessera" run --config "$repo/configs/demo.toml"
mpirun "${mpi_flags[@]}" -np 2 "$tessera" verify --a demo/a.h5:/A --b demo/b.h5:/B --c demo/c.h5:/C
echo "[demo] result: $work/demo/c.h5:/C   report: $work/demo/report.json"
