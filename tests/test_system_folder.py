"""A system is one folder: a new folder (adapter, system.yaml, oracle dialects) runs end to end with no
file outside it touched, found through MEMMATRIX_SYSTEMS; a broken oracle module is a one-line error
before anything starts; the gateway service gets a system's dialects over the wire (oracle mode only)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import requests

from conftest import ROOT
from helpers import system_source
from memmatrix.common.canon import read_text, stored_transcript
from memmatrix.cli import main
from memmatrix.model import Gateway, GatewaySettings
from memmatrix.model.dialectsource import DialectSource
from memmatrix.model.handle import RemoteGateway
from memmatrix.common.errors import RuntimeFailure

# the new system's oracle: the model it asks for a line to jot down answers with each gold fact's statement
ORACLE_PY = '''"""jotter's prompt: one tool, `jot`, called once per fact worth keeping."""
from memmatrix.model.dialects.common import Reply, message_text, messages_of, tool_names


class Jot:
    name = "jotter-jot"

    @staticmethod
    def match(request):
        return "jot" in tool_names(request)

    @staticmethod
    def answer(request, gold):
        text = "\\n".join(message_text(m) for m in messages_of(request) if m.get("role") == "user")
        facts = gold.facts_in(text)
        return Reply.tools(Jot.name, bool(gold.writes_in(text)), [("jot", {"line": f["statement"]}) for f in facts])


