"""The oracle's prompt-hygiene judge: deterministic rules, standard library only (and
``adapterkit.SizedMemo``, itself standard library only; the rules are stated in
model/dialects/memmatrix.py; ``judge_hygiene`` is the entry)."""

from .judgement import forget_readings, judge_hygiene

__all__ = ["forget_readings", "judge_hygiene"]
