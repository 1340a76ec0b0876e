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

The profile shape (option ``memory_shape=profile``: one schema, ``Profile``, and ``enable_inserts=False``) makes
the same call with other tools: ``Profile`` alone while the user has no profile yet (trustcall's extract step),
then ``PatchDoc`` alone over the one instance, shown with ``schema_type="Profile"`` and its content as a dict repr
``{'attributes': {...}}``. A careful model keeps the profile current: the first conversation creates it with each
gold fact as an attribute (the attribute's name, prefixed by the subject when the subject is not the user; the
statement as its value), and every later one patches it: a fact already stated word for word is left alone, a
correction or a retraction replaces the attribute that holds the value it replaces, and any other fact is added
(JSONPatch ``replace`` when the attribute exists, ``add`` when it does not).

Upstream: langmem 0.0.30 ``langmem/knowledge/extraction.py`` (MemoryStoreManager, the prompt, the
``<existing>`` block), trustcall 0.0.39 ``trustcall/_base.py`` (PatchDoc, RemoveDoc, the instance ids; the extract
and extract_updates routes).
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


_PROFILE = re.compile(r'<instance id=(\S+) schema_type="Profile">\n(.*?)\n</instance>', re.S)


def attribute_key(fact: dict) -> str:
    """The profile attribute a gold fact is about: its attribute, prefixed by its subject unless that is the user."""
    subject, attribute = fact["subject"].strip(), fact["attribute"].strip()
    return attribute if norm(subject) == "user" else f"{subject} {attribute}"


def _pointer(key: str) -> str:
    return "/attributes/" + key.replace("~", "~0").replace("/", "~1")


class ProfileManager:
    name = "langmem-profile"

    @staticmethod
    def match(request: dict) -> bool:
        tools = set(tool_names(request))
        if "Profile" in tools:
            return True
        system = "\n".join(message_text(m) for m in messages_of(request) if m.get("role") == "system")
        return "PatchDoc" in tools and bool(_PROFILE.search(system))

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        msgs = messages_of(request)
        system = "\n".join(message_text(m) for m in msgs if m.get("role") == "system")
        conversation = "\n".join(message_text(m) for m in msgs if m.get("role") != "system")
        facts = gold.facts_in(conversation)
        if not facts:
            return Reply(ProfileManager.name, bool(gold.writes_in(conversation)),
                         content="Nothing in this conversation changes the profile.")
        shown = _PROFILE.search(system)
        if shown is None:  # no profile yet: trustcall's extract step offers the schema itself
            attributes = {attribute_key(f): f["statement"] for f in facts}
            return Reply.tools(ProfileManager.name, True, [("Profile", {"attributes": attributes})])
        try:
            value = ast.literal_eval(shown.group(2).strip())
        except (ValueError, SyntaxError):
            value = {}
        attributes = dict(value.get("attributes") or {}) if isinstance(value, dict) else {}
        patches, planned = [], []
        for fact in facts:
            if any(isinstance(v, str) and norm(v) == norm(fact["statement"]) for v in attributes.values()):
                continue
            gone = fact.get("replaces") if fact["intent"] == "supersede" else (
                fact["value"] if fact["intent"] == "retract" else None)
            key = next((k for k, v in attributes.items() if gone and isinstance(v, str) and norm(gone) in norm(v)),
                       attribute_key(fact))
            op = "replace" if key in attributes else "add"
            patches.append({"op": op, "path": _pointer(key), "value": fact["statement"]})
            planned.append(f"{op} /attributes/{key}")
            attributes[key] = fact["statement"]
        if not patches:
            return Reply(ProfileManager.name, True, content="The profile already says all of this.")
        return Reply.tools(ProfileManager.name, True, [("PatchDoc", {
            "json_doc_id": shown.group(1), "planned_edits": "; ".join(planned), "patches": patches})])


#: What the gateway tries for a run of this system, after memmatrix's own dialects.
DIALECTS = (ManagerExtract, ProfileManager)
