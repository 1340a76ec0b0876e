"""The command line: exit codes, and errors that name the thing and the fix."""

import json
import shutil

import pytest

from conftest import ADAPTERS, ROOT
from memmatrix.cli import main


@pytest.fixture(autouse=True)
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMMATRIX_HOME", str(ROOT))
    monkeypatch.setenv("MEMMATRIX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMMATRIX_START_TIMEOUT", "3")
    monkeypatch.setenv("MEMMATRIX_CALL_TIMEOUT", "5")


def test_unknown_system_lists_the_known_ones(tmp_path, capsys):
    assert main(["run", "--system", "nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    known = sorted(d.name for d in (ROOT / "systems").iterdir() if (d / "system.yaml").is_file())
    assert len(known) >= 5 and f"unknown system 'nope'; known systems: {', '.join(known)} (" in err
    assert "path/to/adapter.py:ClassName" in err


def test_unknown_version_lists_the_pinned_ones(tmp_path, capsys):
    assert main(["run", "--system", "notes@9.9", "--out", str(tmp_path)]) == 2
    assert "system 'notes' pins no version '9.9'; pinned: 1.0" in capsys.readouterr().err


def test_the_main_job_leaves_out_a_system_that_opts_out_and_all_runs_it(tmp_path, monkeypatch, capsys):
    """A run without --system makes the main job: a system.yaml saying main_job: false is left out, by name; "all"
    and the system's own name still run it."""
    systems = tmp_path / "systems"
    for name, opt_out in (("notes", False), ("slowpoke", True)):
        shutil.copytree(ROOT / "systems" / "notes", systems / name)
        meta = (systems / name / "system.yaml").read_text().replace("name: notes", f"name: {name}")
        (systems / name / "system.yaml").write_text(meta + ("main_job: false\n" if opt_out else ""))
        adapter = systems / name / "adapter.py"
        adapter.write_text(adapter.read_text().replace('"name": "notes"', f'"name": "{name}"'))
    monkeypatch.setenv("MEMMATRIX_SYSTEMS", str(systems))

    def ran(*args):
        out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
        assert main(["run", *args, "--protocol", "deletion", "--runtime", "inprocess", "--out", str(out)]) == 0
        return sorted(p.name for p in (out / "deletion").iterdir())

    assert ran() == ["notes"]
    assert "the main job leaves out slowpoke (main_job: false" in capsys.readouterr().err
    assert ran("--system", "all") == ["notes", "slowpoke"]
    assert ran("--system", "slowpoke") == ["slowpoke"]
    assert "leaves out" not in capsys.readouterr().err
    assert main(["systems"]) == 0
    listed = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert listed["slowpoke"].endswith("; not in the main job (--system all or by name)")
    assert "main job" not in listed["notes"]


@pytest.mark.parametrize("runtime", ["inprocess", "embedded"])
def test_an_adapter_file_that_fails_to_import_is_named(tmp_path, capsys, runtime):
    rc = main(["run", "--system", f"{ADAPTERS / 'dies_on_start.py'}:Dead", "--runtime", runtime,
               "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "failed to import: RuntimeError: this adapter refuses to start" in err
    assert not (tmp_path / "out" / "deletion").exists()


def test_an_adapter_that_does_not_answer_is_named_with_its_log(tmp_path, capsys):
    rc = main(["run", "--system", f"{ADAPTERS / 'sleeps_on_start.py'}:Asleep", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "did not listen within 3 s (MEMMATRIX_START_TIMEOUT)" in err
    assert "log:" in err


def test_capabilities_that_break_the_contract_are_named(tmp_path, capsys):
    rc = main(["run", "--system", f"{ADAPTERS / 'misbehaving.py'}:NoName", "--runtime", "inprocess",
               "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "no support level declared for ['share']" in err
    assert "'supported' | 'emulated' | 'unsupported'" in err


def test_a_malformed_case_file_names_line_and_column(tmp_path, capsys):
    bad = tmp_path / "cases.json"
    bad.write_text('{"kind": "memmatrix.cases",\n "protocol": }')
    assert main(["run", "--system", "notes", "--cases", str(bad), "--out", str(tmp_path)]) == 2
    assert f"case file {bad} is not JSON: Expecting value at line 2, column 14" in capsys.readouterr().err


def test_a_case_file_that_breaks_the_protocol_rules_lists_every_problem(tmp_path, capsys):
    data = json.loads((ROOT / "cases/deletion/1.0.0.json").read_text())
    case = data["cases"][0]
    refeed = next(op for op in case["ops"] if op.get("refeed"))
    refeed["messages"] = [{"role": "user", "content": "The code for my storage locker is QX-4471-TRV."}]
    for op in case["ops"]:
        if op["op"] == "expect" and str(op["step"]) == "4":
            op["present"] = []
    f = tmp_path / "cases.json"
    f.write_text(json.dumps(data))
    assert main(["check-cases", str(f)]) == 2
    err = capsys.readouterr().err
    assert "re-feed the ORIGINAL source conversation" in err
    assert "needs a never-forgotten control" in err


def test_run_report_verify_diff_round_trip(tmp_path, capsys):
    out = tmp_path / "results"
    assert main(["run", "--system", "reference", "--system", "append", "--runtime", "inprocess",
                 "--out", str(out)]) == 0
    assert main(["verify", str(out)]) == 0
    assert main(["report", str(out)]) == 0
    report = capsys.readouterr().out
    assert "| reference | 1.0 | inprocess | no | PASS ×4 |" in report
    assert "| append | 1.0 | inprocess | no | PASS ×4 | PASS ×4 | PASS ×4 | FAIL ×4 |" in report
    assert "the audit trail still holds the deleted value" in report

    # a newer "version" of reference that lost step 6 is a regression
    old = out / "deletion" / "reference" / "1.0" / "inprocess"
    new = tmp_path / "new" / "deletion" / "reference" / "1.1" / "inprocess"
    shutil.copytree(old, new)
    r = json.loads((new / "result.json").read_text())
    r["stamp"]["system"]["version"] = "1.1"
    cell = next(c for c in r["cases"][0]["cells"] if c["step"] == "6")
    cell.update(verdict="FAIL", reason="canary still reachable", stage="delivered")
    (new / "result.json").write_text(json.dumps(r))
    assert main(["diff", str(old), str(new)]) == 3  # versions are compared only when asked
    assert "Nothing was comparable." in capsys.readouterr().out
    assert main(["diff", "--across-versions", str(old), str(new)]) == 1
    text = capsys.readouterr().out
    assert "| regression | reference | 1.0 → 1.1 | inprocess | identifier-locker-code | 6 | PASS → FAIL |" in text
    assert text.endswith("change(s).\n\n")  # a heading appended after the report renders
    assert main(["diff", "--across-versions", "--json", str(old), str(new)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["regressions"] == 1 and data["changes"][0]["step"] == "6" and data["changes"][0]["kind"] == "regression"
    assert main(["verify", str(new)]) == 1  # the forged cell does not re-derive


def test_diff_refuses_to_compare_different_setups(tmp_path, capsys):
    out = tmp_path / "results"
    assert main(["run", "--system", "notes", "--runtime", "inprocess", "--out", str(out)]) == 0
    assert main(["run", "--system", "notes", "--runtime", "inprocess", "--seed", "3", "--out", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    assert main(["diff", str(out), str(tmp_path / "b")]) == 3  # a gate that compared nothing does not pass
    text = capsys.readouterr().out
    assert "not compared" in text and "Nothing was comparable." in text


def test_a_tree_diff_pairs_each_run_with_its_own_version(tmp_path, capsys):
    """Two versions of one system in one tree share a fingerprint; each must pair with itself, not across."""
    base = tmp_path / "base"
    assert main(["run", "--system", "notes", "--protocol", "deletion", "--runtime", "inprocess", "--out", str(base)]) == 0
    old = base / "deletion" / "notes" / "1.0" / "inprocess"
    forged = base / "deletion" / "notes" / "0.9" / "inprocess"
    shutil.copytree(old, forged)
    r = json.loads((forged / "result.json").read_text())
    r["stamp"]["system"]["version"] = "0.9"
    for case in r["cases"]:
        for cell in case["cells"]:
            cell["verdict"] = "PASS"
    (forged / "result.json").write_text(json.dumps(r))
    new = tmp_path / "new"
    shutil.copytree(base, new)
    capsys.readouterr()
    assert main(["diff", str(base), str(new)]) == 0
    text = capsys.readouterr().out
    assert "No state changed." in text and text.count("- compared") == 2
    # the baseline must not be the results folder (or inside it)
    assert main(["diff", str(new), str(new)]) == 2
    assert "is (or holds, or lies inside) the results folder" in capsys.readouterr().err
    assert main(["diff", str(new / "deletion"), str(new)]) == 2
    # across versions, one side holding two versions of one setup is refused, not guessed
    assert main(["diff", "--across-versions", str(base), str(new)]) == 2
    assert "holds two runs of one setup" in capsys.readouterr().err


def test_verify_of_an_empty_folder_says_what_to_do(tmp_path, capsys):
    assert main(["verify", str(tmp_path)]) == 2
    assert "run `memmatrix run` first" in capsys.readouterr().err


# ---------------------------------------------------------------- bad input: one line, exit 2, nothing started
@pytest.mark.parametrize("argv,says", [
    (["--system", "../x"], "--system '../x' is neither a system name"),
    (["--system", "notes", "--option", "nope=1"], "--option nope: notes declares no such option"),
    (["--system", "notes", "--option", "=1"], "is not KEY=VALUE"),
    (["--system", "notes", "--protocol", "nope"], "unknown protocol 'nope'"),
])
def test_bad_run_arguments_are_one_line_and_exit_2(tmp_path, capsys, argv, says):
    assert main(["run", *argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_out_on_a_file_or_an_unwritable_place_is_refused_before_anything_runs(tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("x")
    assert main(["run", "--system", "notes", "--out", str(f)]) == 2
    assert f"--out {f} is a file" in capsys.readouterr().err
    assert main(["run", "--system", "notes", "--out", "/proc/memmatrix-out"]) == 2  # not writable, even for root
    err = capsys.readouterr().err
    assert "is not writable" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["report", "diff"])
def test_a_broken_result_given_to_report_or_diff_is_named(tmp_path, capsys, command):
    bad = tmp_path / "r" / "x"
    bad.mkdir(parents=True)
    (bad / "result.json").write_text('{"kind": "memmatrix.result"}')
    if command == "diff":
        shutil.copytree(tmp_path / "r", tmp_path / "baseline")
    args = ([str(tmp_path / "baseline")] if command == "diff" else []) + [str(tmp_path / "r")]
    assert main([command, *args]) == 2
    err = capsys.readouterr().err
    named = (tmp_path / "baseline" / "x") if command == "diff" else bad  # the baseline is read first
    assert f"{named / 'result.json'} is not a memmatrix result" in err and "Traceback" not in err
    (named / "result.json").write_text("{not json")
    assert main([command, *args]) == 2
    assert "cannot be read as JSON" in capsys.readouterr().err


def test_a_secret_option_never_reaches_a_folder_name_or_a_stamp(tmp_path, capsys):
    secret = "sk-test-0123456789abcdefXYZ"
    out = tmp_path / "out"
    assert main(["run", "--system", f"{ADAPTERS / 'with_options.py'}:WithOptions", "--runtime", "inprocess",
                 "--protocol", "deletion", "--option", "flavour=spicy", "--option", f"service_token={secret}",
                 "--out", str(out)]) == 0
    (run_dir,) = [p.parent for p in out.rglob("result.json")]
    assert run_dir.name == "inprocess+flavour=spicy"
    from helpers import text_of
    everything = (run_dir / "result.json").read_text() + text_of(run_dir) + text_of(run_dir, "model-transcript")
    assert secret not in everything
    assert json.loads((run_dir / "result.json").read_text())["stamp"]["system"]["options"] == \
        {"flavour": "spicy", "service_token": "~redacted"}
    assert main(["run", "--system", f"{ADAPTERS / 'with_options.py'}:WithOptions", "--runtime", "inprocess",
                 "--protocol", "deletion", "--option", "flavour=sour", "--out", str(out)]) == 2
    assert "accepts flavour in ['plain', 'spicy']" in capsys.readouterr().err


def test_another_setup_never_silently_replaces_a_result(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "--system", "notes", "--runtime", "inprocess", "--protocol", "deletion", "--out", str(out)]) == 0
    first = (out / "deletion/notes/1.0/inprocess/result.json").read_text()
    older = ROOT / "cases/deletion/1.1.0.json"
    # an older case file lands in a folder of its own
    assert main(["run", "--system", "notes", "--runtime", "inprocess", "--cases", str(older), "--out", str(out)]) == 0
    assert list((out / "deletion/notes/1.0").glob("inprocess+cases=1.1.0-*"))
    # a seed is named too; and the same setup again replaces its own result
    assert main(["run", "--system", "notes", "--runtime", "inprocess", "--protocol", "deletion", "--seed", "3",
                 "--out", str(out)]) == 0
    assert (out / "deletion/notes/1.0/inprocess+seed=3/result.json").exists()
    assert main(["run", "--system", "notes", "--runtime", "inprocess", "--protocol", "deletion", "--out", str(out)]) == 0
    # a result of a different setup in the target folder is refused, naming what differs
    r = json.loads(first)
    r["stamp"]["dataset"]["sha256"] = "0" * 64
    (out / "deletion/notes/1.0/inprocess/result.json").write_text(json.dumps(r))
    capsys.readouterr()
    assert main(["run", "--system", "notes", "--runtime", "inprocess", "--protocol", "deletion", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "holds a result of a different setup (dataset '0000" in err and "--replace" in err
    assert main(["run", "--system", "notes", "--runtime", "inprocess", "--protocol", "deletion", "--replace",
                 "--out", str(out)]) == 0


def test_a_run_ends_saying_whether_it_matches_the_committed_matrix(tmp_path, capsys):
    """A run outside results/ is compared with the committed runs of its protocol, system and version: the same
    cells match; a system the matrix does not hold has nothing to compare with."""
    assert main(["run", "--system", "reference", "--protocol", "deletion", "--out", str(tmp_path / "a")]) == 0
    assert "matches the committed matrix (1 run(s) compared, every cell the same)" in capsys.readouterr().err
    assert main(["run", "--system", f"{ROOT / 'examples' / 'minimal_adapter.py'}:MinimalAdapter", "--protocol", "deletion", "--runtime", "inprocess",
                 "--out", str(tmp_path / "b")]) == 0
    assert "no committed result of the same setup to compare with" in capsys.readouterr().err
