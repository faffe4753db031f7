"""`tessera run --repeat N --warmup W` (issue #17 item 5): the whole job runs W + N times in one
launch, every run committing C (the first as the options say, the later ones replacing what the
first wrote, without --overwrite).

  product   --repeat 3 --warmup 1 on odd shapes: C equals numpy's float64 product; one progress
            line per run on stdout; the report's `repeats` block has 3 samples whose min, median
            and max agree with them, every phase's spread (the slowest rank's per run) bounds each
            rank's own, the rest of the report is the last run's, and it validates against
            docs/schema/report.schema.json; no temporary left beside C
  defaults  --repeat 2 alone takes 1 warm-up; --repeat 1 --warmup 2 reports 1 run after 2 warm-ups;
            a single run has no `repeats` block; -q prints no run lines; --dry-run ignores --repeat
  existing  --repeat 2 into an HDF5 file holding other datasets: they stay byte-identical, C is
            right, no temporary dataset is left; a C already there without --overwrite is still
            refused (the file unchanged); with --overwrite it is replaced
  repeat-zero, repeat-negative, warmup-negative, repeat-beta, warmup-beta
            refused before anything is read: one `tessera: error:` line naming the cause, exit 1 on
            every rank (each rank's own status, recorded by a wrapper), no output file"""
import glob
import hashlib
import json
import os
import shlex
import subprocess

import h5py
import numpy as np

from common import check, check_product, leftovers, parser, random_matrix, Runner, skip_without_gpus, write

p = parser(__doc__)
p.add_argument("--case", required=True, choices=["product", "defaults", "existing", "repeat-zero", "repeat-negative",
                                                 "warmup-negative", "repeat-beta", "warmup-beta"])
p.add_argument("--m", type=int, default=31)
p.add_argument("--n", type=int, default=29)
p.add_argument("--k", type=int, default=37)
p.add_argument("--algorithm", default="auto")
p.add_argument("--write", default="auto", choices=["auto", "in-place", "gather"])
p.add_argument("--dtype", default="f64", choices=["f32", "f64"])
p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
p.add_argument("--need-gpus", type=int, default=0)
args = p.parse_args()
skip_without_gpus(args)
r = Runner(args)
rng = np.random.default_rng(args.m * 7 + args.n * 3 + args.k + args.np)
dt = np.float32 if args.dtype == "f32" else np.float64
a, b = random_matrix(rng, args.m, args.k, dt), random_matrix(rng, args.k, args.n, dt)
write(r.path("a.h5"), "/A", a)
write(r.path("b.h5"), "/B", b)
c_file = r.path("c.h5")


def run_args(c=c_file + ":/C", *extra):
    return ["run", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c", c, "--backend", args.backend,
            "--algorithm", args.algorithm, "--write", args.write, *extra]


def read_c(path=c_file, name="/C"):
    with h5py.File(path, "r") as f:
        return f[name][...]


def validate(report):
    try:
        import jsonschema
    except ImportError:
        print("note: python3 lacks jsonschema: the report is not checked against its schema here (schema.* does)")
        return
    with open(os.path.join(args.source_dir, "docs", "schema", "report.schema.json")) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    errors = sorted(cls(schema).iter_errors(report), key=lambda e: list(e.path))
    for e in errors[:10]:
        print(f"  {'/'.join(map(str, e.path)) or '(top)'}: {e.message}")
    check(not errors, "the report does not validate against report.schema.json")


def check_spread(s, samples, what):
    check(s["min"] <= s["median"] <= s["max"], f"{what}: min {s['min']} <= median {s['median']} <= max {s['max']}")
    if samples is not None:
        check(s["min"] == min(samples) and s["max"] == max(samples), f"{what}: min/max {s} of samples {samples}")
        check(abs(s["median"] - float(np.median(samples))) <= 1e-12, f"{what}: median {s['median']} of {samples}")


def check_repeats(rep, runs, warmup):
    """The `repeats` block of `runs` counted runs after `warmup` warm-ups, consistent in itself and
    with the last run that the rest of the report describes."""
    validate(rep)
    check("repeats" in rep, "the report has no repeats block")
    x = rep["repeats"]
    check(x["runs"] == runs and x["warmup"] == warmup, f"runs {x['runs']}, warmup {x['warmup']}")
    samples = x["wall_seconds"]["samples"]
    check(len(samples) == runs and all(s > 0 for s in samples), f"wall samples {samples}")
    check_spread(x["wall_seconds"], samples, "wall_seconds")
    check(rep["totals"]["wall_seconds"] == samples[-1], "totals.wall_seconds is the last run's")
    check(len(x["ranks"]) == args.np and [e["rank"] for e in x["ranks"]] == list(range(args.np)), "one entry per rank")
    for need in ("setup", "read", "compute", "write"):
        check(need in x["phases"], f"phase {need} missing from {sorted(x['phases'])}")
    for name, s in x["phases"].items():
        check_spread(s, None, f"phase {name}")
        for e in x["ranks"]:
            mine = e["phases"].get(name)
            if mine is None:
                continue
            check_spread(mine, None, f"rank {e['rank']} phase {name}")
            # The slowest rank of each run bounds each rank's own time in that run.
            for key in ("min", "median", "max"):
                check(mine[key] <= s[key], f"rank {e['rank']} {name} {key} {mine[key]} above the slowest's {s[key]}")
            last = rep["ranks"][e["rank"]]["phases"].get(name)
            check(last is not None and mine["min"] <= last <= mine["max"],
                  f"rank {e['rank']} {name}: the last run's {last} outside its spread {mine}")


