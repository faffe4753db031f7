"""Bad input: each case must end within 10 s with one clear message naming the cause, a nonzero
exit on every rank, and no output file (nor temporary leftovers)."""
import atexit
import os
import shutil
import subprocess

import h5py
import numpy as np

from common import Runner, SKIP, check, fail, leftovers, parser, write

p = parser(__doc__)
p.add_argument("--case", required=True)
args = p.parse_args()
r = Runner(args)
rng = np.random.default_rng(1)

A = r.path("a.h5")
B = r.path("b.h5")
write(A, "/A", rng.random((6, 5)))
write(B, "/B", rng.random((5, 4)))
out_dir = r.path("out")
os.makedirs(out_dir)
C = os.path.join(out_dir, "c.h5")


def base(a=f"{A}:/A", b=f"{B}:/B", c=f"{C}:/C"):
    return ["run", "--a", a, "--b", b, "--c", c, "--backend", "cpu"]


cmd = None
expect = None
direct = False
env = None
stream_env = None  # environment for a case run through mpirun
case = args.case
if case == "missing-file":
    cmd, expect = base(a=r.path("nope.h5") + ":/A"), "nope.h5"
elif case == "missing-dataset":
    cmd, expect = base(a=f"{A}:/missing"), "/missing"
elif case == "group-not-dataset":
    with h5py.File(A, "a") as f:
        f.create_group("grp")
    cmd, expect = base(a=f"{A}:/grp"), "/grp"
elif case == "not-2d":
    write(A, "/cube", rng.random((2, 3, 4, 5)))  # (3-D is a batch of matrices: batch_inputs.py)
    cmd, expect = base(a=f"{A}:/cube"), "is 4-D (2x3x4x5); tessera needs a 2-D matrix"
elif case == "unsupported-dtype":
    with h5py.File(A, "a") as f:
        f.create_dataset("strings", data=np.array([[b"x", b"y"], [b"z", b"w"]]))
    cmd, expect = base(a=f"{A}:/strings"), "unsupported type"
elif case == "odd-float16":  # float16 and bfloat16 are read; another 16-bit float is not
    with h5py.File(A, "a") as f:
        t = h5py.h5t.IEEE_F32LE.copy()
        t.set_fields(15, 9, 6, 0, 9)
        t.set_size(2)
        t.set_ebias(31)
        h5py.h5d.create(f.id, b"odd16", t, h5py.h5s.create_simple((6, 5)))
    cmd, expect = base(a=f"{A}:/odd16"), "unsupported type a 16-bit float of 6 exponent and 9 mantissa bits"
elif case == "inner-dims":
    write(B, "/B7", rng.random((7, 4)))
    cmd, expect = base(b=f"{B}:/B7"), "inner dimensions disagree"
elif case == "zero-dim":
    write(A, "/empty", np.zeros((0, 5)))
    cmd, expect = base(a=f"{A}:/empty"), "zero dimension"
elif case == "output-exists":
    write(C, "/C", np.ones((2, 2)))
    cmd, expect = base(), "--overwrite"
elif case == "output-dir-missing":
    cmd, expect = base(c=r.path("no/such/dir/c.h5") + ":/C"), "does not exist"
elif case == "output-dir-not-writable":
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            print("SKIP: running as root without setpriv; cannot make a directory unwritable")
            raise SystemExit(SKIP)
        # Root ignores permissions: run tessera (one process, no launcher) as 'nobody'.
        os.chmod(r.dir, 0o755)
        for f in (A, B):
            os.chmod(f, 0o644)
        os.chmod(out_dir, 0o555)
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", args.tessera] + base()
        env = {"HOME": "/tmp", "TMPDIR": "/tmp", "OMPI_MCA_orte_tmpdir_base": "/tmp"}
    else:
        os.chmod(out_dir, 0o555)
        cmd = base()
    expect = "not writable"
elif case == "corrupt-file":
    with open(A, "wb") as f:
        f.write(os.urandom(4096))
    cmd, expect = base(), "not an HDF5 file"
