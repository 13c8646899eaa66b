"""Helpers shared by the benchmark scripts."""


def pct(values, p):
    """The p-th percentile of `values` (nearest rank on the sorted values)."""
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]