def run_lines(stdout):
    return [l for l in stdout.splitlines() if l.startswith("tessera: run ") or l.startswith("tessera: warm-up ")]


def ranks_exit(argv):
    """Runs tessera on every rank through a wrapper that records each rank's own exit status."""
    os.makedirs(r.path("rc"), exist_ok=True)
    for f in glob.glob(os.path.join(r.path("rc"), "*")):
        os.remove(f)
    wrapper = '"$0" "$@"; rc=$?; echo $rc > "' + r.path("rc") + '/rank.${OMPI_COMM_WORLD_RANK:-0}"; exit $rc'
    cmd = shlex.split(args.mpiexec) + ["-np", str(args.np), "--mca", "orte_abort_on_non_zero_status", "0", "bash",
                                        "-c", wrapper, args.tessera] + list(argv)
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=r.dir)
    print(res.stdout + res.stderr, flush=True)
    codes = {int(f.rsplit(".", 1)[1]): int(open(f).read()) for f in glob.glob(os.path.join(r.path("rc"), "rank.*"))}
    check(sorted(codes) == list(range(args.np)), f"every rank must record its exit status, got {sorted(codes)}")
    return res, codes


if args.case == "product":
    res = r.run(run_args(c_file + ":/C", "--repeat", "3", "--warmup", "1", "--report", r.path("r.json")))
    check(run_lines(res.stdout) == ["tessera: warm-up 1 of 1", "tessera: run 1 of 3", "tessera: run 2 of 3",
                                    "tessera: run 3 of 3"], f"run lines {run_lines(res.stdout)}")
    check("median of 3 runs after 1 warm-up " in res.stdout, "the table's repeats line")
    check_product(a, b, read_c(), dt)
    rep = json.load(open(r.path("r.json")))
    check_repeats(rep, 3, 1)
    check(rep["provenance"]["options"].get("repeat") == 3, f"options {rep['provenance']['options']}")
    check(os.listdir(r.dir).count("c.h5") == 1 and not leftovers(r.dir), f"folder {sorted(os.listdir(r.dir))}")
elif args.case == "defaults":
    res = r.run(run_args(c_file + ":/C", "--repeat", "2", "--report", r.path("r.json")))
    check(len(run_lines(res.stdout)) == 3, f"1 warm-up and 2 runs by default: {run_lines(res.stdout)}")
    check_repeats(json.load(open(r.path("r.json"))), 2, 1)
    check_product(a, b, read_c(), dt)
    res = r.run(run_args(r.path("c2.h5") + ":/C", "--repeat", "1", "--warmup", "2", "-q", "--report",
                         r.path("r2.json")))
    check(run_lines(res.stdout) == [] and res.stdout.strip() == "", f"-q prints nothing: {res.stdout!r}")
    check_repeats(json.load(open(r.path("r2.json"))), 1, 2)
    check_product(a, b, read_c(r.path("c2.h5")), dt)
    res = r.run(run_args(r.path("c3.h5") + ":/C", "--report", r.path("r3.json")))
    check(run_lines(res.stdout) == [] and "median of" not in res.stdout, "a single run prints no run lines")
    rep = json.load(open(r.path("r3.json")))
    check("repeats" not in rep, "a single run has no repeats block")
    # The later runs replaced the file the first one created (a dataset replaced inside the file
    # would leave its space behind: the file would grow).
    check(os.path.getsize(c_file) == os.path.getsize(r.path("c3.h5")),
          f"C's file after 3 runs holds {os.path.getsize(c_file)} bytes, after one {os.path.getsize(r.path('c3.h5'))}")
    validate(rep)
    res = r.run(["run", "--dry-run", "--m", "100", "--n", "90", "--k", "80", "--ranks", "4", "--repeat", "3"], np_=1)
    check(run_lines(res.stdout) == [], "a dry run ignores --repeat")
    check(not leftovers(r.dir), "no temporary files")
