# The installation, as a site and its users get it (cmake/TesseraInstall.cmake, docs/building.md):
#   install.prefix              cmake --install into <build>/test-prefix (emptied first), then its
#                               layout; the fixture of the tests below and of slurm.local
#   install.consumer.cmake      tests/consumer built with find_package(tessera) against that
#                               prefix, multiplies on 2 ranks; a missing input is a clean error
#   install.consumer.pkgconfig  the same program built with a plain C++ compiler and
#                               $(pkg-config --cflags --libs tessera), run without LD_LIBRARY_PATH
#   api.exports                 (shared libtessera, Linux) nm -D: only the public API is exported;
#                               readelf -d: libmpi NEEDED, not libmpi_cxx (tests/scripts/api_exports.py)
#   blas.check                  the CPU kernels' BLAS against the reference loop (tests/blas)
#   blas.generic                a second configure with -DBLA_VENDOR=Generic (Debian's reference
#                               BLAS where installed), CPU only, which builds and runs blas.check's
#                               program: the build works with a BLAS other than OpenBLAS
set(TESSERA_TEST_PREFIX ${PROJECT_BINARY_DIR}/test-prefix)

add_test(NAME install.prefix
  COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DPREFIX=${TESSERA_TEST_PREFIX}
          -DBINDIR=${CMAKE_INSTALL_BINDIR} -DLIBDIR=${CMAKE_INSTALL_LIBDIR} -DINCLUDEDIR=${CMAKE_INSTALL_INCLUDEDIR}
          -DDATADIR=${TESSERA_INSTALL_DATADIR} -DDOCDIR=${CMAKE_INSTALL_DOCDIR} -DCMAKEDIR=${TESSERA_INSTALL_CMAKEDIR}
          -DSHARED=${TESSERA_SHARED_LIBRARY}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/install_prefix.cmake)
set_tests_properties(install.prefix PROPERTIES FIXTURES_SETUP tessera_prefix LABELS install TIMEOUT 120)

foreach(mode cmake pkgconfig)
  tessera_script_test(install.consumer.${mode} consumer.py --np 2 --mode ${mode} --prefix ${TESSERA_TEST_PREFIX}
    --libdir ${CMAKE_INSTALL_LIBDIR} --shared ${TESSERA_SHARED_LIBRARY} --cmake ${CMAKE_COMMAND}
    --generator ${CMAKE_GENERATOR} --cxx ${CMAKE_CXX_COMPILER})
  set_tests_properties(install.consumer.${mode} PROPERTIES FIXTURES_REQUIRED tessera_prefix LABELS install
    PROCESSORS 2 TIMEOUT 300)
endforeach()

if(TESSERA_SHARED_LIBRARY AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
  find_program(TESSERA_READELF NAMES readelf ${CMAKE_READELF})
  add_test(NAME api.exports
    COMMAND ${TESSERA_TEST_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/api_exports.py --lib $<TARGET_FILE:tessera_api>
            --nm ${CMAKE_NM} --readelf ${TESSERA_READELF})
  set_tests_properties(api.exports PROPERTIES LABELS "install;unit" TIMEOUT 60)
endif()

add_executable(tessera_blas_check blas/blas_check.cpp)
target_link_libraries(tessera_blas_check PRIVATE tessera_kernels tessera_warnings)
add_test(NAME blas.check COMMAND tessera_blas_check)
set_tests_properties(blas.check PROPERTIES LABELS unit)

add_test(NAME blas.generic
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DBUILD_DIR=${PROJECT_BINARY_DIR}/blas-generic
          -DGENERATOR=${CMAKE_GENERATOR} -DCXX=${CMAKE_CXX_COMPILER} -DC=${CMAKE_C_COMPILER}
          -DLIBRARY_ARCHITECTURE=${CMAKE_LIBRARY_ARCHITECTURE}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/blas_generic.cmake)
set_tests_properties(blas.generic PROPERTIES LABELS install PROCESSORS 2 TIMEOUT 600)
