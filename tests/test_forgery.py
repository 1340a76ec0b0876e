"""Forgeries that agree with themselves: a result edited, then every hash, sha, cost, finding and fingerprint
recomputed so its files agree with each other. Each must be rejected by ``verify`` with a message naming the file
and what disagrees, or, where only a signature can tell (a real-model run relabelled), be reported unattested and
refused by ``verify --attested-by``.

``reseal`` is the forger: it re-derives everything verify re-derives from the (edited) transcripts and stamp, so a
forgery fails only on evidence outside the result itself.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from memmatrix.cli import main
from memmatrix.common.canon import canonical, compress_bytes, sha256_bytes, sha256_file, sha256_tree
from memmatrix.common.config import Config
from memmatrix.evidence.verify import verify_result
from memmatrix.protocols import get_protocol
from memmatrix.protocols.scoring import recorded_capabilities, score_transcript, summarize
from memmatrix.result import derive
from memmatrix.result.artifacts import render_result
from memmatrix.result.costs import derive_costs
from memmatrix.result.stamp import fingerprint
from memmatrix.exchange.transcript import read_lines

MEM0 = Path("deletion/mem0/2.2.1/embedded")
REFERENCE = Path("contradiction/reference/1.0/embedded")


@pytest.fixture
def tree(tmp_path):
    """A copy of two committed results (one with a model transcript and a system oracle, one judged), laid out as
    the results tree is."""
    root = tmp_path / "results"
    for rel in (MEM0, REFERENCE, Path("deletion/notes/1.0/embedded")):
        shutil.copytree(ROOT / "results" / rel, root / rel)
    return root


@pytest.fixture
def cfg(tmp_path):
    return Config.from_env({"MEMMATRIX_HOME": str(ROOT), "MEMMATRIX_CACHE_DIR": str(tmp_path / "cache")})


def load(run: Path) -> tuple[dict, list[dict], list[dict]]:
    result = json.loads((run / "result.json").read_text())
    records = read_lines(run / result["transcript"]["file"])
    model = read_lines(run / result["model_transcript"]["file"]) if result.get("model_transcript") else []
    return result, records, model


def _store(run: Path, entry: dict, records: list[dict]) -> dict:
    text = "".join(canonical(r) + "\n" for r in records)
    name = entry["file"] if entry["file"].endswith(".xz") else entry["file"].rsplit(".", 1)[0] + ".xz"
    for old in run.glob(entry["file"].split(".jsonl")[0] + ".jsonl*"):
        old.unlink()
    (run / name).write_bytes(compress_bytes(text.encode()))
    return {**entry, "file": name, "sha256": sha256_bytes(text.encode()), "records": len(records),
            **({"encoding": "xz"} if "encoding" in entry else {})}


def reseal(run: Path, result: dict, records: list[dict], model: list[dict] | None) -> None:
    """Write the edited result back with everything verify re-derives recomputed: a self-consistent forgery."""
    result["transcript"] = _store(run, result["transcript"], records)
    if model is None or not result.get("model_transcript"):
        for old in run.glob("model-transcript.jsonl*"):
            old.unlink()
        result.pop("model_transcript", None)
        model = []
    else:
        result["model_transcript"] = _store(run, result["model_transcript"], model)
    stamp = result["stamp"]
    protocol = get_protocol(stamp["protocol"]["name"])
    cases = score_transcript(protocol, records)
    result["cases"], result["summary"] = cases, summarize(protocol, cases)
    result["capabilities"] = recorded_capabilities(records)
    stamp["system"]["declared"] = result["capabilities"]["system"]
    result["cost"] = derive.model_cost(model, stamp["model"]["mode"])
    result["costs"] = derive_costs(records, result["cost"])
    result["findings"] = derive.run_findings(records, result["capabilities"], stamp.get("limits", {})) + \
        derive.model_findings(model, result["cost"])
    stamp["fingerprint"] = fingerprint(stamp)
    (run / "result.json").write_text(render_result(result))


def relabel_header(records: list[dict], **changes) -> None:
    """Set fields of the run header (dotted keys: ``system.name``)."""
    for key, value in changes.items():
        target = records[0]
        *path, last = key.split(".")
        for p in path:
            target = target[p]
        target[last] = value


def problems_of(run: Path, cfg: Config) -> str:
    found = verify_result(run / "result.json", cfg)
    assert found, "the forgery passed verify"
    return " | ".join(found)


def move(tree: Path, run: Path, to: Path) -> Path:
    (tree / to).parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(tree / run), str(tree / to))
    return tree / to


# ---------------------------------------------------------------- the control
def test_the_copies_verify_untouched(tree, cfg):
    for run in (MEM0, REFERENCE):
        assert verify_result(tree / run / "result.json", cfg) == []
    result, records, model = load(tree / MEM0)
    reseal(tree / MEM0, result, records, model)  # resealing what was not edited changes nothing verify sees
    assert verify_result(tree / MEM0 / "result.json", cfg) == []


# ---------------------------------------------------------------- relabels of the system
def test_a_reference_run_relabelled_as_notes(tree, cfg):
    run = move(tree, REFERENCE, Path("contradiction/notes/1.0/embedded"))
    result, records, model = load(run)
    notes = ROOT / "systems" / "notes"
    for where in (result["stamp"]["system"], records[0]["system"]):
        where.update(name="notes", adapter="systems/notes/adapter.py:NotesAdapter",
                     adapter_sha256=sha256_file(notes / "adapter.py"), code_sha256=sha256_tree(notes))
    caps = next(r for r in records if r.get("call") == "capabilities")
    caps["result"]["system"] = {"name": "notes", "version": "1.0"}
    reseal(run, result, records, model)
    assert "which the class systems/notes/adapter.py:NotesAdapter does not define" in problems_of(run, cfg)


def test_a_version_relabelled(tree, cfg):
    run = move(tree, Path("deletion/notes/1.0/embedded"), Path("deletion/notes/9.9/embedded"))
    result, records, model = load(run)
    for where in (result["stamp"]["system"], records[0]["system"]):
        where["version"] = "9.9"
    next(r for r in records if r.get("call") == "capabilities")["result"]["system"]["version"] = "9.9"
    reseal(run, result, records, model)
    assert "notes 9.9, which its system.yaml neither pins (1.0) nor drives as a release" in problems_of(run, cfg)


def test_an_invented_option(tree, cfg):
    run = move(tree, MEM0, Path("deletion/mem0/2.2.1/embedded+mode=strict"))
    result, records, model = load(run)
    for where in (result["stamp"]["system"], records[0]["system"]):
        where["options"] = {"mode": "strict"}
    reseal(run, result, records, model)
    assert "the stamp's option mode='strict' is not one mem0 declares" in problems_of(run, cfg)


def test_the_adapter_sha_of_another_file(tree, cfg):
    result, records, model = load(tree / MEM0)
    for where in (result["stamp"]["system"], records[0]["system"]):
        where["adapter_sha256"] = sha256_file(ROOT / "systems" / "notes" / "adapter.py")
    reseal(tree / MEM0, result, records, model)
    assert "the stamp's system folder is neither the checkout's systems/mem0" in problems_of(tree / MEM0, cfg)


def test_a_lock_of_another_version(tree, cfg):
    result, records, model = load(tree / MEM0)
    for where in (result["stamp"]["system"], records[0]["system"]):
        where["lock_sha256"] = sha256_file(ROOT / "systems" / "mem0" / "locks" / "1.0.11.txt")
    reseal(tree / MEM0, result, records, model)
    assert "locks/2.2.1.txt" in problems_of(tree / MEM0, cfg)


def test_the_oracle_module_hash_of_another_module(tree, cfg):
    result, records, model = load(tree / MEM0)
    for where in (result["stamp"]["system"], records[0]["system"]):
        where["oracle_sha256"] = sha256_file(ROOT / "systems" / "graphiti" / "oracle.py")
    reseal(tree / MEM0, result, records, model)
    assert "oracle.py" in problems_of(tree / MEM0, cfg)


def _code_hash_with_yaml(yaml_bytes: bytes) -> str:
    """The reference folder's code hash as a run takes it, with system.yaml holding ``yaml_bytes``."""
    from memmatrix.evidence.identity import _checkout_folder, _snapshot
    files = dict(_checkout_folder(ROOT / "systems" / "reference")["files"])
    files["system.yaml"] = sha256_bytes(yaml_bytes)
    return _snapshot(files)["code"]


