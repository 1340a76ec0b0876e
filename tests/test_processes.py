"""What runs leave behind: no secret in an adapter's environment, no process after a run (normal or
``kill -9``), no scratch folder or half-written result of a dead run (a live run's are kept).

Linux: the adapter server's subreaper and the parent-death signal are Linux features.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ADAPTERS, ROOT
from memmatrix.common.errors import RuntimeFailure
from memmatrix.model import GatewaySettings
from memmatrix.runtimes import start_runtime
from memmatrix.runtimes import reaper
from memmatrix.runtimes.compose import ComposeRuntime
from memmatrix.runtimes.procs import pid_alive
from memmatrix.systems import SystemSpec, load_system_yaml

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux process semantics")
FIXTURES = Path(__file__).parent / "fixtures" / "systems"
SECRETS = {"MEMMATRIX_MODEL_API_KEY": "FAKE-sk-provider-7f3a", "OPENAI_API_KEY": "FAKE-sk-openai-7f3a",
           "AWS_SECRET_ACCESS_KEY": "FAKE-aws-7f3a", "AWS_ACCESS_KEY_ID": "FAKE-AKIA7F3A",
           "GITHUB_TOKEN": "FAKE-ghp-7f3a", "ANTHROPIC_API_KEY": "FAKE-sk-ant-7f3a"}


# ------------------------------------------------------------------------------------------ helpers

def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def processes_mentioning(text: str) -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir()
            if p.name.isdigit() and int(p.name) != os.getpid() and text in cmdline(int(p.name))]


def ppid(pid: int) -> int:
    stat_line = Path(f"/proc/{pid}/stat").read_text()
    return int(stat_line[stat_line.rfind(")") + 2:].split()[1])


def wait_for(what, timeout: float, every: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(every)
    return what()


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not pid_alive(proc.pid)
    return proc.pid


def memmatrix(tmp_path: Path, system: str, *extra: str, env: dict | None = None) -> subprocess.Popen:
    """``python -m memmatrix run`` as a user runs it, with its own temp dir (tmp_path/tmp)."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    full = {**os.environ, "MEMMATRIX_HOME": str(ROOT), "MEMMATRIX_CACHE_DIR": str(tmp_path / "cache"),
            "TMPDIR": str(tmp_path / "tmp"), **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "memmatrix", "run", "--system", system, "--protocol", "deletion",
                             "--out", str(tmp_path / "out"), *extra],
                            env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def adapter_of(tmp_path: Path) -> int | None:
    found = [p for p in processes_mentioning(str(tmp_path / "tmp")) if "adapterkit.py" in cmdline(p)]
    return found[0] if len(found) == 1 else None


def logged_daemons(pidlog: Path) -> list[int]:
    return [int(x) for x in pidlog.read_text().split()] if pidlog.exists() else []


def daemon_alive(pid: int) -> bool:
    return "memmatrix-test-daemon:" in cmdline(pid)


# ------------------------------------------------------------------------------ 1. the environment

