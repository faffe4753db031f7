"""Data safety (docs/reliability.md, "Data safety"): nothing a user names is destroyed, no input is
silently filled, every refusal comes before the compute.

A refusal case asserts: the exit status on every rank (each rank's own, recorded by a wrapper),
one `tessera: error:` line naming the cause, refused before anything is read or computed (no
progress line past the plan; each rank's process ended within 2 s), and every file of the test
folder byte-identical afterwards (nothing written, nothing removed, nothing left behind). The
cases that must work (long names, ':' in dataset paths, reports to a pipe, ...) check their result."""
import glob
import hashlib
import json
import os
import shlex
import shutil
import socket
import stat
import subprocess
import time

import h5py
import numpy as np

from common import Runner, SKIP, check, fail, parser, write

p = parser(__doc__)
p.add_argument("--case", required=True)
args = p.parse_args()
r = Runner(args)
rng = np.random.default_rng(12)
D = r.dir
os.makedirs(os.path.join(D, "rc"))


def path(*names):
    return os.path.join(D, *names)


def snapshot():
    """Every entry under the test folder (but the launcher's scratch): file contents, link targets."""
    state = {}
    for root, dirs, files in os.walk(D):
        dirs[:] = [d for d in dirs if d != "rc" and not d.startswith("ompi.")]
        for name in dirs + files:
            full = os.path.join(root, name)
            rel = os.path.relpath(full, D)
            if os.path.islink(full):
                state[rel] = "link:" + os.readlink(full)
            elif os.path.isfile(full):
                with open(full, "rb") as f:
                    state[rel] = hashlib.sha256(f.read()).hexdigest() + f":{oct(os.stat(full).st_mode)}"
            else:
                state[rel] = "dir"
    return state


def tessera(argv, np_=2, env=None, timeout=60):
    """Runs tessera on np_ ranks; each rank records its own exit status and run time."""
    for f in glob.glob(path("rc", "*")):
        os.remove(f)
    wrapper = ('t0=$(date +%s.%N); "$0" "$@"; rc=$?; t1=$(date +%s.%N); '
               'echo "$rc $t0 $t1" > "' + path("rc") + '/rank.${OMPI_COMM_WORLD_RANK:-0}"; exit $rc')
    cmd = shlex.split(args.mpiexec) + ["-np", str(np_), "--mca", "orte_abort_on_non_zero_status", "0",
                                        "bash", "-c", wrapper, args.tessera] + list(argv)
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    full_env = {**os.environ, **(env or {})}
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=D)
    res.seconds = time.monotonic() - t0
    print(res.stdout + res.stderr, flush=True)
    res.ranks = {}
    for f in glob.glob(path("rc", "rank.*")):
        rc, t0s, t1s = open(f).read().split()
        res.ranks[int(f.rsplit(".", 1)[1])] = (int(rc), float(t1s) - float(t0s))
    check(len(res.ranks) == np_, f"every rank must report its exit status, got {sorted(res.ranks)}")
    return res


# A refusal up front ends each rank's process within 2 s here (MPI start-up included); builds
# that run slower as a whole (sanitizers) scale it with TESSERA_TEST_TIME_SCALE (scripts/sanitize.sh).
UP_FRONT_SECONDS = 2.0 * float(os.environ.get("TESSERA_TEST_TIME_SCALE", "1"))


def refused(argv, expect, code=1, np_=2, env=None, absent=()):
    """argv must be refused up front with `expect` in its one error line, exit `code` on every
    rank, and leave every file as it was."""
    before = snapshot()
    res = tessera(argv, np_=np_, env=env)
    for rank, (rc, seconds) in sorted(res.ranks.items()):
        check(rc == code, f"rank {rank} exited {rc}, expected {code}")
        check(seconds < UP_FRONT_SECONDS, f"rank {rank} took {seconds:.2f} s: not refused up front")
    errors = [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]
    check(len(errors) == 1, f"expected one 'tessera: error' line, got {errors}")
    check(expect in errors[0], f"the error must say {expect!r}: {errors[0]!r}")
    check("Traceback" not in res.stderr and "terminate called" not in res.stderr, "no stack traces")
    for stage in ("reading A rows", "computing C", "writing C", "gathering"):
        check(stage not in res.stderr, f"refused after '{stage}' began")
    after = snapshot()
    check(before == after, "files changed: " + ", ".join(sorted(
        k for k in set(before) | set(after) if before.get(k) != after.get(k))))
    for a in absent:
        check(not os.path.lexists(a), f"{a} must not exist")
    print("PASS")
    raise SystemExit(0)


