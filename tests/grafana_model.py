"""What the Grafana tests need from a dashboard, done the way Grafana 11.6 does it:
every query of the panels and variables, the variables substituted as its InfluxDB data
source substitutes them, and the measurements, tags and fields a query names."""
import json
import os
import re

from helpers import REPO

GRAFANA = os.path.join(REPO, "deploy", "grafana")
DASHBOARDS = os.path.join(GRAFANA, "dashboards")
ALL = "$__all"


def load_dashboards():
    return {n: json.load(open(os.path.join(DASHBOARDS, n), encoding="utf-8"))
            for n in sorted(os.listdir(DASHBOARDS)) if n.endswith(".json")}


def panels(dash):
    for p in dash.get("panels", []):
        yield p
        yield from p.get("panels", [])     # a collapsed row keeps its panels


def queries(dash):
    """(where, target) of every panel target and every query variable."""
    for p in panels(dash):
        for t in p.get("targets", []):
            yield f"panel {p['title']!r} {t['refId']}", t
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            yield f"variable {v['name']!r}", {"query": v["query"], "resultFormat": "table"}


# --- substitution, as public/app/plugins/datasource/influxdb does it -----------------------

def regex_escape(value):
    """Grafana's escapeRegex for values put into a /regex/ (a multi or All variable)."""
    return re.sub(r"[\\^$*+?.()|\[\]{}/]", lambda m: "\\" + m.group(0), value)


def interpolate(variable, value, options):
    """A variable's text in a query. value: a string, a list (multi-value), or ALL."""
    if value == ALL or value == [ALL]:
        if variable.get("allValue"):
            return variable["allValue"]               # custom all value: as it is
        value = list(options)
    if not variable.get("multi") and not variable.get("includeAll"):
        return value if isinstance(value, str) else value[0]
    if isinstance(value, str):
        return regex_escape(value)
    escaped = [regex_escape(v) for v in value]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


def round_interval_ms(ms):
    """Grafana's rangeutil.roundInterval."""
    steps = [(10, 1), (15, 10), (35, 20), (75, 50), (150, 100), (350, 200), (750, 500),
             (1500, 1000), (3500, 2000), (7500, 5000), (12500, 10000), (17500, 15000),
             (25000, 20000), (45000, 30000), (90000, 60000), (210000, 120000),
             (450000, 300000), (750000, 600000), (1050000, 900000), (1500000, 1200000),
             (2700000, 1800000), (5400000, 3600000), (9000000, 7200000),
             (16200000, 10800000), (32400000, 21600000), (86400000, 43200000),
             (604800000, 86400000), (1814400000, 604800000), (3628800000, 2592000000)]
    for limit, value in steps:
        if ms <= limit:
            return value
    return 31536000000


def interval_text(ms):
    """Grafana's kbn.secondsToHms / msToHms: 200ms, 5s, 1m, 2h, 1d, 1w, 1y."""
    for unit, size in (("y", 31536000000), ("w", 604800000), ("d", 86400000),
                       ("h", 3600000), ("m", 60000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def interval_ms(from_ms, to_ms, max_data_points=1000, min_interval_ms=1000):
    """$__interval: the range over the panel's data points, rounded, not below the data
    source's time interval (jsonData.timeInterval, 1s in the provisioning)."""
    return max(round_interval_ms((to_ms - from_ms) / max_data_points), min_interval_ms)


def substitute(query, variables, values, options, from_ms, to_ms, min_interval_ms=1000):
    ms = interval_ms(from_ms, to_ms, min_interval_ms=min_interval_ms)
    q = query.replace("$__timeFilter", f"time >= {from_ms}ms and time <= {to_ms}ms")
    q = q.replace("$timeFilter", f"time >= {from_ms}ms and time <= {to_ms}ms")
    q = q.replace("$__interval_ms", str(ms)).replace("$__interval", interval_text(ms))
    for v in sorted(variables, key=lambda v: -len(v["name"])):   # $group before $g...
        name = v["name"]
        if name not in values:
            continue
        text = interpolate(v, values[name], options.get(name, []))
        q = q.replace("${" + name + "}", text).replace("$" + name, text)
    assert "$" not in q.replace("$/", "").replace("^", ""), f"unsubstituted variable in {q}"
    return q


# --- what a query names --------------------------------------------------------------------

def quoted_names(query):
    """Every double-quoted identifier: the measurements, tags and fields it reads (the
    dashboards quote schema names only; aliases are bare words)."""
    return re.findall(r'"([^"]+)"', query)


def measurements(query):
    return re.findall(r'FROM "([^"]+)"', query)