def test_an_embedded_adapter_gets_no_secret_but_what_its_system_declares(config, monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MEMMATRIX_TEST_DECLARED", "declared-value")
    monkeypatch.setenv("MEMMATRIX_TEST_UNDECLARED", "undeclared-value")
    spec = SystemSpec(name="envreport", version="", adapter=f"{ADAPTERS / 'procs.py'}:EnvReport", folder=None,
                      meta={"env": ["MEMMATRIX_TEST_DECLARED"]})
    model = {"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-memmatrix-gateway", "chat_model": "m"}
    with start_runtime("embedded", spec, config, {"model": model}) as runtime:
        runtime.endpoint.call("init", {"config": {"version": "", "seed": 0, "options": {}}}, 10)
        reported = json.loads((runtime.scratch() / "data" / "env.json").read_text())
        environ = Path(f"/proc/{runtime.proc.pid}/environ").read_bytes()
    assert "PATH" in reported and "MEMMATRIX_TEST_DECLARED" in reported  # the report works, declared ones pass
    assert b"MEMMATRIX_TEST_DECLARED=declared-value" in environ
    leaked = sorted(set(reported) & (set(SECRETS) | {"MEMMATRIX_TEST_UNDECLARED"}))
    assert leaked == []
    assert b"FAKE-" not in environ and b"undeclared-value" not in environ


def test_a_system_cannot_declare_the_provider_key(config):
    spec = SystemSpec(name="envreport", version="", adapter=f"{ADAPTERS / 'procs.py'}:EnvReport", folder=None,
                      meta={"env": ["MEMMATRIX_MODEL_API_KEY"]})
    with pytest.raises(RuntimeFailure, match="MEMMATRIX_MODEL_\\* variables stay with memmatrix"):
        with start_runtime("embedded", spec, config, {}):
            pass


def compose_env(name: str, config, settings: GatewaySettings) -> dict:
    folder = FIXTURES / name if (FIXTURES / name).is_dir() else ROOT / "systems" / name
    spec = SystemSpec(name=name, version="1.0", adapter=f"{folder / 'adapter.py'}:X", folder=folder,
                      meta=load_system_yaml(folder, config))
    runtime = ComposeRuntime(spec, config, {})
    runtime.gateway_spec = (settings, [], spec.oracle)
    return runtime._env()


def test_compose_gets_only_what_its_files_declare(config, monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MEMMATRIX_TEST_CLASH_PORT", "18998")  # port-clash/compose.yaml interpolates it
    monkeypatch.setenv("DOCKER_HOST", "unix:///var/run/docker.sock")
    env = compose_env("port-clash", config, GatewaySettings())
    assert env["MEMMATRIX_TEST_CLASH_PORT"] == "18998" and env["DOCKER_HOST"].startswith("unix://")
    assert env["PATH"] == os.environ["PATH"] and "MEMMATRIX_RUNTIME_CONFIG" in env
    assert [k for k, v in env.items() if "FAKE-" in v] == []
    # in proxy mode the gateway service (and only it: compose/gateway.yaml) gets the key
    proxy = GatewaySettings(mode="proxy", upstream_url="https://upstream.invalid/v1", upstream_model="m",
                            api_key=SECRETS["MEMMATRIX_MODEL_API_KEY"])
    env = compose_env("reference", config, proxy)
    assert [k for k, v in env.items() if "FAKE-" in v] == ["MEMMATRIX_MODEL_API_KEY"]
    assert "MEMMATRIX_TEST_CLASH_PORT" not in env  # not declared by reference's compose files


# ------------------------------------------------------------------------- 2. processes of a run

def test_a_finished_run_leaves_no_daemon_behind(tmp_path):
    pidlog = tmp_path / "daemons.txt"
    run = memmatrix(tmp_path, f"{ADAPTERS / 'procs.py'}:Daemonizes", "--option", f"pidlog={pidlog}")
    first = wait_for(lambda: logged_daemons(pidlog), 30)
    assert first, "the adapter never started its daemon"
    adapter = wait_for(lambda: adapter_of(tmp_path), 5)
    daemon = first[0]
    if adapter is not None and daemon_alive(daemon):  # the run may be quick: check what is still there
        assert os.getsid(daemon) != os.getsid(adapter), "the daemon did not leave the adapter's session"
        assert ppid(daemon) == adapter, "the daemon was not re-parented to the adapter (subreaper)"
    _, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    daemons = logged_daemons(pidlog)
    assert len(daemons) >= 2, "deletion restarts the system: each start has its daemon"
    assert [p for p in daemons if daemon_alive(p)] == []
    assert processes_mentioning(str(tmp_path / "tmp")) == []


def test_a_killed_memmatrix_takes_its_adapter_and_daemons_along(tmp_path):
    pidlog = tmp_path / "daemons.txt"
    run = memmatrix(tmp_path, f"{ADAPTERS / 'procs.py'}:DaemonizesAndHangs", "--option", f"pidlog={pidlog}")
    try:
        daemon = wait_for(lambda: logged_daemons(pidlog), 30)
        adapter = wait_for(lambda: adapter_of(tmp_path), 5)
        assert daemon and adapter, "the adapter or its daemon never started"
        daemon = daemon[0]
        assert daemon_alive(daemon) and pid_alive(adapter)
        assert os.getsid(daemon) != os.getsid(adapter)  # a process-group kill would miss it
        assert ppid(adapter) == run.pid and ppid(daemon) == adapter
        time.sleep(1)  # into the run: the door call hangs after the first forget
        assert run.poll() is None
        run.kill()  # SIGKILL: no finally, no atexit
        run.wait(10)
        gone = wait_for(lambda: not daemon_alive(daemon) and not pid_alive(adapter), 10, 0.1)
        assert gone, f"left running: {[p for p in (adapter, daemon) if pid_alive(p)]}"
        assert processes_mentioning(str(tmp_path / "tmp")) == []
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()
    # the dead run's scratch folder stays, named with its pid: the next run removes it (test below)
    assert [p for p in (tmp_path / "tmp").iterdir() if p.name.startswith(f"memmatrix-daemonizesandhangs-{run.pid}-")]


def test_the_next_run_removes_what_dead_runs_left_and_keeps_what_live_ones_hold(tmp_path):
    tmp, out = tmp_path / "tmp", tmp_path / "out"
    dead, live = dead_pid(), os.getpid()
    scratch = {who: tmp / f"memmatrix-reference-{pid}-abcd1234" for who, pid in (("dead", dead), ("live", live))}
    where = out / "deletion" / "reference" / "1.0"
    left = {"dead-staging": where / f".embedded.staging-{dead}", "live-staging": where / f".embedded.staging-{live}",
            "dead-old": where / f".other.old-{dead}", "live-old": where / f".embedded.old-{live}"}
    for folder in [*scratch.values(), *left.values()]:
        (folder / "data").mkdir(parents=True)
    (left["dead-old"] / "result.json").write_text("{}")
    run = memmatrix(tmp_path, f"{ADAPTERS / 'misbehaving.py'}:RaisesAfterForget")
    _, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert not scratch["dead"].exists() and scratch["live"].exists()
    assert not left["dead-staging"].exists() and left["live-staging"].exists() and left["live-old"].exists()
    # an .old- folder whose target is missing was cut between the two renames: it is the result, restored
    assert not left["dead-old"].exists() and (where / "other" / "result.json").read_text() == "{}"
    assert (where / "embedded" / "result.json").is_file()
    assert sorted(p.name for p in tmp.iterdir()) == [scratch["live"].name]  # this run's own scratch is gone too


# ------------------------------------------------------------------------- 3. the compose reaper

@pytest.fixture
def fake_docker(tmp_path):
    """A ``docker`` that logs its arguments and reports a project's resources until ``compose down`` ran."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "docker.log"
    script = bin_dir / "docker"
    script.write_text(f"""#!/bin/sh
echo "$*" >> {log}
case "$*" in
  *"compose -p "*" down"*) touch {tmp_path}/downed ;;
  "ps -aq"*) [ -e {tmp_path}/downed ] || echo 0123456789ab ;;
