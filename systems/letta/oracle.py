"""Letta's model calls (letta_v1_agent, 0.15.1 to 0.16.8): agent steps that write memory with tool calls, and
compaction.

The oracle plays a careful agent. Calls are recognised by what they offer and ask for, never by case:

- an agent step offers Letta's memory tools (``memory_insert``, ``memory_replace``,
  ``archival_memory_insert`` ...). The current input is the write whose last user message is the
  request's last user message (Letta sends the whole in-context history, earlier writes included).
  For each gold fact of that write, one tool call per step (Letta sends ``parallel_tool_calls:
  false``): a new fact goes into the ``human`` core block (``memory_insert``) and into archival
  memory (``archival_memory_insert``); a correction or retraction rewrites the human-block line
  holding the old value (``memory_replace``) and records the new statement in archival memory (the
  agent has no tool to delete a passage). Calls already made since that user message are not
  repeated; once all are made the turn ends with a plain reply (letta_v1_agent needs no
  send_message). Argument names come from the tool schema the request offers (``new_string`` /
  ``old_string`` from 0.16.5, ``new_str`` / ``old_str`` before), never from a version.
- a sleep-time agent's step (option sleeptime=on) offers ``memory_finish_edits`` and sends the system reminder of
  Letta's SleeptimeMultiAgentV4 ("You are a sleeptime agent ...") with the main agent's messages quoted after
  "Messages:". The careful sleep-time agent brings the shared ``human`` block up to date with every gold fact of
  the writes quoted there, in order: a fact whose statement is not yet a line of the block is inserted
  (``memory_insert``), or replaces the line holding the value it corrects or retracts (``memory_replace``), one
  call per step; the block is read from the system prompt with the calls made since the reminder applied to it;
  then ``memory_finish_edits`` ends the pass.
- compaction (``POST /agents/{id}/summarize``, and the summarizer when the context overflows) asks
  for a summary of the transcript it quotes ("create/write a detailed summary" from 0.16.4, "write a
  summary that will allow you ... to resume" in 0.16.0 to 0.16.2, "summarize a history of previous
  messages" before); the summary is the gold statements of every
  write quoted there, corrections applied, as a careful summariser keeps the user's facts.

Upstream: letta 0.15.1 to 0.16.8 ``letta/functions/function_sets/base.py`` (tool signatures),
``letta/schemas/memory.py`` (``<human>`` ... ``<value>`` rendering, optional ``N→ `` line numbers),
``letta/prompts/summarizer_prompt.py`` (ALL_PROMPT, SLIDING_PROMPT, SELF_* prompts; SHORTER_SUMMARY_PROMPT in 0.16.0
to 0.16.2), ``letta/prompts/gpt_summarize.py`` (the summarizer before 0.16.0).
"""

from __future__ import annotations

import hashlib
import json
import re

from memmatrix.model.dialects.common import Reply, all_text, message_text, messages_of, tool_names

MEMORY_TOOLS = {"archival_memory_insert", "memory_insert", "memory_replace", "core_memory_append",
                "core_memory_replace"}
CORE_TOOLS = {"memory_insert", "memory_replace", "core_memory_append", "core_memory_replace"}
_SLEEPTIME_ASK = "you are a sleeptime agent"
_SUMMARY_ASK = re.compile(r"\b(write|create) a (detailed |continuation )?summary\b"
                          r"|\bsummari[sz]e a history of previous messages\b", re.I)
#: the names an argument has had, newest first: the request's tool schema says which one it takes
_NAMES = {"new": ("new_string", "new_str"), "old": ("old_string", "old_str")}
_LINE_NO = re.compile(r"^\s*\d+→ ?")
_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def _human_lines(system: str) -> list[str]:
    m = re.search(r"<human>.*?<value>\n?(.*?)</value>", system, re.S)
    if not m:
        return []
    return [_LINE_NO.sub("", ln).strip() for ln in m.group(1).splitlines() if _LINE_NO.sub("", ln).strip()]


def _current_write(gold, msgs: list[dict]):
    users = [message_text(m) for m in msgs if m.get("role") == "user"]
    if not users:
        return None
    last = _norm(users[-1])
    hits = [w for w in gold.writes_in("\n".join(users)) if w.messages and w.messages[-1] == last]
    return hits[0] if hits else None


