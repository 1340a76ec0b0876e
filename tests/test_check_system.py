"""`memmatrix check-system NAME`: a contributor's quick check of one system folder. Every folder passes the checks
that run nothing; the positive control passes the run checks; a copy of it with one planted defect fails exactly
the check that defect belongs to, with a message naming the fix."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT
from memmatrix.ci.checksystem import lock_problems
from memmatrix.cli import main
from memmatrix.common.config import Config
from memmatrix.protocols import main_job_protocols
from memmatrix.systems import known_systems

SYSTEMS = known_systems(Config.from_env({"MEMMATRIX_HOME": str(ROOT)}))
LINE = re.compile(r"^(ok|FAIL|skip) +(.+?): (.*)$")


def checks(out: str) -> dict[str, tuple[str, str]]:
    """check -> (mark, its line with the indented lines under it)."""
    found: dict[str, tuple[str, str]] = {}
    last = None
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            last = m.group(2)
            found[last] = (m.group(1), m.group(3))
        elif line.startswith("  - ") and last:
            found[last] = (found[last][0], found[last][1] + "\n" + line)
    return found


def failed(out: str) -> set[str]:
    return {c for c, (mark, _) in checks(out).items() if mark == "FAIL"}


@pytest.fixture
def env(tmp_path, monkeypatch):
    """The checkout's home and a private cache; MEMMATRIX_SYSTEMS set by planted()."""
    monkeypatch.setenv("MEMMATRIX_HOME", str(ROOT))
    monkeypatch.setenv("MEMMATRIX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMMATRIX_SETTLE_TIMEOUT", "2")
    monkeypatch.setenv("MEMMATRIX_CALL_TIMEOUT", "10")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # a failed run's outputs are left in its scratch folder
    for name in ("MEMMATRIX_SYSTEMS", "MEMMATRIX_MODEL_MODE", "MEMMATRIX_MODEL_ORACLE_ABLATION",
                 "MEMMATRIX_MODEL_EMBEDDER", "MEMMATRIX_PRIVATE_CASES"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def planted(tmp_path, env, source: str = "reference"):
    """systems/<source> copied to a systems root of its own as `planted`, found through MEMMATRIX_SYSTEMS."""
    folder = tmp_path / "systems" / "planted"
    shutil.copytree(ROOT / "systems" / source, folder, ignore=shutil.ignore_patterns("__pycache__"))
    text = (folder / "system.yaml").read_text()
    (folder / "system.yaml").write_text(re.sub(r"^name: \w+", "name: planted", text, flags=re.M))
    adapter = (folder / "adapter.py").read_text()
    (folder / "adapter.py").write_text(re.sub(r'"system": \{"name": "\w+"', '"system": {"name": "planted"', adapter))
    env.setenv("MEMMATRIX_SYSTEMS", str(folder.parent))
    return folder


def edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path.name} no longer holds {old!r}: update the planted defect"
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("name", SYSTEMS)
def test_every_system_folder_passes_the_static_checks(name, env, capsys):
    code = main(["check-system", name, "--static"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert {c: mark for c, (mark, _) in checks(out).items()} == {"system.yaml": "ok", "lock": "ok", "oracle": "ok"}
    assert re.search(rf"^memmatrix check-system {name}@\S+: all 3 check\(s\) passed in \d+\.\d s$", out, re.M), out


def test_the_recorded_requests_of_a_system_are_replayed_per_file(env, capsys):
    recorded = sorted((ROOT / "tests" / "fixtures" / "requests").glob("mem0-*.json"))
    assert main(["check-system", "mem0", "--static"]) == 0
    oracle = checks(capsys.readouterr().out)["oracle"][1]
    assert f"{len(recorded)} recorded file(s) replayed" in oracle
    assert [line.split(": ")[0] for line in oracle.splitlines()[1:]] == \
        [f"  - {p.relative_to(ROOT)}" for p in recorded]
    # a file naming its case file is answered from that gold, the embeddings by the gateway
    assert re.search(r"mem0-2\.2\.1-extract-links\.json: answered \(mem0", oracle), oracle
    assert "mem0-embeddings.json: answered (embedding)" in oracle


def test_the_positive_control_passes_every_check_and_keep_keeps_verifiable_results(env, capsys, tmp_path):
    keep = tmp_path / "keep"
    code = main(["check-system", "reference", "--keep", str(keep)])
    out = capsys.readouterr().out
    assert code == 0, out
    found = checks(out)
    assert list(found) == ["system.yaml", "lock", "oracle", *(f"run {p}" for p in main_job_protocols())]
    for p in main_job_protocols():
        mark, line = found[f"run {p}"]
        assert mark == "ok" and re.search(r"\d+ PASS, 0 FAIL, 0 ERROR, 0 SKIP; 0 model error\(s\), 0 unmatched, "
                                          r"verified", line), line
    assert re.search(r"^memmatrix check-system reference@1\.0: all 8 check\(s\) passed in \d+\.\d s$", out, re.M)
    results = sorted(keep.rglob("result.json"))
    assert sorted(r.relative_to(keep / "results").parts[0] for r in results) == main_job_protocols()
    assert all(len(json.loads(r.read_text())["cases"]) == 1 for r in results)
    env.setenv("MEMMATRIX_PRIVATE_CASES", str(keep / "cases"))  # where verify finds the one-case files
    assert main(["verify", str(keep / "results")]) == 0


def test_a_fail_verdict_is_the_systems_measure_not_a_failed_check(env, capsys):
    assert main(["check-system", "append", "--protocol", "deletion"]) == 0
    mark, line = checks(capsys.readouterr().out)["run deletion"]
    assert mark == "ok" and int(re.search(r"(\d+) FAIL", line).group(1)) > 0, line


def test_a_broken_system_yaml_fails_its_check_and_skips_the_rest(tmp_path, env, capsys):
    folder = planted(tmp_path, env)
    edit(folder / "system.yaml", 'default_version: "1.0"', 'default_version: "9.9"')
    assert main(["check-system", "planted", "--protocol", "deletion"]) == 1
    out = capsys.readouterr().out
    assert failed(out) == {"system.yaml"}
    line = checks(out)["system.yaml"][1]
    assert "does not fit schemas/system.schema.json" in line and "at /default_version: '9.9' is not one of ['1.0']" in line
    assert {c: m for c, (m, _) in checks(out).items() if c != "system.yaml"} == \
        {"lock": "skip", "oracle": "skip", "run deletion": "skip"}
    assert "1 of 1 check(s) failed (system.yaml)" in out


def test_a_lock_naming_a_local_folder_fails_the_lock_check(tmp_path, env, capsys):
    folder = planted(tmp_path, env)
    (folder / "locks").mkdir()
    (folder / "locks" / "1.0.txt").write_text("--find-links /some/local/path\nsix==1.16.0 \\\n    --hash=sha256:" +
                                              "0" * 64 + "\n")
    edit(folder / "system.yaml", '"1.0": {}', '"1.0": {lock: locks/1.0.txt}')
    assert main(["check-system", "planted", "--protocol", "deletion"]) == 1
    out = capsys.readouterr().out
    assert failed(out) == {"lock"}
    line = checks(out)["lock"][1]
    assert "1.0.txt line 1 (--find-links /some/local/path) names a path of this machine: delete the line" in line
    assert checks(out)["run deletion"][0] == "skip"  # an environment is never built from a broken lock


@pytest.mark.parametrize("lock, requirements, says", [
    ("six==1.16.0 --hash=sha256:ab\n", "six==1.16.0\n", None),
    ("--index-url https://example.org/simple\nsix==1.16.0 --hash=sha256:ab\n", None,
     "line 1 (--index-url https://example.org/simple) names a package index"),
    ("-i file:///wheels\nsix==1.16.0 --hash=sha256:ab\n", None, "names a path of this machine"),
    ("six==1.16.0\n", None, "six carries no --hash"),
    ("six>=1.0 --hash=sha256:ab\n", None, "is not pinned (name==version)"),
    ("six==1.15.0 --hash=sha256:ab\n", "six==1.16.0\n", "asks for six==1.16.0 but 1.0.txt pins 1.15.0"),
    ("six==1.16.0 --hash=sha256:ab\n", "six==1.16.0\nattrs>=23\n", "asks for attrs>=23 but 1.0.txt pins no such"),
])
def test_lock_problems(tmp_path, lock, requirements, says):
    (tmp_path / "1.0.txt").write_text(lock)
    if requirements is not None:
        (tmp_path / "1.0.in").write_text(requirements)
    problems, pins = lock_problems(tmp_path / "1.0.txt", tmp_path / "1.0.in", "scripts/lock-system.sh")
    if says is None:
        assert problems == [] and pins == 1
    else:
        assert len(problems) == 1 and says in problems[0], problems
        assert "scripts/lock-system.sh" in problems[0] or "delete the line" in problems[0]


RAISING_ORACLE = '''from memmatrix.model.dialects.common import Reply, tool_names


class Probe:
    @staticmethod
    def match(request):
        return "planted_probe" in tool_names(request)

    @staticmethod
    def answer(request, gold):
        raise KeyError("planted dialect defect")


DIALECTS = (Probe,)
'''


def test_a_dialect_that_raises_on_a_recorded_request_fails_the_oracle_check(tmp_path, env, capsys):
    folder = planted(tmp_path, env)
    (folder / "oracle.py").write_text(RAISING_ORACLE)
    edit(folder / "system.yaml", "adapter: adapter.py:ReferenceAdapter",
         "adapter: adapter.py:ReferenceAdapter\noracle: oracle.py:DIALECTS")
    (folder / "requests").mkdir()
    probe = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
             "tools": [{"type": "function", "function": {"name": "planted_probe", "parameters": {"type": "object"}}}]}
    for name, body in (("a-plain.json", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
                       ("b-probe.json", probe)):
        (folder / "requests" / name).write_text(json.dumps({"system": "planted", "version": "1.0",
                                                            "path": "/v1/chat/completions", "request": body}))
    assert main(["check-system", "planted", "--protocol", "deletion"]) == 1
    out = capsys.readouterr().out
    assert failed(out) == {"oracle"}, out  # the run never sends the probe: it passes
    line = checks(out)["oracle"][1]
    assert "2 recorded file(s) replayed: 1 unmatched, 1 raised" in line
    assert re.search(r"requests/a-plain\.json: unmatched$", line, re.M), line
    assert re.search(r"requests/b-probe\.json: raised KeyError: 'planted dialect defect' \(at \S*planted/oracle\.py "
                     r"line 11, in answer\); fix the dialect", line), line


def test_an_adapter_whose_write_raises_fails_the_run_check(tmp_path, env, capsys):
    folder = planted(tmp_path, env)
    edit(folder / "adapter.py", "        facts = self._extract(messages)\n",
         "        raise RuntimeError('planted write defect')\n")
    assert main(["check-system", "planted", "--protocol", "deletion"]) == 1
    out = capsys.readouterr().out
    assert failed(out) == {"run deletion"}
    mark, line = checks(out)["run deletion"]
    assert re.search(r"[1-9]\d* ERROR", line) and "ERROR cell(s) (first: step" in line and "planted write defect" in line
    kept = Path(re.search(r"the outputs are in (\S+)$", line, re.M).group(1))  # a failed run's outputs stay
    assert (kept / "result.json").is_file() and tmp_path in kept.parents


def test_a_broken_oracle_module_fails_the_oracle_check_and_no_run_starts(tmp_path, env, capsys):
    folder = planted(tmp_path, env)
    (folder / "oracle.py").write_text("def broken(:\n")
    edit(folder / "system.yaml", "adapter: adapter.py:ReferenceAdapter",
         "adapter: adapter.py:ReferenceAdapter\noracle: oracle.py:DIALECTS")
    assert main(["check-system", "planted", "--protocol", "deletion"]) == 1
    out = capsys.readouterr().out
    assert failed(out) == {"oracle"}
    assert re.search(r"oracle\.py does not load \(SyntaxError: .*\); fix it", checks(out)["oracle"][1])
    assert checks(out)["run deletion"] == ("skip", "the run refuses a system whose oracle module does not load")


def test_an_oracle_module_system_yaml_does_not_name_fails_the_oracle_check(tmp_path, env, capsys):
    folder = planted(tmp_path, env)
    (folder / "oracle.py").write_text(RAISING_ORACLE)  # never loaded: the gateway loads what system.yaml names
    assert main(["check-system", "planted", "--static"]) == 1
    out = capsys.readouterr().out
    assert failed(out) == {"oracle"}
    assert "oracle.py exists but system.yaml names no 'oracle'" in checks(out)["oracle"][1]
    assert "add `oracle: oracle.py:DIALECTS` to system.yaml" in checks(out)["oracle"][1]


def test_a_result_that_does_not_verify_fails_the_run_check(tmp_path, env, capsys):
    """An adapter that writes into its own folder changes the code the stamp binds: verify refuses the result."""
    folder = planted(tmp_path, env)
    edit(folder / "adapter.py", "        facts = self._extract(messages)\n",
         "        Path(__file__).with_name('state.py').write_text(repr(messages))\n"
         "        facts = self._extract(messages)\n")
    assert main(["check-system", "planted", "--protocol", "deletion"]) == 1
    out = capsys.readouterr().out
    assert failed(out) == {"run deletion"}
    mark, line = checks(out)["run deletion"]
    assert "13 PASS, 0 FAIL, 0 ERROR" in line  # every cell passed: only the verification fails it
    assert re.search(r"the result does not verify: .*code_sha256 .*an adapter writing into its own folder", line), line


def test_a_prompt_no_dialect_answers_fails_the_run_check(tmp_path, env, capsys):
    folder = planted(tmp_path, env)
    edit(folder / "adapter.py", 'EXTRACT = """memmatrix-extract/v1', 'EXTRACT = """planted-extract/v0')
    assert main(["check-system", "planted", "--protocol", "deletion"]) == 1
    out = capsys.readouterr().out
    assert failed(out) == {"run deletion"}
    line = checks(out)["run deletion"][1]
    assert re.search(r"the oracle left [1-9]\d* model call\(s\) unmatched \([^)]*write: unmatched x\d+", line), line
    assert "add or fix a dialect" in line


@pytest.mark.parametrize("argv, says", [
    (["nosuch"], "unknown system 'nosuch'; known systems: "),
    (["reference@9.9"], "system 'reference' pins no version '9.9'; pinned: 1.0"),
    (["reference", "--protocol", "nosuch"], "unknown protocol 'nosuch'"),
    (["adapter.py:Thing"], "check-system checks a system folder"),
])
def test_a_user_error_is_one_line_and_exit_2(env, capsys, argv, says):
    assert main(["check-system", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1 and says in captured.err
