# shellcheck shell=bash
# Helpers shared by the slurm/*.sbatch scripts; sourced, never run by itself.
#
# Every variable is optional; set it in the environment of `sbatch` (sbatch passes the
# environment on) or at the top of a script:
#   TESSERA_HOME      where slurm/, configs/, scripts/ are (default: the installed share/tessera
#                     for the installed scripts, else $SLURM_SUBMIT_DIR, the repository)
#   TESSERA           the tessera binary                    (default: the installed bin/tessera
#                     for the installed scripts, else $SLURM_SUBMIT_DIR/build/tessera)
#   TESSERA_CONFIG    the problem: a TOML file with a [run] table (default: $TESSERA_HOME/configs/slurm.toml)
#   TESSERA_OUT       parent of the job's output folder     (default: the config's [slurm] out, else
#                     $SLURM_SUBMIT_DIR/runs)
#   TESSERA_LAUNCHER  srun-pmix | srun-pmi2 | mpirun        (default: the config's [slurm] launcher
#                     unless "auto", else detected, see tessera_detect_launcher)
# Relative paths, in the config too, are relative to $SLURM_SUBMIT_DIR (where sbatch was run).
# The job writes C, the JSON report and a copy of the config to $TESSERA_OUT/$SLURM_JOB_ID/;
# `--c FILE:/DATASET` (or `--report FILE`) given to a script puts C (the report) there instead,
# into an existing HDF5 file too. A step that fails is followed by `tessera recover` on its
# output file, so that the next step of a pipeline never reads a file left half-written.

# Set by `cmake --install` in the installed copy (<prefix>/share/tessera/slurm/common.sh):
# <prefix>/share/tessera and <prefix>/bin/tessera. Empty in the repository.
TESSERA_INSTALLED_HOME=""
TESSERA_INSTALLED_BINARY=""

tessera_die() {
  echo "tessera-slurm: error: $*" >&2
  exit 1
}

# The value of TABLE.KEY in a config file ("" when absent), as `tessera config show` resolves it
# (tessera reads the TOML: the file is checked before, in tessera_setup).
tessera_config_value() {
  local line
  while IFS= read -r line; do
    case "$line" in "$1="*) echo "${line#*=}"; return 0 ;; esac
  done < <("$TESSERA" config show "$2" 2>/dev/null)
}

# srun-pmix where Slurm offers PMIx, else srun-pmi2, else mpirun (Open MPI reads the allocation).
tessera_detect_launcher() {
  if [ -n "${TESSERA_LAUNCHER:-}" ]; then
    case "$TESSERA_LAUNCHER" in
      srun-pmix|srun-pmi2|mpirun) return 0 ;;
      *) tessera_die "TESSERA_LAUNCHER='$TESSERA_LAUNCHER': use srun-pmix, srun-pmi2 or mpirun" ;;
    esac
  fi
  local types=""
  if command -v srun >/dev/null; then types=$(srun --mpi=list 2>&1 || true); fi
  if grep -qE '^[[:space:]]*pmix([[:space:]]|$)' <<<"$types"; then
    TESSERA_LAUNCHER=srun-pmix
  elif grep -qE '^[[:space:]]*pmi2([[:space:]]|$)' <<<"$types"; then
    TESSERA_LAUNCHER=srun-pmi2
  else
    TESSERA_LAUNCHER=mpirun
  fi
}

