"""Many products in one launch (issue 42, job/launch.hpp): wildcards over the groups of a file and
manifests of [[product]] tables, every product's C checked against numpy (float64), on any rank count.
--case:
  many        --a in.h5:/runs/*/A with odd, prime and K = 1 shapes, B per group; C into a new file
  shared-b    one B for every A; the launch's report (a row per product, totals)
  one         a pattern matching one group
  none        a pattern matching nothing: refused by name, nothing written
  manifest    [[product]] tables with transpose-a/-b, alpha and beta per product; C into an existing
              file (each C committed through its journal, C_old read for beta)
  bad-middle  product 3 of 5 has a B of the wrong shape: named, products 1-2 committed, 4-5 not run
  keep-going  the same with --keep-going: products 1-2 and 4-5 committed, the report names 3
  kill-new    SIGKILL in the middle of the list into a new file: no output file appears
  kill-existing SIGKILL in the middle into an existing file: the products before are there, the
              file readable, the product being written absent (its journal rolled back)
  dry-run     the dry run lists every product with its shape and predicted time, and their sum
  manifest-errors a manifest with three errors: all three reported, exit 2; --manifest with --a"""
import json
import os
import signal
import subprocess
import time

import h5py
import numpy as np

from common import check, check_product, leftovers, parser, Runner, write

p = parser(__doc__)
p.add_argument("--case", required=True)
args = p.parse_args()
r = Runner(args)
rng = np.random.default_rng(42)
IN, OUT = r.path("in.h5"), r.path("out.h5")
SHAPES = [(17, 13, 11), (1, 1, 1), (31, 7, 1), (29, 37, 23), (8, 64, 5)]  # m, n, k per group


def make_groups(shapes, shared_b=False):
    ops = []
    for i, (m, n, k) in enumerate(shapes):
        a = rng.random((m, k)) * 2 - 1
        b = rng.random((k, n)) * 2 - 1
        write(IN, f"/runs/g{i}/A", a)
        if not shared_b:
            write(IN, f"/runs/g{i}/B", b)
        ops.append((a, b))
    return ops


def pattern_cmd(extra=()):
    return ["run", "--a", IN + ":/runs/*/A", "--b", IN + ":/runs/*/B", "--c", OUT + ":/out/*/C",
            "--backend", "cpu", "--report", r.path("report.json")] + list(extra)


def check_outputs(ops, present):
    with h5py.File(OUT, "r") as f:
        for i, (a, b) in enumerate(ops):
            name = f"/out/g{i}/C"
            if i in present:
                check(name in f, f"{name} must be committed")
                check_product(a, b, f[name][...], np.float64)
            else:
                check(name not in f, f"{name} must not be in the file")


def report():
    with open(r.path("report.json")) as f:
        return json.load(f)


if args.case in ("many", "shared-b"):
    shared = args.case == "shared-b"
    if shared:
        ops = make_groups([(m, 9, 6) for m in (5, 1, 12, 7)], shared_b=True)
        b = rng.random((6, 9)) * 2 - 1
        write(IN, "/B", b)
        ops = [(a, b) for a, _ in ops]
        cmd = pattern_cmd()
        cmd[4] = IN + ":/B"
    else:
        ops = make_groups(SHAPES)
        cmd = pattern_cmd()
    res = r.run(cmd)
    check_outputs(ops, set(range(len(ops))))
    rep = report()
    check(rep["kind"] == "products" and rep["totals"]["committed"] == len(ops), "report: every product committed")
    check([row["status"] for row in rep["products"]] == ["committed"] * len(ops), "report: a row per product")
    check(all(row["report"]["shape"]["m"] == ops[i][0].shape[0] for i, row in enumerate(rep["products"])),
          "report: each row's shape")
    check(f"{len(ops)} of {len(ops)} products committed" in res.stdout, "the table's total line")
    check(not leftovers(r.dir), f"no partial files left: {leftovers(r.dir)}")
