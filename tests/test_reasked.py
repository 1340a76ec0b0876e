"""A model transcript this machine re-asked before, with every input of the oracle unchanged and every answer
matching, is not re-asked (``evidence/reasked.py``); any change to what the oracle's answer depends on, or to the
transcript, asks again."""

import json
import shutil

import pytest

from conftest import ROOT
from helpers import run
from test_verify import edit_one_answer, forge
from memmatrix.common.config import Config
from memmatrix.evidence.reasked import Marks, code_digest
from memmatrix.evidence.verify import verify_result
from memmatrix.model.oracle import Oracle


@pytest.fixture
def asked(monkeypatch):
    """How many requests the oracle has been asked (the real oracle, counted)."""
    count = {"n": 0}
    chat = Oracle.chat

    def counted(self, request):
        count["n"] += 1
        return chat(self, request)
    monkeypatch.setattr(Oracle, "chat", counted)
    return count


@pytest.fixture
def ref(config, tmp_path):
    return run(config, "reference", tmp_path / "ref") / "result.json"


def marks_in(marks: Marks) -> list:
    return sorted(marks.dir.iterdir()) if marks.dir.is_dir() else []


def test_a_transcript_reasked_before_is_not_asked_again(config, ref, tmp_path, asked):
    marks = Marks(tmp_path / "cache")
    assert verify_result(ref, config, marks=marks) == []
    first = asked["n"]
    assert first > 0 and len(marks_in(marks)) == 1
    assert verify_result(ref, config, marks=marks) == []
    assert asked["n"] == first  # skipped: nothing asked
    assert verify_result(ref, config, marks=Marks(tmp_path / "cache", code="other code")) == []
    assert asked["n"] == 2 * first  # other code: asked again
    assert verify_result(ref, config) == []
    assert asked["n"] == 3 * first  # no marks (the API's default): asked


def test_marks_of_other_code_are_removed(config, ref, tmp_path):
    old = Marks(tmp_path / "cache", code="a" * 64)
    assert verify_result(ref, config, marks=old) == [] and marks_in(old)
    new = Marks(tmp_path / "cache", code="b" * 64)
    assert verify_result(ref, config, marks=new) == []
    assert [p.name for p in (tmp_path / "cache" / "reasked").iterdir()] == [new.dir.name]


def test_an_answer_edited_after_its_transcript_was_marked_is_caught(config, ref, tmp_path):
    marks = Marks(tmp_path / "cache")
    assert verify_result(ref, config, marks=marks) == [] and len(marks_in(marks)) == 1
    forge(ref.parent, edit_lines=edit_one_answer, name="model-transcript")
    found = verify_result(ref, config, marks=marks)
    assert any("oracle answers differ from what the oracle answers today" in p for p in found), found
    assert len(marks_in(marks)) == 1  # the forged transcript got no mark


def test_a_forged_transcript_under_a_marked_sha256_is_caught(config, ref, tmp_path):
    """The forger edits an answer and leaves the result naming the marked transcript's sha256, so the mark's key is
    the marked one and the answers are not asked again: the lines no longer hash to that sha256, and verify says so."""
    marks = Marks(tmp_path / "cache")
    assert verify_result(ref, config, marks=marks) == [] and len(marks_in(marks)) == 1
    named = json.loads(ref.read_text())["model_transcript"]
    forge(ref.parent, edit_lines=edit_one_answer, name="model-transcript")
    result = json.loads(ref.read_text())
    result["model_transcript"] = named  # the forged bytes under the marked name
    ref.write_text(json.dumps(result))
    found = verify_result(ref, config, marks=marks)
    assert any("sha256 of its canonical lines" in p for p in found), found


def test_no_mark_for_a_transcript_whose_answers_differ(config, ref, tmp_path):
    marks = Marks(tmp_path / "cache")
    forge(ref.parent, edit_lines=edit_one_answer, name="model-transcript")
    assert verify_result(ref, config, marks=marks) != [] and marks_in(marks) == []


