"""The qualifier operators: what a qualifier is (its kind and span) and the stop classes a search for its value
ends at."""

from __future__ import annotations

from dataclasses import dataclass, field


STRONG, SOFT, AND, PRESENT, COLON, DEST, PREP, PRESVERB, OF, CLAUSE_AND = (
    "strong", "soft", "and", "present", "colon", "dest", "prep", "presverb", "of", "clause-and")


@dataclass
class _Op:
    kind: str                 # bound, past, negation, retraction, change, label, record
    start: int
    end: int
    phrase: str
    fwd: tuple | None = None  # (max words, stop classes)
    bwd: tuple | None = None
    order: str = "fwd"        # fwd | bwd | fwd_then_bwd | bwd_then_fwd
    fwd_from: int | None = None  # where a forward search starts (after a bound's complement)
    cancellable: bool = False
    cancels: bool = False     # a negation: cancels a cancellable operator it meets first
    cancelled: bool = False
    meta: dict = field(default_factory=dict)
