"""Cost and latency thresholds between comparable runs, in the manner of a benchmark Action's ``alert-threshold``.

Off unless asked for. A threshold is a ratio of the new run's figure to its baseline run's ("150%" or "1.5"):
a figure above it is *over*. What is compared (each from the run's own result.json, the same fingerprint on both
sides, so the same cases, model and options):

- cost: the model tokens of the whole run (in plus out, as the result counts them) and its model calls;
- latency: the p50 of each adapter operation the protocol times (write, recall, forget, ...), for operations timed
  in both runs, leaving out ones whose p50 is under ``LATENCY_FLOOR_MS`` in both (timer noise, not the system).

An over-threshold figure is reported beside the verdict changes; it fails a gate only where the gate says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..common.errors import ConfigError

KINDS = ("cost", "latency")
LATENCY_FLOOR_MS = 5.0


@dataclass
class Over:
    system: str
    old_version: str
    new_version: str
    runtime: str
    kind: str        # cost or latency
    metric: str      # e.g. "model tokens" or "write p50 ms"
    old: float
    new: float
    threshold: float

    @property
    def ratio(self) -> float:
        return self.new / self.old if self.old else float("inf")

    def to_json(self) -> dict:
        return {**self.__dict__, "ratio": round(self.ratio, 4) if self.old else None}


def parse(text: str, what: str) -> float | None:
    """"150%" or "1.5" -> 1.5; "" -> None (off). Anything else is a mistake the user fixes (named, with the fix)."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        value = None
    if value is None or not value > 1:
        raise ConfigError(f"{what} {text!r} is not a ratio above 1: give it as a percentage of the baseline's figure "
                          "(e.g. 150%) or as a ratio (1.5), or leave it empty to turn it off")
    return value


def figures(result: dict, kind: str) -> dict[str, float]:
    """The figures of one result a threshold of ``kind`` compares, by name."""
    if kind == "cost":
        total = (result.get("cost") or {}).get("total") or {}
        return {"model tokens": float(total.get("tokens_in", 0) + total.get("tokens_out", 0)),
                "model calls": float(total.get("llm_calls", 0))}
    ops = ((result.get("timings") or {}).get("adapter_ms")) or {}
    return {f"{op} p50 ms": float(t["p50_ms"]) for op, t in sorted(ops.items())
            if isinstance(t, dict) and t.get("calls") and t.get("p50_ms") is not None}


def compare(old: dict, new: dict, thresholds: dict[str, float]) -> list[Over]:
    """Every figure of ``new`` over its threshold against ``old`` (a comparable run of the same setup)."""
    out: list[Over] = []
    s, o = new["stamp"], old["stamp"]
    for kind, limit in thresholds.items():
        before, after = figures(old, kind), figures(new, kind)
        for metric in sorted(before.keys() & after.keys()):
            a, b = before[metric], after[metric]
            if kind == "latency" and max(a, b) < LATENCY_FLOOR_MS:
                continue
            if (a == 0 and b > 0) or (a > 0 and b / a > limit):
                out.append(Over(system=s["system"]["name"], old_version=o["system"]["version"], new_version=s["system"]["version"],
                                runtime=s["runtime"]["name"], kind=kind, metric=metric, old=a, new=b, threshold=limit))
    return out
