"""The deletion protocol discriminates: three reference systems, three different rows."""

import pytest

from helpers import row, run

P, F, U = "PASS", "FAIL", "UNSUPPORTED"
STEPS = [str(n) for n in range(1, 14)]

EXPECTED = {
    # the positive control: if it fails a step, the protocol is wrong
    "reference": dict.fromkeys(STEPS, P),
    # forget removes lines (nothing left behind: 9 passes), re-feeding writes them back (6); no jobs, audit, sharing
    "notes": dict(zip(STEPS, [P, P, P, P, P, F, U, U, P, U, U, U, U])),
    # the recent-conversation buffer keeps the value, the summary re-derives it, the audit quotes it
    "append": dict(zip(STEPS, [P, P, P, F, P, F, P, F, F, F, P, F, F])),
}


@pytest.mark.parametrize("system", sorted(EXPECTED))
def test_each_reference_system_gets_its_row(config, tmp_path, system):
    assert row(run(config, system, tmp_path)) == EXPECTED[system]


def test_notes_and_append_fail_different_steps(config, tmp_path):
    fails = {s: {k for k, v in row(run(config, s, tmp_path)).items() if v == F} for s in ("notes", "append")}
    assert fails["notes"] and fails["append"]
    assert fails["notes"] != fails["append"]
