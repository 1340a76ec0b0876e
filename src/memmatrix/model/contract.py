"""What the OpenAI API promises a client whatever the model says, kept by the oracle for the calls no dialect answered.

Two promises that real clients build on:

- a forced ``tool_choice`` (a named function, or ``"required"``) is answered with a call of that tool (of the
  first tool, for ``"required"``), finish reason ``tool_calls``: LangChain's
  ``with_structured_output(method="function_calling")`` reads nothing else;
- a strict ``json_schema`` response format is answered with JSON that fits the schema: the ``openai`` client's
  ``parse()`` validates it.

``honour(request, reply)`` keeps both for an answer the oracle did not match: its arguments or content become the
least value the schema accepts (``minimal.minimal_instance``), and the call stays counted unmatched. An answer
a dialect gave as JSON content that fits a forced tool's parameters becomes that tool's call (the dialect's
answer, still matched). Any other answer a dialect matched is left as the dialect gave it: a system's dialect
speaks for the model that system is run with, and its recorded answers must re-ask the same.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema.validators import validator_for

from .dialects.common import Reply
from .minimal import minimal_instance

__all__ = ["forced_tools", "honour", "strict_schema"]


def _functions(request: dict) -> list[dict]:
    """The request's function tools as {name, parameters}: Chat Completions' nested or the Responses API's flat form."""
    out = []
    for tool in request.get("tools") or []:
        if not isinstance(tool, dict) or tool.get("type", "function") != "function":
            continue
        fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        if isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            out.append({"name": fn["name"], "parameters": params if isinstance(params, dict) else {"type": "object"}})
    return out


def forced_tools(request: dict) -> list[dict]:
    """The tools one of which the answer must call: the named one, every function tool for ``"required"``, or none."""
    choice, tools = request.get("tool_choice"), _functions(request)
    if choice == "required":
        return tools
    if isinstance(choice, dict) and choice.get("type") == "function":
        fn = choice.get("function") if isinstance(choice.get("function"), dict) else choice
        return [t for t in tools if t["name"] == fn.get("name")][:1]
    return []


def strict_schema(request: dict) -> dict | None:
    """The schema of a strict ``json_schema`` response format (Chat Completions ``response_format`` or the Responses
    API's ``text.format``), or None."""
    rf = request.get("response_format")
    spec = rf.get("json_schema") if isinstance(rf, dict) and rf.get("type") == "json_schema" else None
    if spec is None:
        fmt = (request.get("text") or {}).get("format") if isinstance(request.get("text"), dict) else None
        spec = fmt if isinstance(fmt, dict) and fmt.get("type") == "json_schema" else None
    if isinstance(spec, dict) and spec.get("strict") is True and isinstance(spec.get("schema"), dict):
        return spec["schema"]
    return None


def fits(value: Any, schema: dict) -> bool:
    """Whether ``value`` is valid against ``schema`` (a schema that is itself invalid fits nothing)."""
    try:
        return validator_for(schema)(schema).is_valid(value)
    except Exception:  # noqa: BLE001 - jsonschema raises several kinds on a broken schema
        return False


def _json(text: str | None) -> Any:
    try:
        return json.loads(text or "")
    except ValueError:
        return None


def _arguments(schema: dict) -> dict:
    args = minimal_instance(schema)
    return args if isinstance(args, dict) else {}


def honour(request: dict, reply: Reply) -> Reply:
    """``reply`` as the API's contract lets a client receive it (see the module's docstring)."""
    tools = forced_tools(request)
    if tools:
        names = {t["name"] for t in tools}
        if any(c.get("function", {}).get("name") in names for c in reply.tool_calls):
            return reply
        content = _json(reply.content)
        said = next((t for t in tools if isinstance(content, dict) and fits(content, t["parameters"])), None)
        if said is not None:
            return Reply.tools(reply.dialect, reply.matched, [(said["name"], content)])
        if reply.matched:
            return reply
        return Reply.tools(reply.dialect, False, [(tools[0]["name"], _arguments(tools[0]["parameters"]))])
    schema = strict_schema(request)
    if schema is None or reply.matched or reply.tool_calls:
        return reply
    content = _json(reply.content)
    if reply.content and fits(content, schema):
        return reply
    return Reply.json(reply.dialect, False, minimal_instance(schema))
