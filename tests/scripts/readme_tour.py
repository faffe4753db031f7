"""The README's five-minute tour, as written: every ```bash block of its "A five-minute tour"
section runs, unchanged, in a scratch folder where `build/` is this build (the README says the
binary is `build/tessera`), and what the text around it promises is checked: verify passes, the
dry run plans, and the run repeated without --overwrite is refused and leaves C as it was."""
import os
import re
import subprocess
import sys

from common import Runner, check, fail, parser

p = parser(__doc__)
args = p.parse_args()
r = Runner(args)

with open(os.path.join(args.source_dir, "README.md"), encoding="utf-8") as f:
    readme = f.read()
section = re.search(r"^## A five-minute tour\n(.*?)(?=^## )", readme, re.S | re.M)
check(section is not None, "README.md has no '## A five-minute tour' section")
blocks = re.findall(r"^```bash\n(.*?)^```", section.group(1), re.S | re.M)
check(len(blocks) >= 4, f"the tour has {len(blocks)} bash blocks, expected 4 or more")

os.symlink(os.path.dirname(os.path.abspath(args.tessera)), r.path("build"))
env = dict(os.environ)
# The tour tells root to add --allow-run-as-root; Open MPI reads the same from these.
env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def run_block(text, expect_ok=True):
    print("$ " + text.strip().replace("\n", "\n$ "), flush=True)
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=r.dir, env=env, capture_output=True,
                          text=True, timeout=240)
    sys.stdout.write(proc.stdout + proc.stderr)
    if expect_ok and proc.returncode != 0:
        fail(f"exit status {proc.returncode}")
    return proc


outputs = [run_block(block) for block in blocks]
everything = "".join(o.stdout + o.stderr for o in outputs)
check("PASSED" in everything, "tessera verify did not pass")
check("dry run:" in everything, "the dry run printed no plan")
check(os.path.isfile(r.path("tour/report.json")), "no tour/report.json")

# "Running the command again is refused (C exists) until you add --overwrite."
run_line = next((line for block in blocks for line in block.splitlines() if " run --a " in line), None)
check(run_line is not None, "the tour has no `tessera run --a ...` line")
with open(r.path("tour/c.h5"), "rb") as f:
    before = f.read()
again = run_block(run_line, expect_ok=False)
check(again.returncode == 1, f"the repeated run exited {again.returncode}, expected 1")
check("--overwrite" in again.stdout + again.stderr, "the refusal does not mention --overwrite")
with open(r.path("tour/c.h5"), "rb") as f:
    check(f.read() == before, "the refused run changed tour/c.h5")
print("ok: the README's tour runs as written")