def ok(argv, np_=2, env=None, keep=()):
    res = tessera(argv, np_=np_, env=env)
    for rank, (rc, _) in sorted(res.ranks.items()):
        check(rc == 0, f"rank {rank} exited {rc}")
    check(not [f for f in os.listdir(D) if ".tessera-partial" in f and f not in keep], "no temporary leftovers")
    return res


A = rng.random((40, 30))
B = rng.random((30, 20))
write(path("a.h5"), "/A", A)
write(path("b.h5"), "/B", B)
IO = ["--a", path("a.h5") + ":/A", "--b", path("b.h5") + ":/B"]
RUN = ["run", "--backend", "cpu", "--progress", "on", "-q"]


def run(*extra, c="c.h5"):
    return RUN + IO + ["--c", path(c) + ":/C"] + list(extra)


def c_of(file, dataset="/C"):
    with h5py.File(path(file), "r") as f:
        return f[dataset][...]


def make_report(name):
    """A report as tessera writes it (a run of the same problem)."""
    ok(run("--report", path(name), c="report-run.h5"))
    os.remove(path("report-run.h5"))


case = args.case
# ---- the reproductions ------------------------------------------------------------------
if case == "report-onto-input":
    refused(run("--report", path("a.h5")), "is also an input file", absent=[path("c.h5")])
elif case == "dryrun-report-onto-input":
    refused(["run", "--dry-run", *IO, "--report", path("a.h5")], "is also an input file", np_=1)
elif case == "report-onto-output":
    write(path("c.h5"), "/C", np.ones((2, 2)))  # an earlier result, replaced only by C
    refused(run("--overwrite", "--report", path("c.h5")), "is the output file")
elif case == "report-onto-new-output":
    refused(run("--report", path("c.h5")), "is the output file", absent=[path("c.h5")])
elif case in ("output-onto-elink-source", "output-onto-vds-source"):
    with h5py.File(path("src.h5"), "w") as f:
        f.create_dataset("deep/A", data=A)
    if case == "output-onto-elink-source":
        with h5py.File(path("el.h5"), "w") as f:
            f["EL"] = h5py.ExternalLink("src.h5", "/deep/A")  # relative to el.h5's folder
        a = path("el.h5") + ":/EL"
    else:
        layout = h5py.VirtualLayout(shape=A.shape, dtype="f8")
        layout[:] = h5py.VirtualSource("src.h5", "deep/A", shape=A.shape)
        with h5py.File(path("v.h5"), "w") as f:
            f.create_virtual_dataset("A", layout)
        a = path("v.h5") + ":/A"
    refused(RUN + ["--a", a, "--b", path("b.h5") + ":/B", "--c", path("src.h5") + ":/C", "--overwrite"],
            "src.h5")
elif case == "vds-missing-source":
    for name, rows in (("s1.h5", A[:20]), ("s2.h5", A[20:])):
        write(path(name), "/data", rows)
    layout = h5py.VirtualLayout(shape=A.shape, dtype="f8")
    layout[:20] = h5py.VirtualSource("s1.h5", "data", shape=(20, 30))
    layout[20:] = h5py.VirtualSource("s2.h5", "data", shape=(20, 30))
    with h5py.File(path("v.h5"), "w") as f:
        f.create_virtual_dataset("A", layout)
    ok(RUN + ["--a", path("v.h5") + ":/A", "--b", path("b.h5") + ":/B", "--c", path("c.h5") + ":/C"])
    check(np.allclose(c_of("c.h5"), A @ B), "a complete virtual dataset is read whole")
    os.remove(path("s2.h5"))
    refused(RUN + ["--a", path("v.h5") + ":/A", "--b", path("b.h5") + ":/B", "--c", path("c2.h5") + ":/C"],
            "'s2.h5'", absent=[path("c2.h5")])
