"""The compose runtime: the system's docker compose services, driven by testcontainers.

``systems/<name>/compose.yaml`` holds the adapter service (and any backing service) and
includes ``compose/gateway.yaml``, the model gateway as a service. The runtime builds the
images (BASE_IMAGE from MEMMATRIX_BASE_IMAGE), brings the project up with ``--wait`` on the
healthchecks, finds the published loopback ports, and always tears down with its volumes
at the end, also on Ctrl-C and exceptions. A restart inside a run stops and starts only the
adapter service and keeps its volume: a "still gone after restart" check must not pass
because the data was wiped.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from functools import cached_property

from testcontainers.compose import DockerCompose

from .. import __version__
from ..canon import sha256_bytes
from ..errors import RuntimeFailure
from ..model.handle import ADAPTER_KEY, RemoteGateway
from ..model.gateway import adapter_models
from ..wire import HttpEndpoint
from .base import Runtime

ADAPTER, GATEWAY = "adapter", "gateway"
DEFAULT_BASE_IMAGE = "python:3.11-slim"


class ProjectCompose(DockerCompose):
    """DockerCompose with a project name of its own and an explicit environment for interpolation."""

    def __init__(self, *args, project: str, env: dict, **kwargs):
        super().__init__(*args, **kwargs)
        self.project, self.env = project, env

    @cached_property
    def compose_command_property(self) -> list[str]:
        cmd = super().compose_command_property
        return [*cmd[:2], "-p", self.project, *cmd[2:]]

    def _run_command(self, cmd, context=None):
        return subprocess.run(cmd, capture_output=True, check=True, cwd=context or str(self.context), env=self.env)

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return self._run_command([*self.compose_command_property, *args])


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join("    " + ln for ln in text.strip().splitlines()[-lines:]) or "    (nothing)"


class ComposeRuntime(Runtime):
    name = "compose"

    def _env(self) -> dict:
        settings = self.gateway_spec[0]
        if settings.mode == "replay":
            raise RuntimeFailure("replay mode runs with --runtime embedded or inprocess: the recording stays on "
                                 "this machine; run the recorded system in proxy or oracle mode under compose")
        model = {"base_url": f"http://{GATEWAY}:8790/v1", "api_key": ADAPTER_KEY, **adapter_models(settings)}
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMMATRIX_MODEL_")}
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
                           ("MEMMATRIX_MODEL_API_KEY", settings.api_key),
                           ("MEMMATRIX_MODEL_UPSTREAM_MODEL", settings.upstream_model),
                           ("MEMMATRIX_MODEL_UPSTREAM_EMBEDDING_MODEL", settings.upstream_embedding_model)):
            if value:
                env[key] = value  # handed to the compose process only, never written to a file
        return env

    def start(self) -> None:
        if self.spec.folder is None or not (self.spec.folder / "compose.yaml").is_file():
            raise RuntimeFailure(f"system {self.spec.name!r} has no compose.yaml; the compose runtime runs systems "
                                 "under systems/<name>/ (use --runtime embedded for an adapter file)")
        if shutil.which("docker") is None or subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
            raise RuntimeFailure("no Docker engine answers `docker info`; start one (scripts/offline-docker.sh "
                                 "installs and starts one, with the Compose v2 plugin), or use --runtime embedded")
        project = re.sub(r"[^a-z0-9-]", "-", f"memmatrix-{self.spec.name}-{secrets.token_hex(3)}".lower())
        env = self._env()
        self._prepare_images(env)
        self.compose = ProjectCompose(context=str(self.spec.folder), compose_file_name="compose.yaml", build=True,
                                      wait=True, project=project, env=env)
        self._up()
        settings, case_files = self.gateway_spec
        gport = self.compose.get_service_port(GATEWAY, 8790)
        try:
            self.gateway = RemoteGateway(f"http://127.0.0.1:{gport}/v1", f"http://{GATEWAY}:8790/v1", settings,
                                         case_files)
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
            self.compose.run("up", "--build", "--wait", *services) if services else self.compose.start()
        except subprocess.CalledProcessError as exc:
            raise RuntimeFailure(self._diagnose(exc)) from None
        self.endpoint = HttpEndpoint(f"http://127.0.0.1:{self.compose.get_service_port(ADAPTER, 8080)}")

    def _logs(self, service: str) -> str:
        try:
            out = self.compose.run("logs", "--no-color", "--tail", "30", service)
            return f"  last lines of service {service!r}:\n{_tail(out.stdout.decode(errors='replace'), 30)}"
        except subprocess.CalledProcessError:
            return f"  (no logs of service {service!r})"

    def _diagnose(self, exc: subprocess.CalledProcessError) -> str:
        err = (exc.stderr or b"").decode(errors="replace")
        where = f"docker compose for {self.spec.name!r} (project {self.compose.project})"
        if re.search(r"port is already allocated|address already in use", err):
            return f"{where}: a published port clashes with one already in use; free it or publish another.\n{_tail(err)}"
        if re.search(r"pull access denied|failed to resolve reference|manifest unknown|error pulling|"
                     r"dial tcp|no such host|TLS handshake timeout", err):
            hints = [f"{i['variable']}={i['local']}" for i in self.spec.meta.get("compose", {}).get("images", [])]
            hint = f" without a registry, set {' '.join(hints)} to build it locally," if hints else ""
            return (f"{where}: an image could not be pulled;{hint} or set MEMMATRIX_BASE_IMAGE to a local base "
                    f"image (scripts/offline-docker.sh builds one).\n{_tail(err)}")
        unhealthy = re.search(r"container ([\w.-]+) is unhealthy", err)
        if unhealthy:
            service = next((s for s in (ADAPTER, GATEWAY) if f"-{s}-" in unhealthy.group(1)), ADAPTER)
            return (f"{where}: service {service!r} never became healthy (its healthcheck kept failing).\n"
                    f"{self._logs(service)}")
        exited = re.search(r"container ([\w.-]+) exited \((\d+)\)", err)
        if exited:
            service = next((s for s in (ADAPTER, GATEWAY) if f"-{s}-" in exited.group(1)), ADAPTER)
            return f"{where}: service {service!r} exited with code {exited.group(2)}.\n{self._logs(service)}"
        if re.search(r"failed to solve|failed to build|error building|Build failed|executor failed", err, re.I):
            return f"{where}: building an image failed (see the build output below).\n{_tail(err, 30)}"
        return f"{where}: `docker compose up` failed (exit {exc.returncode}).\n{_tail(err, 30)}"

    def restart(self) -> None:
        try:
            self.compose.run("stop", ADAPTER)
        except subprocess.CalledProcessError as exc:
            raise RuntimeFailure(self._diagnose(exc)) from None
        if self.endpoint is not None:
            self.endpoint.close()
        self._up(ADAPTER)

    def stop(self) -> None:
        compose = getattr(self, "compose", None)
        if compose is not None:
            try:
                compose.run("down", "--volumes", "--remove-orphans", "--timeout", "10")
            except subprocess.CalledProcessError:
                pass
            self.compose = None
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
