"""`tessera run --dry-run`: the plan for any rank count without launching it, and the predicted
per-rank host memory against the peak measured by a real run of the same problem (within 15%)."""
import json

from common import Runner, check, parser, write
import numpy as np

p = parser(__doc__)
p.add_argument("--case", required=True, choices=["memory", "many-ranks"])
p.add_argument("--algorithm", default="auto", help="--algorithm for both the plan and the run")
args = p.parse_args()
r = Runner(args)

if args.case == "many-ranks":
    res = r.run(["run", "--dry-run", "--m", "100000", "--n", "90000", "--k", "70000", "--ranks", "99991",
                 "--backend", "cpu", "--report", r.path("plan.json")], np_=1)
    plan = json.load(open(r.path("plan.json")))
    g = plan["grid"]
    check(g["rows"] * g["cols"] <= 99991, "grid fits the ranks")
    check(plan["idle_ranks"] == 99991 - g["rows"] * g["cols"], "idle ranks counted")
    check(plan["total_read_bytes"] > 0 and plan["predicted_seconds"] > 0, "volumes and time predicted")
    check("grid" in res.stdout and "predicted" in res.stdout, "the text names grid and prediction")
else:
    rng = np.random.default_rng(2)
    n = 3000
    write(r.path("a.h5"), "/A", rng.random((n, n)))
    write(r.path("b.h5"), "/B", rng.random((n, n)))
    io = ["--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B"]
    alg = ["--algorithm", args.algorithm]
    r.run(["run", *io, "--dry-run", "--backend", "cpu", *alg, "--report", r.path("plan.json")])
    r.run(["run", *io, "--c", r.path("c.h5") + ":/C", "--backend", "cpu", *alg, "--report", r.path("run.json"), "-q"])
    plan = json.load(open(r.path("plan.json")))
    run = json.load(open(r.path("run.json")))
    check(plan["algorithm"] == run["algorithm"], f"plan for {plan['algorithm']}, run was {run['algorithm']}")
    print(f"algorithm {run['algorithm']}, grid {run['grid']['rows']}x{run['grid']['cols']}")
    # Rank 0 against the plan's rank 0; the others' highest peak against the plan's largest rank.
    peaks = {e["rank"]: e["peak_host_bytes"] for e in run["ranks"]}
    pairs = [("rank 0", plan["rank0"]["host_bytes"], peaks[0])]
    if len(peaks) > 1:
        pairs.append(("other ranks (highest)", plan["largest"]["host_bytes"], max(v for r, v in peaks.items() if r)))
    for who, want, got in pairs:
        print(f"{who}: predicted {want / 2**20:.0f} MiB, measured peak {got / 2**20:.0f} MiB ({(want - got) / got:+.1%})")
        check(abs(got - want) <= 0.15 * got, f"{who}: prediction off by more than 15%")
print("PASS")
