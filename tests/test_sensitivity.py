"""The sensitivity page (publish/sensitivity.py): which decided cells are plumbing and which move with the model.

Built from hand-made results so each count has one cause: a mode that flips a cell makes it model-dependent, a mode
that leaves it undecided does not, and calls the oracle could not answer under a mode are reported with that mode."""

from __future__ import annotations

from pathlib import Path

from memmatrix.publish.sensitivity import groups, markdown


def _result(verdicts: dict, unmatched: dict | None = None) -> dict:
    cases: dict[str, list] = {}
    for (case, step), verdict in verdicts.items():
        cases.setdefault(case, []).append({"step": step, "verdict": verdict})
    return {"stamp": {"system": {"name": "sys", "version": "1.0"}, "protocol": {"name": "deletion"}},
            "cases": [{"id": c, "cells": cells} for c, cells in cases.items()],
            "cost": {"total": {"unmatched": sum((unmatched or {}).values())}, "unmatched": unmatched or {}}}


PERFECT = {("a", "1"): "PASS", ("a", "2"): "FAIL", ("b", "1"): "PASS", ("b", "2"): "SKIP"}


def _results(**modes) -> list[tuple[Path, dict]]:
    out = [(Path("results/deletion/sys/1.0/embedded/result.json"), _result(PERFECT))]
    for folder, (verdicts, unmatched) in modes.items():
        out.append((Path(f"results/deletion/sys/1.0/embedded+oracle-{folder}/result.json"),
                    _result({**PERFECT, **verdicts}, unmatched)))
    return out


def test_a_flip_is_model_dependent_and_an_undecided_cell_is_not():
    (g,) = groups(_results(nocorrection=({("a", "1"): "FAIL"}, None), malformed=({("a", "2"): "ERROR"}, None)))
    plumbing, dependent, never = g.kinds()
    assert dependent == {("a", "1")}
    assert plumbing == {("a", "2"), ("b", "1")} and not never


def test_a_cell_every_mode_left_undecided_is_neither_plumbing_nor_model_dependent():
    (g,) = groups(_results(malformed=({("b", "1"): "ERROR"}, None)))
    plumbing, dependent, never = g.kinds()
    assert never == {("b", "1")} and ("b", "1") not in plumbing | dependent


def test_calls_the_oracle_could_not_answer_are_named_with_their_mode():
    page = markdown(_results(wrongarg=({}, {"write: agent-step": 3}), duplicate=({}, None)))
    assert "wrongarg: 3 (write: agent-step ×3)" in page
    assert "duplicate:" not in page.split("could not answer", 1)[1]
    assert "could not answer" not in markdown(_results(wrongarg=({}, None)))


def test_a_mode_at_a_realistic_rate_is_reported_per_seed_and_not_counted_in_the_kinds():
    results = _results(**{"nocorrection-0.2-s1": ({("a", "1"): "FAIL"}, None), "duplicate": ({}, None)})
    (g,) = groups(results)
    assert g.kinds()[1] == set()
    assert "nocorrection at rate 0.2: seed 1: 1 flip" in markdown(results)
