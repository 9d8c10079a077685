"""Record what pyslurm returns for real jobs of the tests' Slurm cluster, beside what
`sacct --json` says of the same jobs: tests/fixtures/pyslurm-22.5/jobs.json.

Needs a pyslurm built for this Slurm (docs/slurm.md, "pyslurm": PyPI has none for 22.05)
importable by `python`; run as root from the repository root:

    .venv/bin/python tests/slurm/record_pyslurm.py PYTHON_WITH_PYSLURM

Every public attribute of pyslurm's database Job, its Steps and their stats is kept (the
backend reads some; a test holds it to them), so the fixture is pyslurm's view, not
jobmon's."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from slurm import Cluster  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   "fixtures", "pyslurm-22.5", "jobs.json")

# run with the cluster's SLURM_CONF, which libslurm reads when pyslurm is imported
DUMP = r"""
import json, sys
import pyslurm
from pyslurm import db

def snapshot(obj, depth=0):
    if isinstance(obj, (str, int, float, bool, type(None))):
        return obj
    if isinstance(obj, dict):
        return {str(k): snapshot(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [snapshot(v, depth + 1) for v in obj]
    if depth > 4:
        return repr(obj)
    out = {"__class__": type(obj).__name__}
    for name in dir(obj):
        if name.startswith("_"):
            continue
        try:
            value = getattr(obj, name)
        except Exception as e:
            out[name] = {"__error__": str(e)}
            continue
        if not callable(value):
            out[name] = snapshot(value, depth + 1)
    return out

jobs = {}
for jid in sys.argv[1:]:
    found = db.Jobs.load(db.JobFilter(ids=[int(jid)]))   # 22.5: no with_duplicates
    jobs[jid] = [snapshot(j) for j in found.values()]
print(json.dumps({"pyslurm": pyslurm.__version__, "jobs": jobs}))
"""

OOM = ("import time\nx = bytearray(1)\nwhile True:\n    x += bytearray(50 << 20)\n"
       "    time.sleep(0.05)\n")
STEP = ("import time\nwhile time.process_time() < 0.3: pass\nx = bytearray(60 << 20)\n"
        "time.sleep(1.5)")


def main(python):
    with Cluster() as c:
        ids = {"steps": c.submit(f'srun /usr/bin/python3 -c "{STEP}"\nsrun sleep 0.2\n'),
               "array": c.submit("sleep 0.5\n", array="0-1"),
               "failed": c.submit("sleep 0.5\nexit 3\n"),
               "oom": c.submit(f"/usr/bin/python3 -c '{OOM}'\n", mem="100M")}
        ids["cancelled"] = c.submit("sleep 60\n")
        ids = {k: str(v) for k, v in ids.items()}
        c.wait_running(ids["cancelled"])
        c.scancel(ids["cancelled"])
        sacct = {}
        for name, jid in ids.items():
            c.wait(jid)
            sacct[jid] = c.sacct_json(jid, "-D")
        r = subprocess.run([python, "-c", DUMP, *ids.values()], env=c.env(),
                           capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"pyslurm dump failed: {r.stderr[-3000:]}")
        got = json.loads(r.stdout)
        version = c.sacct("--version").strip()
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"slurm": version, "pyslurm": got["pyslurm"], "cases": ids,
                   "pyslurm_jobs": got["jobs"], "sacct_json": sacct}, f, indent=1,
                  sort_keys=True)
    print(f"wrote {OUT}: {version}, pyslurm {got['pyslurm']}, jobs {ids}")


if __name__ == "__main__":
    main(sys.argv[1])
