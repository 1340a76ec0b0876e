"""The adapter class inside the harness process. For unit tests: no isolation, same wire semantics."""

from __future__ import annotations

import sys

from .. import adapterkit
from ..adapterkit import AdapterLoadError, load_adapter_class
from ..common.errors import AdapterError
from ..exchange.wire import InProcessEndpoint
from .base import Runtime


class InProcessRuntime(Runtime):
    name = "inprocess"

    def start(self) -> None:
        sys.modules.setdefault("adapterkit", adapterkit)  # adapters may `import adapterkit`
        try:
            cls = load_adapter_class(self.spec.adapter, module_name=f"memmatrix_inproc_{self.spec.name}")
        except AdapterLoadError as exc:
            raise AdapterError(str(exc)) from None
        self.cls = cls
        self.endpoint = InProcessEndpoint(cls, {**self.runtime_config, "data_dir": str(self.scratch())})

    def restart(self) -> None:
        with self.system_time():
            self.endpoint.close()  # the instance goes; its data directory stays
            self.endpoint = InProcessEndpoint(self.cls, {**self.runtime_config, "data_dir": str(self.scratch())})

    def data_dir(self):
        return self.scratch()

    def describe(self) -> dict:
        return {"name": self.name, "python": sys.version.split()[0]}
