"""Small builders for Grafana dashboard JSON (the dashboard JSON model of Grafana 11.6,
schemaVersion 41), InfluxQL targets and template variables. Plain dicts: what is written
here is what Grafana reads, so the generated files stay reviewable.

Conventions the tests hold the queries to: every measurement, tag and field is written in
double quotes and is defined by docs/schema.md; aliases and subquery columns are bare
words; every query reads `$__timeFilter` (or is a SHOW query for a variable).

Two data sources: `datasource` (the job summaries and the shippers' points) and `samples`
(the raw samples). A site that keeps one database points both at it; one that keeps the
samples apart with a shorter retention (InfluxDB 3 has one retention period per
database) points `samples` at theirs. A query picks its data source by what it reads."""
import re

GRAFANA_VERSION = "11.6"
SCHEMA_VERSION = 41
DATASOURCE_UID = "jobmon-influxdb"       # deploy/grafana/provisioning/datasources
SAMPLES_UID = "jobmon-influxdb-samples"
DS = {"type": "influxdb", "uid": "${datasource}"}
DS_SAMPLES = {"type": "influxdb", "uid": "${samples}"}
MIXED = {"type": "datasource", "uid": "-- Mixed --"}     # a panel whose targets differ

SAMPLE, JOB, SHIPPER = "jobmon_sample", "jobmon_job", "jobmon_shipper"
ACTION = "jobmon_action"       # `jobmon act`'s warnings and actions (docs/actions.md)
# the job's filters as regex matches: a multi-value or "All" (.*) variable, and a job
# without the tag (an empty value in InfluxQL) still matches "All"
FILTER_TAGS = ("cluster", "account", "group", "user", "host")
# Every variable is matched as `"tag" =~ /^${tag:regex}$/`, never compared as '$tag': job
# ids, accounts and groups are chosen by job users, and Grafana puts a value into
# '...' unescaped. The explicit :regex format escapes every value; Grafana's default
# InfluxQL interpolation leaves a value that starts like a number (4711.0, or
# `1/ OR "job" =~ /.*`) unescaped even inside a regex.
# job runs that count: not a Slurm step's summary point (job 12345.batch, 12345_7.0: inside
# its job's own; Slurm job ids have no dot, HTCondor's 4711.0 are jobs), and no claim by
# another user (`ownership`, docs/security.md: every end point has it, the shipper writes
# "unconfirmed" and `jobmon reconcile` settles it)
RUNS = "(\"scheduler\" != 'slurm' OR \"job\" !~ /\\./) AND \"ownership\" != 'claim'"
# every summed figure's valid range (docs/metrics.md, "Valid ranges": jobmon's defaults, a
# node of 1,024 cores, 64 TiB, 30 kW and 64 GPUs, runs of up to 31 days; a test keeps them
# equal to core/metrics/ranges.py). A point with a figure outside it is a forged or corrupt
# one: InfluxQL cannot leave out one field of a point, so the whole point is left out
BOUNDS = {"wall_seconds": 2678400, "used_core_hours": 761856, "provisioned_core_hours": 761856,
          "idle_core_hours": 761856, "idle_canonical_core_hours": 24379392,
          "gpu_hours": 47616, "idle_gpu_hours": 47616, "energy_joules": 80352000000,
          "co2e_grams": 44640000, "cpu_efficiency_percent": 2 ** 53,
          "mem_efficiency_percent": 2 ** 53, "oom_kills": 2 ** 53, "cores_allocated": 1024,
          "mem_allocated_bytes": 2 ** 63 - 1}


def in_range(*fields):
    """Each field within its valid range (a point without one of them is left out too)."""
    return " AND ".join(f'"{f}" >= 0 AND "{f}" <= {BOUNDS[f]}' for f in fields)


# an end-of-job point whose wall time and used core-hours a run can have: every one has
# both, a forged one may not
SANE = in_range("wall_seconds", "used_core_hours")
# the tags that tell one job's run apart: two schedds' 4711.0 are two jobs, two users' runs
# of one id two runs (a query grouped by fewer merges them)
ONE_RUN = '"job", "schedd", "run", "user"'


def match(*tags):
    """Each tag equal to its variable's value(s), whatever characters they hold."""
    return " AND ".join(f'"{t}" =~ /^${{{t}:regex}}$/' for t in tags)


