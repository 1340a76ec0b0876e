"""Killing a run midway leaves no process (daemons of the system included) and no half-written result."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ADAPTERS, ROOT


def processes_mentioning(text: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(proc.name))
    return found


def _as_in_a_terminal() -> None:
    """A shell starts background jobs with SIGINT ignored, and Python keeps an inherited SIG_IGN: restore
    the disposition a run in a terminal has, whatever launched pytest (CI may run it in the background)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_killed_run_stops_its_adapter_and_writes_nothing(tmp_path, sig):
    out = tmp_path / "out"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "MEMMATRIX_HOME": str(ROOT), "MEMMATRIX_CACHE_DIR": str(tmp_path / "cache"),
           "MEMMATRIX_CALL_TIMEOUT": "120", "TMPDIR": str(scratch)}
    run = subprocess.Popen([sys.executable, "-m", "memmatrix", "run", "--system",
                            f"{ADAPTERS / 'procs.py'}:DaemonizesAndHangs", "--protocol", "deletion", "--out", str(out)],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=_as_in_a_terminal)
    deadline = time.monotonic() + 30
    while not processes_mentioning(str(scratch)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_mentioning(str(scratch)), "the adapter server never started"
    time.sleep(1.5)  # let the run reach the hanging door call
    # the adapter started a daemon (double fork + setsid): it is outside the run's process groups
    assert processes_mentioning("memmatrix-test-daemon:" + str(scratch)), "the adapter's daemon never started"
    run.send_signal(sig)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    assert "interrupted" in err
    time.sleep(0.5)
    assert processes_mentioning(str(scratch)) == []
    assert not list(out.rglob("result.json")) and not list(out.rglob(".*staging*"))
    assert list(scratch.iterdir()) == []  # the runtime's scratch folder is gone too
