"""configs/*.toml drive `tessera run` as written: the test reads the config, creates its input
datasets (small, odd shapes) at the paths it names, relative to a scratch working directory,
runs `tessera run --config FILE` with no other option, and checks C and the report."""
import json
import os
import tomllib

import h5py
import numpy as np

from common import Runner, check, check_product, parser, write

p = parser(__doc__)
p.add_argument("--config", required=True)
args = p.parse_args()
r = Runner(args)
cfg_path = os.path.join(args.source_dir, args.config)
with open(cfg_path, "rb") as f:
    cfg = tomllib.load(f)["run"]


def split(ref):
    file, _, dset = ref.rpartition(":/")
    return os.path.join(r.dir, file), "/" + dset


rng = np.random.default_rng(5)
a = (rng.random((45, 31)) * 2 - 1).astype(np.float32)
b = (rng.random((31, 27)) * 2 - 1).astype(np.float32)
for ref, mat in ((cfg["a"], a), (cfg["b"], b)):
    file, dset = split(ref)
    os.makedirs(os.path.dirname(file), exist_ok=True)
    write(file, dset, mat)
c_file, c_dset = split(cfg["c"])
os.makedirs(os.path.dirname(c_file), exist_ok=True)
if "report" in cfg:
    os.makedirs(os.path.dirname(os.path.join(r.dir, cfg["report"])) or r.dir, exist_ok=True)

res = r.run(["run", "--config", cfg_path])
with h5py.File(c_file, "r") as f:
    c = f[c_dset][...]
check_product(a, b, c, np.float32)
if "report" in cfg:
    rep = json.load(open(os.path.join(r.dir, cfg["report"])))
    check(len(rep["ranks"]) == args.np, "one report entry per rank")
print("PASS")
