# The command line (src/cli): config files through toml++ and `tessera config show`
# (cli_config.py), the options every subcommand shares, --help, --version, range errors, the ':/'
# hint and the bash completion (cli_common.py); the man page and completion installed.
foreach(case errors tables override show slurm-common)
  add_mpi_test(cli.config.${case} 2 cli_config.py --case ${case})
endforeach()
foreach(case help quiet-verbose range-errors help-json environment colon-hint completion)
  add_mpi_test(cli.${case} 2 cli_common.py --case ${case})
endforeach()
# Every choice checked where it is typed (issue 41): command line, config file, dry run; the kernels listed.
foreach(case command-line config kernels)
  add_mpi_test(cli.options.${case} 2 options_checked.py --case ${case})
endforeach()

# cmake --install puts the completion (and, where help2man was found, the man page) in place.
set(_tessera_cli_expect ${CMAKE_INSTALL_DATADIR}/bash-completion/completions/tessera)
set(_tessera_cli_man "")  # no man page where help2man was not found (the GPU machine)
if(TESSERA_MAN_PAGE)
  list(APPEND _tessera_cli_expect ${CMAKE_INSTALL_MANDIR}/man1/tessera.1)
  set(_tessera_cli_man "man")
endif()
list(JOIN _tessera_cli_expect " " _tessera_cli_expect)
add_test(NAME cli.installed
  COMMAND sh -c "for f in $0; do test -s \"${TESSERA_TEST_PREFIX}/$f\" || { echo \"not installed: $f\"; exit 1; }; done; \
grep -q 'EXIT STATUS' \"${TESSERA_TEST_PREFIX}/${CMAKE_INSTALL_MANDIR}/man1/tessera.1\" 2>/dev/null || test -z \"$1\" \
|| { echo 'the man page has no EXIT STATUS'; exit 1; }; echo ok"
          "${_tessera_cli_expect}" "${_tessera_cli_man}")
set_tests_properties(cli.installed PROPERTIES FIXTURES_REQUIRED tessera_prefix LABELS install)
tessera_script_test(cli.installed-completion cli_common.py --case completion
  --completion ${TESSERA_TEST_PREFIX}/${CMAKE_INSTALL_DATADIR}/bash-completion/completions/tessera)
set_tests_properties(cli.installed-completion PROPERTIES FIXTURES_REQUIRED tessera_prefix LABELS install)
