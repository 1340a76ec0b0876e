"""What every dialect needs: reading a request, the gold facts, and the OpenAI-shaped envelopes of an answer.

This module is the public API for dialect authors. A system's ``oracle.py`` (named by the ``oracle``
key of its ``system.yaml``) runs inside the gateway, in memmatrix's environment, and imports from here
only (plus the standard library):

- reading a request: ``messages_of``, ``message_text``, ``all_text``, ``schema_name``, ``tool_names``;
- the gold facts: ``GoldIndex`` (``facts_in(text)``, ``writes_in(text)`` ...), ``norm`` (how prompts quote
  text), ``contains`` (whole-token, case-folded matching, as memmatrix scores);
- answering: ``Reply`` (``Reply.json``, ``Reply.tools``, or text ``content``), ``HashEmbedder`` for a
  deterministic vector inside an answer (a reranker's scores).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...common.tokens import contains, word_count
from ..embed import HashEmbedder
from ..gold import GoldIndex, norm

__all__ = ["GoldIndex", "HashEmbedder", "Reply", "all_text", "approx_tokens", "contains", "message_text",
           "messages_of", "norm", "schema_name", "tool_names"]



def approx_tokens(text: str) -> int:
    """Deterministic token estimate (words and punctuation), used when no upstream reports usage."""
    return word_count(text)


def message_text(msg: dict) -> str:
    content = msg.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{type: text|input_text, text: ...}]
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def messages_of(request: dict) -> list[dict]:
    """Chat Completions ``messages`` or Responses ``input``, as a list of {role, content}."""
    if isinstance(request.get("messages"), list):
        return request["messages"]
    inp = request.get("input")
    if isinstance(inp, str):
        return [{"role": "user", "content": inp}]
    if isinstance(inp, list):
        return [m for m in inp if isinstance(m, dict)]
    return []


def all_text(request: dict) -> str:
    parts = [message_text(m) for m in messages_of(request)]
    if isinstance(request.get("instructions"), str):
        parts.insert(0, request["instructions"])
    return "\n".join(parts)


def schema_name(request: dict) -> str | None:
    """The json_schema name a structured-output request asks for (Chat Completions or Responses)."""
    rf = request.get("response_format") or {}
    if isinstance(rf, dict) and rf.get("type") == "json_schema":
        return (rf.get("json_schema") or {}).get("name")
    fmt = ((request.get("text") or {}).get("format") or {})
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return fmt.get("name")
    return None


def tool_names(request: dict) -> list[str]:
    names = []
    for tool in request.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        names.append((fn or tool).get("name") if isinstance(fn or tool, dict) else None)
    return [n for n in names if n]


@dataclass
class Reply:
    """What a dialect decided: text content or tool calls, whether gold matched, and its name."""

    dialect: str
    matched: bool
    content: str | None = None
    tool_calls: list[dict] = field(default_factory=list)
    logprobs: Any = None

    @staticmethod
    def json(dialect: str, matched: bool, obj: Any) -> "Reply":
        return Reply(dialect, matched, content=json.dumps(obj, ensure_ascii=False))

    @staticmethod
    def tools(dialect: str, matched: bool, calls: list[tuple[str, dict]]) -> "Reply":
        return Reply(dialect, matched, tool_calls=[
            {"id": f"call_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
            for i, (name, args) in enumerate(calls)])


def chat_completion(request: dict, reply: Reply, rid: str) -> dict:
    message: dict = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    choice = {"index": 0, "finish_reason": "tool_calls" if reply.tool_calls else "stop", "message": message,
              "logprobs": reply.logprobs}
    out_text = (reply.content or "") + "".join(c["function"]["arguments"] for c in reply.tool_calls)
    pin, pout = approx_tokens(all_text(request)), approx_tokens(out_text)
    return {"id": f"chatcmpl-{rid}", "object": "chat.completion", "created": 0, "model": request.get("model", ""),
            "choices": [choice], "usage": {"prompt_tokens": pin, "completion_tokens": pout, "total_tokens": pin + pout}}


def response_object(request: dict, reply: Reply, rid: str) -> dict:
    """A Responses API ``response``: a message with the text (when there is text, or nothing else), then one
    ``function_call`` item per tool call."""
    text = reply.content or ""
    output = [{"type": "message", "id": f"msg_{rid}", "status": "completed", "role": "assistant",
               "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]}] \
        if text or not reply.tool_calls else []
    output += [{"type": "function_call", "id": f"fc_{rid}_{i}", "call_id": c["id"], "name": c["function"]["name"],
                "arguments": c["function"]["arguments"], "status": "completed"} for i, c in enumerate(reply.tool_calls)]
    out_text = text + "".join(c["function"]["arguments"] for c in reply.tool_calls)
    pin, pout = approx_tokens(all_text(request)), approx_tokens(out_text)
    tools = request.get("tools")
    return {"id": f"resp_{rid}", "object": "response", "created_at": 0, "status": "completed",
            "model": request.get("model", ""), "error": None, "incomplete_details": None,
            "instructions": request.get("instructions"), "metadata": {},
            "parallel_tool_calls": request.get("parallel_tool_calls", True) is not False,
            "temperature": request.get("temperature"), "tool_choice": request.get("tool_choice", "auto"),
            "tools": tools if isinstance(tools, list) else [], "top_p": None, "output": output,
            "text": request["text"] if isinstance(request.get("text"), dict) else {"format": {"type": "text"}},
            "usage": {"input_tokens": pin, "output_tokens": pout, "total_tokens": pin + pout,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}