elif case == "report-is-directory":
    os.makedirs(path("rdir"))
    refused(run("--report", path("rdir")), "is a directory", absent=[path("c.h5")])
elif case == "report-read-only":
    make_report("r.json")
    os.chmod(path("r.json"), 0o444)
    refused(run("--report", path("r.json")), "read-only", absent=[path("c.h5")])
elif case == "report-disk-full":
    disk = path("full")
    os.makedirs(disk)
    if os.geteuid() != 0:
        print("SKIP: mounting a small tmpfs (a full disk) needs root")
        raise SystemExit(SKIP)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", disk], capture_output=True, text=True)
    if mounted.returncode != 0:
        print("SKIP: cannot mount a tmpfs here: " + mounted.stderr.strip())
        raise SystemExit(SKIP)
    try:
        fd = os.open(os.path.join(disk, "filler"), os.O_WRONLY | os.O_CREAT)  # fill it to the last byte
        try:
            while os.write(fd, b"\0" * 512) > 0:
                pass
        except OSError:
            pass
        os.close(fd)
        refused(run("--report", os.path.join(disk, "r.json")), "No space left on device",
                absent=[path("c.h5"), os.path.join(disk, "r.json")])
    finally:
        subprocess.run(["umount", disk])
elif case == "output-dangling-symlink":
    os.symlink("nowhere.h5", path("c.h5"))
    refused(run(), "which does not exist")
elif case == "long-output-name":
    name = "c" * 230 + ".h5"  # 233 bytes: with the temporary's suffix, past 255
    ok(run(c=name))
    check(np.allclose(c_of(name), A @ B), "C is written under its long name")
    # generate too, and a second run replaces it (--overwrite) through a shortened temporary
    ok(["generate", "--out", path("g" * 240 + ".h5") + ":/G", "--rows", "3", "--cols", "3"], np_=1)
    ok(run("--overwrite", c=name))
elif case == "colon-in-dataset-path":
    with h5py.File(path("a.h5"), "a") as f:
        f.create_dataset("run:/A", data=A)  # group "run:", dataset "A"
    ok(RUN + ["--a", path("a.h5") + ":/run\\:/A", "--b", path("b.h5") + ":/B", "--c", path("c.h5") + ":/out\\:/C"])
    check(np.allclose(c_of("c.h5", "/out:/C"), A @ B), "C is written to dataset '/out:/C'")
elif case == "dryrun-ranks-negative":
    refused(["run", "--dry-run", "--m", "10", "--n", "10", "--k", "10", "--ranks", "-3"], "--ranks", code=2, np_=1)
elif case == "f32-overflow-on-conversion":
    big = A.copy()
    big[7, 3] = 1e300
    write(path("big.h5"), "/A", big)
    before = snapshot()
    res = tessera(RUN + ["--a", path("big.h5") + ":/A", "--b", path("b.h5") + ":/B", "--c", path("c.h5") + ":/C",
                         "--dtype", "f32"])
    errors = [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]
    check(len(errors) == 1 and "overflows float32" in errors[0] and "(7, 3)" in errors[0], f"got {errors}")
    check("NaN/Inf" not in errors[0], "an overflow on conversion is not NaN/Inf in the file")
    check(all(rc == 1 for rc, _ in res.ranks.values()), "exit 1 on every rank")
    check(snapshot() == before, "nothing written")
elif case == "generate-chunk-option":
    refused(["generate", "--out", path("g.h5") + ":/G", "--rows", "4", "--cols", "4", "--chunk", "0x0"],
            "invalid --chunk '0x0'", np_=1, absent=[path("g.h5")])
elif case == "cli-bad-number":
    refused(["run", "--dry-run", "--m", "1e30", "--n", "2", "--k", "2"], "--m", code=2)
elif case == "cli-missing-config":
    refused(["run", "--config", path("nope.toml")], "nope.toml", code=2)
elif case == "cli-bad-config-type":
    with open(path("bad.toml"), "w") as f:
        f.write('[run]\nm = "many"\nn = 2\nk = 2\ndry-run = true\n')
    refused(["run", "--config", path("bad.toml")], "bad.toml:2: run.m: must be a whole number", code=2)
