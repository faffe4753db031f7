# libtessera_scalapack (issue 44): the block-cyclic index math, and the same pdgemm_ program
# built against the system's ScaLAPACK and with tessera's drop-in first, over grids 1x1 ... 2x3
# (and a process outside the grid), checked against numpy (tests/scripts/scalapack_dropin.py).
# Registered where libtessera_scalapack is built (src/scalapack/CMakeLists.txt).
add_executable(tessera_scalapack_tests ${CMAKE_CURRENT_LIST_DIR}/test_block_cyclic.cpp
  ${PROJECT_SOURCE_DIR}/src/scalapack/block_cyclic.cpp)
target_include_directories(tessera_scalapack_tests PRIVATE ${PROJECT_SOURCE_DIR}/src/scalapack)
target_link_libraries(tessera_scalapack_tests PRIVATE Catch2::Catch2WithMain tessera_warnings)
catch_discover_tests(tessera_scalapack_tests TEST_PREFIX "unit: " PROPERTIES LABELS unit)

# The program, twice: ScaLAPACK alone, and tessera's library linked before it.
enable_language(C)
add_executable(pgemm_check_scalapack ${CMAKE_CURRENT_LIST_DIR}/pgemm_check.c)
target_link_libraries(pgemm_check_scalapack PRIVATE MPI::MPI_C ${TESSERA_SCALAPACK_LIBRARY} m)
add_executable(pgemm_check_tessera ${CMAKE_CURRENT_LIST_DIR}/pgemm_check.c)
target_link_libraries(pgemm_check_tessera PRIVATE tessera::scalapack MPI::MPI_C ${TESSERA_SCALAPACK_LIBRARY} m)
# The link order is the point: -ltessera_scalapack before -lscalapack, kept even where unneeded.
target_link_options(pgemm_check_tessera PRIVATE "LINKER:--no-as-needed")
# Linked by the C++ driver: under the sanitizers the executable must carry their C++ runtime
# (UBSan's vptr checks), which libtessera_scalapack's C++ code needs and clang's C driver leaves out.
set_target_properties(pgemm_check_scalapack pgemm_check_tessera PROPERTIES LINKER_LANGUAGE CXX)

function(tessera_scalapack_test name np grid mode)
  tessera_script_test(${name} scalapack_dropin.py --np ${np} --grid ${grid} --mode ${mode}
    --check-scalapack $<TARGET_FILE:pgemm_check_scalapack> --check-tessera $<TARGET_FILE:pgemm_check_tessera>
    --library $<TARGET_FILE:tessera_scalapack>)
  set_tests_properties(${name} PROPERTIES PROCESSORS ${np} LABELS "mpi;scalapack")
endfunction()
foreach(_grid 1x1 1x2 2x1 2x2 1x3 3x1 2x3 3x2)
  string(REPLACE "x" ";" _pq "${_grid}")
  list(GET _pq 0 _p)
  list(GET _pq 1 _q)
  math(EXPR _np "${_p} * ${_q}")
  tessera_scalapack_test(scalapack.grid${_grid}.np${_np} ${_np} ${_grid} cases)
endforeach()
tessera_scalapack_test(scalapack.grid2x2.np5 5 2x2 cases)  # a process outside the grid
tessera_scalapack_test(scalapack.handback.grid2x3.np6 6 2x3 handback)
tessera_scalapack_test(scalapack.invalid.grid1x2.np2 2 1x2 invalid)
tessera_scalapack_test(scalapack.preload.grid2x1.np2 2 2x1 preload)

# The installed library: pgemm_check.c built with $(pkg-config --libs tessera-scalapack) of the
# test prefix (install.prefix's fixture), run without LD_LIBRARY_PATH.
tessera_script_test(scalapack.installed.pkgconfig scalapack_dropin.py --np 2 --grid 1x2 --mode installed
  --check-scalapack $<TARGET_FILE:pgemm_check_scalapack> --check-tessera none --library none
  --prefix ${PROJECT_BINARY_DIR}/test-prefix --libdir ${CMAKE_INSTALL_LIBDIR} --cc ${MPI_C_COMPILER}
  --system-scalapack ${TESSERA_SCALAPACK_LIBRARY})
set_tests_properties(scalapack.installed.pkgconfig PROPERTIES FIXTURES_REQUIRED tessera_prefix PROCESSORS 2
  LABELS "install;scalapack")