elif args.case == "one":
    ops = make_groups(SHAPES[:1])
    r.run(pattern_cmd())
    check_outputs(ops, {0})
elif args.case == "none":
    make_groups(SHAPES[:2])
    cmd = pattern_cmd()
    cmd[2] = IN + ":/nothing/*/A"
    cmd[6] = OUT + ":/nothing/*/C"
    res = r.run(cmd, expect_ok=False)
    err = res.stderr
    check(res.returncode == 1, f"exit 1, got {res.returncode}")
    check("matches no dataset" in err and "MPI_ABORT" not in err, "named refusal on every rank")
    check(not os.path.exists(OUT) and not leftovers(r.dir), "nothing written")
elif args.case == "manifest":
    ops = make_groups(SHAPES[:4])
    old = {}
    with h5py.File(OUT, "w") as f:  # an existing file: C_old for the products with beta
        for i, (a, b) in enumerate(ops):
            old[i] = rng.random((a.shape[0], b.shape[1])) * 2 - 1
            f[f"/out/g{i}/C"] = old[i]
        f["/keep"] = np.arange(3.0)
    # product 0: A stored transposed; 1: alpha; 2: beta; 3: both transposes, alpha and beta
    for i in (0, 3):
        write(IN, f"/runs/g{i}/At", ops[i][0].T.copy())
    write(IN, "/runs/g3/Bt", ops[3][1].T.copy())
    lines = []
    spec = [dict(a="At", ta=True), dict(alpha=-2.5), dict(beta=0.5), dict(a="At", b="Bt", ta=True, tb=True,
                                                                          alpha=0.75, beta=-1.0)]
    for i, s in enumerate(spec):
        lines += ["[[product]]", f'a = "{IN}:/runs/g{i}/{s.get("a", "A")}"', f'b = "{IN}:/runs/g{i}/{s.get("b", "B")}"',
                  f'c = "{OUT}:/out/g{i}/C"']
        lines += [f"transpose-a = {'true' if s.get('ta') else 'false'}"] if "ta" in s else []
        lines += ["transpose-b = true"] if s.get("tb") else []
        lines += [f"alpha = {s['alpha']}"] if "alpha" in s else []
        lines += [f"beta = {s['beta']}"] if "beta" in s else []
    with open(r.path("list.toml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    r.run(["run", "--manifest", r.path("list.toml"), "--backend", "cpu", "--overwrite", "--report",
           r.path("report.json")])
    with h5py.File(OUT, "r") as f:
        check(np.array_equal(f["/keep"][...], np.arange(3.0)), "the file's other data untouched")
        for i, s in enumerate(spec):
            a, b = ops[i]
            want = s.get("alpha", 1.0) * (a @ b) + s.get("beta", 0.0) * old[i]
            got = f[f"/out/g{i}/C"][...]
            err = np.abs(got - want).max()
            check(err <= 1e-12 * max(1.0, np.abs(want).max()) * (a.shape[1] + 2), f"product {i}: error {err:.3e}")
    print("ok: op/alpha/beta per product")
elif args.case in ("bad-middle", "keep-going"):
    ops = make_groups(SHAPES)
    with h5py.File(IN, "a") as f:  # product 3's B does not fit its A
        del f["/runs/g2/B"]
        f["/runs/g2/B"] = rng.random((SHAPES[2][2] + 2, SHAPES[2][1]))
    keep = args.case == "keep-going"
    res = r.run(pattern_cmd(["--keep-going"] if keep else []), expect_ok=False)
    err = res.stderr
    check(res.returncode == 1, f"exit 1, got {res.returncode}")
    check("product 3 of 5" in err and "out/g2/C" in err, f"the failed product named: {err}")
    check("MPI_ABORT" not in err, "a clean failure on every rank")
    check_outputs(ops, {0, 1, 3, 4} if keep else {0, 1})
    statuses = [row["status"] for row in report()["products"]]
    want = ["committed", "committed", "failed"] + (["committed", "committed"] if keep else [])
    check(statuses == want, f"report statuses {statuses}, expected {want}")
    check(not leftovers(r.dir), f"no partial files left: {leftovers(r.dir)}")
