"""A rank the launcher bound to one core (Open MPI's default for 2 ranks or fewer) is given its
share of the node's cores, and says so under -v; TESSERA_KEEP_BINDING=1 keeps the launcher's binding."""
import json
import os
import shlex
import subprocess

import numpy as np

from common import SKIP, Runner, check, parser, random_matrix, write

args = parser(__doc__).parse_args()
r = Runner(args)
cores = len(os.sched_getaffinity(0))
if cores < 2:
    print(f"SKIP: this process may use {cores} core; the test needs 2")
    raise SystemExit(SKIP)
rng = np.random.default_rng(5)
write(r.path("a.h5"), "/A", random_matrix(rng, 64, 48, np.float64))
write(r.path("b.h5"), "/B", random_matrix(rng, 48, 40, np.float64))


def run(env_extra):
    # mpiexec's flags from CTest (--oversubscribe) would turn binding off: bind explicitly.
    cmd = shlex.split(args.mpiexec) + ["--bind-to", "core", "-np", "1", args.tessera, "run", "--a",
                                       r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c",
                                       r.path("c.h5") + ":/C", "--overwrite", "--backend", "cpu", "-q", "-v",
                                       "--report", r.path("r.json")]
    if env_extra:
        cmd[len(shlex.split(args.mpiexec)):len(shlex.split(args.mpiexec))] = ["-x", "TESSERA_KEEP_BINDING"]
    env = dict(os.environ, **env_extra)
    print("$ " + " ".join(cmd), flush=True)
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=r.dir)
    print(res.stdout + res.stderr)
    check(res.returncode == 0, f"exit status {res.returncode}")
    return res, json.load(open(r.path("r.json")))["ranks"][0]["cpus"]


res, cpus = run({})
check(cpus == cores, f"the rank runs on {cpus} cores, expected all {cores} (one rank on the node)")
check("tessera: info (rank 0): the launcher bound this rank to 1 core" in res.stderr, "the widening is said under -v")
res, cpus = run({"TESSERA_KEEP_BINDING": "1"})
check(cpus == 1, f"TESSERA_KEEP_BINDING=1: {cpus} cores, expected the launcher's 1")
check("the launcher bound" not in res.stderr, "nothing to say when the binding is kept")
print("PASS")
