#!/usr/bin/env python3
"""What writing C into an existing HDF5 file costs with the rollback journal (issue #27), against
a new file and against the other way to make such a write crash-safe: copying the file first
(copy-on-write: `cp --reflink=auto`, a full copy where the file system has no reflinks) and
renaming the copy over it after the write.

  python3 scripts/journal_cost.py --tessera build/tessera --dir /path/on/the/disk/to/measure \
      [--sizes-gib 0,1,8] [--n 256] [--repeats 5]

For each existing-file size (0: a 10 KiB file) it makes a file with h5py holding one dataset of
that size plus a few small objects, then times whole `tessera run` processes (1 rank, CPU,
n x n x n float64, C added as a new dataset; the file restored between runs) and reads the
journal's size from the run's debug log; then times `cp --reflink=auto FILE COPY && sync -f` once.
Prints a Markdown table (medians)."""
import argparse
import os
import shutil
import statistics
import subprocess
import time

import h5py
import numpy as np

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--tessera", required=True)
p.add_argument("--dir", required=True)
p.add_argument("--sizes-gib", default="0,1,8")
p.add_argument("--n", type=int, default=256)
p.add_argument("--repeats", type=int, default=5)
args = p.parse_args()
os.makedirs(args.dir, exist_ok=True)
d = args.dir
n = args.n
rng = np.random.default_rng(1)
a, b = os.path.join(d, "jc_a.h5"), os.path.join(d, "jc_b.h5")
with h5py.File(a, "w") as f:
    f["A"] = rng.random((n, n))
with h5py.File(b, "w") as f:
    f["B"] = rng.random((n, n))


def make_existing(path, gib):
    with h5py.File(path, "w") as f:
        f.attrs["project"] = "cost"
        f.create_group("results").create_dataset("old", data=np.arange(100.0))
        if gib > 0:
            rows = int(gib * (1 << 30) / 8 / 4096)
            big = f.create_dataset("big", shape=(rows, 4096), dtype="f8")
            block = rng.random((4096, 4096))
            for r0 in range(0, rows, 4096):
                big[r0:min(rows, r0 + 4096)] = block[:min(rows, r0 + 4096) - r0]
    subprocess.run(["sync", "-f", path])


def timed_run(c_ref):
    cmd = [args.tessera, "run", "--a", a + ":/A", "--b", b + ":/B", "--c", c_ref, "--backend", "cpu", "-vv"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"tessera failed: {proc.stderr}")
    journal = 0
    for line in proc.stderr.splitlines():
        if "journal held" in line:
            journal = int(line.split("journal held ")[1].split()[0])
    return seconds, journal


def drop(path):
    for p_ in (path, path + ".tessera-journal"):
        if os.path.exists(p_):
            os.remove(p_)


rows = []
# A new file: the baseline.
times = []
for _ in range(args.repeats):
    drop(os.path.join(d, "jc_new.h5"))
    times.append(timed_run(os.path.join(d, "jc_new.h5") + ":/C")[0])
drop(os.path.join(d, "jc_new.h5"))
rows.append(("new file", "-", statistics.median(times), "-", "-"))

for gib in [float(x) for x in args.sizes_gib.split(",")]:
    path = os.path.join(d, "jc_existing.h5")
    pristine = os.path.join(d, "jc_pristine.h5")
    make_existing(pristine, gib)
    size = os.path.getsize(pristine)
    times, journals = [], []
    for _ in range(args.repeats):
        # The same bytes each time (a rename keeps the big file's blocks: no copy in the loop).
        drop(path)
        subprocess.run(["cp", "--reflink=auto", pristine, path], check=True)
        subprocess.run(["sync", "-f", path])
        s, j = timed_run(path + ":/results/C")
        times.append(s)
        journals.append(j)
    drop(path)
    t0 = time.monotonic()
    subprocess.run(["cp", "--reflink=auto", pristine, path], check=True)
    subprocess.run(["sync", "-f", path])
    copy = time.monotonic() - t0
    drop(path)
    os.remove(pristine)
    label = "10 KiB" if gib == 0 else f"{gib:g} GiB"
    rows.append((f"existing file, {label} ({size} bytes)", max(journals), statistics.median(times), copy,
                 size))

print(f"| case | journal bytes | tessera run, median of {args.repeats} (s) | copy + sync of the file (s) |")
print("|---|---|---|---|")
for name, journal, t, copy, _ in rows:
    copy_text = f"{copy:.3f}" if isinstance(copy, float) else copy
    print(f"| {name} | {journal} | {t:.3f} | {copy_text} |")
for f_ in (a, b):
    os.remove(f_)