# tessera_launch NTASKS COMMAND...: COMMAND on NTASKS ranks of the allocation (all when NTASKS is "").
tessera_launch() {
  local n=$1
  shift
  # hwloc's OpenCL and GL plugins cost a launcher ~0.3 s on a GPU node, of no use to the job.
  export HWLOC_COMPONENTS="${HWLOC_COMPONENTS:--opencl,-gl}"
  local opts=()
  case "$TESSERA_LAUNCHER" in
    srun-pmix|srun-pmi2)
      if [ -n "$n" ]; then opts+=(--ntasks="$n"); fi
      # A task that dies ends the step (as mpirun does): its peers could otherwise wait in
      # MPI_Init's fence for it until the job's time limit.
      srun --mpi="${TESSERA_LAUNCHER#srun-}" --kill-on-bad-exit=1 "${opts[@]}" "$@"
      ;;
    mpirun)
      command -v mpirun >/dev/null || tessera_die "TESSERA_LAUNCHER=mpirun but no mpirun on PATH"
      if [ -n "$n" ]; then opts+=(-np "$n"); fi
      if [ "$(id -u)" = 0 ]; then opts+=(--allow-run-as-root); fi
      # Slurm confines the job to its CPUs; Open MPI's default core binding would pin each
      # rank's OpenBLAS threads to one core.
      mpirun --bind-to none "${opts[@]}" "$@"
      ;;
  esac
}

# tessera_launch_nodes NODES NTASKS COMMAND...: COMMAND on NTASKS ranks spread evenly over the
# first NODES nodes of the allocation (NTASKS / NODES on each).
tessera_launch_nodes() {
  local nodes=$1 n=$2
  shift 2
  export HWLOC_COMPONENTS="${HWLOC_COMPONENTS:--opencl,-gl}"
  case "$TESSERA_LAUNCHER" in
    srun-pmix|srun-pmi2)
      srun --mpi="${TESSERA_LAUNCHER#srun-}" --kill-on-bad-exit=1 --nodes="$nodes" --ntasks="$n" "$@"
      ;;
    mpirun)
      local opts=()
      if [ "$(id -u)" = 0 ]; then opts+=(--allow-run-as-root); fi
      mpirun --bind-to none "${opts[@]}" -np "$n" --map-by "ppr:$((n / nodes)):node" "$@"
      ;;
  esac
}

# One line per rank: where it runs, its node-local rank, the GPUs it sees and the job's GPUs on
# its node. The GPU scripts ask for --gpus-per-node with --gpu-bind=none, so every rank of a node
# sees all of the job's GPUs there (CUDA IPC and NVLink peer access between them stay possible,
# which NCCL needs for its fast path) and tessera takes the one at its node-local rank, modulo
# their number. With --gpu-bind=none Slurm may leave CUDA_VISIBLE_DEVICES unset (22.05 does):
# the CUDA runtime then sees the GPUs the job's device cgroup allows, i.e. the job's GPUs.
tessera_show_placement() {
  # shellcheck disable=SC2016  # expanded by each rank's shell, not here
  tessera_launch "" bash -c 'echo "placement: rank ${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-?}} on $(hostname -s)," \
    "local rank ${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-?}}, CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}," \
    "job GPUs ${SLURM_JOB_GPUS:-unset}"'
}

# Input dataset FILE:/PATH of option NAME (a or b): --NAME from the arguments, else the config.
tessera_input() {
  local name=$1
  shift
  local ref=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --"$name") ref=${2:-} && shift ;;
      --"$name"=*) ref=${1#*=} ;;
    esac
    shift
  done
  [ -n "$ref" ] || ref=$(tessera_config_value "run.$name" "$TESSERA_CONFIG")
  echo "$ref"
}