DIALECTS = (Jot,)
'''

# notes, except that a write asks the model what to jot down instead of keeping the raw messages
WRITE_BY_MODEL = '''    def write(self, scope: str, at: str, messages: list) -> dict:
        import json, urllib.request
        model = self.config["model"]
        body = {"model": model["chat_model"], "messages": messages,
                "tools": [{"type": "function", "function": {"name": "jot", "parameters": {"type": "object"}}}]}
        req = urllib.request.Request(f"{model['base_url']}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {model['api_key']}"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            calls = json.load(resp)["choices"][0]["message"].get("tool_calls") or []
        new = [json.loads(c["function"]["arguments"])["line"] for c in calls]
        self._save(scope, self._lines(scope) + new)
        return {"ids": []}
'''


def make_jotter(root, with_oracle: bool = True):
    """systems/notes copied to ``root/jotter``, renamed, writing through the model, with its own oracle.py."""
    folder = root / "jotter"
    shutil.copytree(ROOT / "systems" / "notes", folder)
    yaml_text = (folder / "system.yaml").read_text().replace("name: notes", "name: jotter")
    if with_oracle:
        yaml_text = yaml_text.replace("adapter: adapter.py:NotesAdapter",
                                      "adapter: adapter.py:NotesAdapter\noracle: oracle.py:DIALECTS")
    (folder / "system.yaml").write_text(yaml_text)
    adapter = (folder / "adapter.py").read_text()
    start, end = adapter.index("    def write("), adapter.index("    def settle(")
    adapter = adapter[:start] + WRITE_BY_MODEL + "\n" + adapter[end:]
    adapter = adapter.replace('"name": "notes"', '"name": "jotter"').replace(
        "    def __init__(self, config: dict):\n", "    def __init__(self, config: dict):\n        self.config = config\n")
    (folder / "adapter.py").write_text(adapter)
    (folder / "oracle.py").write_text(ORACLE_PY)
    return folder


def _env(monkeypatch, tmp_path, systems):
    monkeypatch.setenv("MEMMATRIX_HOME", str(ROOT))
    monkeypatch.setenv("MEMMATRIX_SYSTEMS", str(systems))
    monkeypatch.setenv("MEMMATRIX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMMATRIX_SETTLE_TIMEOUT", "2")
    for name in ("MEMMATRIX_MODEL_MODE", "MEMMATRIX_MODEL_ORACLE_ABLATION", "MEMMATRIX_MODEL_EMBEDDER"):
        monkeypatch.delenv(name, raising=False)


def _checkout_state() -> str:
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True,
                         text=True)
    return out.stdout if out.returncode == 0 else ""


def _model_records(run_dir):
    return [json.loads(line) for line in read_text(stored_transcript(run_dir, "model-transcript")).splitlines()]


@pytest.mark.parametrize("with_oracle", [True, False], ids=["own-oracle", "control-without-it"])
def test_a_new_system_folder_runs_end_to_end_with_nothing_outside_it_touched(tmp_path, monkeypatch, capsys,
                                                                            with_oracle):
    systems = tmp_path / "systems"
    make_jotter(systems, with_oracle)
    _env(monkeypatch, tmp_path, systems)
    before = _checkout_state()
    out = tmp_path / "results"
    assert main(["run", "--system", "jotter", "--protocol", "deletion", "--runtime", "embedded", "--out", str(out)]) == 0
    run_dir = out / "deletion" / "jotter" / "1.0" / "embedded"
    result = json.loads((run_dir / "result.json").read_text())
    writes = [r for r in _model_records(run_dir) if r["kind"] == "chat"]
    present = {c["id"]: next(x["verdict"] for x in c["cells"] if x["step"] == "2") for c in result["cases"]}
    assert writes and _checkout_state() == before and not (ROOT / "systems" / "jotter").exists()
    if with_oracle:  # the folder's dialect answered every write, and what it answered is what the system kept
        assert all(r["dialect"] == "jotter-jot" and r["matched"] for r in writes)
        assert result["cost"]["total"]["unmatched"] == 0
        assert set(present.values()) == {"PASS"}
    else:  # without its oracle the same prompts go unanswered: nothing is jotted, nothing is present
        assert not any(r.get("dialect") == "jotter-jot" for r in writes)
        assert result["cost"]["total"]["unmatched"] == len(writes)
        assert "PASS" not in present.values()
    assert main(["verify", str(run_dir)]) == 0


@pytest.mark.parametrize("module, says", [
    (None, "does not exist but"),
    ("def broken(:\n", "does not load (SyntaxError"),
    ("import not_a_module_anywhere\n", "does not load (ModuleNotFoundError"),
    ("X = 1\n", "defines no DIALECTS"),
    ("DIALECTS = [object]\n", "defines DIALECTS as a list"),
    ("DIALECTS = (object,)\n", "has DIALECTS[0] ('object') without match(request) and answer(request, gold)"),
])
def test_a_broken_oracle_module_is_a_one_line_error_before_anything_starts(tmp_path, monkeypatch, capsys, module,
                                                                           says):
    systems = tmp_path / "systems"
    folder = make_jotter(systems)
    if module is None:
        (folder / "oracle.py").unlink()
    else:
        (folder / "oracle.py").write_text(module)
    _env(monkeypatch, tmp_path, systems)
    out = tmp_path / "results"
    assert main(["run", "--system", "jotter", "--protocol", "deletion", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"memmatrix: error: {folder}/oracle.py ") and says in err
    assert not (out / "deletion").exists()  # nothing ran


def test_the_gateway_service_gets_the_systems_dialects_over_the_wire(tmp_path):
    """What the compose runtime does: RemoteGateway posts the case files and the module's text."""
    cases = json.loads((ROOT / "cases/deletion/1.2.0.json").read_text())
    write = next(op for op in cases["cases"][0]["ops"] if op["op"] == "write" and op["gold"])
    ask = {"model": "m", "messages": write["messages"], "tools": [{"type": "function", "function": {"name": "jot"}}]}
    src = DialectSource("jotter", "oracle.py", "DIALECTS", ORACLE_PY)
    with Gateway(GatewaySettings(), []) as service:  # as the service starts: no gold, no system
        assert requests.post(f"{service.url}/chat/completions", json=ask).json()["choices"][0]["message"]["content"] == ""
        RemoteGateway(service.url, service.url, GatewaySettings(), [cases], src)
        answer = requests.post(f"{service.url}/chat/completions", json=ask).json()["choices"][0]["message"]
        lines = [json.loads(c["function"]["arguments"])["line"] for c in answer["tool_calls"]]
        assert lines == [f["statement"] for f in write["gold"]]
        assert [r["dialect"] for r in service.recorder.records] == ["unmatched", "jotter-jot"]


def test_a_gateway_in_proxy_mode_runs_no_module_sent_to_it():
    """In proxy mode the gateway holds the upstream key: code sent over the wire must not run beside it."""
    settings = GatewaySettings(mode="proxy", upstream_url="http://127.0.0.1:9/v1", upstream_model="m")
    with Gateway(settings, []) as service:
        root = service.url.rsplit("/v1", 1)[0]
        r = requests.post(f"{root}/_memmatrix/gold", json={"case_files": [], "dialects": system_source("mem0").wire()})
        assert r.status_code == 400 and "only in oracle mode" in r.json()["error"]["message"]
        RemoteGateway(service.url, service.url, settings, [], system_source("mem0"))  # the harness sends none
        broken = DialectSource("jotter", "oracle.py", "DIALECTS", "def broken(:\n")
        with Gateway(GatewaySettings(), []) as oracle_service:
            with pytest.raises(RuntimeFailure, match=r"refused the run's setup: jotter/oracle.py does not load"):
                RemoteGateway(oracle_service.url, oracle_service.url, GatewaySettings(), [], broken)


def test_a_rerun_refuses_a_folder_whose_other_modules_changed(tmp_path, monkeypatch, capsys):
    """The stamp hashes the whole folder (code_sha256), not only adapter.py: an oracle edited after the run is a
    different measurement, and `verify --rerun` says so before re-running anything."""
    systems = tmp_path / "systems"
    folder = make_jotter(systems)
    _env(monkeypatch, tmp_path, systems)
    out = tmp_path / "results"
    assert main(["run", "--system", "jotter", "--protocol", "deletion", "--runtime", "inprocess", "--out", str(out)]) == 0
    run_dir = out / "deletion" / "jotter" / "1.0" / "inprocess"
    stamp = json.loads((run_dir / "result.json").read_text())["stamp"]["system"]
    assert stamp["code_sha256"] and stamp["code_sha256"] != stamp["adapter_sha256"]
    (folder / "__pycache__").mkdir(exist_ok=True)
    (folder / "__pycache__" / "oracle.cpython-311.pyc").write_bytes(b"not code")  # caches are not the folder's code
    assert main(["verify", str(run_dir)]) == 0
    capsys.readouterr()
    (folder / "oracle.py").write_text((folder / "oracle.py").read_text() + "\n# edited after the run\n")
    assert main(["verify", "--rerun", str(run_dir)]) == 1
    assert "code_sha256 differs" in capsys.readouterr().out
