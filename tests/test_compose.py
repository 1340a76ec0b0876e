"""The compose runtime, for real: build, up --wait, restart on kept volumes, tear down, name failures.

Needs a Docker engine with the Compose v2 plugin (scripts/offline-docker.sh); enable with
MEMMATRIX_TEST_ENABLE=docker. Where no registry is reachable, set MEMMATRIX_BASE_IMAGE to a
local base image (the script builds memmatrix/base:bookworm).
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from helpers import exchanges, row, run, text_of
from memmatrix.common.errors import RuntimeFailure
from memmatrix.systems import SystemSpec, load_system_yaml

pytestmark = pytest.mark.docker
FIXTURES = Path(__file__).parent / "fixtures" / "systems"


def leftovers() -> dict[str, list[str]]:
    """Containers, networks and volumes of memmatrix compose projects still on the engine."""
    label = "label=com.docker.compose.project"
    out = {}
    for kind, cmd in (("containers", ["docker", "ps", "-a", "--filter", label, "--format", "{{.Names}}"]),
                      ("networks", ["docker", "network", "ls", "--filter", label, "--format", "{{.Name}}"]),
                      ("volumes", ["docker", "volume", "ls", "--filter", label, "--format", "{{.Name}}"])):
        names = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
        out[kind] = [n for n in names if n.startswith("memmatrix-")]
    return out


@pytest.fixture(autouse=True)
def clean_engine():
    assert leftovers() == {"containers": [], "networks": [], "volumes": []}, "a previous test left things behind"
    yield
    assert leftovers() == {"containers": [], "networks": [], "volumes": []}


def transcript_sha(run_dir: Path) -> str:
    return json.loads((run_dir / "result.json").read_text())["transcript"]["sha256"]


def test_reference_under_compose_matches_inprocess_byte_for_byte(config, tmp_path):
    compose = run(config, "reference", tmp_path / "c", runtime="compose")
    local = run(config, "reference", tmp_path / "i", runtime="inprocess")
    assert exchanges(compose) == exchanges(local)  # the run header names the runtime; every exchange is equal
    assert text_of(compose, "model-transcript") == text_of(local, "model-transcript")
    # step 8 runs after a restart of the adapter service: the twin is still served, so the volume was kept
    assert set(row(compose).values()) == {"PASS"}
    stamp = json.loads((compose / "result.json").read_text())["stamp"]
    assert set(stamp["system"]["image_digests"]) == {"adapter", "gateway"}
    assert all(d.startswith("sha256:") for d in stamp["system"]["image_digests"].values())
    assert len(stamp["system"]["compose_sha256"]) == 64


def fixture_spec(name: str, config) -> SystemSpec:
    folder = FIXTURES / name
    meta = load_system_yaml(folder, config)
    return SystemSpec(name=name, version="1.0", adapter=f"{folder / 'adapter.py'}:Fixture", folder=folder, meta=meta)


def start(spec, config, tmp_path):
    from memmatrix.model import GatewaySettings
    from memmatrix.runtimes import start_runtime
    with start_runtime("compose", spec, config, {}, gateway=(GatewaySettings(), [])):
        pass


def test_a_failing_image_build_is_named_with_its_output(config, tmp_path):
    with pytest.raises(RuntimeFailure) as err:
        start(fixture_spec("broken-build", config), config, tmp_path)
    assert "building an image failed" in str(err.value)
    assert "this build step fails on purpose" in str(err.value)


def test_an_unhealthy_service_is_named_with_its_log(config, tmp_path):
    with pytest.raises(RuntimeFailure) as err:
        start(fixture_spec("unhealthy", config), config, tmp_path)
    assert "service 'adapter' never became healthy" in str(err.value)
    assert "fixture service up, answering nothing" in str(err.value)


def test_a_port_clash_is_named(config, tmp_path, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        monkeypatch.setenv("MEMMATRIX_TEST_CLASH_PORT", str(s.getsockname()[1]))
        with pytest.raises(RuntimeFailure) as err:
            start(fixture_spec("port-clash", config), config, tmp_path)
    assert "clashes with one already in use" in str(err.value)


def test_a_killed_compose_run_leaves_no_container_and_no_result(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "MEMMATRIX_HOME": str(ROOT), "MEMMATRIX_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "memmatrix", "run", "--system", "reference", "--runtime",
                             "compose", "--protocol", "deletion", "--out", str(out)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while not leftovers()["containers"] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers()["containers"], "the compose project never started"
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert not list(out.rglob("result.json"))
