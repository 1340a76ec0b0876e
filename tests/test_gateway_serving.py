"""The gateway serves what the official openai client sends: streamed chat completions (text and tool calls,
usage on request), streamed Responses API answers (typed events), token-array embedding input, and
models.retrieve; each recorded like any call.
Raw HTTP, read the way the openai client reads it (SSE lines, deltas merged by index)."""

from __future__ import annotations

import json

import pytest
import requests

from helpers import G, W, system_source
from memmatrix.model import Gateway, GatewaySettings
from memmatrix.model.embed import HashEmbedder
from memmatrix.model.serving import TOKEN_RENDERING

FACT = "My passport number is P-999."
CASES = {"cases": [{"id": "s", "ops": [W(FACT, gold=[G("user", "passport", "P-999", FACT)])]}]}
TEXT = {"model": "memmatrix-oracle", "messages": [
    {"role": "system", "content": "memmatrix-judge/hygiene-v2"},
    {"role": "user", "content": json.dumps({"stale": "Berlin", "current": "Lisbon", "text": "I live in Berlin."})}]}
TOOLS = {"model": "memmatrix-oracle", "messages": [{"role": "system", "content": "<human>\n</human>"},
                                                   {"role": "user", "content": FACT}],
         "tools": [{"type": "function", "function": {"name": n}} for n in ("archival_memory_insert", "send_message")]}


@pytest.fixture
def gw():
    with Gateway(GatewaySettings(), [CASES], system_source("letta")) as g:  # TOOLS is an agent-memory step
        yield g


def events(r: requests.Response) -> list:
    """The SSE stream as the openai client reads it: data lines, up to [DONE]."""
    assert r.status_code == 200 and r.headers["Content-Type"] == "text/event-stream"
    lines = [ln[len("data: "):] for ln in r.text.split("\n\n") if ln]
    assert lines[-1] == "[DONE]" and all(not ln.startswith("[") for ln in lines[:-1])
    return [json.loads(ln) for ln in lines[:-1]]


def merged(chunks: list) -> dict:
    """Deltas merged into one message, tool calls by index (what openai's stream helpers do)."""
    msg, calls, finish = {"content": None}, {}, None
    for c in chunks:
        for choice in c["choices"]:
            d = choice["delta"]
            msg["role"] = d.get("role", msg.get("role"))
            if d.get("content"):
                msg["content"] = (msg["content"] or "") + d["content"]
            for tc in d.get("tool_calls") or []:
                slot = calls.setdefault(tc["index"], {"id": None, "type": "function",
                                                      "function": {"name": None, "arguments": ""}})
                slot["id"] = tc.get("id") or slot["id"]
                slot["function"]["name"] = tc.get("function", {}).get("name") or slot["function"]["name"]
                slot["function"]["arguments"] += tc.get("function", {}).get("arguments") or ""
            finish = choice["finish_reason"] or finish
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {"message": msg, "finish_reason": finish}


@pytest.mark.parametrize("body", [TEXT, TOOLS], ids=["text", "tool-calls"])
def test_a_streamed_answer_is_the_answer_in_chunks(gw, body):
    whole = requests.post(f"{gw.url}/chat/completions", json=body).json()["choices"][0]
    chunks = events(requests.post(f"{gw.url}/chat/completions", json={**body, "stream": True}))
    got = merged(chunks)
    assert got["finish_reason"] == whole["finish_reason"]
    assert got["message"]["content"] == whole["message"]["content"]
    assert got["message"].get("tool_calls") == whole["message"].get("tool_calls")
    assert all(c["object"] == "chat.completion.chunk" and "usage" not in c for c in chunks)
    if body is TOOLS:  # a name first, then the arguments, as OpenAI sends them
        assert json.loads(got["message"]["tool_calls"][0]["function"]["arguments"]) == {"content": FACT}
    else:
        assert json.loads(got["message"]["content"])["verdict"] == "unqualified"
    records = [r for r in gw.recorder.ordered() if r["kind"] == "chat"]
    streamed = [r for r in records if r["request"].get("stream")]
    assert len(records) == 2 and len(streamed) == 1  # recorded like any call: the whole answer, matched
    assert streamed[0]["response"]["choices"][0]["message"] == whole["message"] and streamed[0]["matched"]


def test_stream_options_include_usage_adds_a_usage_chunk(gw):
    chunks = events(requests.post(f"{gw.url}/chat/completions",
                                  json={**TEXT, "stream": True, "stream_options": {"include_usage": True}}))
    *deltas, last = chunks
    assert last["choices"] == [] and last["usage"]["total_tokens"] == last["usage"]["prompt_tokens"] + \
        last["usage"]["completion_tokens"] > 0
    assert deltas and all(c["usage"] is None for c in deltas)


def test_a_streamed_proxy_call_asks_the_upstream_for_one_answer(tmp_path):
    with Gateway(GatewaySettings(), [CASES]) as upstream:
        proxy = GatewaySettings(mode="proxy", upstream_url=upstream.url, upstream_model="memmatrix-oracle")
        with Gateway(proxy, []) as gw:
            chunks = events(requests.post(f"{gw.url}/chat/completions", json={**TEXT, "stream": True}))
            assert json.loads(merged(chunks)["message"]["content"])["verdict"] == "unqualified"
        sent = [r["request"] for r in upstream.recorder.ordered()]
        assert len(sent) == 1 and "stream" not in sent[0]


