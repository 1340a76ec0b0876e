"""The reference system with two declared options: one ordinary, one a credential (never recorded)."""

from __future__ import annotations

from pathlib import Path

import adapterkit

_REF = Path(__file__).resolve().parents[2] / "systems" / "reference" / "adapter.py"
Reference = adapterkit.load_adapter_class(f"{_REF}:ReferenceAdapter", module_name="memmatrix_tests_reference_opts")


class WithOptions(Reference):
    def __init__(self, config):
        super().__init__(config)
        self.options = config.get("options") or {}

    def capabilities(self):
        caps = super().capabilities()
        caps["system"] = {"name": "withoptions", "version": "1.0"}
        caps["options"] = {"flavour": {"description": "an ordinary option", "choices": ["plain", "spicy"]},
                           "service_token": {"description": "a credential the system would need"}}
        return caps
