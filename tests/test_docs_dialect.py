"""docs/adapters.md's worked dialect runs as printed: it adds a new fact, updates the memory a correction replaces
and deletes the memory a retraction withdraws, and says matched only for a prompt about a write of the run."""

from __future__ import annotations

import json
import re

from conftest import ROOT
from memmatrix.model.gold import GoldIndex


def _dialect():
    text = (ROOT / "docs" / "adapters.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "class Manage" in b)
    space: dict = {}
    exec(compile(block, "docs/adapters.md", "exec"), space)  # noqa: S102 (the project's own docs)
    return space["Manage"]


GOLD = GoldIndex([{"cases": [{"id": "c", "ops": [
    {"op": "write", "messages": [{"role": "user", "content": "I live in Berlin and have a cat named Tovi."}],
     "gold": [{"subject": "user", "attribute": "lives in", "value": "Berlin", "statement": "The user lives in Berlin"},
              {"subject": "user", "attribute": "has cat", "value": "Tovi", "statement": "The user has a cat named Tovi"}]},
    {"op": "write", "messages": [{"role": "user", "content": "I moved to Lisbon. Also, Tovi was never mine."}],
     "gold": [{"subject": "user", "attribute": "lives in", "value": "Lisbon", "statement": "The user lives in Lisbon",
               "intent": "supersede", "replaces": "Berlin"},
              {"subject": "user", "attribute": "has cat", "value": "Tovi", "statement": "The user has no cat Tovi",
               "intent": "retract"}]},   # as the case files give a retraction: the withdrawn value is `value`
]}]}])


def _request(new: str, memories: list[dict]) -> dict:
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "MemoryActions", "schema": {}}},
            "messages": [{"role": "user", "content": f"New messages: {new}\nExisting memories:{json.dumps(memories)}"}]}


def test_the_worked_dialect_adds_updates_and_deletes():
    manage = _dialect()
    first = _request("I live in Berlin and have a cat named Tovi.", [])
    assert manage.match(first) and not manage.match({"messages": []})
    reply = manage.answer(first, GOLD)
    assert reply.matched and json.loads(reply.content)["actions"] == [
        {"event": "ADD", "text": "The user lives in Berlin"}, {"event": "ADD", "text": "The user has a cat named Tovi"}]
    held = [{"id": "1", "text": "The user lives in Berlin"}, {"id": "2", "text": "The user has a cat named Tovi"}]
    reply = manage.answer(_request("I moved to Lisbon. Also, Tovi was never mine.", held), GOLD)
    assert reply.matched and json.loads(reply.content)["actions"] == [
        {"event": "UPDATE", "id": "1", "text": "The user lives in Lisbon"}, {"event": "DELETE", "id": "2"}]
    housekeeping = manage.answer(_request("Summarise the week.", held), GOLD)
    assert not housekeeping.matched and json.loads(housekeeping.content)["actions"] == []
