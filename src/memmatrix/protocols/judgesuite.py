"""The judge accuracy suite: how often does the pinned hygiene judge agree with a careful human?

File: ``cases/judge/<version>.json``, validated against ``schemas/judge-suite.schema.json``::

    {"kind": "memmatrix.judge-suite", "version": "1.0.0", "description": "...",
     "items": [{"id": "bound-through", "category": "bound", "question": "Where am I staying right now?",
                "stale": "Kvalvika", "current": null, "text": "I am staying in Kvalvika through 9 April.",
                "expected": "qualified", "note": "'through <date>' is an inclusive end."}, ...]}

Each item is one judge request (the question, the stale value, the current value or null, the
text a memory system handed the model) and the verdict a careful human gives: ``absent`` (no
whole-token mention of the stale value), ``qualified`` (every mention carries a qualifier
attached to it in its own sentence), ``unqualified`` (at least one mention presents the stale
value as current). Labels are what the human says, never what a judge happens to answer; all
values are fictional. Categories cover qualifier look-alikes (bait), bounds in many wordings,
qualifiers in another sentence or on the current value, both values in one sentence,
negation, structured text, several mentions, past-state and retraction wording.

The harness calls :func:`load_suite` at the start of every judged run, sends
:func:`suite_requests` through the model gateway like any other judgement (so a real model in
proxy mode is measured, not only the oracle's rules), and records :func:`score` in the stamp.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..common import schemas
from ..common.canon import sha256_bytes
from ..common.errors import CaseFileError
from ..common.tokens import contains, tokens

VERDICTS = ("absent", "qualified", "unqualified")
SCHEMA = "judge-suite"


def _version_key(path: Path) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in path.stem.split("."))
    except ValueError:
        return (-1,)


def default_suite(cases_dir: Path) -> Path:
    """The newest ``<cases_dir>/judge/<version>.json``."""
    folder = Path(cases_dir) / "judge"
    files = sorted(folder.glob("*.json"), key=_version_key)
    if not files:
        raise CaseFileError(f"no judge suite in {folder}; add cases/judge/<version>.json")
    return files[-1]


def _schemas_dir(schemas_dir: Path | None) -> Path:
    if schemas_dir is not None:
        return Path(schemas_dir)
    from ..common.config import Config
    return Config.from_env().schemas_dir


def load_suite(path: str | Path, schemas_dir: Path | None = None) -> dict:
    """Read, hash and validate a judge suite.

    Returns ``{"path", "version", "sha256", "description", "items"}``. Every problem is reported
    at once, by item, in a :class:`~memmatrix.errors.CaseFileError` naming the file.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CaseFileError(f"judge suite {path} cannot be read ({exc.strerror}); check the path") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f" at line {exc.lineno}, column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise CaseFileError(f"judge suite {path} is not JSON: {getattr(exc, 'msg', exc)}{where}") from None
    problems = schemas.errors(_schemas_dir(schemas_dir), SCHEMA, data)
    if not problems:
        problems = _consistency(data["items"])
    if problems:
        shown = "\n  - ".join(problems[:40])
        more = f"\n  ... and {len(problems) - 40} more" if len(problems) > 40 else ""
        raise CaseFileError(f"judge suite {path} is not valid (schemas/{SCHEMA}.schema.json and its rules):"
                            f"\n  - {shown}{more}")
    return {"path": str(path), "version": data["version"], "sha256": sha256_bytes(raw),
            "description": data.get("description", ""), "items": data["items"]}


def _consistency(items: list[dict]) -> list[str]:
    """Rules a schema cannot say: unique ids, and labels that agree with whole-token presence."""
    problems = []
    ids = [it["id"] for it in items]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        problems.append(f"duplicate item id(s) {dupes}")
    for k, it in enumerate(items):
        if not tokens(it["stale"]):
            problems.append(f"at /items/{k} ({it['id']}): the stale value {it['stale']!r} has no letters or digits")
        elif it["expected"] != "absent" and not contains(it["text"], it["stale"]):
            problems.append(f"at /items/{k} ({it['id']}): expected {it['expected']!r}, but the text holds no "
                            f"whole-token mention of {it['stale']!r}; the label can only be 'absent'")
    return problems


def suite_requests(suite: dict, judge) -> list[tuple[str, dict]]:
    """(item id, request body) for every item, built by ``judge.request`` exactly as in a run."""
    return [(it["id"], judge.request(it["question"], it["stale"], it["current"], it["text"]))
            for it in suite["items"]]


def score(suite: dict, answers: dict[str, str | None]) -> dict:
    """Agreement of the judge's verdicts with the labels.

    ``answers`` maps item id to the judge's verdict, or None where the judge gave no usable
    answer (counted wrong). An id the suite does not hold is a caller error (ValueError).
    """
    items = suite["items"]
    known = {it["id"] for it in items}
    unknown = sorted(set(answers) - known)
    if unknown:
        raise ValueError(f"answers for items the suite does not hold: {unknown[:10]}")
    wrong = [it["id"] for it in items if answers.get(it["id"]) != it["expected"]]
    n = len(items)
    correct = n - len(wrong)
    return {"suite": {"version": suite["version"], "sha256": suite["sha256"]},
            "items": n, "correct": correct, "accuracy": round(correct / n, 4) if n else 0.0, "wrong": wrong}


__all__ = ["VERDICTS", "default_suite", "load_suite", "score", "suite_requests"]