def _write_of_calls(gold, calls: list[dict], text: str):
    """The write a turn is storing, told by the statements its tool calls already stored, when the turn's message
    is no longer in the prompt: the gold writes holding every one of those facts, if they all state the same facts
    (the original and its re-feed do). None when nothing places it."""
    facts = [gold.fact_for_statement(s, text) for s in (_stored(_args(c)) for c in calls) if s]
    if not facts or any(f is None for f in facts):
        return None
    ident = lambda f: (f["subject"], f["attribute"], f["value"], f["intent"], f["statement"])  # noqa: E731
    wanted = {ident(f) for f in facts}
    found = [w for w in gold.writes if wanted <= {ident(f) for f in w.facts}]
    if not found or len({tuple(ident(f) for f in w.facts) for w in found}) != 1:
        return None
    return found[0]


def _params(request: dict) -> dict[str, set[str]]:
    """Each offered tool's parameter names (chat.completions or responses layout)."""
    out = {}
    for tool in request.get("tools") or []:
        fn = (tool.get("function") or tool) if isinstance(tool, dict) else {}
        if isinstance(fn, dict) and fn.get("name"):
            out[fn["name"]] = set(((fn.get("parameters") or {}).get("properties") or {}))
    return out


def _name(params: set[str], role: str) -> str:
    """The argument name this tool takes for ``role``: the one its schema offers, else the newest."""
    return next((n for n in _NAMES[role] if n in params), _NAMES[role][0])


def _stored(args: dict) -> str:
    return str(next((args[k] for k in (*_NAMES["new"], "content", "new_content") if args.get(k)), ""))


def _args(call: dict) -> dict:
    try:
        return json.loads((call.get("function") or {}).get("arguments") or "{}")
    except ValueError:
        return {}


class AgentStep:
    name = "letta-agent-step"

    @staticmethod
    def match(request: dict) -> bool:
        return bool(set(tool_names(request)) & MEMORY_TOOLS) and not Summary.match(request) \
            and not Sleeptime.match(request)

    @staticmethod
    def plan(fact: dict, human: list[str], tools: dict[str, set[str]]) -> list[tuple[str, dict]]:
        gone = fact.get("replaces") if fact["intent"] == "supersede" else (
            fact["value"] if fact["intent"] == "retract" else None)
        old = next((ln for ln in human if gone and gone.casefold() in ln.casefold()), None)
        calls: list[tuple[str, dict]] = []
        if old and "memory_replace" in tools:
            p = tools["memory_replace"]
            calls.append(("memory_replace", {"label": "human", _name(p, "old"): old,
                                             _name(p, "new"): fact["statement"]}))
        elif old and "core_memory_replace" in tools:
            calls.append(("core_memory_replace", {"label": "human", "old_content": old,
                                                  "new_content": fact["statement"]}))
        elif "memory_insert" in tools:
            calls.append(("memory_insert", {"label": "human", _name(tools["memory_insert"], "new"): fact["statement"]}))
        elif "core_memory_append" in tools:
            calls.append(("core_memory_append", {"label": "human", "content": fact["statement"]}))
        if "archival_memory_insert" in tools:
            calls.append(("archival_memory_insert", {"content": fact["statement"]}))
        return calls

    @staticmethod
    def call(name: str, args: dict, position: int, dialect: str = "letta-agent-step") -> Reply:
        """One tool call with an id of its own: Letta drops tool messages whose call id repeats an earlier one."""
        arguments = json.dumps(args, ensure_ascii=False)
        digest = hashlib.sha256(f"{position}:{name}:{arguments}".encode()).hexdigest()[:16]
        return Reply(dialect, True, tool_calls=[{"id": f"call_{digest}", "type": "function",
                                                         "function": {"name": name, "arguments": arguments}}])

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        msgs = messages_of(request)
        write = _current_write(gold, msgs)
        users = [i for i, m in enumerate(msgs) if m.get("role") == "user"]
        calls = [c for m in msgs[(users[-1] + 1 if users else 0):] for c in (m.get("tool_calls") or [])]
        done = {(c.get("function", {}).get("name"), _norm(_stored(_args(c)))) for c in calls}
        resumed = write is None
        if resumed:  # the turn's own message was hidden mid-turn (Letta compacts a full context between steps)
            write = _write_of_calls(gold, calls, all_text(request))
            if write is None:
                return Reply(AgentStep.name, False, content="Noted.")
        system = "\n".join(message_text(m) for m in msgs if m.get("role") == "system")
        human, tools = _human_lines(system), _params(request)
        steps = [(name, args) for fact in write.facts for name, args in AgentStep.plan(fact, human, tools)]
        keys = [(name, _norm(_stored(args))) for name, args in steps]
        if resumed:  # what the compaction hid was done before what is still shown: go on after the last shown step
            last = max(i for i, k in enumerate(keys) if k in done) if any(k in done for k in keys) else -1
            steps, keys = steps[last + 1:], keys[last + 1:]
        for (name, args), key in zip(steps, keys):
            if key not in done:
                return AgentStep.call(name, args, len(msgs))
        return Reply(AgentStep.name, True, content="Noted.")


