"""Percentiles the way every table of the project states them (nearest rank: a value that was measured)."""

from __future__ import annotations


def nearest_rank(ordered: list, q: float):
    """The q-quantile of an already sorted list by nearest rank (the one rule every percentile here uses)."""
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def percentiles(values: list[float]) -> dict:
    """p50, p95 and p99 (nearest rank) of a list of milliseconds."""
    v = sorted(values)
    return {f"p{int(q * 100)}_ms": round(nearest_rank(v, q), 3) for q in (0.5, 0.95, 0.99)} if v else {}