elif case == "truncated-file":
    big = r.path("big.h5")
    write(big, "/A", rng.random((300, 5)))
    size = os.path.getsize(big)
    with open(big, "r+b") as f:
        f.truncate(size // 2)
    cmd, expect = base(a=f"{big}:/A"), "big.h5"
elif case == "bad-grid-syntax":
    cmd, expect = base() + ["--grid", "2by2"], "invalid --grid"
elif case == "grid-too-big":
    cmd, expect = base() + ["--grid", "3x3"], "needs 9 ranks"
elif case == "unknown-config-key":
    cfg = r.path("bad.toml")
    with open(cfg, "w") as f:
        f.write(f'[run]\na = "{A}:/A"\nb = "{B}:/B"\nc = "{C}:/C"\nbogus_key = 3\n')
    cmd, expect = ["run", "--config", cfg], "bogus_key"
elif case == "output-is-input":
    cmd, expect = base(c=f"{A}:/C"), "also an input file"
elif case == "bad-dataset-ref":
    cmd, expect = base(a=A), "expected FILE:/PATH"
elif case == "unknown-kernel":
    cmd, expect = base() + ["--kernel", "warp9"], "--kernel: 'warp9' is not one of: auto, openblas"
elif case == "unknown-backend":
    cmd, expect = base()[:-2] + ["--backend", "tpu"], "--backend: 'tpu' is not one of: auto, cpu, cuda"
elif case == "report-dir-missing":
    cmd, expect = base() + ["--report", r.path("nodir/r.json")], "report directory"
elif case == "too-large-for-memory":
    # 2^20 x 2^20 float32 = 4 TiB each, declared but never written: a few kB on disk. They declare
    # their own fill value, so tessera would read them (as that value, with a note) were they
    # not too large; without one it refuses them as never written (safety.chunks-never-written).
    for path, name in ((A, "/huge"), (B, "/huge")):
        with h5py.File(path, "a") as f:
            f.create_dataset(name, shape=(2**20, 2**20), dtype="f4", chunks=(1024, 1024), fillvalue=0.0)
    cmd, expect = base(a=f"{A}:/huge", b=f"{B}:/huge"), "of host memory"
elif case == "bad-gpu-memory":
    cmd, expect = base() + ["--gpu-memory", "lots"], "invalid --gpu-memory"
elif case == "bad-dtype":
    cmd, expect = base() + ["--dtype", "f16"], "--dtype: 'f16' is not one of: auto, f32, f64"
elif case == "bad-algorithm":
    cmd, expect = base() + ["--algorithm", "cannon"], "--algorithm: 'cannon' is not one of: auto, panels, summa, ksplit"
elif case == "bad-comm":
    cmd, expect = base() + ["--algorithm", "summa", "--comm", "carrier-pigeon"], "--comm: 'carrier-pigeon' is not one of"
elif case == "summa-verify":
    cmd, expect = base() + ["--algorithm", "summa", "--verify"], "--verify needs --algorithm panels"
elif case == "summa-nccl-on-cpu":
    cmd, expect = base() + ["--algorithm", "summa", "--comm", "nccl"], "--comm nccl needs the cuda backend"
elif case == "cuda-aware-on-cpu":
    cmd, expect = base() + ["--algorithm", "summa", "--comm", "cuda-aware"], "--comm cuda-aware needs the cuda backend"
elif case == "panel-width-with-panels":
    cmd, expect = base() + ["--algorithm", "panels", "--panel-width", "64"], "--panel-width needs --algorithm summa"
elif case == "stream-nonfinite":
    # A streams in 4 pieces; the NaN is in the last one, read while the GEMM already runs.
    nan_a = rng.random((40, 5))
    nan_a[37, 2] = np.nan
    write(A, "/Anan", nan_a)
    cmd, expect, stream_env = base(a=f"{A}:/Anan"), "first at (37, 2)", {"TESSERA_STREAM_CHUNKS": "4"}
elif case == "stream-nonfinite-idle":
    # The same with a rank left idle (a 1x1 grid of 2 ranks): it refuses at the same step as the
    # rank that streamed A (an idle rank once refused earlier: MPI_ERR_TRUNCATE, the job aborted).
    nan_a = rng.random((40, 5))
    nan_a[37, 2] = np.nan
    write(A, "/Anan", nan_a)
    cmd, expect = base(a=f"{A}:/Anan") + ["--grid", "1x1"], "first at (37, 2)"
    stream_env = {"TESSERA_STREAM_CHUNKS": "4"}
elif case in ("staged-nonfinite-a", "staged-nonfinite-b", "ahead-nonfinite-b"):
    # Staged (TESSERA_STAGED=1, pieces of 3 rows): the NaN sits in a late piece of A, or of B, read
    # while C's first rows are already written into the temporary output; no output may appear.
    nan_a, nan_b = rng.random((40, 5)), rng.random((5, 30))
    if case == "staged-nonfinite-a":
        nan_a[37, 2] = np.nan
        expect = "first at (37, 2)"
    elif case == "staged-nonfinite-b":
        nan_b[4, 29] = np.inf
        expect = "first at (4, 29)"
    else:  # in the rows of B read ahead (the first half: rows 0-2)
        nan_b[1, 29] = np.inf
        expect = "first at (1, 29)"
    write(A, "/Anan", nan_a)
    write(B, "/Bnan", nan_b)
    cmd = base(a=f"{A}:/Anan", b=f"{B}:/Bnan") + ["--grid", "1x1"]
    stream_env = {"TESSERA_STREAM_CHUNKS": "4", "TESSERA_STAGED": "1", "TESSERA_STAGE_BYTES": "100"}
    if case == "ahead-nonfinite-b":
        stream_env["TESSERA_READ_AHEAD"] = "force"
elif case == "bad-read-ahead":
    cmd, expect = base(), "TESSERA_READ_AHEAD='yes' is not 0, 1 or force"
    stream_env = {"TESSERA_READ_AHEAD": "yes"}
elif case == "bad-staged":
    cmd, expect = base(), "TESSERA_STAGED='yes' is not 0 or 1"
    stream_env = {"TESSERA_STREAM_CHUNKS": "4", "TESSERA_STAGED": "yes"}
elif case == "bad-mpi-transports":
    cmd, expect = base(), "TESSERA_MPI_TRANSPORTS='shm' is not auto or open-mpi"
    stream_env = {"TESSERA_MPI_TRANSPORTS": "shm"}
elif case == "bad-gpu-early":
    cmd, expect = base(), "TESSERA_GPU_EARLY='yes' is not 0 or 1"
    stream_env = {"TESSERA_GPU_EARLY": "yes"}
elif case == "bad-stage-bytes":
    cmd, expect = base(), "TESSERA_STAGE_BYTES='0'"
    stream_env = {"TESSERA_STREAM_CHUNKS": "4", "TESSERA_STAGED": "1", "TESSERA_STAGE_BYTES": "0"}
elif case == "unknown-subcommand":
    cmd, expect = ["frobnicate"], "unknown subcommand 'frobnicate' (choose: generate, run, verify"
elif case == "verify-zero-vectors":
    # 0 random vectors would check nothing: refused, never reported as PASSED.
    cmd, expect = ["verify", "--a", f"{A}:/A", "--b", f"{B}:/B", "--c", f"{A}:/A", "--vectors", "0"], \
        "--vectors: must be a whole number from 1 to 2147483647, not '0'"
elif case == "verify-beta-c":
    # A C made with beta != 0 holds beta C_old, which is gone: verify says it cannot check it.
    made = r.path("made.h5")
    write(made, "/C", rng.random((6, 4)))
    with h5py.File(made, "a") as f:
        f["/C"].attrs["beta"] = 0.5
        f["/C"].attrs["tessera_version"] = "0.1.0"  # tessera's own C (another file's 'beta' means nothing)
    cmd, expect = ["verify", "--a", f"{A}:/A", "--b", f"{B}:/B", "--c", f"{made}:/C"], "was made with beta = 0.5"
elif case == "generate-integers-empty":
    cmd = ["generate", "--out", f"{C}:/X", "--rows", "2", "--cols", "2", "--dist", "integers", "--low", "0.5",
           "--high", "0.7"]
    expect = "holds no integer"
elif case in ("alpha-empty", "beta-empty", "alpha-nan", "beta-inf", "alpha-garbage", "alpha-overflow"):
    # '' was read as 0 (--alpha '': an all-zero C, exit 0); nan, inf and 1e400 (inf once in a
    # double) were refused only once the job began (exit 1); all are usage errors now (exit 2).
    name, value = {"alpha-empty": ("--alpha", ""), "beta-empty": ("--beta", ""), "alpha-nan": ("--alpha", "nan"),
                   "beta-inf": ("--beta", "inf"), "alpha-garbage": ("--alpha", "1x"),
                   "alpha-overflow": ("--alpha", "1e400")}[case]
    cmd, expect = base() + [name, value], f"{name}: must be a finite number, not '{value}'"
elif case in ("config-alpha-empty", "config-beta-nan"):
    # The same in a config file: `alpha = ""` meant alpha = 0.
    key, value, shown = {"config-alpha-empty": ("alpha", '""', "the string ''"),
                         "config-beta-nan": ("beta", "nan", "'nan'")}[case]
    cfg = r.path("bad.toml")
    with open(cfg, "w") as f:
        f.write(f'[run]\na = "{A}:/A"\nb = "{B}:/B"\nc = "{C}:/C"\nbackend = "cpu"\n{key} = {value}\n')
    cmd, expect = ["run", "--config", cfg], f"bad.toml:6: run.{key}: must be a finite number, not {shown}"
elif case == "verify-alpha-empty":
    # A right C checked against alpha = 0 (as '' was read): FAILED, exit 3, where the option is wrong.
    with h5py.File(A, "r") as fa, h5py.File(B, "r") as fb:
        write(r.path("made.h5"), "/C", fa["/A"][...] @ fb["/B"][...])
    cmd = ["verify", "--a", f"{A}:/A", "--b", f"{B}:/B", "--c", r.path("made.h5") + ":/C", "--alpha", ""]
    expect = "--alpha: must be a finite number, not ''"
elif case in ("generate-rows-negative", "generate-seed-negative", "generate-seed-too-large", "generate-high-inf",
              "bench-seed-negative"):
    # --rows -3 exited 1 (a range error, exit 2 by the README); --seed -1 and --seed 99999999999999999999
    # were taken as 2^64 - 1; --high inf wrote a matrix of inf and nan.
    gen = ["generate", "--out", f"{C}:/X", "--rows", "2", "--cols", "2"]
    cmd, expect = {
        "generate-rows-negative": (gen[:3] + ["--rows", "-3", "--cols", "2"],
                                   "--rows: must be a whole number from 1 to 9223372036854775807"),
        "generate-seed-negative": (gen + ["--seed", "-1"],
                                   "--seed: must be a whole number from 0 to 18446744073709551615"),
        "generate-seed-too-large": (gen + ["--seed", "99999999999999999999"],
                                    "--seed: must be a whole number from 0 to 18446744073709551615 (2^64 - 1), not "
                                    "'99999999999999999999'"),
        "generate-high-inf": (gen + ["--high", "inf"], "--high: must be a finite number, not 'inf'"),
        "bench-seed-negative": (["bench", "--backend", "cpu", "--sizes", "64", "--seed", "-1"],
                                "--seed: must be a whole number"),
    }[case]
elif case in ("generate-wide-row", "generate-too-many-elements"):
    # 4 x 2^40: std::bad_alloc, then a segfault (one row was held whole in memory); 4 x 2^62
    # elements overflow a 64-bit count. Both are refused before anything is written.
    cols, expect = {"generate-wide-row": (2**40, "take 16.00 TiB, but the file system of"),
                    "generate-too-many-elements": (2**62, "more than a file can hold")}[case]
    cmd = ["generate", "--out", f"{C}:/X", "--rows", "4", "--cols", str(cols)]
elif case == "generate-disk-full":
    # A matrix larger than the free space of its file system (a 4 MiB tmpfs) was written until the
    # disk was full; now refused up front, naming both sizes. One that fits is still written.
    if os.geteuid() != 0:
        print("SKIP: mounting a small tmpfs (a small disk) needs root")
        raise SystemExit(SKIP)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", out_dir], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        print("SKIP: cannot mount a tmpfs here: " + mounted.stderr.strip())
        raise SystemExit(SKIP)
    atexit.register(lambda: subprocess.run(["umount", out_dir]))
    small = os.path.join(out_dir, "small.h5")
    r.run(["generate", "--out", f"{small}:/X", "--rows", "300", "--cols", "300", "--dtype", "f64"], np_=1)
    with h5py.File(small, "r") as f:
        check(f["/X"].shape == (300, 300), "the matrix that fits is written")
    cmd = ["generate", "--out", f"{C}:/X", "--rows", "1000", "--cols", "1000", "--dtype", "f64"]
    expect = "--rows 1000 --cols 1000 of float64 take 7.63 MiB, but the file system of"
elif case == "bench-size-too-large":
    # "cannot create std::vector larger than max_size()" (issue 40): the size is refused by name.
    cmd = ["bench", "--backend", "cpu", "--sizes", "99999999999"]
    expect = "bench: size '99999999999' is too large"
elif case == "bad-stream-chunks":
    cmd, expect, stream_env = base(), "TESSERA_STREAM_CHUNKS='lots'", {"TESSERA_STREAM_CHUNKS": "lots"}
else:
    fail(f"unknown case {case}")

if stream_env is not None:
    res = r.run(cmd, expect_ok=False, timeout=60, env=stream_env)
elif env is not None or cmd[0] == "setpriv":
    import subprocess, time
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})}, cwd=r.dir)
    res.seconds = time.monotonic() - t0
    print(res.stdout + res.stderr)
