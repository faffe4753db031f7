#!/usr/bin/env python3
"""Where a process's start-up and teardown go: whole processes of `mpirun`, a bare MPI program
and tessera, each under several environments, interleaved, median of REPEATS.

    scripts/startup_probe.py OUTDIR [--tessera build-gpu/tessera] [--repeats 7] [--nps 1,2]

Variants (label: command):
  mpirun-true      mpirun -np P /bin/true              (the launcher alone, no MPI_Init)
  hello            mpirun -np P <MPI_Init + MPI_Finalize in C>
  version          mpirun -np P tessera --version       (tessera's MPI_Init, parse, MPI_Finalize)
  info             mpirun -np P tessera info            (plus CUDA start-up and every rank's view)
each under the environments of ENVS (Open MPI's own MCA variables, e.g. which transports load).
Writes OUTDIR/startup.md (a table) and OUTDIR/startup.json.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from e2e_bench import run  # one whole process, timed

HELLO = r"""
#include <mpi.h>
int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
"""

# Open MPI MCA settings, as environment variables (mpirun passes OMPI_MCA_* to its ranks).
ENVS = {
    "default": {},
    "ob1-sm": {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,vader"},
    "ob1-sm-lean": {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,vader", "OMPI_MCA_osc": "^ucx",
                    "OMPI_MCA_mtl": "^ofi,psm,psm2", "OMPI_MCA_coll": "^hcoll"},
    "no-ucx": {"OMPI_MCA_pml": "^ucx", "OMPI_MCA_osc": "^ucx"},
    # tessera's own choice turned off (for `version` and `info`; the bare program ignores it)
    "tessera-off": {"TESSERA_MPI_TRANSPORTS": "open-mpi"},
}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("outdir")
    p.add_argument("--tessera", default="build-gpu/tessera")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--nps", default="1,2")
    p.add_argument("--envs", default="default,tessera-off,ob1-sm")
    a = p.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="tessera-startup-")
    hello = os.path.join(tmp, "hello")
    with open(hello + ".c", "w") as f:
        f.write(HELLO)
    subprocess.check_call(["mpicc", "-O2", hello + ".c", "-o", hello])
    mpirun = ["mpirun", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    commands = {"mpirun-true": ["/bin/true"], "hello": [hello], "version": [a.tessera, "--version"],
                "info": [a.tessera, "info"]}
    nps = [int(x) for x in a.nps.split(",")]
    envs = a.envs.split(",")
    times = {}
    for rep in range(a.repeats + 1):  # the first round warms the page cache and is dropped
        for np_ in nps:
            for e in envs:
                env = dict(os.environ, **ENVS[e])
                for label, cmd in commands.items():
                    s, rc = run(mpirun + ["-np", str(np_)] + cmd, env)
                    if rc != 0:
                        print(f"{label} np{np_} {e}: exit {rc}", file=sys.stderr)
                    if rep > 0:
                        times.setdefault(f"{label}|{np_}|{e}", []).append(s)
    rows = ["| command | ranks | " + " | ".join(envs) + " |", "|---|---|" + "---|" * len(envs)]
    for label in commands:
        for np_ in nps:
            cells = []
            for e in envs:
                ts = times[f"{label}|{np_}|{e}"]
                cells.append(f"{statistics.median(ts):.3f} ({min(ts):.3f}-{max(ts):.3f})")
            rows.append(f"| {label} | {np_} | " + " | ".join(cells) + " |")
    text = "\n".join(rows) + "\n\nenvironments: " + "; ".join(
        f"{e} = {' '.join(f'{k}={v}' for k, v in ENVS[e].items()) or '(none)'}" for e in envs) + "\n"
    print(text)
    with open(os.path.join(a.outdir, "startup.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.outdir, "startup.json"), "w") as f:
        json.dump(times, f, indent=1)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
