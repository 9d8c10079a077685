"""Writes jobmon's Grafana dashboards (deploy/grafana/dashboards/*.json) from the views
here. `python3 deploy/grafana/generator/generate.py` after changing a view; `--check`
exits 1 when a committed file differs from what the views make (a test runs it)."""
import json
import os
import sys

import view_cluster
import view_job
import view_node
import view_user

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dashboards")
VIEWS = {"jobmon-job.json": view_job, "jobmon-node.json": view_node,
         "jobmon-cluster.json": view_cluster, "jobmon-user.json": view_user}


def render(view):
    return json.dumps(view.build(), indent=2, ensure_ascii=False) + "\n"


def main(argv):
    stale = []
    for name, view in VIEWS.items():
        path = os.path.join(OUT, name)
        text = render(view)
        try:
            with open(path, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current == text:
            continue
        stale.append(name)
        if "--check" not in argv:
            os.makedirs(OUT, exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if stale and "--check" in argv:
        print("stale (run deploy/grafana/generator/generate.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
