"""The compose runtime: the system's docker compose services, driven by testcontainers.

``systems/<name>/compose.yaml`` holds the adapter service (and any backing service) and
includes ``compose/gateway.yaml``, the model gateway as a service. The runtime builds the
images (BASE_IMAGE from MEMMATRIX_BASE_IMAGE), brings the project up with ``--wait`` on the
healthchecks, finds the published loopback ports, and always tears down with its volumes
at the end, also on Ctrl-C and exceptions. A restart inside a run stops and starts only the
adapter service (or the services system.yaml's ``compose.restart`` lists) and keeps the volumes: a "still gone after restart" check must not pass
because the data was wiped.

The compose CLI gets an allow-list of memmatrix's environment (runtimes/procs.py), the docker
client's variables, the variables the compose files interpolate or pass through by name, and
those the system declares in system.yaml ``env``: nothing else can reach a container. A reaper
in a session of its own (runtimes/reaper.py) tears the project down if memmatrix dies without
doing it (``kill -9``); the compose CLI itself dies with memmatrix.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
from functools import cached_property
from pathlib import Path

import yaml

from testcontainers.compose import DockerCompose

from .. import __version__
from ..common.canon import sha256_bytes
from ..common.errors import RuntimeFailure
from ..model.handle import ADAPTER_KEY, RemoteGateway
from ..model.gateway import adapter_models
from ..exchange.wire import HttpEndpoint
from . import reaper
from .base import Runtime
from .procs import DOCKER_VARIABLES, declared_env, die_with_this_process, passed_env, start_time

ADAPTER, GATEWAY = "adapter", "gateway"
DEFAULT_BASE_IMAGE = "python:3.11-slim"


class ProjectCompose(DockerCompose):
    """DockerCompose with a project name of its own and an explicit environment for interpolation."""

    def __init__(self, *args, project: str, env: dict, **kwargs):
        super().__init__(*args, **kwargs)
        self.project, self.env = project, env
        self.preexec = die_with_this_process(signal.SIGKILL)  # an `up` must not outlive a killed memmatrix

    @cached_property
    def compose_command_property(self) -> list[str]:
        cmd = super().compose_command_property
        return [*cmd[:2], "-p", self.project, *cmd[2:]]

    def _run_command(self, cmd, context=None):
        return subprocess.run(cmd, capture_output=True, check=True, cwd=context or str(self.context), env=self.env,
                              preexec_fn=self.preexec)

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return self._run_command([*self.compose_command_property, *args])


_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*))")


def _strings(node):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(key)
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)
    elif isinstance(node, str):
        yield node


def _by_name(entries) -> set[str]:
    """Names passed through from the environment: ``- NAME`` in a list, ``NAME:`` without a value in a map."""
    if isinstance(entries, dict):
        return {k for k, v in entries.items() if v is None}
    if isinstance(entries, list):
        return {e for e in entries if isinstance(e, str) and "=" not in e}
    return set()


def compose_variables(file: Path, seen: set | None = None) -> set[str]:
    """Every variable a compose file (and the files it includes) takes from the environment: interpolated
    (``${NAME}``, ``$NAME``; ``$$`` is a literal dollar) or passed through by name (environment, build args,
    secrets from the environment). These are what the compose files declare; nothing else is passed."""
    seen = set() if seen is None else seen
    file = file.resolve()
    if file in seen or not file.is_file():
        return set()
    seen.add(file)
    doc = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    names = {a or b for text in _strings(doc) for a, b in _VARIABLE.findall(text.replace("$$", ""))}
    for service in (doc.get("services") or {}).values():
        if isinstance(service, dict):
            names |= _by_name(service.get("environment"))
            build = service.get("build")
            if isinstance(build, dict):
                names |= _by_name(build.get("args"))
    for secret in (doc.get("secrets") or {}).values():
        if isinstance(secret, dict) and isinstance(secret.get("environment"), str):
            names.add(secret["environment"])
    for item in doc.get("include") or []:
        paths = item if isinstance(item, str) else (item or {}).get("path", [])
        for path in [paths] if isinstance(paths, str) else paths:
            names |= compose_variables(file.parent / path, seen)
    return names


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join("    " + ln for ln in text.strip().splitlines()[-lines:]) or "    (nothing)"


class ComposeRuntime(Runtime):
    name = "compose"
    _reaper: subprocess.Popen | None = None
    _reaper_fd: int | None = None

    def _env(self) -> dict:
        settings = self.gateway_spec[0]
        if settings.mode == "replay":
            raise RuntimeFailure("replay mode runs with --runtime embedded or inprocess: the recording stays on "
                                 "this machine; run the recorded system in proxy or oracle mode under compose")
        model = {"base_url": f"http://{GATEWAY}:8790/v1", "api_key": ADAPTER_KEY, **adapter_models(settings)}
        env = passed_env(declared_env(self.spec),
                         extra=DOCKER_VARIABLES | compose_variables(self.spec.folder / "compose.yaml"))
        env.update({
            "MEMMATRIX_BASE_IMAGE": os.environ.get("MEMMATRIX_BASE_IMAGE") or DEFAULT_BASE_IMAGE,
            "MEMMATRIX_VERSION": __version__, "MEMMATRIX_SYSTEM_VERSION": self.spec.version,
            "MEMMATRIX_RUNTIME_CONFIG": json.dumps({**self.runtime_config, "model": model}),
            "MEMMATRIX_MODEL_MODE": settings.mode, "MEMMATRIX_MODEL_SEED": str(settings.seed),
            "MEMMATRIX_MODEL_MAX_TOKENS": str(settings.max_tokens), "MEMMATRIX_MODEL_EMBEDDER": settings.embedder,
            "MEMMATRIX_MODEL_EMBED_DIMS": str(settings.embed_dims),
            "MEMMATRIX_MODEL_ORACLE_ABLATION": settings.ablation,
        })
        for key, value in (("MEMMATRIX_MODEL_UPSTREAM_URL", settings.upstream_url),
                           ("MEMMATRIX_MODEL_API_KEY", settings.api_key if settings.mode == "proxy" else None),
                           ("MEMMATRIX_MODEL_UPSTREAM_MODEL", settings.upstream_model),
                           ("MEMMATRIX_MODEL_UPSTREAM_EMBEDDING_MODEL", settings.upstream_embedding_model)):
            if value:
                env[key] = value  # handed to the compose process only, never written to a file
        return env

    def _start_reaper(self, project: str) -> None:
        """A process in its own session that tears ``project`` down if this one dies first (runtimes/reaper.py)."""
        read, write = os.pipe()  # the write end stays here (not inheritable): its end of file is our death
        me, started = os.getpid(), start_time(os.getpid())
        cmd = [sys.executable, "-I", reaper.__file__, "--watch-fd", str(read), "--pid", str(me), "--project", project,
               *(["--start-time", str(started)] if started is not None else [])]
        try:
            self._reaper = subprocess.Popen(cmd, pass_fds=(read,), start_new_session=True, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                            env=passed_env(extra=DOCKER_VARIABLES))
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        self._reaper_fd = write

    def _release_reaper(self, torn_down: bool) -> None:
        """Tell the reaper the project is gone (it exits), or just let go so that it tears it down itself."""
        fd, self._reaper_fd = self._reaper_fd, None
        if fd is None:
            return
        try:
            if torn_down:
                os.write(fd, b"done")
        finally:
            os.close(fd)
        if torn_down and self._reaper is not None:
            try:
                self._reaper.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

    def start(self) -> None:
        if self.spec.folder is None or not (self.spec.folder / "compose.yaml").is_file():
            raise RuntimeFailure(f"system {self.spec.name!r} has no compose.yaml; the compose runtime runs systems "
                                 "under systems/<name>/ (use --runtime embedded for an adapter file)")
        if shutil.which("docker") is None or subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
            raise RuntimeFailure("no Docker engine answers `docker info`; start one (scripts/offline-docker.sh "
                                 "installs and starts one, with the Compose v2 plugin), or use --runtime embedded")
        project = re.sub(r"[^a-z0-9-]", "-", f"memmatrix-{self.spec.name}-{secrets.token_hex(3)}".lower())
        env = self._env()
        self._start_reaper(project)
        with self.install_time():  # a backing-service image built once per machine
            self._prepare_images(env)
        self.compose = ProjectCompose(context=str(self.spec.folder), compose_file_name="compose.yaml", build=True,
                                      wait=True, project=project, env=env)
        self._up()
        settings, case_files, dialects = self.gateway_spec
        gport = self.compose.get_service_port(GATEWAY, 8790)
        try:
            self.gateway = RemoteGateway(f"http://127.0.0.1:{gport}/v1", f"http://{GATEWAY}:8790/v1", settings,
                                         case_files, dialects)
        except RuntimeFailure as exc:
            raise RuntimeFailure(f"{exc}\n{self._logs(GATEWAY)}") from None
        except Exception as exc:
            raise RuntimeFailure(f"the gateway service answers on 127.0.0.1:{gport} but refused the case files "
                                 f"({exc}).\n{self._logs(GATEWAY)}") from None

    def _prepare_images(self, env: dict) -> None:
        """Backing-service images a system declares (system.yaml compose.images): the official image by
        default, pulled by compose; a memmatrix/ image is built here from its Dockerfile when missing,
        so machines without a registry never try to pull it."""
        for img in self.spec.meta.get("compose", {}).get("images", []):
            name = env.get(img["variable"]) or img["default"]
            env[img["variable"]] = name
            if name != img["local"] or subprocess.run(["docker", "image", "inspect", name],
                                                      capture_output=True).returncode == 0:
                continue
            log = self.scratch() / f"build-{name.replace('/', '_').replace(':', '_')}.log"
            print(f"memmatrix: building {name} from {img['dockerfile']} (once; later runs reuse it; log: {log})",
                  file=sys.stderr, flush=True)
            cmd = ["docker", "build", "--network", "host", "--build-arg", f"BASE_IMAGE={env['MEMMATRIX_BASE_IMAGE']}",
                   "-f", str(self.spec.folder / img["dockerfile"]), "-t", name, str(self.config.home)]
            with open(log, "w", encoding="utf-8") as fh:
                rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env).returncode
            if rc != 0:
                raise RuntimeFailure(f"building {name} from systems/{self.spec.name}/{img['dockerfile']} failed "
                                     f"(exit {rc}); log: {log}\n{_tail(log.read_text(errors='replace'), 25)}")

    def _up(self, *services: str) -> None:
        try:
            # a restart brings back only the services it stopped (system.yaml compose.restart, else the adapter),
            # as built: never a rebuilt image, never a recreated gateway
            with self.system_time():  # the system's containers coming up and passing their healthchecks
                self.compose.run("up", "--no-build", "--no-deps", "--wait", *services) if services \
                    else self.compose.start()
        except subprocess.CalledProcessError as exc:
            raise RuntimeFailure(self._diagnose(exc)) from None
        self.endpoint = HttpEndpoint(f"http://127.0.0.1:{self.compose.get_service_port(ADAPTER, 8080)}")

    def _logs(self, service: str) -> str:
        try:
            out = self.compose.run("logs", "--no-color", "--tail", "30", service)
            return f"  last lines of service {service!r}:\n{_tail(out.stdout.decode(errors='replace'), 30)}"
        except subprocess.CalledProcessError:
            return f"  (no logs of service {service!r})"

    def _service_of(self, container: str) -> str:
        """The service a container of this project runs (compose names them <project>-<service>-<n>)."""
        m = re.fullmatch(re.escape(self.compose.project) + r"[-_](.+)[-_]\d+", container)
        return m.group(1) if m else ADAPTER

    def _diagnose(self, exc: subprocess.CalledProcessError) -> str:
        err = (exc.stderr or b"").decode(errors="replace")
        where = f"docker compose for {self.spec.name!r} (project {self.compose.project})"
        if re.search(r"port is already allocated|address already in use", err):
            return f"{where}: a published port clashes with one already in use; free it or publish another.\n{_tail(err)}"
        if re.search(r"pull access denied|failed to resolve|manifest unknown|error pulling|"
                     r"dial tcp|no such host|TLS handshake timeout", err):
            hints = [f"{i['variable']}={i['local']}" for i in self.spec.meta.get("compose", {}).get("images", [])]
            hint = f" without a registry, set {' '.join(hints)} to build it locally," if hints else ""
            return (f"{where}: an image could not be pulled;{hint} or set MEMMATRIX_BASE_IMAGE to a local base "
                    f"image (scripts/offline-docker.sh builds one).\n{_tail(err)}")
        unhealthy = re.search(r"container ([\w.-]+) is unhealthy", err)
        if unhealthy:
            service = self._service_of(unhealthy.group(1))
            return (f"{where}: service {service!r} never became healthy (its healthcheck kept failing).\n"
                    f"{self._logs(service)}")
        exited = re.search(r"container ([\w.-]+) exited \((\d+)\)", err)
        if exited:
            service = self._service_of(exited.group(1))
            return f"{where}: service {service!r} exited with code {exited.group(2)}.\n{self._logs(service)}"
        if re.search(r"failed to solve|failed to build|error building|Build failed|executor failed", err, re.I):
            return f"{where}: building an image failed (see the build output below).\n{_tail(err, 30)}"
        return f"{where}: `docker compose up` failed (exit {exc.returncode}).\n{_tail(err, 30)}"

    def restart(self) -> None:
        more = self.spec.meta.get("compose", {}).get("restart", [])
        services = [*dict.fromkeys([*more, ADAPTER])]  # the system's servers first, the adapter always
        try:
            with self.system_time():
                self.compose.run("stop", *services)
        except subprocess.CalledProcessError as exc:
            raise RuntimeFailure(self._diagnose(exc)) from None
        if self.endpoint is not None:
            self.endpoint.close()
        self._up(*services)

    def stop(self) -> None:
        compose = getattr(self, "compose", None)
        torn_down = compose is None
        if compose is not None:
            try:
                with self.system_time():
                    compose.run("down", "--volumes", "--remove-orphans", "--timeout", "10")
                torn_down = True
            except subprocess.CalledProcessError:
                pass  # the reaper, let go without "done", tries again
            self.compose = None
        self._release_reaper(torn_down)
        if self.gateway is not None:
            self.gateway.close()
            self.gateway = None
        super().stop()

    def describe(self) -> dict:
        digests = {}
        for container in self.compose.get_containers(include_all=True):
            out = subprocess.run(["docker", "inspect", "--format", "{{.Image}}", container.ID],
                                 capture_output=True, text=True)
            digests[container.Service] = out.stdout.strip()
        files = [self.spec.folder / "compose.yaml", self.config.home / "compose" / "gateway.yaml"]
        return {"name": self.name, "image_digests": dict(sorted(digests.items())),
                "compose_sha256": sha256_bytes(b"".join(f.read_bytes() for f in files)),
                "base_image": self.compose.env["MEMMATRIX_BASE_IMAGE"]}