def _git_show(spec: str) -> bytes | None:
    import subprocess
    done = subprocess.run(["git", "-C", str(ROOT), "show", spec], capture_output=True)
    return done.stdout if done.returncode == 0 else None


def test_a_folder_with_an_earlier_committed_system_yaml_is_found_and_named(tree, cfg):
    """system.yaml also records what is learnt after a run (release changes, notes): a run made before such an
    entry was committed is found at the commit whose system.yaml it had, and the note says what changed since."""
    import subprocess
    log = subprocess.run(["git", "-C", str(ROOT), "log", "--format=%H", "--", "systems/reference/system.yaml"],
                         capture_output=True, text=True).stdout.split()
    now = (ROOT / "systems" / "reference" / "system.yaml").read_bytes()
    earlier = next(((c, b) for c in log if (b := _git_show(f"{c}:systems/reference/system.yaml")) not in (None, now)),
                   None)
    if earlier is None:
        pytest.skip("no git history of systems/reference/system.yaml in this checkout")
    run = tree / REFERENCE
    result, records, model = load(run)
    for where in (result["stamp"]["system"], records[0]["system"]):
        where["code_sha256"] = _code_hash_with_yaml(earlier[1])
    reseal(run, result, records, model)
    remarks: list[str] = []
    assert verify_result(run / "result.json", cfg, remarks) == []
    assert any(f"with the system.yaml of commit {earlier[0][:12]}" in r and "since changed:" in r for r in remarks), \
        remarks


