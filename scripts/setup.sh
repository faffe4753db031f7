#!/usr/bin/env bash
# tessera: install what the build and the tests need, with apt, and only what is missing.
#
#   scripts/setup.sh            # build + test dependencies
#   scripts/setup.sh --slurm    # also slurm-wlm + munge (for the local-Slurm test)
#   scripts/setup.sh --cluster  # --slurm, and what the simulated cluster needs (docs/cluster.md):
#                               # iproute2 (ip, tc), util-linux (unshare, nsenter, mount)
#   scripts/setup.sh --parallel-hdf5   # libhdf5-openmpi-dev instead of the serial HDF5
#   scripts/setup.sh --fuzz     # also clang, its libFuzzer/sanitizer runtimes and llvm-symbolizer
#                               # (scripts/sanitize.sh)
#
# Idempotent: every dependency is first looked for on the machine (headers, tools, a python
# that imports h5py); apt is touched only for what is missing. Catch2 v3 is not in Debian 12's
# main suite: the bookworm-backports suite is added, built from the mirror apt already uses.
set -euo pipefail

want_slurm=0
want_cluster=0
want_phdf5=0
want_fuzz=0
for arg in "$@"; do
  case "$arg" in
    --slurm) want_slurm=1 ;;
    --cluster) want_slurm=1; want_cluster=1 ;;
    --parallel-hdf5) want_phdf5=1 ;;
    --fuzz) want_fuzz=1 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

log() { echo "[setup] $*"; }

have_header() { # any of the given paths exists
  local p
  for p in "$@"; do [ -e "$p" ] && return 0; done
  return 1
}

python_with_h5py() {
  local py
  for py in /usr/bin/python3 "$(command -v python3 2>/dev/null || true)"; do
    [ -n "$py" ] && [ -x "$py" ] || continue
    "$py" -c 'import h5py, numpy' >/dev/null 2>&1 && { echo "$py"; return 0; }
  done
  return 1
}

