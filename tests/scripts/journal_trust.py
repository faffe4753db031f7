"""The rollback journal trusted only when it is provably the file's own (issue 40), as a user and a
co-user meet it on the command line. A run into an existing file d.h5 is killed mid-write
(TESSERA_TEST_KILL_AT_WRITE) so that its journal stays; then:
- d.h5 read as an input, directly, through a symbolic link or through an external link of another
  file: refused, naming the journal and `tessera recover`, d.h5 not written;
- a journal that is not provably its own beside an input (junk, a fifo, world-writable, another
  user's crafted header with original size 0): the input is read untouched, no hang;
- d.h5 edited with h5py (or copied over by another file) after the crash: `recover` refuses, names
  the changed bytes and keeps the journal; `recover --force` puts back the bytes from before the run;
- a flipped byte in a journal record, a flipped bit in its header, an original size of 2^40: refused,
  the journal kept, the file not grown;
- a run into a hard link of d.h5 in another folder undoes the dead run first and writes its C, which
  a later `recover d.h5` leaves alone."""
import hashlib
import os
import shutil
import struct
import subprocess
import zlib

import h5py
import numpy as np

from common import Runner, check, fail, parser, write

p = parser(__doc__)
args = p.parse_args()
r = Runner(args)
rng = np.random.default_rng(40)
a, b = rng.random((19, 13)), rng.random((13, 11))
write(r.path("a.h5"), "A", a)
write(r.path("b.h5"), "B", b)
d, pristine = r.path("d.h5"), r.path("pristine.h5")
with h5py.File(pristine, "w") as f:
    f.attrs["project"] = "pipeline"
    f.create_dataset("x", data=rng.random((13, 11)))
    f.create_group("results").attrs["note"] = "kept"
journal = d + ".tessera-journal"


def digest(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


PRISTINE = digest(pristine)


def tessera(words, status=0, words_out=(), env=None, timeout=60):
    proc = r.run(words, np_=1, direct=True, expect_ok=False, env=env, timeout=timeout)
    check(proc.returncode == status, f"exit {proc.returncode}, expected {status}: {' '.join(words)}")
    for w in words_out:
        check(w in proc.stderr + proc.stdout, f"{w!r} not in the output: {proc.stderr.strip()}")
    return proc


def crash():
    """d.h5 = pristine, then a run into it killed at the first write point that leaves a journal
    and a changed file."""
    for nth in range(4, 60):
        shutil.copyfile(pristine, d)
        if os.path.exists(journal):
            os.remove(journal)
        proc = r.run(["run", "--a", "a.h5:/A", "--b", "b.h5:/B", "--c", "d.h5:/results/C", "--backend", "cpu", "-q"],
                     np_=1, direct=True, expect_ok=False, env={"TESSERA_TEST_KILL_AT_WRITE": str(nth)})
        check(proc.returncode != 0 or not os.path.exists(journal), "a run that exited 0 left a journal")
        if os.path.exists(journal) and digest(d) != PRISTINE:
            print(f"note: killed at write {nth}: a journal and a changed d.h5", flush=True)
            return
    fail("no write point left a journal and a changed file")


run_d = ["run", "--a", "d.h5:/x", "--b", "b.h5:/B", "--c", "out.h5:/C", "--backend", "cpu", "-q"]

# A crashed file read as an input, directly, through a symbolic link, through an external link.
crash()
crashed = digest(d)
tessera(run_d, 1, ["pending journal", "d.h5.tessera-journal", "tessera recover"])
os.symlink("d.h5", r.path("link.h5"))
tessera(["run", "--a", "link.h5:/x", "--b", "b.h5:/B", "--c", "out.h5:/C", "--backend", "cpu", "-q"], 1,
        ["pending journal", "d.h5.tessera-journal"])
with h5py.File(r.path("e.h5"), "w") as f:
    f["x"] = h5py.ExternalLink("d.h5", "/x")
tessera(["run", "--a", "e.h5:/x", "--b", "b.h5:/B", "--c", "out.h5:/C", "--backend", "cpu", "-q"], 1,
        ["external link", "pending journal", "tessera recover"])
check(digest(d) == crashed and os.path.exists(journal), "reading d.h5 changed it or its journal")
check(not os.path.exists(r.path("out.h5")), "a refused run wrote C")
tessera(["recover", "link.h5"], 0, ["restored"])
check(digest(d) == PRISTINE and not os.path.exists(journal), "recover through the symbolic link did not restore d.h5")

# Journals that are not provably the input's own: the input is read untouched, no hang.
a_digest = digest(r.path("a.h5"))
a_journal = r.path("a.h5.tessera-journal")
run_a = ["run", "--a", "a.h5:/A", "--b", "b.h5:/B", "--c", "c.h5:/C", "--backend", "cpu", "-q", "--overwrite"]
with open(a_journal, "wb") as f:
    f.write(b"junk" * 50)
tessera(run_a, 0)
os.remove(a_journal)
os.mkfifo(a_journal)
tessera(run_a, 0, timeout=30)
os.remove(a_journal)
st = os.stat(r.path("a.h5"))
birth = subprocess.run(["stat", "--printf=%.9W", r.path("a.h5")], capture_output=True, text=True).stdout.strip()
sec, _, nsec = birth.partition(".")
# A crafted header, right in every field a co-user can read with stat(1), original size 0.
header = struct.pack("=16sQQQqI4xq256s", b"TESSERA-JRNL-02\0", 0, st.st_ino, st.st_dev, int(sec or 0),
                     int(nsec or 0), 1234, b"attacker")
header += struct.pack("=I", zlib.crc32(header)) + bytes(512 - len(header) - 4)
record = struct.pack("=IIQQ", 3, 0, 0, 0)  # kind, payload, offset, length
record = struct.pack("=II", 0x544A5232, zlib.crc32(record)) + record
with open(a_journal, "wb") as f:
    f.write(header + record)
os.chmod(a_journal, 0o666)
tessera(run_a, 0)
os.remove(a_journal)
if os.geteuid() == 0 and shutil.which("setpriv"):
    os.chmod(r.dir, 0o1777)
    with open(r.path("crafted"), "wb") as f:
        f.write(header + record)
    os.chmod(r.path("crafted"), 0o644)
    subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c",
                    f"umask 022; cat {r.path('crafted')} > {a_journal}"], check=True)
    check(os.stat(a_journal).st_uid == 65534, "setpriv did not make the journal another user's")
    tessera(run_a, 0)
    tessera(["recover", "a.h5"], 1, ["belongs to user 65534", "kept"])
    os.remove(a_journal)
