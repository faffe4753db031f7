"""Paths another user (or a mistake) can put in tessera's way (issue 40): junk planted beside a
file that a run only reads (read untouched), a journal that someone else owns or may write, fifos and devices given
as inputs, outputs, journals or config files. Each is refused at once by name, with the right exit
status, and no file is written: the inputs stay byte-identical and a refused journal is kept."""
import hashlib
import os
import shutil
import subprocess

import numpy as np

from common import check, parser, Runner, write

p = parser(__doc__)
args = p.parse_args()
r = Runner(args)
rng = np.random.default_rng(40)
write(r.path("a.h5"), "A", rng.random((9, 7)))
write(r.path("b.h5"), "B", rng.random((7, 5)))


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def refused(tessera_args, status, words, timeout=30):
    """tessera_args must end with `status` within `timeout` s (no hang), saying `words` on stderr."""
    p = r.run(tessera_args, np_=1, direct=True, expect_ok=False, timeout=timeout)
    check(p.returncode == status, f"exit {p.returncode}, expected {status}: {' '.join(tessera_args)}")
    for w in words:
        check(w in p.stderr, f"{w!r} not in the message: {p.stderr.strip()}")


run_ab = ["run", "--a", "a.h5:/A", "--b", "b.h5:/B", "--c", "c.h5:/C", "--backend", "cpu", "-q"]
journal = r.path("a.h5.tessera-journal")
before = digest(r.path("a.h5"))

# A file beside an input at its journal's name that is not a journal of it (junk: no header, so no
# run ever wrote the input): the input is read untouched, the file left alone (journal_trust.py has
# the pending journal of a real crash, which is refused).
with open(journal, "wb") as f:
    f.write(b"TSRJ" + bytes(200))  # any bytes: a crafted header would be applied before issue 40
r.run(run_ab, np_=1, direct=True)
check(digest(r.path("a.h5")) == before, "a run that only reads a.h5 changed it")
check(os.path.exists(journal), "the junk beside the input was removed")
r.run(["run", "--dry-run", "--a", "a.h5:/A", "--b", "b.h5:/B"], np_=1, direct=True)
os.remove(r.path("c.h5"))

# The same journal given to recover: world-writable or owned by another user, it is not applied.
os.chmod(journal, 0o666)
refused(["recover", "a.h5"], 1, ["others may write it", "kept"])
check(digest(r.path("a.h5")) == before and os.path.exists(journal), "a world-writable journal was applied")
os.remove(journal)
if os.geteuid() == 0 and shutil.which("setpriv"):
    os.chmod(r.dir, 0o1777)
    subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c",
                    f"umask 022; printf 'TSRJ%0200d' 0 > {journal}"], check=True)
    check(os.stat(journal).st_uid == 65534, "setpriv did not make the journal another user's")
    refused(["recover", "a.h5"], 1, ["belongs to user 65534", "kept"])
    check(digest(r.path("a.h5")) == before and os.path.exists(journal), "another user's journal was applied")
    os.remove(journal)
else:
    print("note: not root or no setpriv: the case of another user's journal is not run here")

# Fifos and devices: refused at once by name, never waited on (a fifo beside an input is not its
# journal: the input is read, and the fifo never opened for a blocking read).
os.mkfifo(journal)
p_fifo = r.run(run_ab, np_=1, direct=True, timeout=30)
os.remove(r.path("c.h5"))
refused(["recover", "a.h5"], 1, ["not a regular file"])
os.remove(journal)
os.mkfifo(r.path("fifo"))
os.mkdir(r.path("folder"))
refused(["run", "--a", "fifo:/A", "--b", "b.h5:/B", "--c", "c.h5:/C", "--backend", "cpu"], 1, ["fifo"])
refused(["run", "--dry-run", "--a", "fifo:/A", "--b", "b.h5:/B"], 1, ["fifo"])
refused(["verify", "--a", "a.h5:/A", "--b", "b.h5:/B", "--c", "fifo:/C"], 1, ["fifo"])
refused(run_ab + ["--config", "fifo"], 2, ["fifo", "config file"])
refused(run_ab + ["--config=/dev/zero"], 2, ["character device"])
refused(["config", "show", "/dev/zero"], 2, ["/dev/zero", "character device"])
refused(["config", "show", "folder"], 2, ["folder", "directory"])
# A folder given as the config (it once said 'basic_filebuf::underflow'), and one that is missing
# (issue 40): exit 2 naming the path, by `config show` and by `--config` alike.
refused(run_ab + ["--config", "folder"], 2, ["folder", "the config file is a directory"])
refused(["config", "show", "typo.toml"], 2, ["typo.toml", "No such file"])
refused(["config", "show", ""], 2, ["the config file's name is empty"])
refused(["config", "show", "fifo"], 2, ["fifo"])
with open(r.path("big.toml"), "w") as f:
    f.write("# padding\n" * 120000)
refused(["config", "show", "big.toml"], 2, ["more than a config file can be"])
check(digest(r.path("a.h5")) == before, "a.h5 changed")

# recover on several files handles each; a missing file or a directory is named, exit nonzero.
refused(["recover", "typo.h5"], 1, ["typo.h5", "No such file"])
refused(["recover", "folder"], 1, ["directory"])
with open(journal, "wb") as f:
    f.write(b"junk")
os.chmod(journal, 0o666)  # refused: world-writable
p2 = r.run(["recover", "a.h5", "typo.h5", "b.h5"], np_=1, direct=True, expect_ok=False)
check(p2.returncode == 1, f"recover of three files with two refusals: exit {p2.returncode}")
check("'b.h5': no interrupted tessera write to undo" in p2.stdout, "recover stopped before b.h5")
check("2 of 3 file(s) not recovered" in p2.stderr, p2.stderr)
os.remove(journal)
print("ok")
