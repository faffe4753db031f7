# Test helpers.
#
# add_mpi_test(<name> <nprocs> <script> [args...])
#   Runs tests/scripts/<script> with the test Python, telling it how to launch tessera on
#   <nprocs> MPI ranks: the script receives --tessera, --mpiexec (a ';'-free launcher string)
#   and --np. Like COSMA's add_cosma_mpi_test, one line per (case, rank count).
#   Exit code 77 means "skipped" (e.g. a GPU case without a GPU) and is reported as such.

set(TESSERA_MPIEXEC_FLAGS "--oversubscribe" CACHE STRING "Extra flags for mpiexec in tests")
if(CMAKE_HOST_UNIX)
  execute_process(COMMAND id -u OUTPUT_VARIABLE _tessera_uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_tessera_uid STREQUAL "0")
    list(APPEND TESSERA_MPIEXEC_FLAGS "--allow-run-as-root")
  endif()
endif()
string(REPLACE ";" " " TESSERA_MPIEXEC_FLAGS_STR "${TESSERA_MPIEXEC_FLAGS}")

# A python3 that imports h5py and numpy: /usr/bin/python3 first (Debian's packages), then PATH.
if(NOT TESSERA_TEST_PYTHON)
  foreach(_py /usr/bin/python3 python3)
    find_program(_tessera_py_${_py} NAMES ${_py} NO_CACHE)
    set(_cand "${_tessera_py_${_py}}")
    if(_cand)
      execute_process(COMMAND ${_cand} -c "import h5py, numpy" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(TESSERA_TEST_PYTHON "${_cand}" CACHE FILEPATH "python3 with h5py and numpy for the tests")
        break()
      endif()
    endif()
  endforeach()
endif()
if(NOT TESSERA_TEST_PYTHON)
  message(FATAL_ERROR "No python3 with h5py and numpy found for the tests: run scripts/setup.sh")
endif()
message(STATUS "tessera: test python ${TESSERA_TEST_PYTHON}")

function(tessera_script_test name script)
  add_test(NAME ${name}
    COMMAND ${TESSERA_TEST_PYTHON} ${PROJECT_SOURCE_DIR}/tests/scripts/${script}
            --tessera $<TARGET_FILE:tessera> --mpiexec "${MPIEXEC_EXECUTABLE} ${TESSERA_MPIEXEC_FLAGS_STR}"
            --source-dir ${PROJECT_SOURCE_DIR} ${ARGN})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_btl_vader_single_copy_mechanism=none;PYTHONDONTWRITEBYTECODE=1")
endfunction()

function(add_mpi_test name nprocs script)
  tessera_script_test(${name} ${script} --np ${nprocs} ${ARGN})
  set_tests_properties(${name} PROPERTIES PROCESSORS ${nprocs} LABELS mpi)
endfunction()

# add_mpi_catch_test(<name> <nprocs> <target>)
#   Runs the Catch2 executable <target>, whose main initialises MPI, on <nprocs> ranks: collective
#   code tested in-process (COSMA's tests/multiply.cpp). It fails when a check fails on any rank.
function(add_mpi_catch_test name nprocs target)
  add_test(NAME ${name}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${nprocs} ${TESSERA_MPIEXEC_FLAGS} $<TARGET_FILE:${target}>)
  set_tests_properties(${name} PROPERTIES PROCESSORS ${nprocs} LABELS mpi TIMEOUT 120
    ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_btl_vader_single_copy_mechanism=none")
endfunction()
