"""Chunked and compressed C (issue 43 item 4): `run --chunk RxC --compression gzip|lz4|zstd|bzip2
[--compression-level L] [--shuffle]`. h5py must read C back with the pipeline asked for (chunk
shape, filters in order, level) and numpy's float64 product must match it; odd shapes and chunks
that cut the ranks' blocks anywhere (a chunk finished by pieces from several ranks), into a new
file and as a new dataset of an existing one (through its journal). gzip, lz4 and zstd are
compressed by tessera's threads (io/chunked_write.hpp; lz4 and zstd in the formats of HDF5's filters
32004 and 32015, so tessera needs no plugin to write them: --no-plugin hides every plugin from
tessera) unless TESSERA_HDF5_DIRECT=0 leaves it to HDF5's pipeline; bzip2 goes through HDF5's filter
plugin. zstd's chunks are decoded here by python3-zstandard (Debian's hdf5plugin has no Zstd, so h5py
cannot), and tessera reads its zstd C back as an input. --case refusals: each is one clear error,
nothing written."""
import json
import os

import h5py
import numpy as np

from common import Runner, check, check_product, leftovers, parser, write

p = parser(__doc__)
p.add_argument("--compression", default="gzip", choices=["gzip", "lz4", "zstd", "bzip2"])
p.add_argument("--case", default="new", choices=["new", "existing", "refusals", "tiled"])
p.add_argument("--hdf5", action="store_true", help="TESSERA_HDF5_DIRECT=0: HDF5 compresses")
p.add_argument("--no-plugin", action="store_true", help="tessera runs with HDF5_PLUGIN_PRELOAD=:: (no plugin)")
args = p.parse_args()

r = Runner(args)
rng = np.random.default_rng(4344)
m, k, n = 67, 19, 53  # odd: chunks 10 x 13 leave partial chunks at both edges
a = (rng.random((m, k)) * 2 - 1).astype(np.float32)
b = (rng.random((k, n)) * 2 - 1).astype(np.float32)
write(r.path("in.h5"), "/A", a)
write(r.path("in.h5"), "/B", b)
out = r.path("out.h5")
env = {"TESSERA_HDF5_DIRECT": "0"} if args.hdf5 else {}
if args.no_plugin:
    env["HDF5_PLUGIN_PRELOAD"] = "::"  # HDF5 loads no filter plugin in tessera's processes
base = ["run", "--a", r.path("in.h5") + ":/A", "--b", r.path("in.h5") + ":/B", "--backend", "cpu", "-q"]

if args.case == "refusals":
    write(r.path("batch.h5"), "/A3", rng.random((2, 5, k)))
    with h5py.File(out, "w") as f:
        f.create_dataset("C", data=np.zeros((m + 3, n)))
    cases = [
        ("level without gzip", ["--compression", "lz4", "--compression-level", "3"], ["--compression-level", "gzip"]),
        ("gzip level 12", ["--compression", "gzip", "--compression-level", "12"], ["--compression-level", "1 to 9"]),
        ("shuffle alone", ["--shuffle"], ["--shuffle", "--compression"]),
        ("chunk 0x5", ["--chunk", "0x5", "--compression", "gzip"], ["--chunk"]),
        ("unknown", ["--compression", "zip"], ["--compression"]),
        ("a window of C", ["--compression", "gzip", "--overwrite", "--cw", out + ":/C[3:, :]"], ["window", "--chunk"]),
        ("a window of C, lz4", ["--compression", "lz4", "--overwrite", "--cw", out + ":/C[3:, :]"], ["window", "--compression"]),
        ("a window of C, shuffle", ["--shuffle", "--compression", "zstd", "--overwrite", "--cw", out + ":/C[3:, :]"],
         ["window", "--shuffle"]),
        ("a batch's C", ["--compression", "gzip", "--ab", r.path("batch.h5") + ":/A3"], ["batch", "contiguous"]),
    ]
    for what, extra, words in cases:
        cmd = list(base)
        if "--cw" in extra:
            at = extra.index("--cw")
            extra = extra[:at] + ["--c", extra[at + 1]]
        else:
            cmd += ["--c", r.path("new.h5") + ":/C"]
        if "--ab" in extra:
            at = extra.index("--ab")
            cmd[2], extra = extra[at + 1], extra[:at]
        res = r.run(cmd + extra, expect_ok=False, env=env)
        err = res.stdout + res.stderr
        lines = [ln for ln in err.splitlines() if "error" in ln.lower()]
        check(res.returncode != 0, f"{what}: the run must fail")
        check(lines, f"{what}: no error line in {err!r}")
        for w in words:
            check(w in lines[0], f"{what}: the message must name {w!r}: {lines[0]}")
        check("Abort" not in err and "MPI_ABORT" not in err, f"{what}: a clean failure on every rank")
        check(not os.path.exists(r.path("new.h5")) and not leftovers(r.dir), f"{what}: something was written")
        print(f"ok: {what}: {lines[0]}")
    print("PASS")
    raise SystemExit(0)