class Sleeptime:
    name = "letta-sleeptime"

    @staticmethod
    def _reminder(request: dict) -> str | None:
        users = [message_text(m) for m in messages_of(request) if m.get("role") == "user"]
        return users[-1] if users and _SLEEPTIME_ASK in users[-1].casefold() else None

    @staticmethod
    def match(request: dict) -> bool:
        return "memory_finish_edits" in tool_names(request) and Sleeptime._reminder(request) is not None

    @staticmethod
    def _apply(human: list[str], name: str, args: dict, tools: dict[str, set[str]]) -> list[str]:
        new = _stored(args)
        old = str(args.get(_name(tools.get(name, set()), "old"), args.get("old_content", "")) or "")
        if name in ("memory_replace", "core_memory_replace") and old and _norm(old) in map(_norm, human):
            return [new if _norm(ln) == _norm(old) else ln for ln in human]
        return human if _norm(new) in map(_norm, human) else [*human, new]

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        msgs = messages_of(request)
        reminder = Sleeptime._reminder(request) or ""
        quoted = reminder.split("Messages:", 1)[-1]
        writes = sorted(gold.writes_in(quoted), key=lambda w: (w.case, w.index))
        users = [i for i, m in enumerate(msgs) if m.get("role") == "user"]
        calls = [c for m in msgs[users[-1] + 1:] for c in (m.get("tool_calls") or [])]
        tools = _params(request)
        human = _human_lines("\n".join(message_text(m) for m in msgs if m.get("role") == "system"))
        for c in calls:  # what this pass already did, whether or not the prompt shows it yet
            if (c.get("function") or {}).get("name") in CORE_TOOLS:
                human = Sleeptime._apply(human, c["function"]["name"], _args(c), tools)
        done = {(c.get("function", {}).get("name"), _norm(_stored(_args(c)))) for c in calls}
        for fact in (f for w in writes for f in w.facts):
            if _norm(fact["statement"]) in map(_norm, human):
                continue
            for name, args in AgentStep.plan(fact, human, tools):
                if name in CORE_TOOLS and (name, _norm(_stored(args))) not in done:
                    return AgentStep.call(name, args, len(msgs), Sleeptime.name)
        return AgentStep.call("memory_finish_edits", {}, len(msgs), Sleeptime.name)


class Summary:
    name = "letta-summary"

    @staticmethod
    def match(request: dict) -> bool:
        msgs = messages_of(request)
        asks = [message_text(m) for m in msgs if m.get("role") in ("system", "user")]
        return any(_SUMMARY_ASK.search(t) and "summary" in t.casefold() for t in asks[-2:] + asks[:1])

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        facts = gold.facts_in(all_text(request))
        kept: list[dict] = []
        for f in facts:
            if f["intent"] in ("supersede", "retract"):
                kept = [k for k in kept if (k["subject"], k["attribute"]) != (f["subject"], f["attribute"])]
            kept.append(f)
        lines = [f"- {f['statement']}" for f in kept]
        body = "\n".join(lines) if lines else "- No facts about the user were shared."
        return Reply(Summary.name, True, content=f"Important details the user shared:\n{body}")


#: What the gateway tries for a run of this system, in order, after memmatrix's own dialects
#: (system.yaml: ``oracle: oracle.py:DIALECTS``).
DIALECTS = (Sleeptime, Summary, AgentStep)
