"""Validation of a dashboard's JSON against the dashboard schema of one Grafana version.

Grafana publishes its dashboard schema as the types of grafana-foundation-sdk (one build per
Grafana version, from the same CUE schema as Grafana itself; a test dependency pinned in
pyproject.toml). Its models read JSON leniently (a key they do not know is dropped), so
the check is a round trip: a dashboard read into the models and written back must keep
every key and value it had -- a misspelt or misplaced key, an option a panel type does not
have, or a nested object of the wrong shape does not survive. On top, what the models do
not enforce: required keys, types of the basic values, enums, unique panel ids, grid
bounds."""
import json
from importlib import metadata

PANEL_TYPES = {"timeseries", "stat", "table", "barchart", "histogram", "piechart", "text",
               "row", "gauge", "bargauge"}
VARIABLE_TYPES = {"query", "adhoc", "constant", "datasource", "interval", "textbox", "custom",
                  "system", "snapshot", "groupby"}
TARGET_KEYS = {"refId", "datasource", "query", "rawQuery", "resultFormat", "alias", "hide"}
RESULT_FORMATS = {"time_series", "table", "logs"}


def sdk_for(version):
    """The foundation SDK's dashboard models, checked to be the build for `version`."""
    installed = metadata.version("grafana-foundation-sdk")
    assert installed.split("!")[-1].startswith(version + "."), \
        f"grafana-foundation-sdk {installed} is not the build for Grafana {version}"
    from grafana_foundation_sdk.cog import encoder, plugins
    from grafana_foundation_sdk.models import dashboard
    plugins.register_default_plugins()
    return dashboard, encoder


def round_trip(dash, version):
    dashboard, encoder = sdk_for(version)
    model = dashboard.Dashboard.from_json(json.loads(json.dumps(dash)))
    return json.loads(json.dumps(model, cls=encoder.JSONEncoder))


def lost(original, back, path="$"):
    """Paths of `original` that the round trip dropped or changed."""
    out = []
    if isinstance(original, dict):
        if not isinstance(back, dict):
            return [f"{path}: became {type(back).__name__}"]
        for k, v in original.items():
            if k not in back:
                out.append(f"{path}.{k}: unknown to the schema")
            else:
                out += lost(v, back[k], f"{path}.{k}")
    elif isinstance(original, list):
        if not isinstance(back, list) or len(back) != len(original):
            return [f"{path}: list changed"]
        for i, (a, b) in enumerate(zip(original, back)):
            out += lost(a, b, f"{path}[{i}]")
    elif original != back:
        out.append(f"{path}: {original!r} became {back!r}")
    return out


def _need(obj, where, **types):
    for key, typ in types.items():
        assert key in obj, f"{where}: no {key!r}"
        assert isinstance(obj[key], typ) and not (typ is int and isinstance(obj[key], bool)), \
            f"{where}.{key}: {obj[key]!r} is not {typ}"


def structure(dash, schema_version):
    _need(dash, "dashboard", uid=str, title=str, schemaVersion=int, panels=list,
          templating=dict, annotations=dict, time=dict, tags=list)
    assert dash["schemaVersion"] == schema_version, dash["schemaVersion"]
    assert 8 <= len(dash["uid"]) <= 40, "uid: 8 to 40 characters"
    ids = set()
    for p in dash["panels"] + [c for p in dash["panels"] for c in p.get("panels", [])]:
        where = f"panel {p.get('title')!r}"
        _need(p, where, id=int, type=str, title=str, gridPos=dict)
        assert p["id"] not in ids, f"{where}: id {p['id']} twice"
        ids.add(p["id"])
        assert p["type"] in PANEL_TYPES, f"{where}: type {p['type']}"
        g = p["gridPos"]
        _need(g, where + ".gridPos", h=int, w=int, x=int, y=int)
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, f"{where}: {g}"
        if p["type"] in ("row", "text"):
            continue
        _need(p, where, datasource=dict, targets=list, fieldConfig=dict, options=dict)
        assert p["datasource"]["type"] == "influxdb" or p["datasource"] == MIXED, where
        assert p["targets"], f"{where}: no query"
        refs = [t["refId"] for t in p["targets"]]
        assert len(set(refs)) == len(refs), f"{where}: refIds {refs}"
        for t in p["targets"]:
            assert set(t) <= TARGET_KEYS, f"{where}: target keys {sorted(set(t) - TARGET_KEYS)}"
            _need(t, where, refId=str, query=str, rawQuery=bool, resultFormat=str)
            assert t["resultFormat"] in RESULT_FORMATS and t["rawQuery"], where
            assert t["datasource"]["type"] == "influxdb", where
    names = set()
    for v in dash["templating"]["list"]:
        _need(v, "variable", name=str, type=str)
        assert v["type"] in VARIABLE_TYPES, v["type"]
        assert v["name"] not in names, f"variable {v['name']} twice"
        names.add(v["name"])
        if v["type"] == "query":
            _need(v, f"variable {v['name']}", query=str, datasource=dict, refresh=int)
            assert v["refresh"] in (1, 2), "refresh: on load (1) or on time change (2)"


MIXED = {"type": "datasource", "uid": "-- Mixed --"}


def as_the_sdk_reads(dash):
    """A copy whose mixed-datasource panels name their targets' one datasource type:
    Grafana reads each target of a "-- Mixed --" panel by its own datasource, the SDK by
    the panel's (all jobmon's targets are InfluxDB)."""
    dash = json.loads(json.dumps(dash))
    for p in dash["panels"]:
        if p.get("datasource") == MIXED:
            [kind] = {t["datasource"]["type"] for t in p["targets"]}
            p["datasource"] = {"type": kind, "uid": "-- Mixed --"}
    return dash


def validate(dash, version):
    structure(dash, schema_version=41 if version == "11.6" else None)
    dash = as_the_sdk_reads(dash)
    dropped = lost(dash, round_trip(dash, version))
    assert not dropped, "not in Grafana %s's dashboard schema:\n  " % version + \
        "\n  ".join(dropped)
