#!/usr/bin/env bash
# tessera's build needs on the GPU machine that its packages lack, taken from this machine's own
# packages (scripts/setup.sh installs them) into .deps/ (.gitignore): toml++'s headers, and lz4
# and libdeflate as static libraries (headers + .a), so that the GPU build reads and writes
# compressed data as a user's build does (without libdeflate, gzip inputs inflate through zlib,
# about 10% slower end to end on 8192² gzip: a gate run without it measures another program).
#
#   scripts/gpu-deps.sh           fills .deps/ (here, before the device call); carry ".deps"
#
# scripts/gpu.sh configures with them by default where .deps/ holds them (GPU_CMAKE_ARGS unset):
# the tree and every base commit of an e2e gate alike.
set -euo pipefail
cd "$(dirname "$0")/.."
arch=$(gcc -print-multiarch 2>/dev/null || true)
lib=/usr/lib/${arch:-x86_64-linux-gnu}
need() { [ -e "$1" ] || { echo "gpu-deps: $1 missing: run scripts/setup.sh first" >&2; exit 1; }; }
need /usr/include/toml++/toml.h
need /usr/include/lz4.h
need /usr/include/lz4hc.h
need "$lib/liblz4.a"
need /usr/include/libdeflate.h
need "$lib/libdeflate.a"
rm -rf .deps/tomlpp .deps/lz4 .deps/libdeflate
mkdir -p .deps/tomlpp .deps/lz4 .deps/libdeflate
cp -r /usr/include/toml++ .deps/tomlpp/
cp /usr/include/lz4.h /usr/include/lz4hc.h "$lib/liblz4.a" .deps/lz4/
cp /usr/include/libdeflate.h "$lib/libdeflate.a" .deps/libdeflate/
du -sh .deps/tomlpp .deps/lz4 .deps/libdeflate
echo "carry \".deps\" with the device call; scripts/gpu.sh configures with it (GPU_CMAKE_ARGS unset)"
