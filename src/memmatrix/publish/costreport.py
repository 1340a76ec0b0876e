"""The cost table of the report: latency per path, model use per call, what a door hands over, disk, harness."""

from __future__ import annotations

from pathlib import Path


def _ms(op: dict | None) -> str:
    if not op:
        return "—"
    return " / ".join("—" if op.get(k) is None else f"{op[k]:,.0f}" for k in ("p50_ms", "p95_ms", "p99_ms"))


def _per(model: dict, path: str) -> str:
    m = model.get(path) or {}
    if not m.get("calls"):
        return "—"
    return (f"{m['llm_calls_per_call']:g} · {m['tokens_in_per_call']:,.0f} in / {m['tokens_out_per_call']:,.0f} out"
            + (f" · {m['embedding_calls_per_call']:g} emb" if m.get("embedding_calls_per_call") else ""))


def cost_table(runs: list[tuple[Path, dict]], label) -> list[str]:
    """One row per run. Latency is wall time (p50 / p95 / p99 of the adapter call, model calls included; p99 only
    for runs that recorded it); model use and door size come from the transcripts (``costs``, re-derived by
    verify); disk is the stores' growth over a case as a multiple of the bytes the case wrote."""
    rows = []
    for path, r in runs:
        t, costs = r.get("timings", {}), r.get("costs")
        if costs is None:
            continue
        ops, door = t.get("adapter_ms", {}), costs["door"]
        disk = (t.get("disk") or {}).get("multiple_p50")
        share = (t.get("harness") or {}).get("share")
        s = r["stamp"]
        rows.append(f"| {s['system']['name']} | {s['system']['version']} | {label(path, r)} | {_ms(ops.get('write'))} | "
                    f"{_ms(ops.get('door'))} | {_per(costs['model'], 'write path')} | {_per(costs['model'], 'read path')} | "
                    + (f"{door['chars']['p50']:,} ({door['tokens']['p50']:,})" if door["calls"] else "—") + " | "
                    + ("—" if disk is None else f"{disk:g}×") + " | "
                    + ("—" if share is None else f"{100 * share:.1f} %") + " |")
    if not rows:
        return []
    return ["", "Cost: write and door latency in ms (p50 / p95 / p99, wall time, model calls included); model calls "
                "and tokens per write-path and per read-path call (from the model transcript); what a door call hands "
                "the model, p50 characters (estimated tokens); the stores' growth over a case as a multiple of the "
                "bytes it wrote; the harness's own share of the run's wall time.", "",
            "| system | version | runtime (+variant) | write ms | door ms | per write | per read | door chars (tokens) "
            "| disk | harness |", "|---|---|---|---|---|---|---|---|---|---|", *rows]