else:
    print("note: not root or no setpriv: the crafted journal of another user is not tried here")
check(digest(r.path("a.h5")) == a_digest and os.path.getsize(r.path("a.h5")) > 0, "an input was written")

# Edited with h5py after the crash, or another file copied over it: refused, the journal kept.
crash()
try:
    with h5py.File(d, "r+") as f:
        f.attrs["edited"] = "after the crash"
        f.create_dataset("added", data=np.arange(5.0))
    how = "h5py"
except OSError:  # the crash left HDF5 metadata h5py cannot open: change a byte the run saved instead
    with open(d, "r+b") as f:
        f.seek(40)
        f.write(b"\x7f")
    how = "a byte"
print(f"note: d.h5 edited with {how} after the crash", flush=True)
edited = digest(d)
tessera(["recover", "d.h5"], 1, ["was changed after", "tessera recover --force", "kept"])
check(digest(d) == edited and os.path.exists(journal), "recover of an edited file changed it or removed the journal")
tessera(["run", "--a", "a.h5:/A", "--b", "b.h5:/B", "--c", "d.h5:/results/C", "--backend", "cpu", "-q"], 1,
        ["was changed after"])
check(digest(d) == edited, "a run into the edited file changed it")
tessera(["recover", "--force", "d.h5"], 0, ["restored"])
check(digest(d) == PRISTINE and not os.path.exists(journal), "recover --force did not put back the bytes")

crash()
shutil.copyfile(r.path("b.h5"), d)  # `cp other.h5 d.h5`: the same inode, another file's bytes
tessera(["recover", "d.h5"], 1, ["was changed after"])
check(digest(d) == digest(r.path("b.h5")) and os.path.exists(journal), "the dead run's pages were pasted over")
os.remove(journal)

# Damaged journals: refused and kept, never "0 bytes restored".
for where, what, words in ((512 + 32 + 9, "a record", "is damaged at byte"), (20, "the header", "damaged header"),
                           (16, "the original size", "fewer than the")):
    crash()
    before = digest(d), os.path.getsize(d)
    with open(journal, "r+b") as f:
        if what == "the original size":  # 2^40, with a checksum that matches it
            raw = bytearray(f.read(512))
            raw[16:24] = struct.pack("=Q", 1 << 40)
            raw[320:324] = struct.pack("=I", zlib.crc32(bytes(raw[:320])))
            f.seek(0)
            f.write(raw)
        else:
            f.seek(where)
            byte = f.read(1)
            f.seek(where)
            f.write(bytes([byte[0] ^ 0x10]))
    tessera(["recover", "d.h5"], 1, [words, "kept"])
    check((digest(d), os.path.getsize(d)) == before and os.path.exists(journal), f"a journal with {what} damaged was applied")
    os.remove(journal)

# A run through a hard link in another folder: the dead run undone first, its own C kept.
crash()
os.makedirs(r.path("elsewhere"))
os.link(d, r.path("elsewhere/alias.h5"))
tessera(["run", "--a", "a.h5:/A", "--b", "b.h5:/B", "--c", "elsewhere/alias.h5:/results/C2", "--backend", "cpu"],
        0, ["restored"])
check(not os.path.exists(journal), "the dead run's journal is still there")
tessera(["recover", "d.h5"], 0, ["no interrupted tessera write to undo"])
with h5py.File(d, "r") as f:
    check("results/C2" in f and np.allclose(f["results/C2"][...], a @ b, rtol=1e-12, atol=1e-12),
          "the run through the hard link lost its C")
    check("results/C" not in f and f.attrs["project"] == "pipeline", "the dead run's C or the file's attributes")
print("ok")
