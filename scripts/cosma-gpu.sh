#!/usr/bin/env bash
# tessera's ScaLAPACK drop-in (pdgemm_/psgemm_ of libtessera_scalapack) side by side with COSMA's
# (pxgemm of libcosma_pxgemm, COSMA 2.8.4 on its cuBLAS backend, inputs in host memory), Debian's
# ScaLAPACK the reference for correctness; on the GPU machine, from the repository root:
#
#   scripts/cosma-gpu.sh OUT [SECONDS]        (SECONDS: the budget from the script's start, 540)
#
# Needs the carried .ab/cosma and .deps/scalapack (scripts/cosma-carry.sh makes them here) and
# .deps/tomlpp, .deps/lz4 for tessera's build. Steps:
#   1. COSMA into $COSMA_WORK (/tmp/cosma-work)/cosma; with COSMA_NCCL=1 also cosma-nccl
#      (COSMA_WITH_NCCL=ON); -j $JOBS (16).
#   2. tessera's $TESSERA_BUILD_DIR (build-gpu): configured with $GPU_CMAKE_ARGS where it has no
#      CMakeCache.txt (an earlier step of the same call may have built it), pointed at the carried
#      ScaLAPACK, and its targets pgemm_bench_tessera, pgemm_bench_scalapack built.
#   3. benchmarks/pgemm_bench.c linked against COSMA's pxgemm: pgemm_bench_cosma[_nccl]; and
#      tests/scalapack/pgemm_check.c for each of scalapack, tessera, cosma[, cosma_nccl].
#   4. Correctness: pgemm_check on grids $CHECK_GRIDS ("1x1 1x2"; NCCL only where each rank has a
#      GPU of its own), every C against ScaLAPACK's.
#   5. Timing: for each size of SD (f64, "8192 16384") and SS (f32, "8192 16384 32768"), N^3,
#      whole `mpirun -np P*Q` processes on grid $GRID (1x1), NB 512, WARMUP 1, REPEATS 3,
#      tessera and COSMA alternated (order reversed every other round) for AB_ROUNDS (2) rounds,
#      each under `timeout`; a run estimated not to fit in what is left of SECONDS is skipped.
#   OUT/summary.txt (printed last): per size the median over rounds of pgemm_bench's median call
#   time, TFLOP/s, and tessera/COSMA (< 1: tessera faster). Logs: OUT/*.log (tessera's
#   TESSERA_SCALAPACK_VERBOSE phases are in OUT/bench-*-tessera-*.log), OUT/runs.tsv.
#
# COSMA_DRY=1: steps 1-3 only (and ldd of what was linked). TESSERA_SKIP=1: no tessera (steps 1, 3,
# 4, 5 for ScaLAPACK and COSMA alone; for checking the kit on a machine without tessera's build).
# COSMA_CMAKE_EXTRA: more arguments for COSMA's configure (e.g. -DCOSMA_NCCL_LIBRARIES=...).
# BENCH_VARIANTS: the timed programs, of tessera cosma cosma_nccl scalapack (default: all built but
# scalapack). SD= or SS= (empty): no f64 or no f32 sizes; CHECK_GRIDS= : no correctness check.
# COSMA's own variables (COSMA_GPU_MAX_TILE_M/N/K, COSMA_OVERLAP_COMM_AND_COMP, ...) pass through.
set -uo pipefail
t0=$SECONDS
[ $# -ge 1 ] || { echo "usage: scripts/cosma-gpu.sh OUT [SECONDS]" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 2
out=$(mkdir -p "$1" && cd "$1" && pwd) || exit 2
budget=${2:-540}
work=${COSMA_WORK:-/tmp/cosma-work}
jobs=${JOBS:-16}
build=${TESSERA_BUILD_DIR:-$repo/build-gpu}
SD=${SD-"8192 16384"}
SS=${SS-"8192 16384 32768"}
AB_ROUNDS=${AB_ROUNDS:-2}
NB=${NB:-512}
WARMUP=${WARMUP:-1}
REPEATS=${REPEATS:-3}
GRID=${GRID:-1x1}
CHECK_GRIDS=${CHECK_GRIDS-"1x1 1x2"}
RESERVE=${RESERVE:-10}   # seconds kept for the summary
GPU_CMAKE_ARGS=${GPU_CMAKE_ARGS:-"-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
-DTESSERA_TOMLPP_INCLUDE=$repo/.deps/tomlpp -DTESSERA_LZ4_INCLUDE_DIR=$repo/.deps/lz4 \
-DTESSERA_LZ4_LIBRARY=$repo/.deps/lz4/liblz4.a"}
src=$repo/.ab/cosma/COSMA
scalapack=$repo/.deps/scalapack/lib/libscalapack-openmpi.so.2.2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-16}
mkdir -p "$work"
exec > >(tee -a "$out/cosma-gpu.log") 2>&1

say() { printf '[%4ds] %s\n' $((SECONDS - t0)) "$*"; }
left() { echo $((budget - (SECONDS - t0))); }
die() { say "FAILED: $*"; exit 1; }
gist() { grep -v -E '^\[[^]]*\] (\[ *[0-9]+\]|\*\*\*|Signal)|^-+$|^ *$' "$1" | head -6 | sed 's/^/    /'; }  # a failed run's own words
[ -f "$src/CMakeLists.txt" ] || die "no $src: run scripts/cosma-carry.sh before the call and carry .ab/cosma"
[ -f "$scalapack" ] || die "no $scalapack: run scripts/cosma-carry.sh and carry .deps/scalapack"

say "cosma-gpu.sh: OUT=$out budget ${budget}s work=$work jobs=$jobs"
say "tree: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null) ($(git -C "$repo" status --porcelain 2>/dev/null | wc -l) changed paths)"
gpus=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | paste -sd';')
say "device: ${gpus:-no GPU (nvidia-smi)}"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
say "COSMA: $(head -1 "$repo/.ab/cosma/VERSIONS" 2>/dev/null); env: $(env | grep '^COSMA_[A-Z_]*=' | grep -v -e '^COSMA_WORK=' -e '^COSMA_DRY=' \
  -e '^COSMA_NCCL=' -e '^COSMA_CMAKE_EXTRA=' | tr '\n' ' ')(COSMA defaults otherwise)"