elif args.case in ("kill-new", "kill-existing"):
    ops = make_groups([(40, 40, 40)] * 6)
    if args.case == "kill-existing":
        with h5py.File(OUT, "w") as f:
            f["/keep"] = np.arange(4.0)
    env = dict(os.environ, TESSERA_TEST_HOLD="compute:2")
    proc = subprocess.Popen(r.cmd(pattern_cmd()), env=env, cwd=r.dir, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    seen = []
    for line in proc.stdout:  # product 3 has begun: products 1-2 are done
        seen.append(line)
        if "product 3 of 6" in line:
            break
    time.sleep(1.0)  # inside product 3's compute (held 2 s; the line may reach us late)
    os.killpg(proc.pid, signal.SIGKILL)
    out = "".join(seen) + proc.communicate()[0]
    print(out)
    if args.case == "kill-new":
        check(not os.path.exists(OUT), "no output file appears before the whole list is committed")
    else:
        # The next tessera command touching the file applies its journal; h5py then reads it.
        for attempt in range(50):  # the killed ranks let go of the file's lock as they die
            if r.run(["recover", OUT], np_=1, expect_ok=False).returncode == 0:
                break
            time.sleep(0.2)
        with h5py.File(OUT, "r") as f:
            check(np.array_equal(f["/keep"][...], np.arange(4.0)), "the file's other data untouched")
            done = [i for i in range(6) if f"/out/g{i}/C" in f]
        print("committed before the kill:", done)
        check(done == [0, 1], f"products 1-2 committed, 3 (killed while computing) not: {done}")
        with h5py.File(OUT, "r") as f:
            for i in done:
                check_product(*ops[i], f[f"/out/g{i}/C"][...], np.float64)
elif args.case == "dry-run":
    make_groups(SHAPES)
    res = r.run(pattern_cmd(["--dry-run"]))
    for i, (m, n, k) in enumerate(SHAPES):
        check(f"/runs/g{i}/A" in res.stdout and f"{m}x{n}x{k}" in res.stdout, f"product {i + 1} listed with its shape")
    rep = report()
    check(rep["kind"] == "products" and len(rep["products"]) == len(SHAPES), "the plan lists every product")
    check(abs(sum(x["predicted_seconds"] for x in rep["products"]) - rep["predicted_seconds"]) < 1e-9, "times summed")
    check(not os.path.exists(OUT), "a dry run writes no C")
elif args.case == "manifest-errors":
    make_groups(SHAPES[:1])
    with open(r.path("bad.toml"), "w") as f:
        f.write(f'[[product]]\na = "{IN}:/runs/g0/A"\nb = "{IN}:/runs/g0/B"\nc = "{OUT}:/C"\ntranpose-a = true\n'
                f'alpha = "two"\n[[product]]\na = "{IN}:/runs/g0/A"\nc = "{OUT}:/C2"\n')
    res = r.run(["run", "--manifest", r.path("bad.toml"), "--backend", "cpu"], expect_ok=False)
    err = res.stderr
    check(res.returncode == 2, f"exit 2, got {res.returncode}")
    for word in ["bad.toml:5", "transpose-a", "bad.toml:6", "finite number", "'b' is missing"]:
        check(word in err, f"{word!r} in the message: {err}")
    check(not os.path.exists(OUT), "nothing written")
    res = r.run(["run", "--manifest", r.path("bad.toml"), "--a", IN + ":/runs/g0/A", "--backend", "cpu"],
                expect_ok=False)
    check(res.returncode == 2 and "--manifest" in res.stderr, "--a with --manifest refused")
else:
    raise SystemExit(f"unknown case {args.case}")
print("PASS")
