#!/usr/bin/env bash
# A simulated multi-node cluster on this machine (docs/cluster.md): nodes node1..nodeN as Linux
# namespaces (own host name, mounts and address on a bridge), one slurmd each, one slurmctld, munge.
#
#   scripts/cluster.sh up [--nodes 2] [--gpus 0] [--no-slurm] [--net bridge|loopback] [--dir DIR]
#   scripts/cluster.sh status | down [--dir DIR]
#   scripts/cluster.sh exec NODE -- COMMAND...      # a command on a node
#   scripts/cluster.sh shape --rate 1gbit | unshape # tc on every node's link
#   scripts/cluster.sh private NODE PATH            # a tmpfs over PATH on NODE only
#   eval "$(scripts/cluster.sh env | sed 's/^/export /')"   # SLURM_CONF, PATH for sbatch/srun
#
# Root only. `up` is idempotent, `down` leaves nothing behind. DIR defaults to
# $TESSERA_CLUSTER_DIR or /tmp/tessera-cluster. Dependencies: bash scripts/setup.sh --cluster.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "$repo/tests/cluster/cluster.py" "$@"