# ---- run-time libraries: the carried ScaLAPACK; what it needs that this machine lacks ----------
rt=$work/rtlib
rm -rf "$rt"
mkdir -p "$rt"
have_lib() { ldconfig -p | awk -v l="$1" '$1 == l {f = 1} END {exit !f}'; }  # (no grep -q: pipefail)
for so in libgfortran.so.5 libquadmath.so.0; do
  have_lib "$so" || { ln -s "$repo/.deps/scalapack/fallback/$so" "$rt/$so"; say "using the carried $so"; }
done
openblas=$(ldconfig -p | awk '$1 == "libopenblas.so.0" {print $NF; exit}')
for so in libblas.so.3 liblapack.so.3; do
  if ! have_lib "$so"; then
    [ -n "$openblas" ] || die "neither $so nor libopenblas.so.0 here"
    ln -s "$openblas" "$rt/$so"
    say "$so -> $openblas"
  fi
done
export LD_LIBRARY_PATH="$repo/.deps/scalapack/lib:$rt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
linkpaths=("-Wl,-rpath,$repo/.deps/scalapack/lib" "-Wl,-rpath-link,$rt" "-Wl,-rpath-link,$repo/.deps/scalapack/lib")

# ---- 1. COSMA ----------------------------------------------------------------------------------
# COSMA_BLAS=CUDA is 2.8.4's switch to the cuBLAS backend (COSMA_GPU_BACKEND follows from it);
# COSMA_SCALAPACK=CUSTOM makes it look for a host BLAS too ("auto": MKL first, whose probing needs
# Fortran, hence off; then OpenBLAS). COSTA and Tiled-MM come from the carried sources, not git.
# Its GPU build compiles nothing against cblas.h; still FindOPENBLAS must succeed: point it at
# this machine's OpenBLAS rather than let its search miss Debian's per-flavour folders.
cblas_dir=/usr/include
for d in /usr/include/x86_64-linux-gnu /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas; do
  if [ -f "$d/cblas.h" ]; then cblas_dir=$d; break; fi
