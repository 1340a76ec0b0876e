"""What every evaluation protocol shares: verdicts, step definitions and reading a case back.

A protocol is two pure parts around the generic op interpreter (``memmatrix.interpreter``):
``validate_case`` checks a case's op script before anything runs, and ``score_case`` turns
the transcript records of one case into verdicts. Scoring reads the transcript only, so
``memmatrix verify`` can re-derive every verdict from the artifact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PASS, FAIL, ERROR, SKIP, UNSUPPORTED = "PASS", "FAIL", "ERROR", "SKIP", "UNSUPPORTED"
VERDICTS = (PASS, FAIL, ERROR, SKIP, UNSUPPORTED)


@dataclass(frozen=True)
class StepDef:
    """One column of a protocol's matrix."""

    key: str                 # "4", or "A" for the contradiction columns
    name: str                # short slug: "gone-after-refeed"
    title: str               # one line a user reads in the report
    needs: tuple[str, ...] = ()   # steps whose failure to run makes this one unmeasurable
    essential: str | None = None  # the adapter call without which this step is UNSUPPORTED
    # every SKIP the step can give: (a phrase its reason holds, when it happens) - the how-to-read row lists them,
    # and tests fail on a SKIP whose reason holds none of them
    skips: tuple[tuple[str, str], ...] = ()


@dataclass
class Cell:
    """The verdict of one step of one case, with the evidence that decided it."""

    step: str
    verdict: str
    reason: str = ""
    checks: list[dict] = field(default_factory=list)
    method: str | None = None  # "mechanical" or "judged" where a judge may decide the cell
    stage: str | None = None   # where a FAIL happened (protocols/stages.py); set on every FAIL

    def __post_init__(self) -> None:
        if self.verdict == FAIL and self.stage is None:
            self.stage = next((c["stage"] for c in self.checks if c.get("ok") is False and c.get("stage")), None)

    def as_dict(self) -> dict:
        out = {"step": self.step, "verdict": self.verdict, "reason": self.reason, "checks": self.checks}
        if self.method:
            out["method"] = self.method
        if self.stage and self.verdict == FAIL:
            out["stage"] = self.stage
        return out


@dataclass
class OpRecords:
    """An op of the script with everything the run recorded for it."""

    index: int
    step: str
    spec: dict
    calls: list[dict] = field(default_factory=list)
    skips: list[dict] = field(default_factory=list)
    polling: dict | None = None          # how a system without a quiescence signal was polled, if it was
    settled_before: bool | None = None   # did the system report quiescence after its last change, before this op
    after_forget: bool = False           # was a forget the last change before this op (it checks that forget)

    def polled(self) -> bool:
        return self.polling is not None

    def polled_to_timeout(self) -> bool:
        """Every poll of the settle timeout was made (an absence needs it when the system never settled)."""
        return bool(self.polling) and self.polling.get("until") == "timeout"

    def polls(self) -> list[int]:
        """The poll numbers of this op's calls, in order (``[0]`` for an op observed once)."""
        return sorted({c.get("poll", 0) for c in self.calls}) or [0]

    def last_poll(self) -> list[dict]:
        """The calls of the final poll (systems without a quiescence signal are polled)."""
        if not self.calls:
            return []
        last = max(c.get("poll", 0) for c in self.calls)
        return [c for c in self.calls if c.get("poll", 0) == last]

    def errors(self) -> list[dict]:
        """Failed calls in any poll: a gap in what was observed is never a clean observation."""
        return [c for c in self.calls if "error" in c]


#: Calls after which a system has unapplied changes until it settles again.
CHANGES = frozenset({"write", "write_concurrent", "forget", "update", "import_history", "share", "run_background_jobs", "restart", "reset"})


def settled_after(settled: bool | None, rec: dict) -> bool | None:
    """The system's quiescence after ``rec``: a change unsettles it, a quiescent settle settles it."""
    if rec.get("kind") == "call" and rec.get("call") in CHANGES:
        return False
    if rec.get("kind") == "call" and rec.get("call") == "settle":
        return "result" in rec and rec["result"].get("quiescent") is True
    return settled