if args.case == "tiled":
    # 60 x 52 in chunks of 10 x 13, on grids of whole chunks (2x1, 3x1, 2x2: rows 30/30 or 20/20/20,
    # columns 52 or 26/26): each rank but 0 sends its chunks alone, not its block, and counts the
    # block's NaN and Inf itself (job/gather.cpp; panels: summa's blocks travel by its own link and
    # rank 0 compresses them). Row 45 (in the last rank row of the grid) overflows float32 in its
    # columns 26-51 only (B's columns 0-25 scaled down): 26 +Inf, the first at (45, 26), which
    # rank 0 must still report from the counts the ranks sent.
    grid = {2: "2x1", 3: "3x1", 4: "2x2"}[args.np]
    m, n = 60, 52
    a = (rng.random((m, k)) * 2 - 1).astype(np.float32)
    a[45, :] = 1e38
    b = (rng.random((k, n)) + 0.25).astype(np.float32)  # 19 terms >= 2.5e37 each: the sum overflows
    b[:, :26] *= np.float32(0.01)  # ... but not in columns 0-25 (<= 2.4e37 a row)
    write(r.path("tiled.h5"), "/A", a)
    write(r.path("tiled.h5"), "/B", b)
    res = r.run(["run", "--a", r.path("tiled.h5") + ":/A", "--b", r.path("tiled.h5") + ":/B", "--backend", "cpu",
                 "-q", "--c", out + ":/C", "--chunk", "10x13", "--compression", args.compression, "--algorithm", "panels",
                 "--grid", grid, "--log-level", "debug", "--report", r.path("report.json")], env=env)
    check(json.load(open(r.path("report.json")))["grid"] == {"rows": int(grid[0]), "cols": int(grid[2])},
          f"the grid is not {grid}")
    stayed = [ln for ln in res.stderr.splitlines() if "the block stayed there" in ln]
    check(len(stayed) == args.np - 1, f"{args.np - 1} blocks must stay on their ranks: {stayed}")
    warned = [ln for ln in res.stderr.splitlines() if "warning" in ln and "non-finite" in ln]
    check(len(warned) == 1 and "26 non-finite" in warned[0] and "(45, 26)" in warned[0],
          f"one warning naming 26 non-finite values from (45, 26): {warned}")
    with h5py.File(out, "r") as f:
        c = f["/C"][...]
    check(c.shape == (m, n) and c.dtype == np.float32, f"C is {c.dtype} {c.shape}")
    check(np.all(np.isposinf(c[45, 26:])) and np.all(np.isfinite(c[45, :26])), "row 45: +Inf from column 26 on")
    rows = [i for i in range(m) if i != 45]
    check_product(a[rows].astype(np.float64), b.astype(np.float64), c[rows], np.float32)
    check_product(a[45:46].astype(np.float64), b[:, :26].astype(np.float64), c[45:46, :26], np.float32)
    check(not leftovers(r.dir), "a temporary file is left")
    print(f"ok: grid {grid}, {len(stayed)} blocks stayed on their ranks: C right, the overflow counted and placed")
    print("PASS")
    raise SystemExit(0)

if args.case == "existing":
    with h5py.File(out, "w") as f:
        f.create_dataset("keep", data=np.arange(5.0)).attrs["units"] = "m"
extra = ["--chunk", "10x13", "--compression", args.compression, "--shuffle"]
level = {"gzip": 6, "zstd": 7}.get(args.compression)
if level:
    extra += ["--compression-level", str(level)]
