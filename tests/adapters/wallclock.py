"""The reference system, plus what real systems do with the wall clock (mem0 does all three):
today's date in every extraction prompt, wall-clock stamps on every item, random ids."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from pathlib import Path

import adapterkit

_REF = Path(__file__).resolve().parents[2] / "systems" / "reference" / "adapter.py"
Reference = adapterkit.load_adapter_class(f"{_REF}:ReferenceAdapter", module_name="memmatrix_tests_reference_clock")
_module = __import__(Reference.__module__)


class WallClock(Reference):
    def _extract(self, messages):
        today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
        saved = _module.EXTRACT
        _module.EXTRACT = f"{saved}\nToday's date is {today}."
        try:
            return super()._extract(messages)
        finally:
            _module.EXTRACT = saved

    def capabilities(self):
        caps = super().capabilities()
        caps["system"] = {"name": "wallclock", "version": "1.0"}
        caps["volatile_fields"] = ["created_at"]
        return caps

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        stamp = datetime.now(timezone.utc).isoformat()
        for item in out["items"]:
            item.update(created_at=stamp, id=str(uuid.uuid4()))
        out["text"] += "\n" + json.dumps([{"memory": i["text"], "created_at": stamp} for i in out["items"]])
        return out
