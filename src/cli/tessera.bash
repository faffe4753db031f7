# bash completion for tessera: subcommands, their options, and the values of options that take
# one of a few words or a file. Installed as share/bash-completion/completions/tessera (loaded on
# demand by bash-completion); or `source` it. Test: tessera.completion (tests/cli/completion.py
# checks that every option of `tessera SUBCOMMAND --help` is offered here).

_tessera_options() {
  local logging="-v --verbose --log-level -h --help --help-all --help-json"
  case "$1" in
    generate) echo "--out -o --rows --cols --dtype --seed --dist --low --high --chunk --gzip --overwrite -q --quiet $logging" ;;
    run) echo "--a --b --c --report --overwrite -q --quiet --write --transpose-a --transpose-b --alpha --beta --verify
               --allow-nonfinite --fail-on-nonfinite --algorithm --comm --panel-width --grid --backend --kernel --dtype
               --baseline --progress --gpu-memory --machine --repeat --warmup --timeout --dry-run --m --n --k --ranks
               --ranks-per-node --config $logging" ;;
    verify) echo "--a --b --c --full --vectors --safety --tolerance --dtype --transpose-a --transpose-b --alpha -q --quiet $logging" ;;
    info) echo "--json --probe-network -q --quiet $logging" ;;
    recover) echo "--force -q --quiet $logging" ;;
    bench) echo "--backend --sizes --dtypes --kernels --warmup --repeats --seed --json --csv -q --quiet $logging" ;;
    tune) echo "--sizes --dtypes --out --warmup --repeats --seed -q --quiet $logging" ;;
    config) echo "show -h --help" ;;
    show) echo "--json -q --quiet $logging" ;;
    *) echo "generate run verify info recover bench tune config --config --version --help --help-all --help-json -h" ;;
  esac
}

# The words an option's value may be ("" when it takes a file or anything).
_tessera_values() {
  local sub=$1 opt=$2
  case "$opt" in
    --backend) echo "auto cpu cuda" ;;
    --algorithm) echo "auto panels summa ksplit" ;;
    --comm) echo "auto nccl cuda-aware host" ;;
    --dtype) if [ "$sub" = generate ]; then echo "f32 f64"; else echo "auto f32 f64"; fi ;;
    --dtypes) echo "f32 f64 f32,f64" ;;
    --dist) echo "uniform normal integers" ;;
    --progress) echo "auto on off" ;;
    --write) echo "auto in-place gather" ;;
    --log-level) echo "error warn info debug" ;;
  esac
}

_tessera() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local sub="" word i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    case "$word" in
      --config) ((i++)) ;;
      generate | run | verify | info | recover | bench | tune | config) [ -z "$sub" ] && sub=$word ;;
      show) [ "$sub" = config ] && sub=show ;;
    esac
  done
  local values
  values=$(_tessera_values "$sub" "$prev")
  if [ -n "$values" ]; then
    mapfile -t COMPREPLY < <(compgen -W "$values" -- "$cur")
    return 0
  fi
  case "$prev" in
    --config | --report | --machine | --csv | --a | --b | --c | --out | -o)
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return 0
      ;;
    --json) if [ "$sub" = bench ]; then mapfile -t COMPREPLY < <(compgen -f -- "$cur") && return 0; fi ;;
  esac
  if [[ "$cur" == -* || -z "$sub" || "$sub" = config ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_tessera_options "$sub")" -- "$cur")
  else
    # recover's files, config show's file, and anything else: file names.
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
  return 0
}
complete -o filenames -F _tessera tessera