def group_ops(records: list[dict]) -> list[OpRecords]:
    """Group a case's records by op index, in script order, noting whether the system had settled."""
    ops: dict[int, OpRecords] = {}
    settled: bool | None = None
    last_change: str | None = None
    for rec in records:
        kind = rec.get("kind")
        if kind == "op":
            ops[rec["index"]] = OpRecords(rec["index"], str(rec["step"]), rec["spec"], settled_before=settled,
                                          after_forget=last_change == "forget")
        settled = settled_after(settled, rec)
        if kind == "call" and rec.get("call") in CHANGES:
            last_change = rec["call"]
        if rec.get("index") not in ops:
            continue
        target = ops[rec["index"]]
        if kind == "call":
            target.calls.append(rec)
        elif kind == "skip":
            target.skips.append(rec)
        elif kind == "polling":
            target.polling = rec
    return [ops[i] for i in sorted(ops)]


def describe_error(call: dict) -> str:
    err = call.get("error", {})
    origin = f", origin {err['origin']}" if "origin" in err else ""  # older transcripts record no origin
    return f"{call.get('call')} failed ({err.get('kind')}{origin}): {err.get('message')}"


class EvalProtocol:
    """Base class for evaluation protocols. Subclasses define ``name``, ``version`` and ``steps``."""

    name: str = ""
    version: str = ""
    steps: tuple[StepDef, ...] = ()
    uses_judge: bool = False  # does scoring consult the pinned judge where qualifiers are missing
    # are runs repeated, and why: "model" (a system with a model inside may answer differently each time: a
    # system that made no model call runs once) or "timing" (a race: every system runs each repeat)
    repeated: str | None = None
    in_main_job: bool = True  # does a run without --protocol run it (a stress protocol is asked for by name)
    # versions whose scorer moves verdicts or reasons of results scored by earlier versions, each with why: a result
    # made before may be rescored across them (memmatrix rescore records every moved cell and this why); across any
    # other version, a rescore that would move a cell is refused
    moves: dict[str, str] = {}
    # steps whose cells record a sub-verdict per store at each of these moments (claims may read one store at one
    # moment): {"9": ("before", "after-forget", "end")}
    store_moments: dict[str, tuple[str, ...]] = {}

    def step(self, key: str) -> StepDef:
        for s in self.steps:
            if s.key == key:
                return s
        raise KeyError(key)

    def validate_case(self, case: dict) -> list[str]:
        raise NotImplementedError

    def undocumented_skips(self, cases: list[dict]) -> list[str]:
        """SKIP cells of scored cases whose reason holds none of the phrases their step documents (StepDef.skips)."""
        out = []
        for case in cases:
            for cell in case["cells"]:
                if cell["verdict"] != SKIP:
                    continue
                try:
                    phrases = [p for p, _ in self.step(cell["step"]).skips]
                except KeyError:
                    phrases = []
                if not any(p in cell["reason"] for p in phrases):
                    out.append(f"{self.name} {cell['step']} (case {case.get('id')}): {cell['reason']!r}")
        return out

    def step_table(self) -> list[dict]:
        """The steps as every result lists them."""
        return [{"key": s.key, "name": s.name, "title": s.title} for s in self.steps]

    def generated_problems(self, case: dict) -> list[str]:
        """The stricter rules a generated case set (``"set"``) must also follow (``caserules.case_problems``)."""
        return []

    def score_case(self, header: dict, records: list[dict], capabilities: dict) -> list[Cell]:
        raise NotImplementedError

    def measures(self, cases: list[dict]) -> dict | None:
        """The protocol's own per-step measures over the scored cases (rates, points), or None."""
        return None

    def error_cells(self, reason: str, header: dict | None = None) -> list[Cell]:
        """Every step of the case ERROR: it could not run at all (the adapter failed to start or reset)."""
        return [Cell(s.key, ERROR, reason) for s in self.steps]

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version,
                "steps": [{"key": s.key, "name": s.name, "title": s.title} for s in self.steps]}