@pytest.mark.parametrize("tokens, texts", [([101, 7, 42], ["101 7 42"]), ([[1, 2], [3]], ["1 2", "3"])])
def test_token_array_input_embeds_a_rendering_of_the_ids(gw, tokens, texts):
    r = requests.post(f"{gw.url}/embeddings", json={"model": "memmatrix-embed", "input": tokens})
    assert r.status_code == 200
    assert [d["embedding"] for d in r.json()["data"]] == [HashEmbedder(1536)(t) for t in texts]
    record = gw.recorder.records[-1]  # in arrival order
    assert record["input_rendering"] == TOKEN_RENDERING and record["request"]["input"] == tokens
    plain = requests.post(f"{gw.url}/embeddings", json={"input": texts})  # text input says nothing of the kind
    assert plain.status_code == 200 and "input_rendering" not in gw.recorder.records[-1]


@pytest.mark.parametrize("bad", [[], [1, "a"], [[1], []], [True], [[-1]], 7])
def test_other_embedding_input_is_refused_with_what_is_accepted(gw, bad):
    r = requests.post(f"{gw.url}/embeddings", json={"input": bad})
    assert r.status_code == 400 and "list of token ids" in r.json()["error"]["message"]


def test_models_are_listed_and_retrieved_and_recorded(gw):
    listed = requests.get(f"{gw.url}/models").json()
    assert [m["id"] for m in listed["data"]] == ["memmatrix-oracle", "memmatrix-embed"]
    one = requests.get(f"{gw.url}/models/memmatrix-oracle")
    assert one.status_code == 200 and one.json() == {"id": "memmatrix-oracle", "object": "model", "created": 0,
                                                     "owned_by": "memmatrix"}
    missing = requests.get(f"{gw.url}/models/gpt-9")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"
    recorded = [(r["endpoint"], r["status"]) for r in gw.recorder.ordered() if r["kind"] == "models"]
    assert sorted(recorded) == [("/v1/models", 200), ("/v1/models/gpt-9", 404), ("/v1/models/memmatrix-oracle", 200)]
    assert gw.recorder.cost()["total"]["llm_calls"] == 0  # a look-up is no model call


def typed_events(r: requests.Response) -> list:
    """A Responses API stream: each event an ``event:`` line naming its type, then its ``data:``."""
    assert r.status_code == 200 and r.headers["Content-Type"] == "text/event-stream"
    out = []
    for block in filter(None, r.text.split("\n\n")):
        event, data = block.split("\n")
        assert event.startswith("event: ") and data.startswith("data: ")
        out.append(json.loads(data[len("data: "):]))
        assert out[-1]["type"] == event[len("event: "):]
    return out


@pytest.mark.parametrize("body", [TEXT, TOOLS], ids=["text", "tool-calls"])
def test_a_streamed_response_is_the_response_as_typed_events(gw, body):
    req = {"model": "m", "input": body["messages"], **({"tools": body["tools"]} if "tools" in body else {})}
    whole = requests.post(f"{gw.url}/responses", json=req).json()
    got = typed_events(requests.post(f"{gw.url}/responses", json={**req, "stream": True}))
    assert [e["sequence_number"] for e in got] == list(range(len(got)))
    assert got[0]["type"] == "response.created" and got[0]["response"]["output"] == []
    assert got[-1]["type"] == "response.completed"
    final = got[-1]["response"]
    assert [i["type"] for i in final["output"]] == [i["type"] for i in whole["output"]]
    assert [e["item"] for e in got if e["type"] == "response.output_item.done"] == final["output"]
    if body is TOOLS:
        [call] = final["output"]
        assert call["name"] == "archival_memory_insert" and json.loads(call["arguments"]) == {"content": FACT}
        assert [e["delta"] for e in got if e["type"] == "response.function_call_arguments.delta"] == [call["arguments"]]
    else:
        text = "".join(e["delta"] for e in got if e["type"] == "response.output_text.delta")
        assert json.loads(text)["verdict"] == "unqualified" and text == whole["output"][0]["content"][0]["text"]
    streamed = [r for r in gw.recorder.ordered() if r["request"].get("stream")]
    assert len(streamed) == 1 and streamed[0]["response"] == final  # recorded once, whole


def test_a_streamed_proxy_response_asks_the_upstream_for_one_answer():
    with Gateway(GatewaySettings(), [CASES]) as upstream:
        proxy = GatewaySettings(mode="proxy", upstream_url=upstream.url, upstream_model="memmatrix-oracle")
        with Gateway(proxy, []) as gw:
            got = typed_events(requests.post(f"{gw.url}/responses",
                                             json={"model": "m", "input": TEXT["messages"], "stream": True}))
            text = "".join(e["delta"] for e in got if e["type"] == "response.output_text.delta")
            assert json.loads(text)["verdict"] == "unqualified" and got[-1]["type"] == "response.completed"
        sent = [r["request"] for r in upstream.recorder.ordered()]
        assert len(sent) == 1 and "stream" not in sent[0]
