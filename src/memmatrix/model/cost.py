"""What a run's model traffic cost, from the model transcript alone: calls, tokens and every call the oracle did
not answer. The gateway records it (record.py); a result states it and verify re-derives it (result/derive.py)."""

from __future__ import annotations

from collections import defaultdict


TOKENS_METHOD = {"oracle": "estimated: words and punctuation of the request and answer",
                 "replay": "reported by the upstream (as recorded)", "proxy": "reported by the upstream (as recorded)"}


def model_cost(records: list[dict], mode: str) -> dict:
    """Calls and tokens per adapter operation and in total, and every call the oracle did not answer."""
    per: dict[str, dict] = defaultdict(lambda: {"llm_calls": 0, "tokens_in": 0, "tokens_out": 0,
                                                "embedding_calls": 0, "embedding_inputs": 0})
    total = {"llm_calls": 0, "tokens_in": 0, "tokens_out": 0, "embedding_calls": 0, "embedding_inputs": 0,
             "unmatched": 0, "errors": 0}
    unmatched: dict[str, int] = defaultdict(int)
    for r in records:
        if r.get("kind") == "models":  # a look-up of what the gateway serves: no model was called
            continue
        bucket = per[(r.get("context") or {}).get("call") or "setup"]
        if r.get("error"):
            total["errors"] += 1
            continue
        usage = r.get("usage", {})
        if r.get("kind") == "embedding":
            for d in (bucket, total):
                d["embedding_calls"] += 1
                d["embedding_inputs"] += usage.get("inputs", 0)
        else:
            for d in (bucket, total):
                d["llm_calls"] += 1
                d["tokens_in"] += usage.get("in", 0) or 0
                d["tokens_out"] += usage.get("out", 0) or 0
        if r.get("matched") is False:
            total["unmatched"] += 1
            unmatched[f"{(r.get('context') or {}).get('call') or 'setup'}: {r.get('dialect') or 'no dialect'}"] += 1
    return {"total": total, "per_operation": dict(sorted(per.items())), "unmatched": dict(sorted(unmatched.items())),
            "tokens_method": TOKENS_METHOD.get(mode, TOKENS_METHOD["oracle"])}
