# Cross-compiling tessera for 64-bit Arm Linux (e.g. a GH200 node's Grace CPU) from x86-64 with
# Debian/Ubuntu's cross compiler (apt install g++-aarch64-linux-gnu):
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake -DTESSERA_WITH_CUDA=OFF
# The libraries tessera links (Open MPI, HDF5, a BLAS, fmt, ...) must be installed for arm64 too:
# Debian multiarch (dpkg --add-architecture arm64; apt install libopenmpi-dev:arm64 ...) or a
# sysroot given with -DCMAKE_SYSROOT. On the Arm machine itself no toolchain file is needed.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Debian multiarch: arm64 libraries in /usr/lib/aarch64-linux-gnu (found through
# CMAKE_LIBRARY_ARCHITECTURE), the compiler's own in /usr/aarch64-linux-gnu. A sysroot instead:
# -DCMAKE_SYSROOT=/path (and CMAKE_FIND_ROOT_PATH_MODE_* ONLY below apply to it).
list(APPEND CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