def test_no_mark_for_a_transcript_whose_lines_do_not_hash_to_the_recorded_sha256(config, ref, tmp_path, asked):
    marks = Marks(tmp_path / "cache")
    result = json.loads(ref.read_text())
    result["model_transcript"]["sha256"] = "0" * 64  # every answer still matches; the bytes are not the ones named
    ref.write_text(json.dumps(result))
    found = verify_result(ref, config, marks=marks)
    assert any("sha256 of its canonical lines" in p for p in found), found
    assert asked["n"] > 0 and marks_in(marks) == []


def test_the_key_moves_with_every_input_of_the_oracle(tmp_path, monkeypatch):
    systems = tmp_path / "systems"
    shutil.copytree(ROOT / "systems" / "reference", systems / "reference",
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("MEMMATRIX_SYSTEMS", str(systems))
    config = Config.from_env()
    cases = tmp_path / "cases.json"
    cases.write_bytes((ROOT / "cases" / "deletion" / "1.2.0.json").read_bytes())
    stamp = {"system": {"name": "reference", "version": "1.0", "adapter": "adapter.py:ReferenceAdapter"},
             "model": {"oracle_version": "1.1.0"}}

    def key(code="c", stamp=stamp, sha="s" * 64):
        return Marks(tmp_path / "cache", code=code).key(stamp, cases, config, sha)
    base = key()
    assert base is not None and key() == base
    assert key(code="d") != base
    assert key(sha="t" * 64) != base
    assert key(stamp={**stamp, "model": {"oracle_version": "1.1.0+duplicate"}}) != base
    (systems / "reference" / "notes.txt").write_text("any file of the folder counts\n")
    assert key() != base
    (systems / "reference" / "notes.txt").unlink()
    assert key() == base
    cases.write_bytes(cases.read_bytes() + b" ")
    assert key() != base


def test_an_adapter_named_by_its_path_gets_no_mark(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMMATRIX_SYSTEMS", str(ROOT / "tests" / "fixtures" / "systems"))
    stamp = {"system": {"name": "flipper", "version": "1.0.0",
                        "adapter": str(ROOT / "tests/fixtures/systems/flipper/adapter.py") + ":FlipperAdapter"},
             "model": {"oracle_version": "1.1.0"}}
    assert Marks(tmp_path, code="c").key(stamp, ROOT / "cases" / "deletion" / "1.2.0.json", Config.from_env(),
                                         "s" * 64) is None


def test_the_code_digest_covers_every_file_of_the_package_but_caches_and_home(tmp_path):
    pkg = tmp_path / "memmatrix"
    (pkg / "model" / "__pycache__").mkdir(parents=True)
    (pkg / "home").mkdir()
    (pkg / "model" / "oracle.py").write_text("A = 1\n")
    (pkg / "templates.txt").write_text("t\n")
    base = code_digest(pkg)
    (pkg / "model" / "__pycache__" / "oracle.cpython-311.pyc").write_bytes(b"x")
    (pkg / "home" / "result.json").write_text("{}")
    assert code_digest(pkg) == base
    (pkg / "model" / "oracle.py").write_text("A = 2\n")
    assert code_digest(pkg) != base
    (pkg / "model" / "oracle.py").write_text("A = 1\n")
    (pkg / "templates.txt").rename(pkg / "other.txt")
    assert code_digest(pkg) != base


def test_the_actions_verify_asks_the_oracle_for_every_answer(monkeypatch, tmp_path):
    """The runner's cache folder is restored from caches other runs wrote: the Action's verify trusts no mark there,
    in its verify step and before the Pages action builds a site (which stops when verify fails)."""
    from memmatrix.ci import action
    calls = []
    monkeypatch.setenv("MM_RESULTS", str(tmp_path))
    monkeypatch.setenv("MM_SITE", str(tmp_path / "site"))
    monkeypatch.setenv("MM_HISTORY", "")
    monkeypatch.setattr(action, "output", lambda *a: None)
    assert action.step_verify(None, lambda args: calls.append(args) or 0) == 0
    assert action.step_pages(None, lambda args: calls.append(args) or 1) == 1
    assert [c[:2] for c in calls] == [["verify", "--fresh"], ["verify", "--fresh"]], calls
