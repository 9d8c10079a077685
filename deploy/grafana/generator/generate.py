"""Writes jobmon's Grafana dashboards (deploy/grafana/dashboards/*.json) from the views
here, and the table of each one's panels in docs/grafana.md. `.venv/bin/python
deploy/grafana/generator/generate.py` after changing a view or a metric's declared panel
(the views read jobmon.metrics.declared); `--check` exits 1 when a committed file differs
from what the views make (a test runs it)."""
import json
import os
import sys

import view_cluster
import view_job
import view_node
import view_user

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dashboards")
DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(OUT))), "docs", "grafana.md")
HEAD = "| panel | shows | query |\n|---|---|---|\n"
VIEWS = {"jobmon-job.json": view_job, "jobmon-node.json": view_node,
         "jobmon-cluster.json": view_cluster, "jobmon-user.json": view_user}


def render(view):
    return json.dumps(view.build(), indent=2, ensure_ascii=False) + "\n"


def panel_rows(dash):
    """docs/grafana.md's rows of a dashboard: each panel with queries, a collapsed row's
    too: its title, description and queries."""
    out = []
    for p in dash["panels"]:
        for q in [p] + p.get("panels", []):
            if q.get("targets"):
                query = " ; ".join(t["query"].replace("|", "\\|") for t in q["targets"])
                out.append(f"| {q['title']} | {q.get('description', '')} | `{query}` |\n")
    return "".join(out)


def doc(text):
    """docs/grafana.md with each dashboard's table of panels as the views make it."""
    for name, view in VIEWS.items():
        at = text.index(HEAD, text.index(f"(`{name[:-5]}`)")) + len(HEAD)
        end = at
        while text.startswith("|", end):
            end = text.index("\n", end) + 1
        text = text[:at] + panel_rows(view.build()) + text[end:]
    return text


def main(argv):
    stale = []
    with open(DOC, encoding="utf-8") as f:
        current = f.read()
    if doc(current) != current:
        stale.append("docs/grafana.md")
        if "--check" not in argv:
            with open(DOC, "w", encoding="utf-8") as f:
                f.write(doc(current))
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