elif case == "cli-duplicate-config-key":
    with open(path("dup.toml"), "w") as f:
        f.write("[run]\nm = 4\nm = 5\nn = 2\nk = 2\ndry-run = true\n")
    refused(["run", "--config", path("dup.toml")], "dup.toml:3: not valid TOML: Error while parsing key-value pair: "
            "cannot redefine existing integer 'm'", code=2)
elif case == "cli-unknown-option":
    refused(["run", "--frobnicate"], "--frobnicate", code=2)
elif case == "cli-help-version":
    for argv in (["--help"], ["run", "--help"], ["--version"]):
        res = ok(argv)
        check(res.stdout.strip() and "error" not in res.stderr, "--help and --version print and exit 0")
elif case == "overflow-warning":
    for name, shape in (("ab.h5", (6, 5)), ("bb.h5", (5, 4))):
        write(path(name), "/M", np.full(shape, 1e30, dtype=np.float32))
    io = ["--a", path("ab.h5") + ":/M", "--b", path("bb.h5") + ":/M"]
    res = ok(["run", "--backend", "cpu", "-q", *io, "--c", path("c.h5") + ":/C", "--report", path("r.json")])
    warned = [l for l in res.stderr.splitlines() if l.startswith("tessera: warning")]
    check(len(warned) == 1 and "24 non-finite" in warned[0], f"one warning with the count: {warned}")
    report = json.load(open(path("r.json")))
    check(any("24 non-finite" in w for w in report["warnings"]), "the report's warnings name the count")
    for algorithm in ("panels", "summa", "ksplit"):
        before = snapshot()
        res = tessera(["run", "--backend", "cpu", "-q", *io, "--c", path("c2.h5") + ":/C", "--fail-on-nonfinite",
                       "--algorithm", algorithm])
        errors = [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]
        check(len(errors) == 1 and "24 non-finite" in errors[0], f"{algorithm}: one error with the count: {errors}")
        check(all(rc == 1 for rc, _ in res.ranks.values()), f"{algorithm}: exit 1 on every rank")
        check(snapshot() == before, f"{algorithm}: nothing written")
# ---- the same classes elsewhere ----------------------------------------------------------------------
elif case == "output-hard-link-to-input":
    os.link(path("a.h5"), path("c.h5"))
    refused(run("--overwrite"), "is also an input file")
elif case == "output-symlink-to-input":
    os.symlink("a.h5", path("c.h5"))
    refused(run("--overwrite"), "symbolic link")
elif case == "report-symlink-to-input":
    os.symlink("a.h5", path("r.json"))
    refused(run("--report", path("r.json")), "symbolic link", absent=[path("c.h5")])
elif case == "report-onto-other-file":
    with open(path("notes.json"), "w") as f:
        f.write('{"mine": [1, 2, 3]}\n')
    refused(run("--report", path("notes.json")), "is not a tessera report", absent=[path("c.h5")])
elif case == "report-replaces-report":
    make_report("r.json")
    ok(run("--report", path("r.json")))
    check(json.load(open(path("r.json")))["output"].endswith("c.h5:/C"), "the new report replaced the old")
elif case == "report-to-pipe":
    res = ok(run("--report", "/dev/stdout"))
    check('"schema": "tessera.report/1"' in res.stdout, "the JSON report went to stdout")
elif case in ("config-as-report", "config-as-output"):
    with open(path("run.toml"), "w") as f:
        f.write(f'[run]\na = "{path("a.h5")}:/A"\nb = "{path("b.h5")}:/B"\nbackend = "cpu"\n')
    if case == "config-as-report":
        refused(["run", "--config", path("run.toml"), "--c", path("c.h5") + ":/C", "--report", path("run.toml")],
                "config file", absent=[path("c.h5")])
    refused(["run", "--config", path("run.toml"), "--c", path("run.toml") + ":/C", "--overwrite"], "config file")
elif case == "input-named-like-a-leftover":
    # An input whose name is that of a leftover temporary of the output (same host, a dead pid):
    # the clean-up of leftovers must not remove it.
    host = socket.gethostname().replace("-", "_").replace("/", "_")[:64]
    odd = path(f"c.h5.tessera-partial-{host}-999999999")
    shutil.copy(path("a.h5"), odd)
    digest = snapshot()[os.path.basename(odd)]
    res = ok(RUN + ["--a", odd + ":/A", "--b", path("b.h5") + ":/B", "--c", path("c.h5") + ":/C"],
             keep=[os.path.basename(odd)])
    check(os.path.exists(odd) and snapshot()[os.path.basename(odd)] == digest, "the input is untouched")
    check(np.allclose(c_of("c.h5"), A @ B), "C is right")
