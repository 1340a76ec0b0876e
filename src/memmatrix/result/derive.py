"""What a result states beyond its verdicts, derived from its artifacts alone.

``run`` writes findings and cost with these functions and ``verify`` recomputes them from the
committed transcripts, so an edited finding or cost no longer matches its evidence.
"""

from __future__ import annotations

import math
from collections import defaultdict

from ..model.cost import TOKENS_METHOD, model_cost  # noqa: F401  (re-exported: what verify and run derive)


def run_findings(records: list[dict], caps: dict, limits: dict) -> list[str]:
    """Findings about the system and the run, from the transcript."""
    found = []
    ops = caps["operations"]
    if ops["settle"]["support"] == "unsupported":
        interval, timeout = limits.get("poll_interval_s", 0.5), limits.get("settle_timeout_s", 30)
        found.append(f"no quiescence signal ({ops['settle'].get('reason')}): every absence check was polled for the "
                     f"whole settle timeout ({math.ceil(timeout / interval) + 1} polls, one every {interval:g} s), "
                     "every presence check until it held or the timeout passed")
    else:
        settles = [r for r in records if r.get("kind") == "call" and r.get("call") == "settle"]
        busy = [r for r in settles if "result" in r and r["result"].get("quiescent") is not True]
        failed = [r for r in settles if "error" in r and r["error"].get("kind") != "unavailable"]
        if busy:
            found.append(f"settle answered that the system was not quiescent {len(busy)} time(s) of {len(settles)}: "
                         "the checks after those were polled like a system without a quiescence signal")
        if failed:
            found.append(f"settle failed {len(failed)} time(s) of {len(settles)} ({failed[0]['error']['message'][:200]}): "
                         "the checks after those were polled like a system without a quiescence signal")
    for op, decl in sorted(ops.items()):
        if decl["support"] == "emulated":
            found.append(f"{op} is emulated: {decl.get('reason')}")
    found += [r["message"] for r in records if r.get("kind") in ("unavailable", "recovered")]
    found += error_origins(records)
    return found


def error_origins(records: list[dict]) -> list[str]:
    """Where the failed calls came from (system, adapter, harness: wire.ORIGIN) and the upstream issues they are
    known to be. A transcript made before error records carried an origin has no such finding."""
    errors = [r["error"] for r in records if isinstance(r.get("error"), dict) and "origin" in r["error"]
              and r["error"].get("kind") != "unavailable"]  # calls not made after one failed: said once above
    if not errors:
        return []
    by: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for e in errors:
        by[e["origin"]][e.get("kind", "?")] += 1
    parts = [f"{sum(k.values())} of origin {o} ({', '.join(f'{n} {kind}' for kind, n in sorted(k.items()))})"
             for o, k in sorted(by.items())]
    known = sorted({u for e in errors for u in e.get("known", [])})
    return [f"{len(errors)} call(s) failed: {'; '.join(parts)}"
            + (f"; known upstream: {', '.join(known)}" if known else "")]


def model_findings(records: list[dict], cost: dict) -> list[str]:
    """Findings about the model calls, from the model transcript."""
    found = []
    total = cost["total"]
    if total["unmatched"]:
        where = ", ".join(f"{k} ×{n}" for k, n in cost["unmatched"].items())
        found.append(f"the oracle did not answer {total['unmatched']} of {total['llm_calls']} model call(s) as a careful "
                     f"model would; they got well-formed empty answers (matched=false in model-transcript.jsonl): "
                     f"{where}. Those calls measure the oracle, not the system")
    errors = [r for r in records if r.get("error")]
    def stalled(r: dict) -> bool:
        return r.get("error_kind") == "fault" and "oracle-stall" in str(r["error"])
    stalls = [r for r in errors if stalled(r)]
    if stalls:
        found.append(f"{len(stalls)} model call(s) stalled on purpose (oracle-stall: the first asking of a quarter of "
                     f"distinct chat requests held 10 s, then answered HTTP 504): {str(stalls[0]['error'])[:500]}")
    errors = [r for r in errors if not stalled(r)]
    for kind, what in (("fault", "model call(s) failed on purpose (oracle-flaky: the first asking of a quarter of "
                        "distinct chat requests answered HTTP 500)"),
                       ("upstream", "upstream model call(s) failed"),
                       ("replay_miss", "model request(s) were not in the recording"),
                       ("gateway", "model call(s) failed inside the gateway")):
        mine = [r for r in errors if r.get("error_kind", "gateway") == kind]
        if mine:
            found.append(f"{len(mine)} {what}: {str(mine[0]['error'])[:500]}")
    return found
