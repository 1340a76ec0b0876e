"""The reference system extracting through tool calls: one ``record_fact`` call per fact, as tool-calling systems
extract. With the perfect oracle it is the reference; an error mode that breaks tool arguments (``wrongarg``) has
arguments here to break, where the reference's JSON answer has none."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import adapterkit

_REF = Path(__file__).resolve().parents[2] / "systems" / "reference" / "adapter.py"
Reference = adapterkit.load_adapter_class(f"{_REF}:ReferenceAdapter", module_name="memmatrix_tests_reference_tools")

FIELDS = ("subject", "attribute", "value", "statement", "intent", "replaces", "valid_from", "valid_to")
TOOL = {"type": "function", "function": {
    "name": "record_fact", "description": "record one fact the user stated",
    "parameters": {"type": "object", "required": ["subject", "attribute", "value", "statement"],
                   "properties": {k: {"type": "string"} for k in FIELDS}}}}


class ToolExtract(Reference):
    def _extract(self, messages: list) -> list[dict]:
        system = {"role": "system", "content": sys.modules[Reference.__module__].EXTRACT}  # the reference's prompt
        convo = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
        body = {"model": self.model["chat_model"], "temperature": 0, "tools": [TOOL], "tool_choice": "required",
                "messages": [system, {"role": "user", "content": convo}]}
        req = urllib.request.Request(f"{self.model['base_url']}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {self.model['api_key']}"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            message = json.loads(resp.read())["choices"][0]["message"]
        facts = [json.loads(c["function"]["arguments"]) for c in message.get("tool_calls") or []
                 if c["function"]["name"] == "record_fact"]
        return [f for f in facts if isinstance(f, dict) and all(f.get(k) for k in ("subject", "attribute", "value"))]

    def capabilities(self) -> dict:
        caps = super().capabilities()
        caps["system"] = {"name": "toolextract", "version": "1.0"}
        return caps
