"""Distributions of a report's figures (efficiencies): exact quantiles of values that
come with how many runs had each, mergeable across rollups.

Read side, standard library only.
"""
import math
from bisect import bisect_right
from itertools import accumulate


def quantile(values, q):
    """The q-quantile (0..1) of `values` by linear interpolation between the closest ranks
    (numpy's default): sorted x[0..n-1], position q*(n-1). None for no values."""
    values = list(values)
    return quantiles(values, [1] * len(values), (q,))[0]


def quantiles(values, runs, qs):
    """quantile() at each of `qs` of the values that `values` x `runs` (how many times
    each; a value may come more than once) stand for: one sort and bisections, in C."""
    n = sum(runs)
    if not n:
        return [None] * len(qs)
    order = sorted(range(len(values)), key=values.__getitem__)
    upto = list(accumulate(map(runs.__getitem__, order)))     # ranks below each's end

    def at(rank):
        return values[order[bisect_right(upto, rank)]]
    out = []
    for q in qs:
        pos = q * (n - 1)
        lo = math.floor(pos)
        x_lo, x_hi = at(lo), at(min(lo + 1, n - 1))
        out.append(x_lo + (x_hi - x_lo) * (pos - lo))
    return out


def distribution(values):
    """p10, p50, p90 and n of the known values (a list, or Values)."""
    if not isinstance(values, Values):
        values = Values.of([v for v in values if v is not None])
    vals, runs = values.arrays()
    p10, p50, p90 = quantiles(vals, runs, (0.1, 0.5, 0.9))
    return {"n": sum(runs), "p10": p10, "p50": p50, "p90": p90}


class Values:
    """A distribution's values: {value: runs} as runs are added, and (values, runs)
    arrays as rollups are merged -- merging extends a list, counting waits for the end."""

    def __init__(self):
        self.counts, self.chunks = {}, []

    @classmethod
    def of(cls, values, runs=None):
        out = cls()
        out.chunks.append((list(values), list(runs) if runs is not None else [1] * len(values)))
        return out

    def add(self, v):
        self.counts[v] = self.counts.get(v, 0) + 1

    def merge(self, other):
        self.chunks += other.chunks
        if other.counts:
            self.chunks.append((list(other.counts), list(other.counts.values())))

    def arrays(self):
        vals, runs = list(self.counts), list(self.counts.values())
        for v, r in self.chunks:
            vals += v
            runs += r
        return vals, runs

    def state(self):
        """[values, runs], each value once (efficiencies have two decimals: few)."""
        merged = {}
        for v, r in zip(*self.arrays()):
            merged[v] = merged.get(v, 0) + r
        return [list(merged), list(merged.values())]