elif args.case == "existing":
    data = r.path("data.h5")
    with h5py.File(data, "w") as f:
        f.attrs["project"] = "pipeline"
        f.create_dataset("other", data=np.arange(12.0).reshape(3, 4))
        f["other"].attrs["units"] = "m/s"
        f.create_dataset("results/old", data=rng.integers(0, 100, size=(5, 7), dtype=np.int32), chunks=(2, 3),
                         compression="gzip")

    def others():
        """Every dataset but /results/C: name -> (dtype, shape, sha256 of its bytes, attributes)."""
        out = {}
        with h5py.File(data, "r") as f:
            def visit(name, obj):
                if isinstance(obj, h5py.Dataset) and name != "results/C":
                    attrs = tuple(sorted((k, repr(v)) for k, v in obj.attrs.items()))
                    out[name] = (str(obj.dtype), obj.shape, hashlib.sha256(obj[()].tobytes()).hexdigest(), attrs)
            f.visititems(visit)
            out["/"] = tuple(sorted((k, repr(v)) for k, v in f.attrs.items()))
        return out

    def root_links():
        with h5py.File(data, "r") as f:
            return sorted(f.keys())

    before = others()
    check(len(before) == 3, f"the file's datasets {sorted(before)}")
    r.run(run_args(data + ":/results/C", "--repeat", "2", "-q"))
    check_product(a, b, read_c(data, "/results/C"), dt)
    check(others() == before, "another dataset of the file changed")
    check(root_links() == ["other", "results"], f"root links {root_links()} (a temporary dataset left?)")
    # C is there now: the first run's rule still holds (no --overwrite: refused, no byte changed).
    digest = hashlib.sha256(open(data, "rb").read()).hexdigest()
    res = r.run(run_args(data + ":/results/C", "--repeat", "2"), expect_ok=False)
    errors = [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]
    check(res.returncode != 0 and len(errors) == 1 and "exists; pass --overwrite" in errors[0],
          f"expected one refusal of the existing C, got {errors}")
    check(run_lines(res.stdout) == ["tessera: warm-up 1 of 1"], "refused in the first run")
    check(hashlib.sha256(open(data, "rb").read()).hexdigest() == digest, "a refused run changed the file")
    b2 = random_matrix(rng, args.k, args.n, dt)
    write(r.path("b.h5"), "/B", b2, mode="w")
    r.run(run_args(data + ":/results/C", "--repeat", "2", "--overwrite", "-q"))
    check_product(a, b2, read_c(data, "/results/C"), dt)
    check(others() == before, "another dataset of the file changed with --overwrite")
    check(root_links() == ["other", "results"], f"root links {root_links()}")
    check(not leftovers(r.dir), "no temporary files")
else:
    argv, expect = {
        # Out of the option's range: a usage error (exit 2) when the command line is parsed.
        "repeat-zero": (["--repeat", "0"], "--repeat: must be a whole number from 1 to 2147483647, not '0'"),
        "repeat-negative": (["--repeat", "-2", "--warmup", "1"], "--repeat: must be a whole number from 1 to"),
        "warmup-negative": (["--repeat", "3", "--warmup", "-1"], "--warmup: must be a whole number from 0 to"),
        "repeat-beta": (["--repeat", "2", "--beta", "0.5", "--overwrite"], "--repeat 2 with --beta 0.5: each run would"),
        # A run after a warm-up added 0.5 times the warm-up's C: C = AB + 0.5(AB + 0.5 C_old), exit 0.
        "warmup-beta": (["--warmup", "1", "--beta", "0.5", "--overwrite"],
                        "--warmup 1 with --beta 0.5: each warm-up run commits C"),
    }[args.case]
    if args.case in ("repeat-beta", "warmup-beta"):
        write(c_file, "/C", random_matrix(rng, args.m, args.n, dt))  # what --beta would read
    before = sorted(os.listdir(r.dir))
    res, codes = ranks_exit(run_args(c_file + ":/C", "--progress", "on", *argv))
    want = 1 if args.case in ("repeat-beta", "warmup-beta") else 2
    for rank, rc in sorted(codes.items()):
        check(rc == want, f"rank {rank} exited {rc}, expected {want}")
    errors = [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]
    check(len(errors) == 1 and expect in errors[0], f"expected one error line saying {expect!r}, got {errors}")
    check("Traceback" not in res.stderr and "terminate called" not in res.stderr, "no stack traces")
    for stage in ("plan:", "reading A", "computing", "tessera: run ", "tessera: warm-up "):
        check(stage not in res.stdout + res.stderr, f"refused after {stage!r}")
    check(sorted(f for f in os.listdir(r.dir) if f != "rc" and not f.startswith("ompi.")) == before,
          f"files appeared: {sorted(os.listdir(r.dir))}")
print("PASS")
