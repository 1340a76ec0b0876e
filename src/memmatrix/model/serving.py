"""What the gateway serves beyond one JSON answer: the shapes the official ``openai`` client (and the
systems built on it) send and expect.

- ``stream: true`` on chat completions: the answer as OpenAI's server-sent events, one
  ``chat.completion.chunk`` per delta (role, content, each tool call's name then its arguments, the
  finish reason), a usage chunk when ``stream_options.include_usage`` asks for it, then ``data: [DONE]``.
  The model transcript records the whole answer, as for any call.
- ``stream: true`` on the Responses API: the response as its typed server-sent events (``event:`` and
  ``data:`` lines, each with ``type`` and ``sequence_number``): ``response.created`` and
  ``response.in_progress``, each output item added, its text or arguments as one delta and done, the item
  done, then ``response.completed``; what ``client.responses.stream(...)`` accumulates into the response.
- token-array embedding input (a list of token ids, or a list of such lists, as LangChain sends by
  default): without the tokenizer the ids cannot be decoded, so the oracle embeds a stable text
  rendering of them (``TOKEN_RENDERING``), and the model transcript says so.
- ``GET /v1/models`` and ``GET /v1/models/{id}`` (``models.retrieve``) for the models the gateway serves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

TOKEN_RENDERING = "token ids embedded as the text of the ids joined by single spaces (no tokenizer to decode them)"


class BadRequest(Exception):
    pass


@dataclass(frozen=True)
class EventStream:
    """A body sent as ``text/event-stream`` instead of JSON."""

    data: bytes


def unstreamed(body: dict) -> dict:
    """The request as sent to a real upstream: one JSON answer, which the gateway streams itself."""
    return {k: v for k, v in body.items() if k not in ("stream", "stream_options")}


def include_usage(body: dict) -> bool:
    opts = body.get("stream_options")
    return isinstance(opts, dict) and opts.get("include_usage") is True


def completion_events(completion: dict, usage: bool) -> EventStream:
    """A chat.completion object as the chunks OpenAI streams for it."""
    base = {"id": completion.get("id"), "object": "chat.completion.chunk", "created": completion.get("created", 0),
            "model": completion.get("model", ""), "system_fingerprint": completion.get("system_fingerprint")}
    events = []

    def chunk(index: int, delta: dict, finish=None, logprobs=None) -> None:
        events.append({**base, "choices": [{"index": index, "delta": delta, "logprobs": logprobs,
                                            "finish_reason": finish}], **({"usage": None} if usage else {})})

    for choice in completion.get("choices") or []:
        i, message = choice.get("index", 0), choice.get("message") or {}
        calls = message.get("tool_calls") or []
        chunk(i, {"role": "assistant", "content": None if calls and not message.get("content") else ""})
        if message.get("content"):
            chunk(i, {"content": message["content"]}, logprobs=choice.get("logprobs"))
        for n, call in enumerate(calls):
            fn = call.get("function") or {}
            chunk(i, {"tool_calls": [{"index": n, "id": call.get("id"), "type": call.get("type", "function"),
                                      "function": {"name": fn.get("name"), "arguments": ""}}]})
            if fn.get("arguments"):
                chunk(i, {"tool_calls": [{"index": n, "function": {"arguments": fn["arguments"]}}]})
        chunk(i, {}, finish=choice.get("finish_reason") or "stop")
    if usage:
        events.append({**base, "choices": [], "usage": completion.get("usage")})
    text = "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events) + "data: [DONE]\n\n"
    return EventStream(text.encode())


def response_events(response: dict) -> EventStream:
    """A Responses API ``response`` as the events OpenAI streams for it (``response.completed``, or
    ``response.incomplete`` / ``response.failed`` for a response an upstream left so)."""
    events: list[dict] = []

    def emit(kind: str, **fields) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    started = {**response, "status": "in_progress", "output": [], "usage": None}
    emit("response.created", response=started)
    emit("response.in_progress", response=started)
    for n, item in enumerate(response.get("output") or []):
        kind = item.get("type")
        if kind == "message":
            emit("response.output_item.added", output_index=n, item={**item, "status": "in_progress", "content": []})
            for k, part in enumerate(item.get("content") or []):
                at = {"item_id": item.get("id"), "output_index": n, "content_index": k}
                if part.get("type") != "output_text":  # a refusal or another part: added and done whole
                    emit("response.content_part.added", **at, part=part)
                    emit("response.content_part.done", **at, part=part)
                    continue
                text = part.get("text") or ""
                emit("response.content_part.added", **at, part={**part, "text": ""})
                if text:
                    emit("response.output_text.delta", **at, delta=text, logprobs=[])
                emit("response.output_text.done", **at, text=text, logprobs=[])
                emit("response.content_part.done", **at, part=part)
        elif kind == "function_call":
            emit("response.output_item.added", output_index=n, item={**item, "arguments": "", "status": "in_progress"})
            at = {"item_id": item.get("id"), "output_index": n}
            if item.get("arguments"):
                emit("response.function_call_arguments.delta", **at, delta=item["arguments"])
            emit("response.function_call_arguments.done", **at, name=item.get("name"),
                 arguments=item.get("arguments") or "")
        else:
            emit("response.output_item.added", output_index=n, item=item)
        emit("response.output_item.done", output_index=n, item=item)
    status = response.get("status")
    emit(f"response.{status if status in ('incomplete', 'failed') else 'completed'}", response=response)
    text = "".join(f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events)
    return EventStream(text.encode())


def _token_ids(x) -> bool:
    return isinstance(x, list) and bool(x) and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in x)


def embedding_inputs(raw) -> tuple[list[str], bool]:
    """The texts to embed and whether they are renderings of token ids (``TOKEN_RENDERING``)."""
    if isinstance(raw, str):
        return [raw], False
    if isinstance(raw, list) and raw and all(isinstance(x, str) for x in raw):
        return raw, False
    if _token_ids(raw):
        return [" ".join(map(str, raw))], True
    if isinstance(raw, list) and raw and all(_token_ids(x) for x in raw):
        return [" ".join(map(str, x)) for x in raw], True
    raise BadRequest("'input' must be a string, a non-empty list of strings, a list of token ids, or a list of "
                     "such lists")


def model_object(model: str) -> dict:
    return {"id": model, "object": "model", "created": 0, "owned_by": "memmatrix"}


def models_answer(path: str, served: tuple[str, ...]) -> tuple[int, dict]:
    """``GET /v1/models`` lists what the gateway serves; ``GET /v1/models/{id}`` retrieves one of them."""
    model = path.split("/models", 1)[1].lstrip("/")
    if not model:
        return 200, {"object": "list", "data": [model_object(m) for m in served]}
    if model in served:
        return 200, model_object(model)
    return 404, {"error": {"message": f"the model {model!r} does not exist here; the gateway serves "
                                      f"{', '.join(served)} (any name works in requests)",
                           "type": "invalid_request_error", "param": None, "code": "model_not_found"}}