else:
    res = r.run(cmd, expect_ok=False, timeout=60)
check(res.returncode != 0, "must exit nonzero")
# Usage errors (the command line) exit 2, other refusals 1 (docs/usage.md, "Exit status").
# A bad word, shape or size of a run option is refused where it is typed (issue 41): exit 2.
want_code = {"unknown-kernel": 2, "unknown-backend": 2, "bad-dtype": 2, "bad-algorithm": 2, "bad-comm": 2,
             "bad-grid-syntax": 2, "bad-gpu-memory": 2, "unknown-subcommand": 2, "verify-zero-vectors": 2, "verify-beta-c": 1, "generate-integers-empty": 1,
             "alpha-empty": 2, "beta-empty": 2, "alpha-nan": 2, "beta-inf": 2, "alpha-garbage": 2, "alpha-overflow": 2,
             "config-alpha-empty": 2, "config-beta-nan": 2, "verify-alpha-empty": 2, "generate-rows-negative": 2,
             "generate-seed-negative": 2, "generate-seed-too-large": 2, "generate-high-inf": 2,
             "bench-seed-negative": 2, "generate-wide-row": 1, "generate-too-many-elements": 1,
             "generate-disk-full": 1}
if case in want_code:
    check(res.returncode == want_code[case], f"exit {res.returncode}, expected {want_code[case]}")
check(res.seconds < 10, f"took {res.seconds:.1f} s (limit 10 s)")
check(expect in res.stderr, f"stderr must mention {expect!r}")
errors = [l for l in res.stderr.splitlines() if "error" in l.lower()]
check(len(errors) == 1, f"expected exactly one error line, got {len(errors)}")
check("Traceback" not in res.stderr and "terminate called" not in res.stderr, "no stack traces")
if case == "output-exists":
    with h5py.File(C, "r") as f:
        check(f["/C"].shape == (2, 2), "the existing output must be untouched")
else:
    check(not os.path.exists(C), "no output file may be written")
check(not leftovers(out_dir), "no temporary leftovers")
print("PASS")