# tessera_split_outputs ARGS...: the script's arguments without --c and --report (TESSERA_RUN_ARGS)
# and their values (TESSERA_USER_C, TESSERA_USER_REPORT; "" when not given), so that a value the
# user gives replaces the script's default instead of being given twice (tessera refuses that on
# every rank, after launch). Each given more than once is refused here, before anything runs.
tessera_split_outputs() {
  TESSERA_RUN_ARGS=()
  TESSERA_USER_C=""
  TESSERA_USER_REPORT=""
  local name value seen_c=0 seen_report=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --c | --report)
        [ $# -ge 2 ] || tessera_die "$1 needs a value"
        name=${1#--} value=$2
        shift 2
        ;;
      --c=* | --report=*)
        name=${1%%=*} name=${name#--} value=${1#*=}
        shift
        ;;
      *)
        TESSERA_RUN_ARGS+=("$1")
        shift
        continue
        ;;
    esac
    [ -n "$value" ] || tessera_die "--$name is given an empty value"
    if [ "$name" = c ]; then
      [ $seen_c -eq 0 ] || tessera_die "--c is given more than once ('$TESSERA_USER_C' and '$value'):" \
        "give the job one output"
      seen_c=1 TESSERA_USER_C=$value
    else
      [ $seen_report -eq 0 ] || tessera_die "--report is given more than once ('$TESSERA_USER_REPORT' and" \
        "'$value'): give the job one report"
      seen_report=1 TESSERA_USER_REPORT=$value
    fi
  done
}

