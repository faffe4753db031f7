#!/usr/bin/env bash
# Prepares, on the development machine, what scripts/cosma-gpu.sh needs on the GPU machine (which
# has no network, no Fortran and no ScaLAPACK), into two git-ignored folders to carry there:
#
#   .ab/cosma/COSMA          COSMA 2.8.4 (2df0432) sources, trimmed (no docs, tests, benchmarks,
#                            miniapps, .git), with the two projects its CMake fetches in place:
#     libs/COSTA             COSTA 2484769 (v2.3.0, the FetchContent GIT_TAG of COSMA 2.8.4)
#     libs/Tiled-MM          Tiled-MM 0eb7517 (v2.3.2, likewise)
#   .deps/scalapack/lib      Debian 12's ScaLAPACK with BLACS (libscalapack-openmpi.so.2.2,
#                            from libscalapack-openmpi2.2; bash scripts/setup.sh installs it)
#   .deps/scalapack/fallback what it needs that a bare Ubuntu 24.04 may lack (libgfortran.so.5,
#                            libquadmath.so.0); cosma-gpu.sh uses them only where ldconfig lacks them
#
#   scripts/cosma-carry.sh [MIRROR_ROOT]    (default /work/.mirror; the snapshots come from the
#                                            session's fetch of github:eth-cscs/{COSMA,COSTA,Tiled-MM})
#
# The device call then carries [".ab/cosma", ".deps/scalapack"] (plus .deps/tomlpp, .deps/lz4).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
mirror=${1:-/work/.mirror}
cosma_commit=2df0432ce9b2863c556bb634f7b2c7d1f5b6fc1e     # v2.8.4
costa_commit=2484769535772f807d402901ffca63bb6678dd42     # v2.3.0
tiledmm_commit=0eb75179e670a04c649b50ae5e91bb71b43e4d06   # v2.3.2
libdir=/usr/lib/x86_64-linux-gnu

gitdir() {  # the bare git dir of a snapshot: MIRROR_ROOT/owner+name/repo (or a clone's .git)
  local d
  for d in "$mirror/eth-cscs+$1/repo" "$mirror/eth-cscs+$1" "$mirror/$1/.git" "$mirror/$1"; do
    if git --git-dir="$d" rev-parse --git-dir >/dev/null 2>&1; then echo "$d"; return 0; fi
  done
  echo "cosma-carry: no snapshot of eth-cscs/$1 under $mirror (fetch github:eth-cscs/$1 first)" >&2
  return 1
}

export_tree() {  # GITDIR COMMIT DEST PATH...: those paths of COMMIT, without .git, into DEST
  local g=$1 c=$2 dest=$3
  shift 3
  git --git-dir="$g" cat-file -e "$c^{commit}" 2>/dev/null ||
    { echo "cosma-carry: commit $c is not in $g" >&2; return 1; }
  mkdir -p "$dest"
  git --git-dir="$g" archive --format=tar "$c" -- "$@" | tar -x -C "$dest"
}

# Both folders must stay out of git.
for p in .ab/cosma .deps/scalapack; do
  mkdir -p "$repo/$p"
  git -C "$repo" check-ignore -q "$p/x" || { echo "cosma-carry: $p is not git-ignored" >&2; exit 1; }
done

dest=$repo/.ab/cosma/COSMA
rm -rf "$dest"
export_tree "$(gitdir COSMA)" "$cosma_commit" "$dest" CMakeLists.txt LICENSE cmake src
export_tree "$(gitdir COSTA)" "$costa_commit" "$dest/libs/COSTA" CMakeLists.txt LICENSE cmake src
export_tree "$(gitdir Tiled-MM)" "$tiledmm_commit" "$dest/libs/Tiled-MM" CMakeLists.txt LICENSE cmake src
cat >"$repo/.ab/cosma/VERSIONS" <<EOF
COSMA    $cosma_commit (v2.8.4)  github.com/eth-cscs/COSMA  -> COSMA/
COSTA    $costa_commit (v2.3.0)  github.com/eth-cscs/COSTA  -> COSMA/libs/COSTA (FETCHCONTENT_SOURCE_DIR_COSTA)
Tiled-MM $tiledmm_commit (v2.3.2)  github.com/eth-cscs/Tiled-MM -> COSMA/libs/Tiled-MM (FETCHCONTENT_SOURCE_DIR_TILED-MM)
Exported from $mirror on $(date -u +%Y-%m-%dT%H:%MZ) by scripts/cosma-carry.sh (CMakeLists.txt, LICENSE, cmake/, src/ only).
EOF

# ScaLAPACK: plain files named by their sonames (no symbolic links to travel).
sl=$repo/.deps/scalapack
rm -rf "${sl:?}/lib" "${sl:?}/fallback"
mkdir -p "$sl/lib" "$sl/fallback"
real=$(readlink -f "$libdir/libscalapack-openmpi.so.2.2") ||
  { echo "cosma-carry: no $libdir/libscalapack-openmpi.so.2.2 (run bash scripts/setup.sh)" >&2; exit 1; }
[ -f "$real" ] || { echo "cosma-carry: no $libdir/libscalapack-openmpi.so.2.2 (run bash scripts/setup.sh)" >&2; exit 1; }
cp "$real" "$sl/lib/libscalapack-openmpi.so.2.2"
for so in libgfortran.so.5 libquadmath.so.0; do
  cp "$(readlink -f "$libdir/$so")" "$sl/fallback/$so"
done
{
  echo "From Debian 12 ($(dpkg-query -W -f='${Package} ${Version}' libscalapack-openmpi2.2 2>/dev/null || echo '?')):"
  echo "lib/libscalapack-openmpi.so.2.2 <- $real"
  echo "NEEDED: $(readelf -d "$real" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
  echo "fallback/: libgfortran.so.5, libquadmath.so.0 (used only where the machine lacks them)"
  echo "liblapack.so.3 / libblas.so.3: the machine's OpenBLAS (cosma-gpu.sh links them to libopenblas.so.0 if absent)"
} >"$sl/README"

du -sh "$repo/.ab/cosma" "$sl"
du -sc "$repo/.ab/cosma" "$sl" "$repo/.deps/tomlpp" "$repo/.deps/lz4" 2>/dev/null | tail -1 |
  awk '{printf "carried in all (with .deps/tomlpp, .deps/lz4 if there): %.1f MiB of 64\n", $1 / 1024}'