def source(query):
    """The data source of a query: the samples' when it reads samples (only: InfluxDB
    3 answers from one database per query)."""
    read = set(re.findall(r'FROM "([a-z_]+)"', query))
    assert read == {SAMPLE} or SAMPLE not in read, f"samples and more in one query: {query}"
    return DS_SAMPLES if read == {SAMPLE} else DS


def target(query, ref="A", fmt="time_series", alias=None):
    t = {"refId": ref, "datasource": source(query), "query": query, "rawQuery": True,
         "resultFormat": fmt}
    if alias:
        t["alias"] = alias
    return t


def table_target(query, ref="A"):
    return target(query, ref, fmt="table")


class Grid:
    """Places panels left to right in Grafana's 24-column grid, wrapping rows."""

    def __init__(self):
        self.x = self.y = self.row_h = 0
        self.next_id = 1

    def place(self, w, h):
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        pos = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def new_id(self):
        self.next_id += 1
        return self.next_id - 1


def panel(grid, kind, title, targets, w=12, h=8, unit=None, description=None, custom=None,
          options=None, overrides=None, links=None, transformations=None, decimals=None,
          thresholds=None, mappings=None, interval=None):
    defaults = {}
    if unit:
        defaults["unit"] = unit
    if decimals is not None:
        defaults["decimals"] = decimals
    if custom:
        defaults["custom"] = custom
    if links:
        defaults["links"] = links
    if mappings:
        defaults["mappings"] = mappings
    if thresholds:
        defaults["thresholds"] = {"mode": "absolute", "steps": [
            {"color": c, "value": v} for v, c in thresholds]}
    sources = {t["datasource"]["uid"] for t in targets}
    p = {"id": grid.new_id(), "type": kind, "title": title,
         "datasource": targets[0]["datasource"] if len(sources) == 1 else MIXED,
         "gridPos": grid.place(w, h), "targets": targets,
         "fieldConfig": {"defaults": defaults, "overrides": overrides or []},
         "options": options or {}}
    if description:
        p["description"] = description
    if transformations:
        p["transformations"] = transformations
    if interval:
        p["interval"] = interval
    return p


def row(grid, title):
    if grid.x:
        grid.x, grid.y, grid.row_h = 0, grid.y + grid.row_h, 0
    p = {"id": grid.new_id(), "type": "row", "title": title, "collapsed": False,
         "gridPos": {"h": 1, "w": 24, "x": 0, "y": grid.y}, "panels": []}
    grid.y += 1
    return p


def text(grid, title, content, w=24, h=3):
    p = {"id": grid.new_id(), "type": "text", "title": title, "gridPos": grid.place(w, h),
         "options": {"mode": "markdown", "content": content}}
    return p


def timeseries(grid, title, targets, unit=None, stack=False, points=False, **kw):
    custom = {"drawStyle": "points" if points else "line", "lineWidth": 1,
              "fillOpacity": 30 if stack else 0, "spanNulls": False, "showPoints": "auto",
              "stacking": {"mode": "normal" if stack else "none", "group": "A"}}
    if points:
        custom["pointSize"] = 6
    return panel(grid, "timeseries", title, targets, unit=unit, custom=custom,
                 options={"legend": {"displayMode": "table", "placement": "right",
                                     "showLegend": True, "calcs": ["max", "mean"]},
                          "tooltip": {"mode": "multi", "sort": "desc"}}, **kw)


def stat(grid, title, targets, unit=None, w=6, h=4, **kw):
    return panel(grid, "stat", title, targets, w=w, h=h, unit=unit,
                 options={"reduceOptions": {"calcs": ["lastNotNull"], "fields": "",
                                            "values": False},
                          "colorMode": "value", "graphMode": "none", "textMode": "auto",
                          "justifyMode": "auto", "orientation": "auto"}, **kw)


def table(grid, title, targets, w=24, h=8, sort=None, hidden=(), **kw):
    overrides = kw.pop("overrides", [])
    for name in hidden:
        overrides.append({"matcher": {"id": "byName", "options": name},
                          "properties": [{"id": "custom.hidden", "value": True}]})
    options = {"showHeader": True, "cellHeight": "sm",
               "footer": {"show": False, "reducer": ["sum"], "countRows": False}}
    if sort:
        options["sortBy"] = [{"displayName": sort, "desc": True}]
    return panel(grid, "table", title, targets, w=w, h=h, options=options,
                 overrides=overrides, custom={"align": "auto", "cellOptions": {"type": "auto"}},
                 **kw)


