"""Each part of a job's energy with its method and its bound (J), for the summary: the
GPUs' counter, interpolated at the start and end between the node reader's readings (or
read by the job's own sampler: JOBMON_GPU=nvml), and the CPU package and DRAM energy
apportioned by CPU time. docs/energy.md, "Its bound". Standard library only."""

SHARE = {"busy": "the job's share of the node's busy CPU time",
         "capacity": "the job's share of all the node's CPU time"}


def method(parts, gpu_method, share):
    """energy_method: how each part there is was obtained."""
    how = []
    if "gpu" in parts:
        how.append("gpu: " + (gpu_method or "NVML energy counter"))
    cpu = ",".join(p for p in ("cpu", "dram") if p in parts)
    if cpu:
        how.append(f"{cpu}: RAPL counters x {SHARE.get(share, share or 'the job share')} "
                   "per interval of the node reader")
    return "; ".join(how)


def bounds(parts, out, share, t_end, gpu_method=None):
    """Summary fields: each part's bound, their sum (a worst case: the parts' errors may
    not cancel) where every part has one, and the method. out: the GPU fields so far;
    share: the probe's EnergyShare, finished here."""
    fields = {}
    if share.prev is not None and t_end is not None:
        share.finish(t_end)
    for part in ("cpu", "dram"):
        if part in parts and part in share.errors:
            fields[f"{part}_energy_error_joules"] = round(share.errors[part], 3)
    errors = [out.get("gpu_energy_error_joules") if p == "gpu" else
              fields.get(f"{p}_energy_error_joules") for p in parts]
    if parts and None not in errors:
        fields["energy_error_joules"] = round(sum(errors), 3)
    if parts:
        fields["energy_method"] = method(parts, gpu_method, share.share)[:256]
    return fields