r.run(base + ["--c", out + ":/results/C", "--report", r.path("report.json")] + extra, env=env)
route = json.load(open(r.path("report.json")))["write"]
if args.compression in ("gzip", "lz4", "zstd") and not args.hdf5:
    # More than one rank: each compresses the chunks inside its own block (rank 0 the rest).
    said = "every rank's threads" if args.np > 1 else "rank 0's threads"
    check(said in route, f"C's route '{route}' does not say {said!r}")
print(f"ok: route {route}")


def zstd_chunks(d):
    """C from its raw chunks, each a zstd frame of the shuffled chunk (HDF5's filters 2 then 32015),
    decoded by python3-zstandard: an implementation other than tessera's."""
    import zstandard
    rows, cols = d.shape
    cr, cc = d.chunks
    es = d.dtype.itemsize
    out = np.full(d.shape, np.nan, dtype=d.dtype)
    for i in range(d.id.get_num_chunks()):
        info = d.id.get_chunk_info(i)
        mask, raw = d.id.read_direct_chunk(info.chunk_offset)
        check(mask == 0, f"chunk {info.chunk_offset}: filters skipped (mask {mask})")
        plain = zstandard.ZstdDecompressor().decompress(raw)
        check(len(plain) == cr * cc * es, f"chunk {info.chunk_offset}: {len(plain)} bytes")
        unshuffled = np.frombuffer(plain, np.uint8).reshape(es, cr * cc).T.copy().view(d.dtype).reshape(cr, cc)
        r0, c0 = info.chunk_offset
        out[r0:r0 + cr, c0:c0 + cc] = unshuffled[:min(cr, rows - r0), :min(cc, cols - c0)]
    return out


with h5py.File(out, "r") as f:
    d = f["/results/C"]
    c = zstd_chunks(d) if args.compression == "zstd" else d[...]
    check(d.chunks == (10, 13), f"chunks {d.chunks}, expected (10, 13)")
    check(d.shuffle, "no shuffle filter")
    plist = d.id.get_create_plist()
    filters = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
    want = {"gzip": 1, "lz4": 32004, "zstd": 32015, "bzip2": 307}[args.compression]
    check(filters == [2, want], f"filters {filters}, expected shuffle (2) then {want}")
    if args.compression == "gzip":
        check(d.compression_opts == 6, f"gzip level {d.compression_opts}, expected 6")
    if args.compression == "zstd":
        check(tuple(plist.get_filter(1)[2]) == (7,), f"zstd's level {plist.get_filter(1)[2]}, expected (7,)")
    if args.compression != "bzip2":
        # Every chunk through the whole pipeline (mask 0): an optional filter HDF5 skipped, or a
        # chunk stored as it was, would read back right through h5py and still be a lie.
        masks = {d.id.read_direct_chunk(d.id.get_chunk_info(i).chunk_offset)[0] for i in range(d.id.get_num_chunks())}
        check(masks == {0}, f"chunk filter masks {masks}, expected 0 for every chunk")
    if args.case == "existing":
        check(np.array_equal(f["keep"][...], np.arange(5.0)) and f["keep"].attrs["units"] == "m",
              "the existing dataset changed")
check(c.dtype == np.float32 and c.shape == (m, n), f"C is {c.dtype} {c.shape}")
rel = check_product(a.astype(np.float64), b.astype(np.float64), c, np.float32)
if args.compression in ("lz4", "zstd"):
    # tessera reads its own C back (its decoder, no plugin): C times the identity is C exactly.
    write(r.path("eye.h5"), "/I", np.eye(n, dtype=np.float32))
    r.run(["run", "--a", out + ":/results/C", "--b", r.path("eye.h5") + ":/I", "--c", r.path("back.h5") + ":/C",
           "--backend", "cpu", "-q"], env=env)
    with h5py.File(r.path("back.h5"), "r") as f:
        check(np.array_equal(f["C"][...], c), "tessera read its compressed C back differently")
    print("ok: tessera read its C back")
check(not os.path.exists(out + ".tessera-journal") and not leftovers(r.dir), "a journal or temporary file is left")
print(f"ok: {args.compression} ({'HDF5' if args.hdf5 else 'tessera'} compresses), {args.case} file, "
      f"{args.np} rank(s): relative error {rel:.3e}")
print("PASS")