def unit_override(name, unit):
    return {"matcher": {"id": "byName", "options": name},
            "properties": [{"id": "unit", "value": unit}]}


def barchart(grid, title, targets, unit=None, w=12, h=8, **kw):
    return panel(grid, "barchart", title, targets, w=w, h=h, unit=unit,
                 options={"orientation": "horizontal", "showValue": "auto",
                          "legend": {"displayMode": "list", "placement": "bottom",
                                     "showLegend": True},
                          "tooltip": {"mode": "single", "sort": "none"}},
                 custom={"fillOpacity": 80, "lineWidth": 1}, **kw)


def histogram(grid, title, targets, unit="percent", w=12, h=8, **kw):
    return panel(grid, "histogram", title, targets, w=w, h=h, unit=unit,
                 options={"bucketCount": 10, "combine": False,
                          "legend": {"displayMode": "list", "placement": "bottom",
                                     "showLegend": True}}, **kw)


def piechart(grid, title, targets, unit=None, w=8, h=8, **kw):
    return panel(grid, "piechart", title, targets, w=w, h=h, unit=unit,
                 options={"pieType": "donut", "displayLabels": ["name", "percent"],
                          "reduceOptions": {"calcs": ["sum"], "fields": "", "values": False},
                          "legend": {"displayMode": "list", "placement": "right",
                                     "showLegend": True}}, **kw)


# --- template variables ---------------------------------------------------------------------

def datasource_vars():
    return [{"type": "datasource", "name": name, "label": label, "query": "influxdb",
             "current": {"text": text, "value": uid}, "hide": 0, "refresh": 1, "regex": "",
             "multi": False, "includeAll": False}
            for name, label, text, uid in (
                ("datasource", "InfluxDB", "jobmon InfluxDB", DATASOURCE_UID),
                ("samples", "samples", "jobmon InfluxDB samples", SAMPLES_UID))]


def tag_var(name, where=(), measurement=JOB, multi=True, label=None, description=None):
    """A tag's values; multi-value with an "All" of `.*`, so jobs without the tag match."""
    q = f'SHOW TAG VALUES FROM "{measurement}" WITH KEY = "{name}"'
    if where:
        q += " WHERE " + " AND ".join(where)
    v = {"type": "query", "name": name, "label": label or name, "datasource": source(q),
         "query": q,
         "refresh": 2, "sort": 1, "multi": multi, "includeAll": multi, "hide": 0,
         "regex": "", "options": []}
    if multi:
        v["allValue"] = ".*"
        v["current"] = {"text": ["All"], "value": ["$__all"]}
    else:
        v["current"] = {}
    if description:
        v["description"] = description
    return v


def filter_vars(*names, single=()):
    """The usual chain: each variable's values narrowed by the ones before it."""
    out, before = datasource_vars(), []
    for name in names:
        out.append(tag_var(name, where=before[:], multi=name not in single))
        before.append(match(name))
    return out


def dashboard(uid, title, description, panels, variables, time_from="now-24h", links=(),
              tags=()):
    return {
        "uid": uid, "title": title, "description": description,
        "tags": ["jobmon"] + list(tags), "timezone": "browser", "editable": True,
        "graphTooltip": 1, "schemaVersion": SCHEMA_VERSION, "version": 1, "refresh": "",
        "fiscalYearStartMonth": 0, "liveNow": False, "weekStart": "",
        "time": {"from": time_from, "to": "now"},
        "timepicker": {"refresh_intervals": ["1m", "5m", "15m", "1h"]},
        "templating": {"list": variables},
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts", "type": "dashboard"}]},
        "links": [dict(link, type="link", targetBlank=False, keepTime=True,
                       includeVars=False, asDropdown=False, icon="dashboard", tags=[],
                       tooltip="") for link in links],
        "panels": panels,
    }


def job_link(user="${__data.fields.user:percentencode}", host_field=None):
    """A data link from a table's job column to the single-job dashboard of that job and
    user (ids and names percent-encoded: a job id may hold & or =)."""
    url = (f"/d/jobmon-job/jobmon-job?var-job=${{__data.fields.job:percentencode}}"
           f"&var-user={user}&${{__url_time_range}}")
    if host_field:
        url += f"&var-host=${{__data.fields.{host_field}:percentencode}}"
    return [{"title": "open job ${__data.fields.job}", "url": url}]


def field_links(field, links):
    return {"matcher": {"id": "byName", "options": field},
            "properties": [{"id": "links", "value": links}]}
