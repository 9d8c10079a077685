"""The report's "energy and network" section: the node reader's figures of a run, each with
its scope and method (jobmon.metrics_doc), so that no renderer shows the devices' energy
or the node's apportioned one as if it were the job's own exact figure. A model, no
rendering; read side, standard library only."""
from ..metrics_doc import figure

KWH = 3.6e6
ROWS = (
    ("gpu_energy_joules", "GPU energy", "J"),
    ("cpu_energy_joules", "CPU package energy", "J"),
    ("dram_energy_joules", "DRAM energy", "J"),
    ("energy_joules", "energy", "J"),
    ("co2e_grams", "CO2e", "gCO2e"),
    ("net_rx_bytes", "network received", "bytes"),
    ("net_tx_bytes", "network sent", "bytes"),
    ("net_rx_packets", "packets received", "count"),
    ("net_tx_packets", "packets sent", "count"),
)
SHARES = {"busy": "by the job's share of the CPU time the node used (idle power shared by "
                  "whatever ran)",
          "capacity": "by the job's share of all the node's CPU time (idle CPUs' energy is "
                      "nobody's)"}
# each energy figure's bound (±, the summary's; docs/energy.md "Its bound") and what it is
ERRORS = {"gpu_energy_joules": "gpu_energy_error_joules",
          "cpu_energy_joules": "cpu_energy_error_joules",
          "dram_energy_joules": "dram_energy_error_joules",
          "energy_joules": "energy_error_joules", "co2e_grams": "co2e_error_grams"}
MODEL = ("; ± timing only: the model (every CPU-second costs the same) is not bounded by "
         "the data, tens of percent for one job")
BOUNDS = {"gpu_energy_joules": "± what the interpolation at the start and the end may "
                               "misplace (the counter's readings either side of each)",
          "cpu_energy_joules": "± the CPU time before the node reader's first reading and "
                               "the readings' interpolation" + MODEL,
          "dram_energy_joules": "± as the CPU package's; DRAM follows memory traffic, not "
                                "CPU time: its model is cruder still",
          "energy_joules": "± the sum of its parts' bounds",
          "co2e_grams": "± from the energy's bound at the run's highest intensity (and its "
                        "steps); the intensity's own error is not in it"}
NO_BOUND = "no ± bound: recorded before jobmon gave one, or a part of it has none"
# summary fields that are not additive over a multi-node run's nodes: the first node's (the
# others' combine is declared: jobmon.metrics.declared)
TEXTS = ("energy_share", "energy_parts", "energy_method", "net_source")


def _row(name, field, value, unit, note=None, scope=None, method=None, error=None):
    f = figure(field) or {}
    out = {"name": name, "field": field, "value": value, "unit": unit,
           "scope": scope or f.get("scope"), "method": method or f.get("method"),
           "note": note if note is not None else f.get("note")}
    if field in ERRORS:
        out["error"] = error
    return out


def _bounded(s, field, note):
    """The note with what the figure's ± bound is, or that it has none."""
    if field not in ERRORS:
        return note
    if s.get(ERRORS[field]) is None:
        how = NO_BOUND
    else:
        how = BOUNDS[field]
        if field == "energy_joules" and ("cpu" in (s.get("energy_parts") or "")
                                         .split(";")[0].split(",")):
            how += " (CPU and DRAM: timing only, their model not bounded)"
    return f"{note}; {how}" if note else how


def _note(s, field):
    if field in ("cpu_energy_joules", "dram_energy_joules") and s.get("energy_share"):
        missing = s.get("energy_missing_seconds")
        return SHARES.get(s["energy_share"], s["energy_share"]) + (
            f"; {missing:g} s of the run not in it (the node reader restarted)"
            if missing else "")
    if field == "gpu_energy_joules":
        shared, samples = s.get("gpu_shared_samples"), s.get("samples")
        if shared:
            return (f"the GPUs' whole energy: another job's processes were on them in "
                    f"{shared} of {samples} samples, and their use is in it")
        if shared == 0:
            return "the job's own: no other process was on its GPUs"
    if field == "energy_joules":
        parts = (s.get("energy_parts") or "").split(";")[0].split(",")
        how = (["GPUs: their devices' counter"] if "gpu" in parts else []) + \
            (["CPU and DRAM: apportioned"] if "cpu" in parts or "dram" in parts else [])
        return "; ".join(how) or None
    if field == "co2e_grams" and s.get("energy_joules"):
        return (f"at {s['co2e_grams'] / (s['energy_joules'] / KWH):.0f} gCO2e/kWh, the "
                "site's carbon intensity")
    return None


# why a run's summary has no energy or network figures where nothing in it says
NO_READER = ("not available: no node reader ran beside the job (`jobmon node-reader`, "
             "docs/node-reader.md)")
NO_ENERGY = "not available: the node reader published no energy reading during the job"


def rows(s, ended=True):
    """[{name, field, value, unit, scope, method, note}] of a run's summary; for an ended
    run, a row saying why energy or network figures are not there ("not available: why"),
    and which part of the energy is missing and why."""
    s = s or {}
    out = [_row(label, field, s[field], unit, _bounded(s, field, _note(s, field)),
                error=s.get(ERRORS.get(field, "")))
           for field, label, unit in ROWS if s.get(field) is not None]
    if s.get("energy_method") and s.get("energy_joules") is not None:
        out.append(_row("energy method", "energy_method", s["energy_method"], ""))
    parts, source = s.get("energy_parts"), s.get("net_source")
    if s.get("energy_joules") is not None:
        if parts and ";" in parts:          # a part is missing: say which and why
            out.append(_row("energy covers", "energy_parts", parts, ""))
    elif ended:
        why = (f"not available: {parts}" if parts else NO_ENERGY if source else NO_READER)
        out.append(_row("energy", "energy_parts", why, ""))
    if source and source != "bpf":
        out.append(_row("network", "net_source", source, ""))
    elif not source and ended and s.get("net_rx_bytes") is None:
        out.append(_row("network", "net_source", NO_READER, ""))
    return out
