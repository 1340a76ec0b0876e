"""`plan --skip-unchanged`: an entry whose inputs are those of its committed result is left out and says so; a
changed input (the system folder, the case file, the protocol, the model) brings its run back, naming what changed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from conftest import ROOT
from memmatrix.ci.unchanged import changed_inputs
from memmatrix.common.config import Config

ENTRY = {"system": "reference@1.0", "protocol": "deletion", "runtime": "embedded"}
RUN = ROOT / "results" / "deletion" / "reference" / "1.0" / "embedded"


def _results(tmp_path, edit=None):
    folder = tmp_path / "results" / "deletion" / "reference" / "1.0" / "embedded"
    folder.parent.mkdir(parents=True)
    shutil.copytree(RUN, folder)
    if edit:
        result = json.loads((folder / "result.json").read_text())
        edit(result["stamp"])
        (folder / "result.json").write_text(json.dumps(result))
    return tmp_path / "results"


def test_the_committed_reference_run_is_unchanged_and_each_input_brings_it_back(tmp_path):
    config = Config.from_env({"MEMMATRIX_HOME": str(ROOT)})
    assert changed_inputs(config, ENTRY, ROOT / "results")[0] == []
    edits = {"case file": lambda s: s["dataset"].update(sha256="0" * 64),
             "protocol": lambda s: s["protocol"].update(version="0.9.0"),
             "model": lambda s: s["model"].update(oracle_version="0.1.0"),
             "options": lambda s: s["system"].update(options={"k": "v"}),
             "system folder": lambda s: s["system"].update(code_sha256="f" * 64)}
    for i, (name, edit) in enumerate(edits.items()):
        results = _results(tmp_path / str(i), edit)
        assert changed_inputs(config, ENTRY, results)[0] == [name], name
    assert changed_inputs(config, ENTRY, tmp_path / "none")[0]   # no committed result: it runs


def test_the_cli_leaves_unchanged_entries_out_and_says_so_per_entry(tmp_path):
    systems = tmp_path / "systems"
    shutil.copytree(ROOT / "systems" / "reference", systems / "reference")
    cmd = [sys.executable, "-m", "memmatrix", "plan", "--system", "reference", "--protocol", "deletion",
           "--skip-unchanged", str(ROOT / "results")]
    same = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "MEMMATRIX_SYSTEMS": str(systems)})
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout) == {"include": []}
    assert "skip reference@1.0 deletion embedded (inputs unchanged since" in same.stderr
    (systems / "reference" / "adapter.py").write_text((systems / "reference" / "adapter.py").read_text() + "\n# edit\n")
    changed = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                             env={"PATH": "/usr/bin:/bin", "MEMMATRIX_SYSTEMS": str(systems)})
    assert [e["system"] for e in json.loads(changed.stdout)["include"]] == ["reference@1.0"]
    assert "run  reference@1.0 deletion embedded (changed: system folder)" in changed.stderr
