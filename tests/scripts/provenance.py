"""Provenance on the report and on C (issue #31 item 5): the working directory, each input's
absolute path, size, modification time and dataset shape / type / storage, the TESSERA_* and
launcher variables in force (and nothing else of the environment), the git id, the Slurm job id,
the options typed. Read back from the JSON report and, with h5py, from C's attributes (its
`provenance` attribute validated against docs/schema/report.schema.json's #/$defs/provenance)."""
import datetime
import json
import os

import h5py
import numpy as np

from common import Runner, check, parser, random_matrix, write

p = parser(__doc__)
args = p.parse_args()
r = Runner(args)
try:
    import jsonschema
except ImportError:
    jsonschema = None
    print("note: python3 lacks jsonschema (Debian: python3-jsonschema): C's provenance attribute is not validated")


def utc_ns(ns):
    t = datetime.datetime.fromtimestamp(ns // 10**9, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns % 10**9:09d}Z"


def check_input(rec, role, path, dataset, shape, dtype, layout, chunk, filters):
    st = os.stat(path)
    want = {"role": role, "reference": os.path.abspath(path) + ":" + dataset, "file": os.path.abspath(path),
            "size_bytes": st.st_size, "modified": utc_ns(st.st_mtime_ns), "shape": list(shape), "dtype": dtype,
            "layout": layout, "chunk": chunk, "filters": filters}
    check(rec == want, f"input {role}: {rec}, expected {want}")


def validate_provenance(block):
    if jsonschema is None:
        return
    with open(os.path.join(args.source_dir, "docs", "schema", "report.schema.json")) as f:
        schema = json.load(f)
    sub = {"$schema": schema["$schema"], "$ref": "#/$defs/provenance", "$defs": schema["$defs"]}
    errors = list(jsonschema.validators.validator_for(schema)(sub).iter_errors(block))
    for e in errors[:10]:
        print(f"  {'/'.join(map(str, e.path)) or '(top)'}: {e.message}")
    check(not errors, "C's provenance attribute does not validate against #/$defs/provenance")
    print("ok: C's provenance attribute is valid")


rng = np.random.default_rng(31)
a_path, b_path, c_path = r.path("a.h5"), r.path("b.h5"), r.path("c.h5")
write(a_path, "/A", random_matrix(rng, 23, 17, np.float64))
write(b_path, "/in/B", random_matrix(rng, 17, 19, np.float32), chunks=(5, 7), compression="gzip")
os.environ.pop("SLURM_JOB_ID", None)  # the second run: outside Slurm
env = {"SLURM_JOB_ID": "424242", "SLURM_JOB_NAME": "provenance-test", "TESSERA_IO_THREADS": "2",
       "PROVENANCE_TEST_UNRELATED": "must not be reported"}
run = ["run", "--a", "a.h5:/A", "--b", b_path + ":/in/B", "--backend", "cpu", "-q"]
r.run(run + ["--c", "c.h5:/C", "--report", "r.json", "--alpha", "2", "--verify", "--repeat", "1"], env=env)

rep = json.load(open(r.path("r.json")))
prov = rep["provenance"]
opts = prov["options"]
check(opts["alpha"] == 2.0 and isinstance(opts["alpha"], float), f"--alpha typed: {opts.get('alpha')!r}")
check(opts["verify"] is True and opts["quiet"] is True, f"flags as booleans: {opts}")
check(opts["repeat"] == 1 and isinstance(opts["repeat"], int), f"--repeat typed: {opts.get('repeat')!r}")
check(opts["backend"] == "cpu" and opts["c"] == "c.h5:/C", f"text options as given: {opts}")
check("beta" not in opts, "only the options given")
check(os.path.realpath(prov["working_directory"]) == os.path.realpath(r.dir), f"cwd {prov['working_directory']}")
check(prov["slurm_job_id"] == "424242", f"slurm job id {prov['slurm_job_id']}")
envs = prov["environment"]
for name, value in [("SLURM_JOB_ID", "424242"), ("SLURM_JOB_NAME", "provenance-test"), ("TESSERA_IO_THREADS", "2"),
                    ("OMPI_COMM_WORLD_SIZE", str(args.np))]:
    check(envs.get(name) == value, f"environment {name}: {envs.get(name)!r}, expected {value!r}")
for name in ("PROVENANCE_TEST_UNRELATED", "PATH", "HOME", "OMPI_MCA_orte_hnp_uri", "PMIX_SERVER_URI4"):
    check(name not in envs, f"{name} is reported")
check(len(json.dumps(envs)) < 4096, f"the environment block is small: {len(json.dumps(envs))} bytes")
inputs = prov["inputs"]
check([x["role"] for x in inputs] == ["a", "b"], f"inputs {inputs}")
check_input(inputs[0], "a", a_path, "/A", (23, 17), "float64", "contiguous", None, [])
check_input(inputs[1], "b", b_path, "/in/B", (17, 19), "float32", "chunked", [5, 7], ["deflate"])

with h5py.File(c_path, "r") as f:
    attrs = dict(f["C"].attrs)
check(attrs["git_id"] == prov["git_id"] and attrs["git_id"] != "", f"git_id {attrs.get('git_id')!r}")
check(attrs["slurm_job_id"] == "424242", f"slurm_job_id {attrs.get('slurm_job_id')!r}")
check(os.path.realpath(attrs["working_directory"]) == os.path.realpath(r.dir), "working_directory attribute")
for role, path in (("a", a_path), ("b", b_path)):
    st = os.stat(path)
    check(attrs[f"input_{role}_bytes"] == st.st_size, f"input_{role}_bytes {attrs.get(f'input_{role}_bytes')}")
    check(attrs[f"input_{role}_modified"] == utc_ns(st.st_mtime_ns), f"input_{role}_modified")
on_c = json.loads(attrs["provenance"])
validate_provenance(on_c)
check(on_c["inputs"] == inputs and on_c["git_id"] == prov["git_id"], "C's provenance: the report's inputs and git id")
check(on_c["options"] == opts and on_c["environment"] == envs, "C's provenance: the report's options and environment")
check("hosts" not in on_c and "gpus" not in on_c, "C's provenance leaves the ranks' hosts and GPUs to the report")
print("ok: report and C agree on the provenance")

# Outside Slurm: no job id, no slurm_job_id attribute. --beta reads C_old: an input too.
r.run(run + ["--c", "c.h5:/C", "--overwrite", "--beta", "1", "--report", "r2.json"], np_=1)
prov = json.load(open(r.path("r2.json")))["provenance"]
check(prov["slurm_job_id"] is None and "SLURM_JOB_ID" not in prov["environment"], "no Slurm job")
check(prov["options"]["beta"] == 1.0 and prov["options"]["overwrite"] is True, f"options {prov['options']}")
check([x["role"] for x in prov["inputs"]] == ["a", "b", "c"], f"inputs {prov['inputs']}")
check(prov["inputs"][2]["file"] == c_path and prov["inputs"][2]["shape"] == [23, 19], f"C_old {prov['inputs'][2]}")
with h5py.File(c_path, "r") as f:
    attrs = dict(f["C"].attrs)
check("slurm_job_id" not in attrs, "slurm_job_id written outside Slurm")
check(attrs["input_c_old_bytes"] == prov["inputs"][2]["size_bytes"], "input_c_old_bytes")
print("PASS")
