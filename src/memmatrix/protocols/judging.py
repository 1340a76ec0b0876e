"""The judge's accuracy suite in a run: measured through the gateway at the start, re-derived by verify.

Every judged run first asks its pinned judge (the oracle's rules, or a real model in proxy mode)
every item of the newest suite under cases/judge/, through the same gateway, so the answers are in
the model transcript (operation ``judge-suite``). The score goes in the stamp; ``verify`` finds
those answers again by their request bodies and re-scores them.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..common.canon import canonical, sha256_file
from ..common.config import Config
from .judgesuite import default_suite as _newest, load_suite, score, suite_requests

SUITE_CALL = "judge-suite"


def default_suite(config: Config) -> Path:
    return _newest(config.cases_dir)


def find_suite(sha256: str, config: Config) -> Path | None:
    for f in sorted((config.cases_dir / "judge").glob("*.json")):
        if sha256_file(f) == sha256:
            return f
    return None


def measure(judge, gateway, config: Config) -> dict:
    """Ask the judge every suite item (recorded as the ``judge-suite`` operation) and score its answers."""
    suite = load_suite(default_suite(config), config.schemas_dir)
    gateway.set_context({"case": None, "index": -1, "call": SUITE_CALL})
    answers = {}
    for item_id, body in suite_requests(suite, judge):
        ok, answer = judge.judge(body)
        answers[item_id] = answer["verdict"] if ok else None
    return score(suite, answers)


def _verdict(record: dict) -> str | None:
    try:
        content = record["response"]["choices"][0]["message"]["content"]
        verdict = json.loads(content).get("verdict")
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return None
    return verdict if isinstance(verdict, str) else None


def rederive(accuracy: dict | None, model_records: list[dict], config: Config) -> dict:
    """The suite score the recorded ``judge-suite`` answers give (ValueError if the suite is not here)."""
    if not accuracy or "suite" not in accuracy:
        raise ValueError("the stamp's judge has no suite score")
    path = find_suite(accuracy["suite"].get("sha256", ""), config)
    if path is None:
        raise ValueError(f"the judge suite {accuracy['suite']} is not in this checkout")
    suite = load_suite(path, config.schemas_dir)

    from .judge import Judge
    builder = Judge("http://127.0.0.1:9/v1", "")  # builds request bodies exactly as the run did; never sends
    by_body = {canonical(body): item_id for item_id, body in suite_requests(suite, builder)}
    answers = dict.fromkeys((item_id for item_id in by_body.values()), None)
    for r in model_records:
        if (r.get("context") or {}).get("call") == SUITE_CALL and "request" in r:
            item_id = by_body.get(canonical(r["request"]))
            if item_id is not None:
                answers[item_id] = _verdict(r)
    return score(suite, answers)