def test_a_folder_with_a_system_yaml_never_committed_is_refused(tree, cfg):
    run = tree / REFERENCE
    result, records, model = load(run)
    edited = (ROOT / "systems" / "reference" / "system.yaml").read_bytes() + b"# edited after the fact\n"
    for where in (result["stamp"]["system"], records[0]["system"]):
        where["code_sha256"] = _code_hash_with_yaml(edited)
    reseal(run, result, records, model)
    assert "the stamp's system folder is neither the checkout's systems/reference" in problems_of(run, cfg)


def test_compose_relabelled_embedded_is_only_told_by_a_signature(tree, cfg, tmp_path, capsys):
    """A deterministic system answers the same under both runtimes, so nothing in the result can tell a compose run
    relabelled embedded: only CI's signature can. Unsigned, verify --attested-by refuses it."""
    pytest.importorskip("sigstore")
    shutil.copytree(ROOT / "results" / "deletion/reference/1.0/compose", tree / "deletion/reference/1.0/compose")
    run = move(tree, Path("deletion/reference/1.0/compose"), Path("deletion/reference/1.0/embedded"))
    result, records, model = load(run)
    result["stamp"]["runtime"] = {"name": "embedded", "python": "3.11.7"}
    result["stamp"]["system"].update(compose_sha256=None, image_digests={})
    records[0]["runtime"] = "embedded"
    reseal(run, result, records, model)
    assert verify_result(run / "result.json", cfg) == []
    workflow = "memmatrix/memmatrix/.github/workflows/nightly.yml"
    assert main(["verify", str(run), "--attested-by", workflow]) == 1
    assert f"unattested: no attestation beside it; --attested-by {workflow} refuses it" in capsys.readouterr().out


# ---------------------------------------------------------------- relabels of the setup (the folder's name)
@pytest.mark.parametrize("folder, says", [
    ("embedded+cases=breadth-2.0.0-1a0edcf4", "names case set 'breadth-2.0.0-1a0edcf4'"),
    ("embedded+forget_path=secure_wipe", "names options {'forget_path': 'secure_wipe'}, the stamp none"),
    ("embedded+seed=3", "names seed 3, the stamp 0"),
    ("embedded+oracle-undated", "names oracle ablation 'undated'"),
    ("compose", "names runtime 'compose', the stamp 'embedded'"),
    ("embedded+repeat-2", "names repeat 2, the stamp 1"),
])
def test_a_result_moved_to_another_setups_folder(tree, cfg, folder, says):
    run = move(tree, MEM0, MEM0.parent / folder)
    assert says in problems_of(run, cfg)


# ---------------------------------------------------------------- the model
def test_the_model_transcript_deleted(tree, cfg):
    result, records, _ = load(tree / MEM0)
    reseal(tree / MEM0, result, records, None)  # cost, costs and findings re-derived from no model call at all
    assert "mem0 calls a model (its system.yaml names oracle dialects), but the result holds no model call" \
        in problems_of(tree / MEM0, cfg)


def test_the_judges_suite_deleted_from_a_judged_run(tree, cfg):
    result, records, model = load(tree / REFERENCE)
    model = [r for r in model if (r.get("context") or {}).get("call") != "judge-suite"]
    result["stamp"]["judge"]["accuracy"] = None
    reseal(tree / REFERENCE, result, records, model)
    assert "of the judge suite's" in problems_of(tree / REFERENCE, cfg) or \
        "accuracy" in problems_of(tree / REFERENCE, cfg)


