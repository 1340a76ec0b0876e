"""Letta agent steps (0.16.x, letta_v1_agent): memory is written by tool calls the model makes.

The oracle plays a perfect agent: when the latest user message carries gold facts it calls
the memory tools the agent offers (archival_memory_insert, or memory_insert / memory_replace
on the 'human' core block), and once a tool result came back it ends the turn with a reply.
"""

from __future__ import annotations

import re

from memmatrix.model.dialects.common import GoldIndex, Reply, message_text, messages_of, tool_names

MEMORY_TOOLS = {"archival_memory_insert", "memory_insert", "memory_replace", "core_memory_append",
                "core_memory_replace"}


def _block(system: str, label: str) -> str:
    m = re.search(rf"<{label}>(.*?)</{label}>", system, re.S)
    return m.group(1) if m else ""


class AgentStep:
    name = "letta-agent-step"

    @staticmethod
    def match(request: dict) -> bool:
        return bool(set(tool_names(request)) & MEMORY_TOOLS)

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        msgs = messages_of(request)
        last_user = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=-1)
        facts = gold.facts_in(message_text(msgs[last_user])) if last_user >= 0 else []
        done = " ".join(str(c.get("function", {}).get("arguments", "")) for m in msgs[last_user + 1:]
                        for c in (m.get("tool_calls") or []))
        todo = [f for f in facts if f["statement"] not in done.replace('\\"', '"')]
        if not todo:
            return Reply(AgentStep.name, bool(facts), content="Noted.")
        f = todo[0]
        tools = set(tool_names(request))
        human = _block("\n".join(message_text(m) for m in msgs if m.get("role") == "system"), "human")
        gone = f.get("replaces") if f["intent"] == "supersede" else f["value"] if f["intent"] == "retract" else None
        old_line = next((ln for ln in human.splitlines() if gone and gone.casefold() in ln.casefold()), None)
        if old_line and "memory_replace" in tools:
            call = ("memory_replace", {"label": "human", "old_str": old_line.strip(), "new_str": f["statement"]})
        elif "archival_memory_insert" in tools:
            call = ("archival_memory_insert", {"content": f["statement"]})
        elif "memory_insert" in tools:
            call = ("memory_insert", {"label": "human", "new_str": f["statement"]})
        else:
            call = ("core_memory_append", {"label": "human", "content": f["statement"]})
        return Reply.tools(AgentStep.name, True, [call])


#: What the gateway tries for a run of this system, in order, after memmatrix's own dialects
#: (system.yaml: ``oracle: oracle.py:DIALECTS``).
DIALECTS = (AgentStep,)
