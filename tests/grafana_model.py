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
            yield f"variable {v['name']!r}", {"query": v["query"], "resultFormat": "table",
                                              "datasource": v["datasource"]}


# --- substitution, as Grafana 11.6 does it ---------------------------------------------------
# A panel's raw InfluxQL goes through two steps (the datasource's default "backend mode"):
# 1. the browser replaces the dashboard's variables: TemplateSrv.replace /
#    sceneGraph.interpolate with VARIABLE_REGEX (public/app/features/variables/utils.ts);
#    an explicit format (${v:regex}) is the format registry's (grafana/scenes
#    formatRegistry.ts: `regex` is escapeRegex of each value, several as (a|b)); without one,
#    InfluxDatasource.interpolateQueryExpr (public/app/plugins/datasource/influxdb/
#    datasource.ts, as of the 11.4.3/11.5.3/11.6 change "Improve handling of template
#    variables contained in regular expressions"); a custom All value (.*) is put in as it
#    is, whatever the format;
# 2. the Go backend replaces its macros (pkg/tsdb/influxdb/influxql: Query.Build):
#    $timeFilter, $interval, $__interval_ms, $__interval, over the whole text.

VARIABLE_REGEX = re.compile(r"\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]"
                            r"|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}")
# interpolateQueryExpr's regexMatcher: the /regexes/ compared with =~ or !~ in a query
REGEX_IN_QUERY = re.compile(r"(\s*(=|!)~\s*)\/((?![*+?])(?:[^\r\n\[/\\]|\\.|\[(?:[^\r\n\]\\]|"
                            r"\\.)*\])+)\/((?:g(?:im?|mi?)?|i(?:gm?|mg?)?|m(?:gi?|ig?)?)?)")
# JavaScript's parseFloat accepts a number at the start of the text and ignores the rest
_JS_FLOAT = re.compile(r"\s*[+-]?(Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)")


def escape_regex(value):
    r"""@grafana/data escapeRegex: value.replace(/[\\^$*+?.()|[\]{}\/]/g, '\\$&')."""
    return re.sub(r"[\\^$*+?.()|\[\]{}/]", lambda m: "\\" + m.group(0), value)


def _is_number(value):
    return bool(_JS_FLOAT.match(value))


def _escaped(value):
    return escape_regex(value) if isinstance(value, str) else \
        "(" + "|".join(escape_regex(v) for v in value) + ")"


def interpolate_query_expr(value, variable, query):
    """The InfluxDB datasource's formatter for a variable without an explicit format."""
    if isinstance(value, str) and _is_number(value):
        return value                       # "8.1", and "4711.0", and "1/ OR ..." alike
    if variable.get("multi"):
        if isinstance(value, str):
            return value if _is_number(value) else escape_regex(value)
        return "(" + "|".join(escape_regex(v) for v in value) + ")"
    inside = re.compile(r"\/(?:\^)?(.*)(\$" + variable["name"] + r")(.*)(?:\$)?\/")
    for m in REGEX_IN_QUERY.finditer(query):
        if inside.search(m.group(0)):
            return _escaped(value)
    return value if isinstance(value, str) else ",".join(value)


FORMATS = {   # the explicit formats the dashboards' queries use
    "regex": lambda v: _escaped(v[0] if len(v) == 1 and not isinstance(v, str) else v),
}


def replace_variables(query, variables, values, options):
    """Step 1. values: name -> a string, a list (multi-value), or ALL."""
    by_name = {v["name"]: v for v in variables}

    def one(m):
        name = m.group(1) or m.group(2) or m.group(4)
        fmt = m.group(3) or m.group(6)
        variable = by_name.get(name)
        if variable is None or name not in values:
            return m.group(0)                # a macro ($__timeFilter), or not chosen
        value = values[name]
        if value == ALL or value == [ALL]:
            if variable.get("allValue"):
                return variable["allValue"]   # formatted by no one
            value = list(options.get(name, []))
        if fmt:
            return FORMATS[fmt](value)
        return interpolate_query_expr(value, variable, query)
    return VARIABLE_REGEX.sub(one, query)


def backend_macros(query, from_ms, to_ms, ms):
    """Step 2, after the variables: what Grafana's server replaces, in its order."""
    time_filter = f"time >= {from_ms}ms and time <= {to_ms}ms"
    q = query.replace("$timeFilter", time_filter).replace("$__timeFilter", time_filter)
    q = q.replace("$interval", interval_text(ms))
    return q.replace("$__interval_ms", str(ms)).replace("$__interval", interval_text(ms))


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
    """The query InfluxDB receives for a panel (or a variable) with these choices."""
    ms = interval_ms(from_ms, to_ms, min_interval_ms=min_interval_ms)
    q = backend_macros(replace_variables(query, variables, values, options), from_ms, to_ms, ms)
    names = {v["name"] for v in variables}
    left = {m.group(1) or m.group(2) or m.group(4) for m in VARIABLE_REGEX.finditer(q)}
    assert not left & names - set(values), f"unsubstituted variable in {q}"
    return q


# --- what a query names --------------------------------------------------------------------

def quoted_names(query):
    """Every double-quoted identifier: the measurements, tags and fields it reads (the
    dashboards quote schema names only; aliases are bare words)."""
    return re.findall(r'"([^"]+)"', query)


def measurements(query):
    return re.findall(r'FROM "([^"]+)"', query)
