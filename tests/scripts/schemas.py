"""Every JSON document tessera writes validates against its JSON Schema under docs/schema/ (issue
#17 item 5): the run report (with its provenance: command line, typed options, version and git
id, libraries, working directory, variables in force, hosts, inputs), the dry-run report,
`bench --json`, `info --json` (one rank's view, and every rank's as an array) and the tune files
under configs/tuned/. Validated with python3-jsonschema."""
import glob
import json
import os

import numpy as np

from common import SKIP, Runner, check, parser, random_matrix, write

try:
    import jsonschema
except ImportError:
    print("SKIP: python3 lacks jsonschema (Debian: python3-jsonschema; scripts/setup.sh installs it)")
    raise SystemExit(SKIP)

p = parser(__doc__)
p.add_argument("--case", required=True, choices=["run", "dry-run", "bench", "info", "tune-files"])
args = p.parse_args()
r = Runner(args)
schema_dir = os.path.join(args.source_dir, "docs", "schema")


def validate(document, name):
    with open(os.path.join(schema_dir, f"{name}.schema.json")) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    errors = sorted(cls(schema).iter_errors(document), key=lambda e: list(e.path))
    for e in errors[:10]:
        print(f"  {'/'.join(map(str, e.path)) or '(top)'}: {e.message}")
    check(not errors, f"the document does not validate against {name}.schema.json")
    print(f"ok: valid {name}")


if args.case in ("run", "dry-run"):
    rng = np.random.default_rng(5)
    write(r.path("a.h5"), "/A", random_matrix(rng, 23, 17, np.float64))
    write(r.path("b.h5"), "/B", random_matrix(rng, 17, 19, np.float64))
    base = ["run", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--backend", "cpu"]

if args.case == "run":
    r.run(base + ["--c", r.path("c.h5") + ":/C", "--report", r.path("r.json"), "-q"])
    rep = json.load(open(r.path("r.json")))
    validate(rep, "report")
    prov = rep["provenance"]
    check(rep["schema"] == "tessera.report/1", f"schema {rep['schema']}")
    check(prov["command_line"][1:3] == ["run", "--a"], f"command line {prov['command_line']}")
    check(prov["options"]["report"] == r.path("r.json") and prov["options"]["backend"] == "cpu",
          f"options {prov['options']}")
    check(prov["git_id"] != "" and prov["tessera_version"] == rep["tessera_version"], "version and git id")
    check(prov["libraries"]["hdf5"] and prov["libraries"]["mpi"] and prov["libraries"]["blas"], "library versions")
    check(prov["hosts"] == sorted(set(x["host"] for x in rep["ranks"]), key=[x["host"] for x in rep["ranks"]].index),
          f"hosts {prov['hosts']}")
    check(prov["slurm_job_id"] == os.environ.get("SLURM_JOB_ID"), "slurm job id")
    check(prov["options"]["quiet"] is True, f"a flag is a boolean: {prov['options'].get('quiet')!r}")
    # --verify adds the verification object; --report - writes the same JSON to stdout.
    res = r.run(base + ["--c", r.path("c2.h5") + ":/C", "--report", "-", "--verify"])
    rep = json.loads(res.stdout)
    validate(rep, "report")
    check(rep["verification"]["passed"] is True, "verification in the report")
    check("total: wall" in res.stderr, "the table goes to stderr with --report -")
elif args.case == "dry-run":
    r.run(base + ["--dry-run", "--ranks", "64", "--report", r.path("d.json")], np_=1)
    d = json.load(open(r.path("d.json")))
    validate(d, "dry-run")
    check([x["role"] for x in d["provenance"]["inputs"]] == ["a", "b"] and
          d["provenance"]["inputs"][0]["shape"] == [23, 17], f"the dry run's inputs {d['provenance']['inputs']}")
    res = r.run(["run", "--dry-run", "--m", "1000", "--n", "900", "--k", "800", "--ranks", "6", "--report", "-"], np_=1)
    d = json.loads(res.stdout)
    validate(d, "dry-run")
    check(d["schema"] == "tessera.dry-run/1" and d["provenance"]["options"]["ranks"] == 6, "schema and options (typed)")
    check(d["provenance"]["inputs"] == [] and d["provenance"]["working_directory"], "no input files, a directory")
elif args.case == "bench":
    r.run(["bench", "--backend", "cpu", "--sizes", "48,33x35x37", "--dtypes", "f32,f64", "--kernels",
           "cpu-naive,openblas", "--repeats", "2", "--json", r.path("b.json")], np_=1)
    b = json.load(open(r.path("b.json")))
    validate(b, "bench")
    check(b["schema"] == "tessera.bench/1" and b["provenance"]["options"]["sizes"] == ["48", "33x35x37"]
          and b["provenance"]["options"]["repeats"] == 2,
          f"bench provenance options {b['provenance']['options']}")
elif args.case == "info":
    one = json.loads(r.run(["info", "--json"], np_=1).stdout)
    validate(one, "info")
    check(isinstance(one, dict) and one["schema"] == "tessera.info/1", "one view")
    many = json.loads(r.run(["info", "--json"]).stdout)
    validate(many, "info")
    check(isinstance(many, list) and len(many) == args.np, "one view per rank")
else:
    files = glob.glob(os.path.join(args.source_dir, "configs", "tuned", "*.json"))
    check(files, "no tune files in configs/tuned")
    for path in files:
        validate(json.load(open(path)), "tune")
print("PASS")
