"""Inputs stored with the HDF5 filters of h5py and hdf5plugin pipelines (issue #31 item 3): LZF
(h5py's own) and LZ4 (hdf5plugin's), which tessera decodes itself (liblzf, liblz4), and through
Debian's plugins (scripts/setup.sh installs them) bzip2, Blosc and ZFP in its lossless (reversible)
mode, each as A of a `tessera run` whose C is checked against numpy, with no HDF5_PLUGIN_PATH set.
Bitshuffle has no Debian plugin (hdf5plugin's Bitshuffle needs one): said, not tested. With plugin
loading switched off (HDF5_PLUGIN_PRELOAD=::) LZ4 is still read (tessera's own), and a plugin's
filter is refused with the message that names it. A filter whose plugin is not
installed here (or LZF in a build without liblzf and without a plugin) is skipped with a note;
with fewer than two filters readable the test is skipped (exit 77)."""
import os

import h5py
import numpy as np

from common import SKIP, Runner, check, check_product, parser, random_matrix, write

args = parser(__doc__).parse_args()
r = Runner(args)
rng = np.random.default_rng(31)
m, k, n = 47, 38, 29
a = random_matrix(rng, m, k, np.float64)
b = random_matrix(rng, k, n, np.float64)
write(r.path("b.h5"), "/B", b)
os.environ.pop("HDF5_PLUGIN_PATH", None)

try:
    import hdf5plugin
except ImportError:
    hdf5plugin = None
    print("note: python3-hdf5plugin is not installed: only LZF is written")

filters = {"lzf": lambda: {"compression": "lzf"}}
if hdf5plugin is not None:
    filters.update({
        "lz4": lambda: dict(hdf5plugin.LZ4()),
        "bzip2": lambda: dict(hdf5plugin.BZip2()),
        "blosc": lambda: dict(hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE)),
        "zfp": lambda: dict(hdf5plugin.Zfp(reversible=True)),
    })
written = []
with h5py.File(r.path("a.h5"), "w") as f:
    for name, options in filters.items():
        try:
            f.create_dataset(name, data=a, chunks=(16, 19), **options())
            written.append(name)
        except (ValueError, OSError) as e:
            print(f"note: h5py cannot write {name} here ({e}): not tested")
check("lzf" in written, "h5py could not write LZF, its own filter")

tested = []
for name in written:
    with h5py.File(r.path("a.h5"), "r") as f:
        check(np.array_equal(f[name][...], a), f"{name}: h5py does not read back what it wrote (lossy?)")
    res = r.run(["run", "--a", r.path("a.h5") + ":/" + name, "--b", r.path("b.h5") + ":/B", "--c",
                 r.path(f"c_{name}.h5") + ":/C", "--backend", "cpu", "-q"], expect_ok=False)
    if res.returncode != 0 and ("cannot load" in res.stderr or "can't dlopen" in res.stderr):
        print(f"note: {name}: neither an HDF5 plugin nor tessera's decoder for it here: not tested")
        continue
    check(res.returncode == 0, f"{name}: tessera failed: {res.stderr}")
    with h5py.File(r.path(f"c_{name}.h5"), "r") as f:
        check_product(a, b, f["C"][...], np.float64)
    tested.append(name)
print(f"read through their filters and multiplied: {', '.join(tested)}")
if len(tested) < 2:
    print("SKIP: no HDF5 filter plugin is installed, nor liblzf (scripts/setup.sh installs them)")
    raise SystemExit(SKIP)

# Plugins switched off: LZ4 is tessera's own (io/lz4_filter.hpp), read as before.
if "lz4" in tested:
    res = r.run(["run", "--a", r.path("a.h5") + ":/lz4", "--b", r.path("b.h5") + ":/B", "--c",
                 r.path("c_lz4_off.h5") + ":/C", "--backend", "cpu", "-q"], env={"HDF5_PLUGIN_PRELOAD": "::"})
    with h5py.File(r.path("c_lz4_off.h5"), "r") as f:
        check_product(a, b, f["C"][...], np.float64)
    print("ok: lz4 read with plugins switched off")

# Plugins switched off: a plugin's filter is refused by name, before anything is computed.
own = ("lzf", "lz4")  # tessera's own decoders
if not any(name not in own for name in tested):
    print("SKIP: no plugin's filter was readable here to switch off (scripts/setup.sh installs them)")
    raise SystemExit(SKIP)
plugin_filter = next(name for name in tested if name not in own)
res = r.run(["run", "--a", r.path("a.h5") + ":/" + plugin_filter, "--b", r.path("b.h5") + ":/B", "--c",
             r.path("c_off.h5") + ":/C", "--backend", "cpu"], expect_ok=False, env={"HDF5_PLUGIN_PRELOAD": "::"})
errors = [line for line in res.stderr.splitlines() if line.startswith("tessera: error")]
# Refused up front where the first chunk needs the filter; where a filter marked optional left it
# unfiltered (incompressible data), the first chunk that needs it fails its read, naming the cause.
check(res.returncode == 1 and len(errors) == 1 and
      (("is stored with the HDF5 filter" in errors[0] and "install its plugin" in errors[0]) or
       "filter plugins disabled" in errors[0]), f"expected one refusal naming the filter, got {res.stderr!r}")
check(not os.path.exists(r.path("c_off.h5")), "a refused run left an output")
print("PASS")
