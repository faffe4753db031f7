# The slurm/ scripts under test (see slurm_local.py):
#   slurm.lint   bash -n (and shellcheck, where installed) on slurm/*.sbatch and slurm/common.sh
#   slurm.local  a real one-node Slurm on localhost runs the scripts with sbatch --wait; skipped
#                (exit 77, with the reason) where Slurm cannot be installed or without root; also
#                the installed share/tessera/slurm scripts, from install.prefix's prefix
tessera_script_test(slurm.lint slurm_local.py --lint)
set_tests_properties(slurm.lint PROPERTIES LABELS slurm TIMEOUT 120)

tessera_script_test(slurm.local slurm_local.py --prefix ${TESSERA_TEST_PREFIX} --datadir ${TESSERA_INSTALL_DATADIR}
  --bindir ${CMAKE_INSTALL_BINDIR})
# RUN_SERIAL: its jobs take the machine's CPUs, and the daemons must not race other tests.
set_tests_properties(slurm.local PROPERTIES LABELS slurm TIMEOUT 600 RUN_SERIAL TRUE FIXTURES_REQUIRED tessera_prefix)
