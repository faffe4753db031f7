# ctest blas.generic (tests/scripts/install.cmake): tessera configured with -DBLA_VENDOR=Generic
# in its own build folder (CPU only), its kernels and tests/blas built and run: the build takes
# any BLAS with a CBLAS interface, not only OpenBLAS. Where Debian's reference BLAS is installed
# (libblas-dev: /usr/lib/<arch>/blas/), it is the one found, so that the check really runs
# another BLAS than the OpenBLAS behind Debian's default libblas.so alternative.
# cmake -P with SOURCE_DIR, BUILD_DIR, GENERATOR, C, CXX, LIBRARY_ARCHITECTURE.
set(args -S "${SOURCE_DIR}" -B "${BUILD_DIR}" -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release
         -DCMAKE_C_COMPILER=${C} -DCMAKE_CXX_COMPILER=${CXX}
         -DBLA_VENDOR=Generic -DTESSERA_WITH_CUDA=OFF -DTESSERA_BUILD_TESTS=ON -DTESSERA_BUILD_BENCHMARKS=OFF)
set(reference "/usr/lib/${LIBRARY_ARCHITECTURE}/blas")
if(LIBRARY_ARCHITECTURE AND EXISTS "${reference}/libblas.so")
  list(APPEND args "-DCMAKE_LIBRARY_PATH=${reference}")
endif()

function(step what)
  message(STATUS "$ ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc})")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step(configure "${CMAKE_COMMAND}" ${args})
if(NOT step_output MATCHES "tessera: BLAS Generic")
  message(FATAL_ERROR "configure with BLA_VENDOR=Generic did not report the Generic BLAS")
endif()
step(build "${CMAKE_COMMAND}" --build "${BUILD_DIR}" --target tessera_blas_check -j 2)
step(run "${BUILD_DIR}/tests/tessera_blas_check")
if(NOT step_output MATCHES "BLAS: Generic")
  message(FATAL_ERROR "tessera_blas_check does not run the Generic BLAS")
endif()
execute_process(COMMAND ldd "${BUILD_DIR}/tests/tessera_blas_check" OUTPUT_VARIABLE ldd ERROR_QUIET)
string(REGEX MATCHALL "[^\n]*blas[^\n]*" blas_libs "${ldd}")
message(STATUS "BLAS libraries at run time: ${blas_libs}")
