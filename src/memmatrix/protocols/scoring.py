"""Turn a transcript into verdicts. Shared by ``run`` and ``verify``: one code path, one answer."""

from __future__ import annotations

from typing import Iterable, Iterator

from . import VERDICTS, EvalProtocol
from .base import describe_error


def run_header(records: list[dict]) -> dict:
    for rec in records:
        if rec.get("kind") == "run":
            return rec
    raise ValueError("the transcript has no run header")


def recorded_capabilities(records: list[dict]) -> dict:
    for rec in records:
        if rec.get("kind") == "call" and rec.get("call") == "capabilities" and "result" in rec:
            return rec["result"]
    raise ValueError("the transcript holds no capabilities answer")


def score_transcript(protocol: EvalProtocol, records: list[dict]) -> list[dict]:
    """Every case's cells, from the transcript alone."""
    caps = recorded_capabilities(records)
    return [score_one(protocol, header, body, caps) for header, body in by_case(records)]


def score_one(protocol: EvalProtocol, header: dict, body: list[dict], caps: dict) -> dict:
    """One case's cells, from its header and its records (what ``verify`` does a case at a time)."""
    reset = [r for r in body if r.get("kind") == "call" and r.get("call") == "reset"]
    ops = [r for r in body if r.get("kind") == "op"]
    if not reset or "error" in reset[0]:
        why = describe_error(reset[0]) if reset else "reset was never called"
        cells = protocol.error_cells(f"the case could not start: {why}", header)
    elif len(ops) != header["ops"]:
        cells = protocol.error_cells(f"the transcript stops after op {len(ops)} of {header['ops']}", header)
    else:
        cells = protocol.score_case(header, body, caps)
    return {"id": header["case"], "shape": header["shape"], "cells": [c.as_dict() for c in cells]}


def summarize(protocol: EvalProtocol, cases: list[dict]) -> dict:
    summary = {s.key: {v: 0 for v in VERDICTS} for s in protocol.steps}
    for case in cases:
        for cell in case["cells"]:
            summary[cell["step"]][cell["verdict"]] += 1
    return summary


def by_case(records: Iterable[dict]) -> Iterator[tuple[dict, list[dict]]]:
    """Yield (case header, the records of that case) in transcript order."""
    header: dict | None = None
    body: list[dict] = []
    for rec in records:
        if rec.get("kind") == "case":
            if header is not None:
                yield header, body
            header, body = rec, []
        elif header is not None:
            body.append(rec)
    if header is not None:
        yield header, body
