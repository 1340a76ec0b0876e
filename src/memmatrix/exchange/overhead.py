"""What the harness itself costs in a run: the wall time the system did not spend.

A run's wall time is the system's time (inside each adapter call, as the adapter server measured it; the
system's own process start, restart and stop; the waits between two polls of a system still settling) plus
the harness's: starting (the gateway, the first process launch), between calls (interpreting, validating
each answer, recording, the judge, the wire's JSON and HTTP) and stopping (scoring, the artifacts). Finding
or building the system's environment is neither (``install_ms``): the share is of the wall time without it.
The figures go in ``timings.harness`` of every result; ``benchmarks/overhead.py`` reads them. Not
deterministic, so never part of the transcript.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Ledger:
    """Intervals on the perf_counter clock: adapter calls (with the system's share of each) and the system's
    own starts and stops."""

    t0: float = field(default_factory=time.perf_counter)
    calls: list[tuple[float, float, float]] = field(default_factory=list)   # (start, end, system ms inside)
    system: list[tuple[float, float]] = field(default_factory=list)         # process start, restart, stop
    install: list[tuple[float, float]] = field(default_factory=list)        # the system's environment found or built

    def call(self, start: float, end: float, system_ms: float | None) -> None:
        """One adapter call; ``system_ms`` None means the endpoint could not say, and the whole call counts."""
        inside = (end - start) * 1000 if system_ms is None else min(system_ms, (end - start) * 1000)
        self.calls.append((start, end, inside))

    def system_span(self, start: float, end: float) -> None:
        self.system.append((start, end))

    def install_span(self, start: float, end: float) -> None:
        """Building the system's environment (once per machine) is neither the system's run nor the harness's."""
        self.install.append((start, end))

    def summary(self, end: float | None = None) -> dict:
        end = time.perf_counter() if end is None else end
        wall = (end - self.t0) * 1000
        first = self.calls[0][0] if self.calls else end
        last = self.calls[-1][1] if self.calls else end

        def system_between(a: float, b: float) -> float:
            return sum(max(0.0, min(e, b) - max(s, a)) * 1000 for s, e in self.system + self.install)

        in_calls = sum(c[2] for c in self.calls)
        wire = sum((c[1] - c[0]) * 1000 - c[2] for c in self.calls)  # the JSON and HTTP of each call, both sides
        start_ms = (first - self.t0) * 1000 - system_between(self.t0, first)
        loop_ms = (last - first) * 1000 - in_calls - system_between(first, last)
        stop_ms = (end - last) * 1000 - system_between(last, end)
        overhead = start_ms + loop_ms + stop_ms
        install = sum((e - s) * 1000 for s, e in self.install)
        n = len(self.calls)
        return {"wall_ms": round(wall, 3), "system_ms": round(wall - overhead - install, 3),
                "install_ms": round(install, 3),
                "overhead_ms": round(overhead, 3),
                "share": round(overhead / (wall - install), 5) if wall > install else 0.0,
                "start_ms": round(start_ms, 3), "stop_ms": round(stop_ms, 3), "wire_ms": round(wire, 3),
                "exchanges": n,
                "per_exchange_ms": round(loop_ms / n, 4) if n else None}
