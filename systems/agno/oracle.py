"""agno 3.1.10's model calls: the MemoryManager's tool loop (``create_or_update_memories``).

One conversation is two calls or more. The first: a system message (role ``developer`` through OpenAIChat) "You
are a Memory Manager ...", ending, when the user has memories, with ``<existing_memories>`` holding each as
``ID: <memory_id>`` / ``Memory: <text>``; then the conversation's messages as they were written; the tools
``add_memory(memory, topics)``, ``update_memory(memory_id, memory, topics)`` and ``delete_memory(memory_id)``
(``clear_memory`` only through ``update_memory_task``, which the adapter does not use). agno runs the tools the
model calls and asks again with their results (``role: tool``) until the model answers without a tool call.

The oracle plays a careful model that follows those instructions: each gold fact of the conversation is one
memory, its statement as the text (``topics`` left null: the gold has none, and an invented topic could hold
another case's words); a fact already stored word for word is not stored again; a correction (intent
``supersede``) updates the memory that holds the value it replaces (``update_memory`` with the new statement) and
deletes any other memory still holding it; a retraction (intent ``retract``) deletes every memory that holds the
retracted value (``delete_memory``) and, being itself new information about the user ("I quit X", "I have no
middle name"), is added as a memory; a correction whose memory is not among the existing ones is added as a new
memory. (mem0's dialect decides the same way.) Once the tools have answered (a ``tool`` message follows the
conversation), it replies with a short text and no tool call, which ends agno's loop.

Not played: the prompt's "When updating a memory, append the existing memory with new information" and "capture
what the user's preferences used to be": the update's text is the gold statement alone, as every other dialect's
update is, so column D (history) reads what agno's tools keep, not wording the oracle invented.

Recognised by the tools offered (``add_memory``/``update_memory``/``delete_memory``), never by the prompt's prose;
the existing memories are read from the ``ID:``/``Memory:`` lines agno renders (``MemoryManager.get_system_message``).

Upstream: agno 3.1.10 ``agno/memory/manager.py`` (get_system_message, create_or_update_memories, _get_db_tools).
"""

from __future__ import annotations

import re

from memmatrix.model.dialects.common import Reply, contains, message_text, messages_of, norm, tool_names

TOOLS = ("add_memory", "update_memory", "delete_memory")
_EXISTING = re.compile(r"<existing_memories>(.*?)</existing_memories>", re.S)
_ENTRY = re.compile(r"^ID: (.*)\nMemory: (.*)$", re.M)


def _existing(system: str) -> list[tuple[str, str]]:
    """(memory_id, text) of every memory the manager listed."""
    block = _EXISTING.search(system)
    return [(i.strip(), t.strip()) for i, t in _ENTRY.findall(block.group(1))] if block else []


def _parts(request: dict) -> tuple[str, str, bool]:
    """The system prompt, the conversation (user and assistant text), and whether tool results follow it."""
    msgs = messages_of(request)
    system = "\n".join(message_text(m) for m in msgs if m.get("role") in ("system", "developer"))
    conversation = "\n".join(message_text(m) for m in msgs if m.get("role") in ("user", "assistant"))
    return system, conversation, any(m.get("role") == "tool" for m in msgs)


class MemoryManagerTools:
    name = "agno-memory-manager"

    @staticmethod
    def match(request: dict) -> bool:
        return any(t in tool_names(request) for t in TOOLS)

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        system, conversation, answered = _parts(request)
        matched = bool(gold.writes_in(conversation))
        if answered:  # the tools ran: agno asks again, and a model that is done answers in text
            return Reply(MemoryManagerTools.name, matched, content="The memories are up to date.")
        facts = gold.facts_in(conversation)
        if not facts:
            return Reply(MemoryManagerTools.name, matched, content="No memory changes are needed.")
        offered, shown = set(tool_names(request)), _existing(system)
        calls: list[tuple[str, dict]] = []
        decided: set[str] = set()  # memories already updated or deleted by this answer
        for fact in facts:
            if any(norm(text) == norm(fact["statement"]) for _, text in shown):
                continue
            gone = fact.get("replaces") if fact["intent"] == "supersede" else (
                (fact.get("replaces") or fact["value"]) if fact["intent"] == "retract" else None)
            victims = [i for i, text in shown if gone and i not in decided and contains(text, gone)]
            decided.update(victims)
            if fact["intent"] == "supersede" and victims and "update_memory" in offered:
                # the first memory holding the replaced value is updated; any other still asserting it is deleted
                first, *rest = victims
                calls.append(("update_memory", {"memory_id": first, "memory": fact["statement"], "topics": None}))
                calls += [("delete_memory", {"memory_id": v}) for v in rest if "delete_memory" in offered]
                continue
            if fact["intent"] == "retract":  # a retraction deletes what it contradicts ...
                calls += [("delete_memory", {"memory_id": v}) for v in victims if "delete_memory" in offered]
            if "add_memory" in offered:  # ... and is itself new information, as any other fact
                calls.append(("add_memory", {"memory": fact["statement"], "topics": None}))
        if not calls:
            return Reply(MemoryManagerTools.name, matched, content="Every fact here is already remembered.")
        return Reply.tools(MemoryManagerTools.name, matched, calls)


#: What the gateway tries for a run of this system, after memmatrix's own dialects.
DIALECTS = (MemoryManagerTools,)
