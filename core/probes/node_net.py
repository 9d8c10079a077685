"""A job's network bytes and packets, from the counters the node reader's BPF program keeps
per cgroup (DIR/network.txt, written by jobmon.node.netcount). Standard library only.

The counters are those of the job's own cgroup v2, which hold every socket made inside
it, in any of its sub-cgroups. A job without a cgroup v2 of its own (cgroup v1, procfs
mode) gets none: its traffic cannot be told from the node's, and the node's interfaces
are never given in its place. docs/network.md.
"""
import os

from .gpu_published import MAX_AGE_PERIODS

FILE = "network.txt"
FORMAT = 1
FIELDS = ("net_rx_bytes", "net_tx_bytes", "net_rx_packets", "net_tx_packets")


class Counts:
    """One published file: its header, and the line of one cgroup found when asked."""

    def __init__(self, data):
        import json   # here: jobmon.metrics imports this module on every job's start
        end = data.find(b"\n")
        self.head = json.loads(data[:end if end >= 0 else len(data)])
        if not isinstance(self.head, dict) or self.head.get("format") != FORMAT:
            raise ValueError(f"not a format {FORMAT} network counter file")
        self.data = data

    def of(self, key):
        """The counters of the cgroup whose line starts with key, or None if it has none."""
        i = self.data.find(key)
        if i < 0:
            return None
        line = self.data[i + len(key):self.data.index(b"\n", i + len(key))]
        return [int(x) for x in line.split()]


class NetCounts:
    def __init__(self, published, cgroup_dir, clock):
        self.published, self.clock = published, clock
        self.key = b"\n%d " % os.stat(cgroup_dir).st_ino   # the cgroup's id
        self.t0 = clock()
        self.gen = None
        self.base = [0, 0, 0, 0]   # what runs of the reader before this one counted
        self.last = None
        self.late = None           # s after the job's first read that counting began
        self.restarted = False
        self.full = False          # the reader's map was full: some cgroups went uncounted
        self.full0 = None          # its full refreshes when this job's counting began
        self.seen = False          # the job's cgroup has a counter (in this reader's run)
        self.lost = None           # why the job's counter may have lost packets
        self.why = None            # the reader says it cannot count
        self.stale = None
        self.period = self.mono = None   # of the latest file read

    def read(self):
        """[rx bytes, tx bytes, rx packets, tx packets] since the job began, or None."""
        try:
            c = self.published.read()
            h = c.head
            if not h.get("available"):
                self.why = h.get("why") or "the node reader cannot count"
                return None
            age = self.clock() - h["mono"]
            if not -1.0 <= age <= MAX_AGE_PERIODS * h["period"]:
                self.stale = f"its last refresh is {age:.1f} s old"
                return self._carried()
            now = c.of(self.key)
        except FileNotFoundError:
            self.stale = "the node reader publishes no network counters here"
            return self._carried()
        except (OSError, ValueError, KeyError, TypeError) as e:
            self.stale = str(e) or type(e).__name__
            return self._carried()
        self.stale = None
        self.period, self.mono = h["period"], h["mono"]
        if h["gen"] != self.gen:
            if self.gen is None:
                late = h["since"] - self.t0
                self.late = late if late > 0 else None
            else:                  # the reader restarted: its counters begin at 0
                self.base = self._carried() or self.base
                self.restarted = True
            self.gen, self.seen = h["gen"], False
            # a refresh that found the map full before this first read may still have
            # refused this job's first packets: counted as if it came after
            self.full0 = h.get("full_refreshes", 0) - bool(h.get("full"))
        self.full = self.full or h.get("cgroups", 0) >= h.get("max_cgroups", 1 << 62)
        if self.lost:
            return None
        if "full_refreshes" in h and not self.seen and h["full_refreshes"] > self.full0:
            # the map was full before this job's counter was made: a packet of the job's
            # may have been refused one (a counter, once made, is kept while its cgroup is)
            self.lost = (f"the node reader's counter map was full ({h['max_cgroups']} "
                         "cgroups) before this job's counter was made, so its traffic may "
                         "have gone uncounted")
            self.last = None
            return None
        if now is None and self.seen:     # its counter went with its cgroup: the last holds
            return self._carried()
        self.seen = self.seen or now is not None
        self.last = [b + n for b, n in zip(self.base, now or (0, 0, 0, 0))]
        return self.last

    def covers(self, t):
        """True once a file counted after t was read."""
        return self.mono is not None and self.mono >= t

    def _carried(self):
        return list(self.last) if self.last else None

    def source(self):
        """How the job's figures were counted (the summary's net_source)."""
        if self.gen is None:
            return f"not available: {self.why or self.stale or 'no counters published'}"
        if self.lost:
            return f"not available: {self.lost}"
        notes = []
        if self.late:
            notes.append(f"from {self.late:.1f} s after the job started (the node reader "
                         "began counting then)")
        if self.restarted:
            notes.append("partial: the node reader restarted during the job")
        if self.full:
            notes.append("possibly partial: the node reader's counter map was full")
        return "bpf" + ("; " + "; ".join(notes) if notes else "")

    def close(self):
        self.published.close()


# the network figures of a sample, declared (jobmon.metrics.declared)
METRICS = (
    {"name": "net_rx_bytes", "unit": "bytes", "range": "bytes", "kind": "counter",
     "method": "exact",
     "meaning": "bytes the job's sockets received, loopback included: IP packets from their "
                "network header on, counted per cgroup v2 by the node reader's BPF program; "
                "absent without a job cgroup v2 or node reader (net_source says why; "
                "docs/network.md)",
     "panel": ({"title": "Power and network", "how": "rate", "alias": "net_rx", "unit": "binBps",
                "description": "net_rx, net_tx: what its sockets received and sent, counted on "
                "its own cgroup v2 by the node reader's BPF program (exact; none on cgroup v1 "
                "or in procfs mode: docs/network.md)."},)},
    {"name": "net_tx_bytes", "unit": "bytes", "range": "bytes", "kind": "counter",
     "method": "exact", "meaning": "bytes the job's sockets sent, counted the same way",
     "panel": ({"title": "Power and network", "how": "rate", "alias": "net_tx",
                "unit": "binBps"},)},
    {"name": "net_rx_packets", "unit": "count", "range": "count", "kind": "counter",
     "method": "exact",
     "meaning": "packets the job's sockets received, as the kernel hands them over (a GRO "
                "aggregate counts once)"},
    {"name": "net_tx_packets", "unit": "count", "range": "count", "kind": "counter",
     "method": "exact",
     "meaning": "packets the job's sockets sent, as the kernel passes them down (a GSO/TSO "
                "segment counts once)"},
)


# and the end-of-job record's (jobmon.metrics.declared)
FIGURES = (
    {"name": "net_rx_bytes", "fold": "seen", "combine": "sum",
     "meaning": "bytes the job's sockets received (cgroup v2, BPF)"},
    {"name": "net_tx_bytes", "fold": "seen", "combine": "sum",
     "meaning": "bytes the job's sockets sent (cgroup v2, BPF)"},
    {"name": "net_rx_packets", "fold": "seen", "combine": "sum",
     "meaning": "packets the job's sockets received"},
    {"name": "net_tx_packets", "fold": "seen", "combine": "sum",
     "meaning": "packets the job's sockets sent"},
    {"name": "net_source", "unit": "text", "range": None, "method": "recorded",
     "meaning": "how the network figures were counted: bpf (the node reader's program on the "
                "job's cgroup v2; with a note where counting began late or restarted), or not "
                "available and why (cgroup v1, procfs mode, no privileges, no node reader)"},
)