elif case == "verify-vds-missing-source":
    write(path("s1.h5"), "/data", A)
    layout = h5py.VirtualLayout(shape=A.shape, dtype="f8")
    layout[:] = h5py.VirtualSource("s1.h5", "data", shape=A.shape)
    with h5py.File(path("v.h5"), "w") as f:
        f.create_virtual_dataset("C", layout)
    os.remove(path("s1.h5"))
    refused(["verify", *IO, "--c", path("v.h5") + ":/C"], "'s1.h5'")
elif case == "chunks-never-written":
    with h5py.File(path("part.h5"), "w") as f:
        f.create_dataset("A", shape=A.shape, dtype="f8", chunks=(10, 30))[:10] = A[:10]
    refused(RUN + ["--a", path("part.h5") + ":/A", "--b", path("b.h5") + ":/B", "--c", path("c.h5") + ":/C"],
            "3 of its 4 chunks never written", absent=[path("c.h5")])
elif case == "chunks-declared-fill":
    with h5py.File(path("part.h5"), "w") as f:
        f.create_dataset("A", shape=A.shape, dtype="f8", chunks=(10, 30), fillvalue=0.5)[:10] = A[:10]
    res = ok(RUN + ["--a", path("part.h5") + ":/A", "--b", path("b.h5") + ":/B", "--c", path("c.h5") + ":/C"])
    check("declared fill value 0.5" in res.stderr, "a note says which elements are the declared fill value")
    want = np.vstack([A[:10], np.full((30, 30), 0.5)]) @ B
    check(np.allclose(c_of("c.h5"), want), "C is the product with the declared fill value")
elif case == "contiguous-never-written":
    with h5py.File(path("never.h5"), "w") as f:
        f.create_dataset("A", shape=A.shape, dtype="f8")
    refused(RUN + ["--a", path("never.h5") + ":/A", "--b", path("b.h5") + ":/B", "--c", path("c.h5") + ":/C"],
            "never written", absent=[path("c.h5")])
elif case == "external-raw-file-short":
    with open(path("raw.bin"), "wb") as f:
        f.write(A.astype("<f8").tobytes()[:1000])
    with h5py.File(path("ext.h5"), "w") as f:
        f.create_dataset("A", shape=A.shape, dtype="<f8", external=[("raw.bin", 0, A.nbytes)])
    refused(RUN + ["--a", path("ext.h5") + ":/A", "--b", path("b.h5") + ":/B", "--c", path("c.h5") + ":/C"],
            "'raw.bin', which holds 1000 bytes", absent=[path("c.h5")])
elif case == "external-raw-file-as-output":
    with open(path("raw.bin"), "wb") as f:
        f.write(A.astype("<f8").tobytes())
    with h5py.File(path("ext.h5"), "w") as f:
        f.create_dataset("A", shape=A.shape, dtype="<f8", external=[("raw.bin", 0, A.nbytes)])
    refused(RUN + ["--a", path("ext.h5") + ":/A", "--b", path("b.h5") + ":/B", "--c", path("raw.bin") + ":/C",
                   "--overwrite"], "raw.bin")
elif case == "vds-unmapped-region":
    write(path("s1.h5"), "/data", A[:20])
    layout = h5py.VirtualLayout(shape=A.shape, dtype="f8")
    layout[:20] = h5py.VirtualSource("s1.h5", "data", shape=(20, 30))
    with h5py.File(path("v.h5"), "w") as f:
        f.create_virtual_dataset("A", layout)
    refused(RUN + ["--a", path("v.h5") + ":/A", "--b", path("b.h5") + ":/B", "--c", path("c.h5") + ":/C"],
            "600 of its 1200 elements mapped to no source", absent=[path("c.h5")])
