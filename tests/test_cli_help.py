"""The CLI explains itself: every subcommand has its own description, every argument its help, defaults shown;
one name for the output option (the old spelling kept); `model serve` has its own help."""

from __future__ import annotations

import argparse

import pytest

from memmatrix.cli import main, parser


def _parsers(p: argparse.ArgumentParser, path: tuple = ()):
    yield path, p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, path + (name,))


def test_every_subcommand_describes_itself_and_every_argument():
    missing = []
    for path, p in _parsers(parser()):
        if path and not p.description:
            missing.append(" ".join(path) + ": no description")
        for action in p._actions:
            if isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                continue
            if not (action.help or "").strip():
                missing.append(f"{' '.join(path)} {action.option_strings or action.dest}: no help")
    assert missing == []


def test_an_option_s_default_is_shown_once(capsys):
    with pytest.raises(SystemExit):
        main(["model", "serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--host HOST the address to listen on (loopback unless you mean it) (default: 127.0.0.1)" in out
    assert "--port PORT the port to listen on (default: 8790)" in out
    assert "Serve the model gateway on loopback" in out  # its own help, not `model`'s
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert out.count("default: memmatrix-results") == 1  # its help says it; nothing appended twice


@pytest.mark.parametrize("argv", [["run", "--out", "x"], ["run", "--output", "x"]])
def test_the_output_option_has_one_name_and_keeps_its_old_spelling(argv):
    assert parser().parse_args(argv).out == "x"


def test_plan_defaults_to_the_protocols_run_defaults_to():
    from memmatrix.protocols import main_job_protocols
    from memmatrix.ci.matrix import plan
    from memmatrix.common.config import Config
    from conftest import ROOT
    entries = plan(Config.from_env({"MEMMATRIX_HOME": str(ROOT)}), ["reference"], [], [])
    assert sorted({e["protocol"] for e in entries}) == sorted(main_job_protocols())


def test_the_shell_completes_subcommands_from_the_parser(tmp_path):
    import os
    import subprocess
    import sys
    pytest.importorskip("argcomplete")  # the [completion] extra, which [test] installs
    out = tmp_path / "completions"
    line = "memmatrix model s"
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_STDOUT_FILENAME": str(out), "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "_ARGCOMPLETE_IFS": "\n"}
    done = subprocess.run([sys.executable, "-m", "memmatrix"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert out.read_text().split() == ["serve", "setup"]