done
openblas_dev=$(ldconfig -p | awk '$1 == "libopenblas.so" {print $NF; exit}')
read -ra cosma_extra <<<"${COSMA_CMAKE_EXTRA:-}"
cosma_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON
  -DCOSMA_BLAS=CUDA -DCOSMA_SCALAPACK=CUSTOM -DCOSMA_SCALAPACK_LINK_LIBRARIES="$scalapack"
  -DCOSMA_WITH_TESTS=OFF -DCOSMA_WITH_APPS=OFF -DCOSMA_WITH_BENCHMARKS=OFF -DCOSMA_WITH_PROFILING=OFF
  -DCMAKE_DISABLE_FIND_PACKAGE_MKL=ON -DCOSMA_OPENBLAS_INCLUDE_DIRS="$cblas_dir"
  -DCOSMA_OPENBLAS_LINK_LIBRARIES="${openblas_dev:-$openblas}"
  -DFETCHCONTENT_FULLY_DISCONNECTED=ON -DFETCHCONTENT_TRY_FIND_PACKAGE_MODE=NEVER
  -DFETCHCONTENT_SOURCE_DIR_COSTA="$src/libs/COSTA" -DFETCHCONTENT_SOURCE_DIR_TILED-MM="$src/libs/Tiled-MM"
  -DCMAKE_SHARED_LINKER_FLAGS="-Wl,-rpath-link,$rt"
  "${cosma_extra[@]}")
build_cosma() {  # NAME [CMAKE ARGS...] -> $work/NAME/src/cosma/libcosma_pxgemm.so
  local name=$1 b=$work/$1
  shift
  say "COSMA $name: configure ($*)"
  cmake -S "$src" -B "$b" "${cosma_args[@]}" "$@" >"$out/$name-configure.log" 2>&1 ||
    { tail -40 "$out/$name-configure.log"; return 1; }
  grep -E "Selected|Found (OPENBLAS|Blas|SCALAPACK|NCCL|CUDAToolkit|MPI)|TILEDMM" "$out/$name-configure.log" | sed 's/^/    /'
  say "COSMA $name: build -j $jobs"
  cmake --build "$b" -j "$jobs" --target cosma_pxgemm >"$out/$name-build.log" 2>&1 ||
    { grep -E -B2 -A8 "error|FAILED" "$out/$name-build.log" | head -60; return 1; }
  [ -f "$b/src/cosma/libcosma_pxgemm.so" ] || { say "no $b/src/cosma/libcosma_pxgemm.so"; return 1; }
  say "COSMA $name: built"
}
cosmas=(cosma)
build_cosma cosma || die "COSMA"
if [ "${COSMA_NCCL:-0}" = 1 ]; then
  if build_cosma cosma-nccl -DCOSMA_WITH_NCCL=ON; then cosmas+=(cosma-nccl); else say "COSMA with NCCL: not built; going on without"; fi
fi

# ---- 2. tessera ---------------------------------------------------------------------------------
tessera_ok=0
if [ "${TESSERA_SKIP:-0}" != 1 ]; then
  if [ ! -f "$build/CMakeCache.txt" ]; then
    read -ra gargs <<<"$GPU_CMAKE_ARGS"
    say "tessera: configure $build ($GPU_CMAKE_ARGS)"
    cmake -S "$repo" -B "$build" "${gargs[@]}" -DTESSERA_SCALAPACK_LIBRARY="$scalapack" \
      >"$out/tessera-configure.log" 2>&1 || { tail -40 "$out/tessera-configure.log"; die "tessera configure"; }
  elif ! grep -qx "TESSERA_SCALAPACK_LIBRARY:FILEPATH=$scalapack" "$build/CMakeCache.txt"; then
    say "tessera: $build exists; pointing it at the carried ScaLAPACK"
    cmake -B "$build" -DTESSERA_SCALAPACK_LIBRARY="$scalapack" >"$out/tessera-configure.log" 2>&1 ||
      { tail -40 "$out/tessera-configure.log"; die "tessera configure"; }
  else
    say "tessera: $build exists (with the carried ScaLAPACK)"
  fi
  grep -i "scalapack" "$out/tessera-configure.log" 2>/dev/null | sed 's/^/    /'
  say "tessera: build pgemm_bench_tessera pgemm_bench_scalapack tessera_scalapack (-j $jobs; nothing if up to date)"
  cmake --build "$build" -j "$jobs" --target pgemm_bench_tessera pgemm_bench_scalapack tessera_scalapack \
    >"$out/tessera-build.log" 2>&1 || { grep -E -B2 -A8 "error|FAILED" "$out/tessera-build.log" | head -60; die "tessera build"; }
  tessera_ok=1