elif case == "vds-source-too-small":
    write(path("s1.h5"), "/data", A[:20])
    layout = h5py.VirtualLayout(shape=A.shape, dtype="f8")
    layout[:] = h5py.VirtualSource("s1.h5", "data", shape=A.shape)[:, :]  # declares 40 rows; the file has 20
    with h5py.File(path("v.h5"), "w") as f:
        f.create_virtual_dataset("A", layout)
    refused(RUN + ["--a", path("v.h5") + ":/A", "--b", path("b.h5") + ":/B", "--c", path("c.h5") + ":/C"],
            "beyond the extent of its source", absent=[path("c.h5")])
elif case == "generate-onto-symlink":
    os.symlink("a.h5", path("g.h5"))
    refused(["generate", "--out", path("g.h5") + ":/G", "--rows", "4", "--cols", "4", "--overwrite"],
            "symbolic link", np_=1)
elif case == "generate-onto-existing":
    # Into an existing file the matrix is added beside what it holds; --overwrite replaces that
    # dataset only (it once replaced the whole file, and every other dataset with it); an
    # existing dataset without --overwrite is refused. A generate that died inside the file left
    # its temporary dataset (this host, a dead pid): the next one removes it and says so.
    host = socket.gethostname().replace("-", "_").replace("/", "_")[:64]
    with h5py.File(path("a.h5"), "a") as f:
        f.create_dataset(f"G.tessera-partial-{host}-999999999", data=np.zeros((4, 4)))
    res = ok(["generate", "--out", path("a.h5") + ":/G", "--rows", "4", "--cols", "4"], np_=1)
    check("removed" in res.stderr and "G.tessera-partial" in res.stderr, f"no note of the leftover: {res.stderr!r}")
    with h5py.File(path("a.h5"), "r") as f:
        check(sorted(f) == ["A", "G"], f"the file holds {sorted(f)}, expected A and G only")
    ok(["generate", "--out", path("a.h5") + ":/G", "--rows", "5", "--cols", "3", "--overwrite"], np_=1)
    with h5py.File(path("a.h5"), "r") as f:
        check(f["G"].shape == (5, 3), f"/G is {f['G'].shape}, expected the second one's 5x3")
        check(np.array_equal(f["A"][...], A), "/A changed when /G was generated beside it")
    refused(["generate", "--out", path("a.h5") + ":/A", "--rows", "4", "--cols", "4"], "--overwrite", np_=1)
elif case == "generate-wide-rows":
    # Rows longer than generate's 32 MiB piece (4194304 elements) are written in pieces of a row
    # (one row was held whole: 4 x 2^40 ran out of memory). Element (i, j) is the generator's
    # element i * cols + j whatever the pieces, so a 2 x N matrix read flat equals an N x 2 one,
    # written in blocks of whole rows.
    n = 4194304 + 3
    ok(["generate", "--out", path("wide.h5") + ":/W", "--rows", "2", "--cols", str(n), "--seed", "7"], np_=1)
    ok(["generate", "--out", path("tall.h5") + ":/T", "--rows", str(n), "--cols", "2", "--seed", "7"], np_=1)
    with h5py.File(path("wide.h5"), "r") as w, h5py.File(path("tall.h5"), "r") as t:
        wide, tall = w["W"][...], t["T"][...]
    check(wide.shape == (2, n) and tall.shape == (n, 2), f"shapes {wide.shape}, {tall.shape}")
    check(np.array_equal(wide.ravel(), tall.ravel()), "the wide matrix differs from the tall one read flat")
    check(np.all((wide >= -1) & (wide <= 1)) and len(np.unique(wide[:, -4:])) == 8, "elements in [-1, 1], all drawn")
elif case == "tune-out-onto-input":
    refused(["tune", "--out", path("a.h5")], "is not a tessera tune file", np_=1)
elif case == "bench-json-onto-input":
    refused(["bench", "--backend", "cpu", "--sizes", "64", "--json", path("a.h5")], "is not a tessera bench JSON",
            np_=1)
elif case == "bench-json-and-csv-one-file":
    refused(["bench", "--backend", "cpu", "--sizes", "64", "--json", path("out"), "--csv", path("out")],
            "is the same file as --json", np_=1, absent=[path("out")])
else:
    fail(f"unknown case {case}")
print("PASS")
