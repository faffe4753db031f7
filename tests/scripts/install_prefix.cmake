# ctest install.prefix (tests/scripts/install.cmake): cmake --install BUILD_DIR into an emptied
# PREFIX, then checks the layout docs/building.md ("Installing") promises. cmake -P with BUILD_DIR,
# PREFIX, BINDIR, LIBDIR, INCLUDEDIR, DATADIR, DOCDIR, CMAKEDIR, SHARED.
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${out}${err}")
endif()

set(expected
  ${BINDIR}/tessera
  ${INCLUDEDIR}/tessera/tessera.hpp
  ${CMAKEDIR}/tesseraConfig.cmake ${CMAKEDIR}/tesseraConfigVersion.cmake ${CMAKEDIR}/tesseraTargets.cmake
  ${LIBDIR}/pkgconfig/tessera.pc
  ${DATADIR}/slurm/common.sh ${DATADIR}/slurm/tessera-node.sbatch ${DATADIR}/slurm/tessera-multinode.sbatch
  ${DATADIR}/slurm/tessera-cpu.sbatch ${DATADIR}/slurm/strong-scaling.sbatch ${DATADIR}/slurm/tessera-array.sbatch
  ${DATADIR}/configs/slurm.toml ${DATADIR}/configs/workstation.toml ${DATADIR}/scripts/scaling_report.py
  ${DATADIR}/tuned/tuned-NVIDIA_H200.json ${DATADIR}/README.md ${DATADIR}/LICENSE ${DOCDIR}/LICENSE
  ${DATADIR}/slurm/README.md ${DATADIR}/docs/report.md ${DATADIR}/docs/usage.md ${DATADIR}/docs/configuration.md
  ${DATADIR}/docs/output.md ${DATADIR}/docs/python.md ${DATADIR}/docs/cpp-api.md ${DATADIR}/docs/building.md
  ${DATADIR}/docs/performance.md ${DATADIR}/docs/performance-log.md ${DATADIR}/docs/style.md)
if(SHARED)
  list(APPEND expected ${LIBDIR}/libtessera.so)
else()
  list(APPEND expected ${LIBDIR}/libtessera.a ${LIBDIR}/libtessera_job.a ${LIBDIR}/libtessera_kernels.a)
endif()
set(missing)
foreach(f IN LISTS expected)
  if(NOT EXISTS "${PREFIX}/${f}")
    list(APPEND missing "${f}")
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "not installed under ${PREFIX}: ${missing}")
endif()
# Only the public header: no internal one may leak into include/.
file(GLOB_RECURSE headers RELATIVE "${PREFIX}/${INCLUDEDIR}" "${PREFIX}/${INCLUDEDIR}/*")
if(NOT headers STREQUAL "tessera/tessera.hpp")
  message(FATAL_ERROR "include/ holds ${headers}, expected tessera/tessera.hpp alone")
endif()
# The installed slurm scripts name this prefix, not the source tree.
file(READ "${PREFIX}/${DATADIR}/slurm/common.sh" common)
if(NOT common MATCHES "\nTESSERA_INSTALLED_HOME=\"${PREFIX}/${DATADIR}\"\n")
  message(FATAL_ERROR "share/tessera/slurm/common.sh does not name ${PREFIX}/${DATADIR}")
endif()
message(STATUS "installed into ${PREFIX}: ${expected}")