def test_an_oracle_run_relabelled_as_a_proxy_run_in_its_own_folder(tree, cfg):
    result, records, model = load(tree / MEM0)
    proxy = {"mode": "proxy", "id": "gpt-4o", "oracle_version": None, "embedding_model": "text-embedding-3-small",
             "temperature": 0, "seed": 0, "max_tokens": 2000}
    result["stamp"]["model"] = records[0]["model"] = proxy
    for r in model:
        r.pop("dialect", None), r.pop("matched", None)
        r["upstream_model"] = "gpt-4o" if r.get("kind") == "chat" else "text-embedding-3-small"
    reseal(tree / MEM0, result, records, model)
    assert "the stamp is a proxy run of 'gpt-4o'; its folder embedded names no proxy model" in \
        problems_of(tree / MEM0, cfg)


def test_an_oracle_run_relabelled_as_a_proxy_run_everywhere_is_refused_unsigned(tree, cfg, capsys):
    """Moved to the proxy run's folder too, nothing in the result tells it from a real gpt-4o run: it verifies, is
    reported unattested, and verify --attested-by refuses it."""
    pytest.importorskip("sigstore")
    run = move(tree, MEM0, MEM0.parent / "embedded+proxy-gpt-4o")
    result, records, model = load(run)
    proxy = {"mode": "proxy", "id": "gpt-4o", "oracle_version": None, "embedding_model": "text-embedding-3-small",
             "temperature": 0, "seed": 0, "max_tokens": 2000}
    result["stamp"]["model"] = records[0]["model"] = proxy
    for r in model:
        r.pop("dialect", None), r.pop("matched", None)
        r["upstream_model"] = "gpt-4o" if r.get("kind") == "chat" else "text-embedding-3-small"
    reseal(run, result, records, model)
    assert verify_result(run / "result.json", cfg) == []
    assert main(["verify", str(run), "--attested-by", "memmatrix/memmatrix/.github/workflows/nightly.yml"]) == 1
    assert "unattested" in capsys.readouterr().out


def test_a_recorded_answer_edited(tree, cfg):
    result, records, model = load(tree / MEM0)
    chat = next(r for r in model if r.get("kind") == "chat" and "QX-4471-TRV" in json.dumps(r.get("response")))
    chat["response"] = json.loads(json.dumps(chat["response"]).replace("QX-4471-TRV", "QX-4471-TRX"))
    reseal(tree / MEM0, result, records, model)
    assert "model" in problems_of(tree / MEM0, cfg)


# ---------------------------------------------------------------- the transcript and its cases
def test_a_case_removed_from_the_transcript(tree, cfg):
    result, records, model = load(tree / MEM0)
    first = records[1:].index(next(r for r in records[1:] if r.get("kind") == "case" and r is not records[1]))
    del_case = next(r["case"] for r in records if r.get("kind") == "case")
    records = [r for r in records if r.get("case") != del_case]
    reseal(tree / MEM0, result, records, model)
    assert first and "the transcript holds cases" in problems_of(tree / MEM0, cfg)


def test_an_answer_of_the_system_edited_is_what_only_a_re_run_shows(tree, cfg, capsys):
    """A transcript edited by hand, every derived number re-derived, agrees with itself: verify cannot know what the
    system answered (the README says so). verify --rerun executes the run again and names the first difference."""
    result, records, model = load(tree / REFERENCE)
    door = next(r for r in records if r.get("call") == "door" and "result" in r)
    door["result"]["text"] += " (edited)"
    reseal(tree / REFERENCE, result, records, model)
    assert verify_result(tree / REFERENCE / "result.json", cfg) == []
    assert main(["verify", "--rerun", str(tree / REFERENCE)]) == 1
    assert "the re-run's transcript differs" in capsys.readouterr().out


def test_a_step_relabelled(tree, cfg):
    result, records, model = load(tree / MEM0)
    reseal(tree / MEM0, result, records, model)
    result = json.loads((tree / MEM0 / "result.json").read_text())
    result["steps"][8]["name"] = "cosmetic"
    result["stamp"]["fingerprint"] = fingerprint(result["stamp"])
    (tree / MEM0 / "result.json").write_text(render_result(result))
    assert "calls it 'residue'" in problems_of(tree / MEM0, cfg)