catch2_v3_present() {
  local f
  for f in /usr/lib/cmake/Catch2/Catch2ConfigVersion.cmake \
           /usr/lib/*/cmake/Catch2/Catch2ConfigVersion.cmake \
           /usr/local/lib/cmake/Catch2/Catch2ConfigVersion.cmake \
           /usr/share/cmake/Catch2/Catch2ConfigVersion.cmake; do
    [ -f "$f" ] && grep -q 'PACKAGE_VERSION "3\.' "$f" && return 0
  done
  return 1
}

# clang's major version, its libFuzzer archive and an llvm-symbolizer (for --fuzz).
clang_major() { clang++ -dumpversion 2>/dev/null | cut -d. -f1; }
libfuzzer_present() {
  local dir
  dir=$(clang++ -print-resource-dir 2>/dev/null) || return 1
  [ -f "$dir/lib/linux/libclang_rt.fuzzer-$(uname -m).a" ] || [ -f "$dir/lib/$(uname -m)-unknown-linux-gnu/libclang_rt.fuzzer.a" ]
}
symbolizer_present() {
  command -v llvm-symbolizer >/dev/null || command -v "llvm-symbolizer-$(clang_major)" >/dev/null
}
fuzz_tools_present() {
  command -v clang >/dev/null && command -v clang++ >/dev/null && libfuzzer_present && symbolizer_present
}

missing=()
need_backports=0
need_fuzz=0
command -v cmake >/dev/null     || missing+=(cmake)
command -v ninja >/dev/null     || missing+=(ninja-build)
command -v g++ >/dev/null       || missing+=(g++)
command -v mpicxx >/dev/null && command -v mpirun >/dev/null || missing+=(libopenmpi-dev openmpi-bin)
if [ "$want_phdf5" = 1 ]; then
  have_header /usr/include/hdf5/openmpi/hdf5.h || missing+=(libhdf5-openmpi-dev)
else
  have_header /usr/include/hdf5/serial/hdf5.h /usr/include/hdf5.h || missing+=(libhdf5-dev)
fi
have_header /usr/include/CLI/CLI.hpp           || missing+=(libcli11-dev)
have_header /usr/include/nlohmann/json.hpp     || missing+=(nlohmann-json3-dev)
have_header /usr/include/fmt/core.h            || missing+=(libfmt-dev)
have_header /usr/include/toml++/toml.h         || missing+=(libtomlplusplus-dev)  # config files (TOML)
command -v help2man >/dev/null                 || missing+=(help2man)  # the man page, written at build time
have_header /usr/include/libdeflate.h          || missing+=(libdeflate-dev)  # parallel inflate of gzip inputs
have_header /usr/include/liblzf/lzf.h /usr/include/lzf.h || missing+=(liblzf-dev)  # h5py's LZF inputs
have_header /usr/include/lz4.h                 || missing+=(liblz4-dev)  # LZ4 read and written by tessera's threads
have_header /usr/include/zstd.h                || missing+=(libzstd-dev)  # zstd likewise
# OpenBLAS itself, not only some cblas.h (reference BLAS ships one too)
have_header /usr/lib/*/libopenblas.so /usr/lib/*/openblas*/libopenblas.so /usr/lib/libopenblas.so \
  || missing+=(libopenblas-dev)
# The reference BLAS (with its CBLAS): ctest blas.generic builds against it with -DBLA_VENDOR=Generic
have_header /usr/lib/*/blas/libblas.so || missing+=(libblas-dev)
# ScaLAPACK (with its BLACS) for Open MPI: libtessera_scalapack's BLACS calls and hand-back, and
# ctest scalapack.* (the same pdgemm_ program built against it and against tessera's drop-in)
have_header /usr/lib/*/libscalapack-openmpi.so || missing+=(libscalapack-openmpi-dev)
# pkg-config: ctest install.consumer.pkgconfig builds a program with the installed tessera.pc
command -v pkg-config >/dev/null || missing+=(pkgconf)
python_with_h5py >/dev/null || missing+=(python3-h5py python3-numpy)
# tessera.matmul, the in-process Python module over libtessera (python/native, pybind11).
have_header /usr/include/pybind11/pybind11.h || missing+=(pybind11-dev)
have_header /usr/include/python3*/Python.h || missing+=(python3-dev)
# tessera.matmul_blocks: distributed blocks over an mpi4py communicator (ctest python.blocks.*).
/usr/bin/python3 -c 'import mpi4py' >/dev/null 2>&1 || missing+=(python3-mpi4py)
# The schema tests validate every JSON tessera writes against docs/schema/ (ctest -R schema).
/usr/bin/python3 -c 'import jsonschema' >/dev/null 2>&1 || missing+=(python3-jsonschema)
# ctest cz.zstd.*: C's zstd chunks decoded by an implementation other than tessera's (h5py cannot
# read them here: Debian's hdf5plugin has no Zstd).
/usr/bin/python3 -c 'import zstandard' >/dev/null 2>&1 || missing+=(python3-zstandard)
# The strong-scaling job's plot (scripts/scaling_report.py: scaling.png beside scaling.md).
/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1 || missing+=(python3-matplotlib)
# HDF5 filter plugins that h5py and hdf5plugin pipelines write with (LZF, LZ4, bzip2, Blosc,
# ZFP), found by HDF5 in its default plugin folder; python3-hdf5plugin writes them in the tests.
if [ "$want_phdf5" != 1 ]; then
  plugins=/usr/lib/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)/hdf5/serial/plugins
  have_header "$plugins"/liblzf_filter.so || missing+=(hdf5-plugin-lzf)
  have_header "$plugins"/libh5lz4.so || missing+=(hdf5-filter-plugin)
  have_header "$plugins"/libH5Zblosc.so "$plugins"/libblosc_filter.so || missing+=(hdf5-filter-plugin-blosc-serial)
  have_header "$plugins"/libh5zzfp.so || missing+=(hdf5-filter-plugin-zfp-serial)
  /usr/bin/python3 -c 'import hdf5plugin' >/dev/null 2>&1 || missing+=(python3-hdf5plugin)
