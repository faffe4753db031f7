"""What a run costs before it reads: the `setup` phase (plan, output, backend, the report's network
line) of a 1-rank CPU run stays under 50 ms, launched by mpiexec and alone (issue 39: asking Open
MPI's tool interface for the transports made it 0.21 s on every run, and no check noticed).
Median of 5 runs of each launch; C is checked against numpy so the runs are real ones."""
import json
import statistics

import h5py
import numpy as np

from common import check, check_product, parser, Runner, write

LIMIT_SECONDS = 0.050

p = parser(__doc__)
p.add_argument("--runs", type=int, default=5)
args = p.parse_args()
r = Runner(args)
rng = np.random.default_rng(39)
a = rng.random((96, 80)) * 2 - 1
b = rng.random((80, 72)) * 2 - 1
write(r.path("a.h5"), "A", a)
write(r.path("b.h5"), "B", b)

for direct in (False, True):
    how = "alone" if direct else "under mpiexec -np 1"
    setups = []
    for i in range(args.runs):
        r.run(["run", "--a", "a.h5:/A", "--b", "b.h5:/B", "--c", "c.h5:/C", "--overwrite", "--backend", "cpu", "-q",
               "--report", "report.json"], np_=1, direct=direct)
        report = json.load(open(r.path("report.json")))
        phases = report["ranks"][0]["phases"]
        check("setup" in phases, f"no setup phase in the report: {phases}")
        setups.append(phases["setup"])
        with h5py.File(r.path("c.h5"), "r") as f:
            check_product(a, b, f["C"][...], np.float64)
    median = statistics.median(setups)
    print(f"setup phase, {how}: median {median * 1e3:.1f} ms of {[round(s * 1e3, 1) for s in setups]} ms", flush=True)
    check(median < LIMIT_SECONDS, f"setup phase {how}: median {median * 1e3:.1f} ms, over {LIMIT_SECONDS * 1e3:.0f} ms")
print("ok")
