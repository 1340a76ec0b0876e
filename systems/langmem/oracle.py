"""LangMem 0.0.30's model call: the memory manager's extraction (create_memory_store_manager, through trustcall).

One call per conversation (max_steps 1): the system message "You are a memory subroutine for an AI.",
followed, when the store already holds memories close to the conversation's last message, by
"Generate JSONPatches to update the existing schema instances ..." and the instances, each as
``<instance id=HEX schema_type="Memory">`` and the memory's content as a Python dict repr. The user
message holds the instructions and the conversation inside ``<session_ID>`` as ``=== Human Message ===``
blocks. The tools: ``Memory`` (insert), ``PatchDoc`` when instances are shown (update, by JSONPatch on
``/content``), ``RemoveDoc`` when deletes are enabled.

The oracle plays a careful model that follows those instructions: each gold fact of the conversation is
one memory, its statement as the content; a fact already stored word for word is not stored again; a
correction ("supersede") or a retraction updates the memory that states the value it replaces, when that
memory is among the instances shown (PatchDoc replacing its content with the new statement), and removes
it instead when RemoveDoc is offered and the fact is a retraction. A memory the manager did not show
cannot be updated: the statement is then inserted as a new memory. A conversation with no gold fact gets
a short text reply, which stores nothing.

Upstream: langmem 0.0.30 ``langmem/knowledge/extraction.py`` (MemoryStoreManager, the prompt, the
``<existing>`` block), trustcall 0.0.39 ``trustcall/_base.py`` (PatchDoc, RemoveDoc, the instance ids).
"""

from __future__ import annotations

import ast
import re

from memmatrix.model.dialects.common import Reply, message_text, messages_of, norm, tool_names

_INSTANCE = re.compile(r'<instance id=(\S+) schema_type="[^"]*">\n(.*?)\n</instance>', re.S)


def _instances(system: str) -> list[tuple[str, str]]:
    """(id, content) of every memory the manager showed."""
    out = []
    for doc_id, body in _INSTANCE.findall(system):
        try:
            value = ast.literal_eval(body.strip())
        except (ValueError, SyntaxError):
            value = body
        content = value.get("content") if isinstance(value, dict) else value
        out.append((doc_id, content if isinstance(content, str) else str(content)))
    return out


class ManagerExtract:
    name = "langmem-manager"

    @staticmethod
    def match(request: dict) -> bool:
        return "Memory" in tool_names(request)

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        msgs = messages_of(request)
        system = "\n".join(message_text(m) for m in msgs if m.get("role") == "system")
        conversation = "\n".join(message_text(m) for m in msgs if m.get("role") != "system")
        facts = gold.facts_in(conversation)
        if not facts:
            return Reply(ManagerExtract.name, bool(gold.writes_in(conversation)),
                         content="Nothing in this conversation is worth remembering.")
        tools, shown = set(tool_names(request)), _instances(system)
        calls: list[tuple[str, dict]] = []
        for fact in facts:
            if any(norm(content) == norm(fact["statement"]) for _, content in shown):
                continue
            gone = fact.get("replaces") if fact["intent"] == "supersede" else (
                fact["value"] if fact["intent"] == "retract" else None)
            old = next((i for i, content in shown if gone and norm(gone) in norm(content)), None)
            if old and fact["intent"] == "retract" and "RemoveDoc" in tools:
                calls.append(("RemoveDoc", {"json_doc_id": old}))
            elif old and "PatchDoc" in tools:
                calls.append(("PatchDoc", {"json_doc_id": old,
                                           "planned_edits": "replace /content with the corrected statement",
                                           "patches": [{"op": "replace", "path": "/content",
                                                        "value": fact["statement"]}]}))
            else:
                calls.append(("Memory", {"content": fact["statement"]}))
        if not calls:
            return Reply(ManagerExtract.name, True, content="Every fact here is already remembered.")
        return Reply.tools(ManagerExtract.name, True, calls)


#: What the gateway tries for a run of this system, after memmatrix's own dialects.
DIALECTS = (ManagerExtract,)