# tessera_recover_output FILE:/DATASET: after a failed step, `tessera recover` on the output's file
# (one rank through the launcher), which restores it from the journal a killed run left (as it
# was before the run), or says there was nothing to undo. The step's failure stands either way.
tessera_recover_output() {
  local ref=$1 file
  case "$ref" in
    *\\*)
      printf '%s\n' "tessera-slurm: the output $ref holds escapes: run \`tessera recover\` on its file" >&2
      return 0
      ;;
  esac
  file=${ref%:/*}
  if [ ! -e "$file" ]; then
    echo "tessera-slurm: the step failed; its output file $file does not exist (nothing to restore)" >&2
    return 0
  fi
  echo "tessera-slurm: the step failed: tessera recover $file" >&2
  if tessera_launch 1 "$TESSERA" recover "$file"; then
    echo "tessera-slurm: $file is as it was before the failed step, or holds the complete C" >&2
  else
    echo "tessera-slurm: error: $file could not be restored (above): do not read it before \`tessera recover $file\`" >&2
  fi
}

# tessera_step OUTPUT COMMAND...: COMMAND (a launch of tessera run writing OUTPUT); when it fails,
# the output's recovery, then the step's exit status.
tessera_step() {
  local output=$1 status=0
  shift
  "$@" || status=$?
  if [ $status -ne 0 ]; then tessera_recover_output "$output"; fi
  return $status
}

# Sets TESSERA, TESSERA_CONFIG, TESSERA_LAUNCHER and TESSERA_JOB_OUT, checks the binary, the
# config and the input files (before anything is launched), and creates the output folder.
# Arguments: the extra `tessera run` options given to the job (to see --a/--b overrides; --c and
# --report given twice are refused here: tessera_split_outputs).
tessera_setup() {
  tessera_split_outputs "$@"
  [ -n "${SLURM_JOB_ID:-}" ] || tessera_die "not inside a Slurm job: submit with sbatch"
  local submit=${SLURM_SUBMIT_DIR:-$PWD}
  cd "$submit" || tessera_die "cannot enter the submit directory $submit"
  TESSERA_HOME=${TESSERA_HOME:-${TESSERA_INSTALLED_HOME:-$submit}}
  TESSERA=${TESSERA:-${TESSERA_INSTALLED_BINARY:-$submit/build/tessera}}
  TESSERA_CONFIG=${TESSERA_CONFIG:-$TESSERA_HOME/configs/slurm.toml}
  [ -x "$TESSERA" ] || tessera_die "no tessera binary at $TESSERA: build it (cmake --build build) or set TESSERA=/path/to/tessera"
  [ -f "$TESSERA_CONFIG" ] || tessera_die "config $TESSERA_CONFIG not found: set TESSERA_CONFIG to a TOML file with a [run] table"
  # The whole file checked by tessera itself (every table, key and value) before anything is launched.
  "$TESSERA" config show "$TESSERA_CONFIG" >/dev/null || tessera_die "config $TESSERA_CONFIG cannot be used (above)"
  local launcher
  launcher=$(tessera_config_value slurm.launcher "$TESSERA_CONFIG")
  if [ -z "${TESSERA_LAUNCHER:-}" ] && [ -n "$launcher" ] && [ "$launcher" != auto ]; then TESSERA_LAUNCHER=$launcher; fi
  TESSERA_OUT=${TESSERA_OUT:-$(tessera_config_value slurm.out "$TESSERA_CONFIG")}

  local name ref file
  for name in a b; do
    ref=$(tessera_input "$name" "$@")
    [ -n "$ref" ] || tessera_die "no input '$name' in $TESSERA_CONFIG ([run] table) nor --$name on the command line"
    # A reference with '\:' escapes (docs/usage.md, "Datasets"): tessera itself checks it, before any compute.
    case "$ref" in *\\*) continue ;; esac
    file=${ref%:/*}
    [ -f "$file" ] || tessera_die "input $name = $ref: file $file not found (relative to $submit);" \
      "create it, e.g. $TESSERA generate --out $ref --rows 8192 --cols 8192"
    [ -r "$file" ] || tessera_die "input $name = $ref: file $file is not readable"
  done

  TESSERA_JOB_OUT=${TESSERA_OUT:-$submit/runs}/$SLURM_JOB_ID
  # An earlier job's folder of the same id (Slurm's ids start again after a reinstall; TESSERA_OUT
  # may be shared between clusters) is left as it is: its config copy, C and reports would be replaced.
  if [ -d "$TESSERA_JOB_OUT" ] && [ -n "$(ls -A "$TESSERA_JOB_OUT")" ]; then
    tessera_die "the output folder $TESSERA_JOB_OUT exists and is not empty (an earlier job with id" \
      "$SLURM_JOB_ID?); nothing in it is replaced: move it away or set TESSERA_OUT to another folder"
  fi
  mkdir -p "$TESSERA_JOB_OUT" || tessera_die "cannot create the output folder $TESSERA_JOB_OUT"
  cp "$TESSERA_CONFIG" "$TESSERA_JOB_OUT/"

  # srun no longer passes the job's --cpus-per-task on to its steps (Slurm >= 22.05);
  # each rank's BLAS threads use its CPUs, no more.
  if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
    export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK
    export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-$SLURM_CPUS_PER_TASK}
    export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$SLURM_CPUS_PER_TASK}
  fi

  tessera_detect_launcher
  echo "tessera-slurm: job $SLURM_JOB_ID on ${SLURM_JOB_NUM_NODES:-1} node(s) (${SLURM_JOB_NODELIST:-?}), ${SLURM_NTASKS:-?} task(s)"
  echo "tessera-slurm: binary $TESSERA, config $TESSERA_CONFIG, launcher $TESSERA_LAUNCHER"
  echo "tessera-slurm: output $TESSERA_JOB_OUT"
  if [ -n "${SLURM_GPUS_PER_NODE:-}${SLURM_GPUS_PER_TASK:-}" ]; then
    echo "tessera-slurm: GPUs per node ${SLURM_GPUS_PER_NODE:-?}, per task ${SLURM_GPUS_PER_TASK:-none}," \
      "binding ${SLURM_GPU_BIND:-the site default}"
  fi
}

# The job's multiply: every task of the allocation, C and the report into the job's folder (or
# where --c and --report say). Arguments: extra `tessera run` options (they override the config).
tessera_run_job() {
  tessera_split_outputs "$@"
  local c=${TESSERA_USER_C:-$TESSERA_JOB_OUT/c.h5:/C} report=${TESSERA_USER_REPORT:-$TESSERA_JOB_OUT/report.json}
  tessera_step "$c" tessera_launch "" "$TESSERA" run --config "$TESSERA_CONFIG" --c "$c" --report "$report" \
    ${TESSERA_RUN_ARGS[@]+"${TESSERA_RUN_ARGS[@]}"}
  echo "tessera-slurm: result $c, report $report"
}
