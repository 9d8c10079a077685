"""The node reader's settings ([node_reader] in the site file; docs/energy.md, docs/network.md):
read by `jobmon node-reader`, never by the jobs, which find what they need in the files it
publishes. Kept apart from the schema (schema.py), which merges them
in."""

SCHEMA = {
    "node_reader": {
        # how a job's share of the node's CPU package and DRAM energy is taken: "busy" (its
        # share of the CPU time the node used: idle power goes to whoever runs) or
        # "capacity" (its share of every CPU's time: idle power is nobody's)
        "energy_share": (str, "busy"),
        "carbon_intensity": (float, 0.0),     # gCO2e per kWh; 0: none
        "carbon_intensity_file": (str, ""),   # a time series the site keeps (TIME,G_PER_KWH)
        "network": (bool, True),              # count each job's network bytes (cgroup v2, BPF)
    },
}
CHOICES = {("node_reader", "energy_share"): ("busy", "capacity")}
NOT_NEGATIVE = {("node_reader", "carbon_intensity")}
ABSOLUTE_PATHS = (("node_reader", "carbon_intensity_file"),)