fi

# ---- 3. the programs ----------------------------------------------------------------------------
bin=$work/bin
mkdir -p "$bin"
if command -v mpicc >/dev/null; then
  mpi_cc=(mpicc)
else  # no wrapper: the compiler with Open MPI's pkg-config flags
  read -ra mpi_cc <<<"cc $(pkg-config --cflags --libs ompi-c)" || die "no mpicc, no pkg-config ompi-c"
fi
cc_mpi() {  # OUTPUT SOURCE LIBRARIES...: linked in this order, each kept (--no-as-needed)
  local o=$1 s=$2
  shift 2
  "${mpi_cc[@]}" -O2 -o "$o" "$s" -Wl,--no-as-needed "$@" "$scalapack" -lm "${linkpaths[@]}"
}
for v in "${cosmas[@]}"; do
  lib=$work/$v/src/cosma/libcosma_pxgemm.so
  u=${v//-/_}
  cc_mpi "$bin/pgemm_bench_$u" benchmarks/pgemm_bench.c "$lib" "-Wl,-rpath,$(dirname "$lib")" || die "link pgemm_bench_$u"
  cc_mpi "$bin/pgemm_check_$u" tests/scalapack/pgemm_check.c "$lib" "-Wl,-rpath,$(dirname "$lib")" || die "link pgemm_check_$u"
done
cc_mpi "$bin/pgemm_check_scalapack" tests/scalapack/pgemm_check.c || die "link pgemm_check_scalapack"
cc_mpi "$bin/pgemm_bench_scalapack" benchmarks/pgemm_bench.c || die "link pgemm_bench_scalapack"
checks=(scalapack)
benches=()
if [ "$tessera_ok" = 1 ]; then
  tlib=$(find "$build" -name 'libtessera_scalapack.so' -print -quit)
  [ -n "$tlib" ] || die "no libtessera_scalapack.so in $build"
  cc_mpi "$bin/pgemm_check_tessera" tests/scalapack/pgemm_check.c "$tlib" "-Wl,-rpath,$(dirname "$tlib")" ||
    die "link pgemm_check_tessera"
  ln -sf "$build/pgemm_bench_tessera" "$bin/pgemm_bench_tessera"
  checks+=(tessera)
  benches+=(tessera)
fi
for v in "${cosmas[@]}"; do checks+=("${v//-/_}"); benches+=("${v//-/_}"); done
# BENCH_VARIANTS: the timed programs instead (of tessera, cosma, cosma_nccl, scalapack)
if [ -n "${BENCH_VARIANTS:-}" ]; then read -ra benches <<<"$BENCH_VARIANTS"; fi
for e in "$bin"/pgemm_*; do
  echo "== ldd $e"
  ldd "$e" | grep -E "not found|scalapack|cosma|costa|Tiled|tessera|gfortran|quadmath|blas|lapack|libmpi|cublas|cudart|nccl"
done >"$out/ldd.txt" 2>&1
say "linked: $(cd "$bin" && echo pgemm_*); ldd in OUT/ldd.txt"
grep -B30 "not found" "$out/ldd.txt" | grep -E "^== |not found" && die "libraries not found (above)"
if [ "${COSMA_DRY:-0}" = 1 ]; then say "COSMA_DRY=1: built only"; exit 0; fi

# ---- 4. correctness against ScaLAPACK -----------------------------------------------------------
# s|d TRANSA TRANSB M N K ALPHA BETA MB NB IA JA IB JB IC JC RSRC CSRC ALPHA_IM BETA_IM
cases=$work/check-cases.txt
cat >"$cases" <<'EOF'
d N N 1000 900 1100 1.0 0.5 64 64 1 1 1 1 1 1 0 0 0 0
d T N 777 513 1025 -0.5 1.0 100 100 1 1 1 1 1 1 0 0 0 0
d N T 640 512 768 1.0 0.0 128 128 1 1 1 1 1 1 0 0 0 0
d N N 300 400 500 2.0 -1.0 32 32 3 2 5 4 2 3 0 0 0 0
s N N 1000 900 1100 1.0 0.5 64 64 1 1 1 1 1 1 0 0 0 0
s T T 640 768 896 1.5 0.25 128 128 1 1 1 1 1 1 0 0 0 0
s N N 1024 1024 1024 1.0 0.0 512 512 1 1 1 1 1 1 0 0 0 0
EOF
check_env() {  # VARIANT -> environment words
  case $1 in
    tessera) echo "TESSERA_SCALAPACK=tessera TESSERA_SCALAPACK_VERBOSE=1" ;;
    *) echo "" ;;
  esac
}
: >"$out/check.txt"
for g in $CHECK_GRIDS; do
  p=${g%x*} q=${g#*x} np=$((${g%x*} * ${g#*x}))
  for v in "${checks[@]}"; do
    if [[ $v == *nccl* ]] && [ "$np" -gt "$ngpu" ]; then say "check $g $v: skipped ($np ranks, $ngpu GPUs: NCCL wants a GPU per rank)"; continue; fi
    [ "$(left)" -gt 60 ] || { say "check $g $v: skipped (budget)"; continue; }
    rm -f "$work/check-$g-$v.out"
    read -ra ev <<<"$(check_env "$v")"
    env "${ev[@]}" OPENBLAS_NUM_THREADS=$((OPENBLAS_NUM_THREADS / np > 0 ? OPENBLAS_NUM_THREADS / np : 1)) \
      timeout -k 10 "${CHECK_TIMEOUT:-60}" mpirun --bind-to none -np "$np" "$bin/pgemm_check_$v" "$p" "$q" "$cases" "$work/check-$g-$v.out" \
      >"$out/check-$g-$v.log" 2>&1
    rc=$?
    say "check $g $v: rc $rc ($(wc -l <"$out/check-$g-$v.log") log lines)"
    [ "$rc" = 0 ] || gist "$out/check-$g-$v.log"
  done
  python3 - "$cases" "$work/check-$g-scalapack.out" "$g" "${checks[@]:1}" <<'EOF' | tee -a "$out/check.txt"
import math, os, sys
# Pure Python (no numpy needed): each C's largest |C - C_ref| over its largest |C_ref|.
cases_path, ref_path, grid, variants = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
precs = [l.split()[0] for l in open(cases_path) if l.strip()]
def read(path):
    tok = open(path).read().split()
    out, i = [], 0
    while i + 3 < len(tok) and tok[i] == "case":
        r, c = int(tok[i + 2]), int(tok[i + 3])
        out.append(([float(x) for x in tok[i + 4:i + 4 + r * c]], r * c))
        i += 4 + r * c
    return out
if not os.path.exists(ref_path):
    print(f"check {grid}: no ScaLAPACK output"); sys.exit(0)
ref = read(ref_path)
for v in variants:
    path = ref_path.replace("-scalapack.out", f"-{v}.out")
    if not os.path.exists(path):
        print(f"check {grid} {v}: no output (skipped, see above)"); continue
    got = read(path)
    worst, bad = {}, []
    for i, ((r, rn), (g, gn)) in enumerate(zip(ref, got)):
        tol = 1e-4 if precs[i] in "sc" else 1e-10
        if rn != gn or len(g) != gn:
            bad.append(f"{i}:size"); continue
        diff = big = 0.0
        for a, b in zip(r, g):
            if math.isnan(a) or math.isnan(b):
                if not (math.isnan(a) and math.isnan(b)): diff = math.inf
                continue
            diff, big = max(diff, abs(a - b)), max(big, abs(a))
        err = diff / big if big > 0 else diff
        worst[precs[i]] = max(worst.get(precs[i], 0.0), err)
        if not err <= tol:
            bad.append(f"{i}({precs[i]}):{err:.2e}")
    n = min(len(ref), len(got))
    status = "OK" if not bad and n == len(precs) else "MISMATCH"
    print(f"check {grid} {v}: {status}: {n}/{len(precs)} cases; worst max|C-C_ref|/max|C_ref|: "
          + ", ".join(f"{k} {e:.2e}" for k, e in sorted(worst.items()))
          + (f"; bad: {' '.join(bad)}" if bad else ""))
EOF
done

# ---- 5. timing ----------------------------------------------------------------------------------
p=${GRID%x*} q=${GRID#*x} np=$((${GRID%x*} * ${GRID#*x}))
runs=$out/runs.tsv
printf 'prec\tn\tvariant\tround\trc\tmedian_s\tmin_s\tmax_s\tgflops\twall_s\n' >"$runs"
declare -A wall_of   # "prec n variant" -> wall seconds of its last run
estimate() {  # PREC N VARIANT -> seconds expected for a whole run (0: no idea)
  local pr=$1 n=$2 v=$3 key best=0 n0
  if [ -n "${wall_of[$pr $n $v]:-}" ]; then echo "${wall_of[$pr $n $v]}"; return; fi
  for key in "${!wall_of[@]}"; do  # a smaller size of the same kind: its wall x (n/n0)^2 x 1.5
    read -r kp n0 kv <<<"$key"
    if [ "$kp" != "$pr" ] || [ "$kv" != "$v" ] || [ "$n0" -ge "$n" ]; then continue; fi
    best=$(awk -v w="${wall_of[$key]}" -v a="$n" -v b="$n0" -v o="$best" 'BEGIN {e = w * (a / b) ^ 2 * 1.5; print (e > o ? e : o)}')
  done
  if [ "$best" = 0 ]; then  # the other variant at this size
    for key in "${!wall_of[@]}"; do
      read -r kp n0 kv <<<"$key"
      [ "$kp" = "$pr" ] && [ "$n0" = "$n" ] && best=$(awk -v w="${wall_of[$key]}" 'BEGIN {print w}')
    done
  fi
  echo "$best"
}
bench_env() {
  case $1 in
    tessera) echo "TESSERA_SCALAPACK=tessera TESSERA_SCALAPACK_VERBOSE=1" ;;
    *) echo "" ;;
  esac
}
bench_one() {  # PREC N VARIANT ROUND
  local pr=$1 n=$2 v=$3 r=$4 est tmo logf rc s e wall line
  est=$(estimate "$pr" "$n" "$v")
  tmo=$(($(left) - RESERVE))
  if awk -v e="$est" -v t="$tmo" 'BEGIN {exit !(e > t || t < 15)}'; then
    say "$pr$n $v round $r: skipped (estimated ${est}s, ${tmo}s left)"
    printf '%s\t%s\t%s\t%s\tskipped\t\t\t\t\t\n' "$pr" "$n" "$v" "$r" >>"$runs"
    return
  fi
  logf=$out/bench-$pr$n-$v-r$r.log
  read -ra ev <<<"$(bench_env "$v")"
  s=$(date +%s.%N)
  env "${ev[@]}" timeout -k 10 "$tmo" mpirun --bind-to none -np "$np" "$bin/pgemm_bench_$v" "$p" "$q" "$pr" \
    "$n" "$n" "$n" "$NB" "$WARMUP" "$REPEATS" >"$logf" 2>&1
  rc=$?
  e=$(date +%s.%N)
  wall=$(awk -v a="$s" -v b="$e" 'BEGIN {printf "%.2f", b - a}')
  wall_of["$pr $n $v"]=$wall
  line=$(grep '^pgemm_bench ' "$logf" | tail -1)
  if [ "$rc" = 0 ] && [ -n "$line" ]; then
    read -r _ med mn mx gf <<<"$line"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$pr" "$n" "$v" "$r" "$rc" "$med" "$mn" "$mx" "$gf" "$wall" >>"$runs"
    say "$pr$n $v round $r: median ${med}s (min $mn max $mx) $gf GFLOP/s; process ${wall}s"
  else
    printf '%s\t%s\t%s\t%s\t%s\t\t\t\t\t%s\n' "$pr" "$n" "$v" "$r" "$rc" "$wall" >>"$runs"
    say "$pr$n $v round $r: FAILED rc $rc (${wall}s):"
    gist "$logf"
  fi
}
sizes=()
for n in $SD; do sizes+=("d $n"); done
for n in $SS; do sizes+=("s $n"); done
for sz in "${sizes[@]}"; do
  read -r pr n <<<"$sz"
  for r in $(seq 1 "$AB_ROUNDS"); do
    order=("${benches[@]}")
    if [ $((r % 2)) = 0 ]; then
      order=()
      for ((i = ${#benches[@]} - 1; i >= 0; i--)); do order+=("${benches[i]}"); done
    fi
    for v in "${order[@]}"; do bench_one "$pr" "$n" "$v" "$r"; done
  done
done

# ---- summary ------------------------------------------------------------------------------------
{ [ -s "$out/check.txt" ] && { echo "correctness against ScaLAPACK (pgemm_check):"; cat "$out/check.txt"; echo; }
python3 - "$runs" "$GRID" "$NB" "$REPEATS" <<'EOF'; } | tee "$out/summary.txt"
import csv, statistics, sys
runs, grid, nb, repeats = sys.argv[1:5]
rows = list(csv.DictReader(open(runs), delimiter="\t"))
variants = list(dict.fromkeys(r["variant"] for r in rows))
sizes = list(dict.fromkeys((r["prec"], int(r["n"])) for r in rows))
def times(p, n, v, col="median_s"):
    return [float(r[col]) for r in rows if r["prec"] == p and int(r["n"]) == n and r["variant"] == v
            and r["rc"] == "0" and r[col]]
print(f"pdgemm_/psgemm_ N^3, grid {grid}, NB {nb}, pgemm_bench median of {repeats} calls per process, "
      "median over rounds (seconds per call; TFLOP/s); [k/r]: runs ok / run")
cosma = "cosma" if "cosma" in variants else None
head = f"{'prec':<5}{'N':>7}" + "".join(f"{v:>24}" for v in variants)
if "tessera" in variants and cosma:
    head += f"{'tessera/cosma':>15}"
if "tessera" in variants and "cosma_nccl" in variants:
    head += f"{'tessera/nccl':>14}"
head += "   process wall s (median): " + " ".join(variants)
print(head)
for p, n in sizes:
    line, med = f"{p:<5}{n:>7}", {}
    for v in variants:
        t = times(p, n, v)
        tried = sum(1 for r in rows if r["prec"] == p and int(r["n"]) == n and r["variant"] == v)
        if t:
            med[v] = statistics.median(t)
            line += f"{med[v]:>10.4f} {2.0 * n**3 / med[v] * 1e-12:>6.1f}TF [{len(t)}/{tried}]"
        else:
            line += f"{'-':>18} [0/{tried}]"
    if "tessera" in variants and cosma:
        line += f"{med['tessera'] / med[cosma]:>15.3f}" if "tessera" in med and cosma in med else f"{'-':>15}"
    if "tessera" in variants and "cosma_nccl" in variants:
        line += f"{med['tessera'] / med['cosma_nccl']:>14.3f}" if "tessera" in med and "cosma_nccl" in med else f"{'-':>14}"
    walls = [times(p, n, v, "wall_s") for v in variants]
    line += "   " + " ".join(f"{statistics.median(w):.1f}" if w else "-" for w in walls)
    print(line)
EOF
say "done; logs and summary in $out"