fi
# The Python package's install test builds it with pip (python/).
/usr/bin/python3 -c 'import pip, setuptools, wheel' >/dev/null 2>&1 || missing+=(python3-pip python3-setuptools python3-wheel)
if ! catch2_v3_present; then need_backports=1; fi
if [ "$want_slurm" = 1 ]; then
  # the daemons live in /usr/sbin, which a user's PATH may lack
  have_tool() { command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ]; }
  have_tool slurmctld && have_tool slurmd && have_tool sbatch || missing+=(slurm-wlm)
  have_tool munged && have_tool mungekey || missing+=(munge)
fi
if [ "$want_cluster" = 1 ]; then
  have_tool ip && have_tool tc || missing+=(iproute2)
  have_tool unshare && have_tool nsenter && have_tool mount || missing+=(util-linux mount)
fi

if [ "$want_fuzz" = 1 ] && ! fuzz_tools_present; then need_fuzz=1; fi

if [ ${#missing[@]} -eq 0 ] && [ "$need_backports" = 0 ] && [ "$need_fuzz" = 0 ]; then
  log "all dependencies present; apt not touched"
  exit 0
fi

if ! command -v apt-get >/dev/null; then
  log "missing: ${missing[*]} $([ $need_backports = 1 ] && echo catch2-v3) $([ $need_fuzz = 1 ] && echo clang-libfuzzer)" >&2
  log "no apt-get on this machine: install these with your package manager" >&2
  exit 1
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

add_backports() {
  # Derive the Debian mirror from apt's own configuration; never write a host into the repo.
  local codename uri
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || { log "cannot tell the Debian codename" >&2; return 1; }
  if grep -rqsE "^[^#]*${codename}-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    return 0
  fi
  uri=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' \
        | grep -v -- '-security' | grep -E '/debian/?$' | head -n1 || true)
  if [ -z "$uri" ]; then
    uri=$(grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
          | awk '{ for (i = 2; i <= NF; i++) if ($i !~ /^\[/) { print $i; exit } }' \
          | grep -E '/debian/?$' | head -n1 || true)
  fi
  [ -n "$uri" ] || { log "no Debian mirror found in apt's sources" >&2; return 1; }
  log "adding ${codename}-backports from $uri"
  printf 'Types: deb\nURIs: %s\nSuites: %s-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$uri" "$codename" | $SUDO tee /etc/apt/sources.list.d/tessera-backports.sources >/dev/null
}

if [ "$need_backports" = 1 ]; then add_backports; fi
log "installing: ${missing[*]} $([ $need_backports = 1 ] && echo 'catch2 (backports)') $([ $need_fuzz = 1 ] && echo 'clang + libFuzzer')"
$SUDO apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ "$need_backports" = 1 ]; then
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  $SUDO apt-get install -y -qq --no-install-recommends "catch2/${codename}-backports" >/dev/null
fi
if [ "$need_fuzz" = 1 ]; then
  command -v clang++ >/dev/null || $SUDO apt-get install -y -qq --no-install-recommends clang >/dev/null
  ver=$(clang_major)
  fuzz_pkgs=()
  if ! libfuzzer_present; then
    # Debian 12 and later ship libFuzzer and the sanitizer runtimes in libclang-rt-N-dev; older
    # releases in libclang-common-N-dev.
    if apt-cache show "libclang-rt-$ver-dev" >/dev/null 2>&1; then fuzz_pkgs+=("libclang-rt-$ver-dev")
    else fuzz_pkgs+=("libclang-common-$ver-dev"); fi
  fi
  symbolizer_present || fuzz_pkgs+=("llvm-$ver")
  if [ ${#fuzz_pkgs[@]} -gt 0 ]; then
    $SUDO apt-get install -y -qq --no-install-recommends "${fuzz_pkgs[@]}" >/dev/null
  fi
  fuzz_tools_present || { log "clang, libFuzzer or llvm-symbolizer still missing after install" >&2; exit 1; }
fi
catch2_v3_present || { log "Catch2 v3 still missing after install" >&2; exit 1; }
python_with_h5py >/dev/null || { log "no python3 with h5py + numpy after install" >&2; exit 1; }
log "done"