# ---------------------------------------------------------------- the harness
@pytest.mark.parametrize("field, value, says", [
    ("git_sha", "f" * 40, "is not a commit of this repository"),
    ("version", "9.9.9", "the stamp says memmatrix 9.9.9, but commit"),
])
def test_harness_fields_forged(tree, cfg, field, value, says):
    result, records, model = load(tree / MEM0)
    result["stamp"]["harness"][field] = value
    reseal(tree / MEM0, result, records, model)
    assert says in problems_of(tree / MEM0, cfg)


def test_a_run_made_outside_a_git_checkout_is_checked_against_the_checkouts_folder_only(tree, cfg):
    """An installed package writes harness.git_sha 'unknown' (the Action's runs): no commit is checked, so the stamp's
    system folder must be the checkout's: the reference's (unchanged since) verifies with a remark, mem0 2.2.1's
    (edited since its run) is refused."""
    result, records, model = load(tree / REFERENCE)
    result["stamp"]["harness"]["git_sha"] = "unknown"
    reseal(tree / REFERENCE, result, records, model)
    remarks: list[str] = []
    assert verify_result(tree / REFERENCE / "result.json", cfg, remarks) == []
    assert any("outside a git checkout" in r for r in remarks), remarks
    result, records, model = load(tree / MEM0)
    result["stamp"]["harness"]["git_sha"] = "unknown"
    reseal(tree / MEM0, result, records, model)
    assert "neither the checkout's systems/mem0:" in problems_of(tree / MEM0, cfg)


def test_dates_forged(tree, cfg):
    result, records, model = load(tree / MEM0)
    result["stamp"]["started_at"], result["stamp"]["finished_at"] = "2026-12-01T10:00:00Z", "2026-11-30T10:00:00Z"
    reseal(tree / MEM0, result, records, model)
    assert "the run's times are not in order" in problems_of(tree / MEM0, cfg)


def test_a_run_dated_before_its_commit(tree, cfg):
    result, records, model = load(tree / MEM0)
    result["stamp"]["started_at"], result["stamp"]["finished_at"] = "2020-01-01T10:00:00Z", "2020-01-01T10:01:00Z"
    reseal(tree / MEM0, result, records, model)
    assert "before the commit it names was made" in problems_of(tree / MEM0, cfg)


def test_timings_zeroed(tree, cfg):
    result, records, model = load(tree / MEM0)
    for op in result["timings"]["adapter_ms"].values():
        op.update(p50_ms=0, p95_ms=0, total_ms=0)
    reseal(tree / MEM0, result, records, model)
    assert "the timings say calls the transcript holds took no time" in problems_of(tree / MEM0, cfg)


# ---------------------------------------------------------------- a history
def _history(tmp_path: Path, edit) -> str:
    from memmatrix.result.history import check_history
    root = tmp_path / "h" / "results"
    (root / "history").mkdir(parents=True)
    data = json.loads((ROOT / "results" / "history" / "mem0.json").read_text())
    edit(data)
    (root / "history" / "mem0.json").write_text(json.dumps(data))
    for p in sorted((ROOT / "results").glob("*/mem0/*/*/result.json")):
        dest = root / p.parent.relative_to(ROOT / "results")
        dest.mkdir(parents=True)
        shutil.copyfile(p, dest / "result.json")
    cfg = Config.from_env({"MEMMATRIX_HOME": str(ROOT)})
    return " | ".join(check_history(root / "history" / "mem0.json", cfg))


def test_a_history_with_an_invented_release(tmp_path):
    def invent(data):
        data["releases"].append({"version": "99.0.0", "uploaded": "2026-11-01T00:00:00Z"})
        data["sweeps"][0]["versions"].append("99.0.0")
    said = _history(tmp_path, invent)
    assert "release 99.0.0 (" in said and "holds no result" in said


def test_a_history_with_every_sweep_erased(tmp_path):
    def erase(data):
        data["sweeps"], data["bisections"] = [], []
    assert "which no sweep or bisect in mem0.json measured" in _history(tmp_path, erase)


