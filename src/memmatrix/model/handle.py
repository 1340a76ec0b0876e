"""How a run talks to its gateway: in this process (embedded runtimes) or as a compose service."""

from __future__ import annotations

import requests

from ..common.errors import RuntimeFailure

from .dialectsource import DialectSource
from .gateway import Gateway, adapter_models
from .settings import GatewaySettings

ADAPTER_KEY = "sk-memmatrix-gateway"  # adapters never see a real key: the gateway holds it


class LocalGateway:
    """A gateway thread in the harness process, on loopback."""

    def __init__(self, settings: GatewaySettings, case_files: list[dict], dialects: DialectSource | None = None):
        self.gateway = Gateway(settings, case_files, dialects).start()
        self.url = self.gateway.url                    # for the harness (judge)
        self.adapter_url = self.gateway.url            # for adapters
        self.settings = settings

    def set_context(self, context: dict) -> None:
        self.gateway.recorder.set_context(context)

    def state(self) -> dict:
        return self.gateway.state()

    def models(self) -> dict:
        return adapter_models(self.settings)

    def close(self) -> None:
        self.gateway.stop()


class RemoteGateway:
    """The gateway compose service: the harness reaches it on its published loopback port."""

    def __init__(self, url: str, adapter_url: str, settings: GatewaySettings, case_files: list[dict],
                 dialects: DialectSource | None = None):
        self.url, self.adapter_url, self.settings = url.rstrip("/"), adapter_url, settings
        self.root = self.url.rsplit("/v1", 1)[0]
        self.session = requests.Session()
        self.session.trust_env = False  # loopback: no proxy look-up in the environment on every call
        # the system's dialects travel as the module's text: the gateway image holds the core only
        sent = dialects.wire() if dialects is not None and settings.mode == "oracle" else None
        r = self.session.post(f"{self.root}/_memmatrix/gold", json={"case_files": case_files, "dialects": sent},
                              timeout=60)
        if r.status_code == 400:
            raise RuntimeFailure(f"the gateway service refused the run's setup: {_message(r)}")
        r.raise_for_status()

    def _gone(self, exc: Exception) -> RuntimeFailure:
        return RuntimeFailure(f"the model gateway service at {self.root} stopped answering ({type(exc).__name__}); "
                              "its record of the model calls is lost, so no result was written")

    def set_context(self, context: dict) -> None:
        try:
            self.session.post(f"{self.root}/_memmatrix/context", json=context, timeout=30).raise_for_status()
        except requests.RequestException as exc:
            raise self._gone(exc) from None

    def state(self) -> dict:
        try:
            r = self.session.get(f"{self.root}/_memmatrix/state", timeout=120)
            r.raise_for_status()
            return r.json()
        except (requests.RequestException, ValueError) as exc:
            raise self._gone(exc) from None

    def models(self) -> dict:
        return adapter_models(self.settings)

    def close(self) -> None:
        self.session.close()


def _message(r: requests.Response) -> str:
    try:
        return r.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return r.text[:300]
