# The Python package (python/): its tests launch the built binary on CPU ranks, as the other
# script tests do (--tessera, --mpiexec, --np; exit 77 = skipped), with label `python`:
#   ctest --test-dir build -L python
function(add_python_test name nprocs script)
  add_test(NAME python.${name}
    COMMAND ${TESSERA_TEST_PYTHON} ${PROJECT_SOURCE_DIR}/python/tests/${script}
            --tessera $<TARGET_FILE:tessera> --mpiexec "${MPIEXEC_EXECUTABLE} ${TESSERA_MPIEXEC_FLAGS_STR}"
            --source-dir ${PROJECT_SOURCE_DIR} --np ${nprocs} ${ARGN})
  set_tests_properties(python.${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 PROCESSORS ${nprocs} LABELS python
    ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_btl_vader_single_copy_mechanism=none;PYTHONDONTWRITEBYTECODE=1")
endfunction()

add_python_test(run.np1 1 test_run.py)        # C against numpy, report fields, launchers, (file, path) pairs
add_python_test(run.np2 2 test_run.py)
add_python_test(dry-run 1 test_dry_run.py)    # plans from sizes and datasets, same JSON as the CLI's
add_python_test(errors.np2 2 test_errors.py)  # exit statuses 1, 2, 3 as exceptions; no binary; a timeout
add_python_test(options 1 test_options.py)    # typed options from --help-json, '\:' escapes, launcher choice
add_python_test(generate-verify.np1 1 test_generate_verify.py)  # generate + verify against numpy through h5py
add_python_test(generate-verify.np2 2 test_generate_verify.py)
add_python_test(report 1 test_report.py)      # older and newer reports, to_pandas()
add_python_test(install 1 test_install.py)    # pip install --target, import, a dry run from there
add_python_test(matmul 1 test_matmul.py)      # tessera.matmul in-process (tessera._native) against numpy