def test_a_repeat_of_a_swept_run_is_recorded_by_its_sweep_and_one_of_no_sweep_is_not(tmp_path):
    """A repeated protocol's later draws (<setup>+repeat-N) are written by the run a sweep records; a repeat whose
    base no sweep measured is named."""
    from memmatrix.result.history import check_history
    root = tmp_path / "h" / "results"
    (root / "history").mkdir(parents=True)
    data = json.loads((ROOT / "results" / "history" / "mem0.json").read_text())
    data["sweeps"] = [{**data["sweeps"][0], "versions": ["0.1.9"], "protocols": ["concurrency"], "options": {}}]
    data["bisections"] = []
    (root / "history" / "mem0.json").write_text(json.dumps(data))
    for v in ("0.1.9", "0.1.12"):
        for f in ("embedded", "embedded+repeat-2"):
            (root / "concurrency" / "mem0" / v / f).mkdir(parents=True)
            (root / "concurrency" / "mem0" / v / f / "result.json").write_text("{}")
    said = check_history(root / "history" / "mem0.json", Config.from_env({"MEMMATRIX_HOME": str(ROOT)}))
    assert [s.split(":")[0] for s in said] == ["concurrency/mem0/0.1.12/embedded",
                                                "concurrency/mem0/0.1.12/embedded+repeat-2"], said


def test_the_committed_histories_agree_with_their_results(cfg):
    from memmatrix.result.history import check_history, find_histories
    assert {str(h): check_history(h, cfg) for h in find_histories([ROOT / "results"])} == \
        {str(h): [] for h in find_histories([ROOT / "results"])}


# ---------------------------------------------------------------- broken files are one line, and the rest is checked
@pytest.mark.parametrize("name", ["transcript.jsonl.xz", "model-transcript.jsonl.xz"])
def test_a_corrupt_compressed_transcript_is_one_line_and_the_others_are_still_checked(tree, capsys, name):
    run = tree / MEM0
    target = next(run.glob(name.replace(".xz", "*")))
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    assert main(["verify", str(tree)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {run / 'result.json'}" in out and "cannot be read" in out and "Traceback" not in out
    assert f"ok   {tree / REFERENCE / 'result.json'}" in out


def test_an_adapter_outside_the_checkout_is_labelled_as_the_checkouts_folder_would_be(tmp_path):
    """Re-running a result with its commit's system folder (MEMMATRIX_SYSTEMS=<worktree>/systems) labels the
    adapter as the run did, so the re-run's transcript can match; a file in no systems root keeps its bare name."""
    from memmatrix.run.request import portable

    home = tmp_path / "checkout"
    (home / "systems" / "mem0").mkdir(parents=True)
    elsewhere = tmp_path / "old" / "systems" / "mem0"
    elsewhere.mkdir(parents=True)
    assert portable(home / "systems" / "mem0" / "adapter.py", home) == "systems/mem0/adapter.py"
    assert portable(elsewhere / "adapter.py", home) == "systems/mem0/adapter.py"
    assert portable(tmp_path / "mine" / "adapter.py", home) == "adapter.py"


@pytest.mark.heavy
def test_a_result_whose_folder_changed_since_is_re_run_from_its_commits_folder(capsys):
    """mem0 2.2.1's committed deletion run was made before the mem0 folder was last edited: --rerun takes the folder
    as committed at the run's commit (git archive into a temporary root) and reproduces the transcript byte for byte.
    Heavy: mem0's environment."""
    assert main(["verify", "--rerun", str(ROOT / "results" / MEM0 / "result.json")]) == 0
    out = capsys.readouterr().out
    assert "re-run reproduced it" in out and "as committed at" in out, out


def test_a_folder_of_two_options_and_a_case_set_names_each_apart(tmp_path, cfg):
    """Every part of a setup's folder name is its own '+' part (the name parse_variant, and so verify, reads), with
    characters a path cannot hold in a value replaced."""
    from memmatrix.cases import load_cases
    from memmatrix.run.request import RunRequest, parse_variant
    from memmatrix.systems import resolve_system
    p = get_protocol("deletion")
    cases = load_cases(ROOT / "cases" / "deletion" / "breadth-2.0.0.json", cfg, p)
    req = RunRequest(spec=resolve_system("reference", cfg), protocol=p, cases=cases, runtime="embedded", out=tmp_path,
                     options={"forget_path": "a b", "mode": "x"}, default_cases=False)
    assert req.variant == f"forget_path=a-b+mode=x+cases=breadth-2.0.0-{cases.sha256[:8]}"
    parsed = parse_variant(req.target().name)
    assert parsed["options"] == {"forget_path": "a-b", "mode": "x"} and parsed["cases"].startswith("breadth-2.0.0-")