esac
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return bin_dir, log


def start_reaper(fake_docker, owner: int, project: str) -> tuple[subprocess.Popen, int]:
    read, write = os.pipe()
    proc = subprocess.Popen([sys.executable, "-I", reaper.__file__, "--watch-fd", str(read), "--pid", str(owner),
                             "--project", project, "--check-every", "0.1"], pass_fds=(read,), start_new_session=True,
                            env={"PATH": f"{fake_docker[0]}:{os.environ['PATH']}"})
    os.close(read)
    return proc, write


def test_the_reaper_exits_quietly_when_the_run_tore_its_project_down(fake_docker):
    proc, write = start_reaper(fake_docker, os.getpid(), "memmatrix-x-1")
    time.sleep(0.3)
    assert proc.poll() is None  # it waits while its owner lives
    os.write(write, b"done")
    os.close(write)
    assert proc.wait(5) == 0
    assert not fake_docker[1].exists()  # not one docker command


def test_the_reaper_tears_the_project_down_when_its_owner_dies(fake_docker):
    proc, write = start_reaper(fake_docker, os.getpid(), "memmatrix-x-2")
    time.sleep(0.3)
    assert proc.poll() is None
    os.close(write)  # what the kernel does when the owner is killed
    assert proc.wait(10) == 0
    calls = fake_docker[1].read_text().splitlines()
    assert "compose -p memmatrix-x-2 down --volumes --remove-orphans --timeout 10" in calls
    assert calls[-1].startswith("volume ls")  # and it checked until nothing was left


# ------------------------------------------------------------------- 4. compose, for real (docker)

def project_resources(prefix: str) -> list[str]:
    label = "label=com.docker.compose.project"
    names = []
    for cmd in (["docker", "ps", "-a", "--filter", label, "--format", "{{.Names}}"],
                ["docker", "network", "ls", "--filter", label, "--format", "{{.Name}}"],
                ["docker", "volume", "ls", "--filter", label, "--format", "{{.Name}}"]):
        names += subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
    return [n for n in names if n.startswith(prefix)]


@pytest.mark.docker
def test_a_killed_compose_run_is_torn_down_by_its_reaper_and_no_secret_reached_a_container(tmp_path):
    assert project_resources("memmatrix-reference-") == [], "a previous test left a project behind"
    base = os.environ.get("MEMMATRIX_BASE_IMAGE") or "memmatrix/base:bookworm"
    run = memmatrix(tmp_path, "reference", "--runtime", "compose", env={**SECRETS, "MEMMATRIX_BASE_IMAGE": base})
    try:
        containers = wait_for(lambda: [n for n in project_resources("memmatrix-reference-")
                                       if n.endswith("-adapter-1")], 240, 0.5)
        assert containers, "the compose project never started"
        project = containers[0][: -len("-adapter-1")]
        reapers = [p for p in processes_mentioning(project) if "reaper.py" in cmdline(p)]
        assert len(reapers) == 1 and os.getsid(reapers[0]) == reapers[0]  # its own session
        wait_for(lambda: subprocess.run(["docker", "inspect", f"{project}-gateway-1"],
                                        capture_output=True).returncode == 0, 60, 0.5)
        for service in ("adapter", "gateway"):
            env = subprocess.run(["docker", "inspect", "--format", "{{json .Config.Env}}", f"{project}-{service}-1"],
                                 capture_output=True, text=True, check=True).stdout
            assert "MEMMATRIX_RUNTIME_CONFIG" in env or service == "gateway"
            assert "FAKE-" not in env, f"a secret reached the {service} container"
        run.kill()
        run.wait(10)
        gone = wait_for(lambda: project_resources(project) == [] and not pid_alive(reapers[0]), 120, 1)
        assert gone, f"left behind: {project_resources(project)}"
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()


@pytest.mark.docker
def test_a_compose_runtime_that_stops_normally_lets_its_reaper_exit(config, monkeypatch):
    monkeypatch.setenv("MEMMATRIX_BASE_IMAGE", os.environ.get("MEMMATRIX_BASE_IMAGE") or "memmatrix/base:bookworm")
    folder = ROOT / "systems" / "reference"
    spec = SystemSpec(name="reference", version="1.0", adapter=f"{folder / 'adapter.py'}:ReferenceAdapter",
                      folder=folder, meta=load_system_yaml(folder, config))
    with start_runtime("compose", spec, config, {}, gateway=(GatewaySettings(), [], spec.oracle)) as runtime:
        reaper_proc = runtime._reaper
        assert reaper_proc.poll() is None and os.getsid(reaper_proc.pid) == reaper_proc.pid
        project = runtime.compose.project
        assert project_resources(project)
    assert reaper_proc.returncode == 0  # it was waited for: it exited on "done", at once
    assert project_resources(project) == []
