"""The gateway keeps the OpenAI contract the real clients rely on, tested with the real clients: the ``openai`` package
(chat completions, forced tool_choice, strict json_schema ``parse()``, the Responses API with tools and streamed) and
LangChain's ``ChatOpenAI.with_structured_output`` by each of its three methods. What the oracle cannot answer gets
the least answer the contract allows (a call of the forced tool, an object of the strict schema) and is still
counted unmatched. Everything goes to a gateway on 127.0.0.1."""

from __future__ import annotations

import enum
import json
import os
import subprocess
import sys
from typing import Literal, Optional

import openai
import pytest
import requests
from jsonschema import Draft202012Validator
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from conftest import ROOT
from helpers import G, W
from memmatrix.model import Gateway, GatewaySettings
from memmatrix.model.dialects.common import Reply
from memmatrix.model.dialects.memmatrix import EXTRACT_MARKER, JUDGE_MARKER, RECORD_TOOL
from memmatrix.model.gold import GoldIndex
from memmatrix.model.oracle import Oracle

FACT = "My passport number is P-999."
CASES = {"cases": [{"id": "s", "ops": [W(FACT, gold=[G("user", "passport", "P-999", FACT)])]}]}
#: memmatrix's judge answers this (matched): the stale value presented as current
JUDGE = [{"role": "system", "content": JUDGE_MARKER},
         {"role": "user", "content": json.dumps({"stale": "Berlin", "current": "Lisbon", "text": "I live in Berlin."})}]
EXTRACT = [{"role": "system", "content": EXTRACT_MARKER}, {"role": "user", "content": FACT}]
UNKNOWN = [{"role": "user", "content": "What is the weather like in Quillmere?"}]  # no dialect knows it

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1},
                                            "unit": {"type": "string", "enum": ["celsius", "kelvin"]}},
           "required": ["city", "days", "unit"], "additionalProperties": False}
LOOKUP = {"type": "object", "properties": {"key": {"type": "string", "minLength": 3}, "exact": {"type": "boolean"}},
          "required": ["key", "exact"]}
RECORD = {"type": "object", "properties": {"subject": {"type": "string"}, "value": {"type": "string"}}}
TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": WEATHER}},
         {"type": "function", "function": {"name": "lookup", "parameters": LOOKUP}}]
RESPONSES_TOOLS = [{"type": "function", "name": t["function"]["name"], "parameters": t["function"]["parameters"]}
                   for t in TOOLS]


class Verdict(BaseModel):
    verdict: Literal["absent", "qualified", "unqualified", "unclear"]
    reason: str


class Mood(enum.Enum):
    CALM = "calm"
    STORMY = "stormy"


class Place(BaseModel):
    name: str
    population: int


class Forecast(BaseModel):
    city: str
    days: int
    warning: Optional[str]
    place: Place
    nearby: list[Place]
    unit: Literal["celsius", "kelvin"]
    mood: Mood
    backup: Optional[Place]


FORECAST_MINIMAL = Forecast(city="", days=0, warning=None, place=Place(name="", population=0), nearby=[],
                            unit="celsius", mood=Mood.CALM, backup=None)


@pytest.fixture
def gw():
    with Gateway(GatewaySettings(), [CASES]) as g:
        yield g


@pytest.fixture
def client(gw):
    return openai.OpenAI(base_url=gw.url, api_key="dummy", max_retries=0, timeout=30)


def valid(schema: dict, value) -> bool:
    return Draft202012Validator(schema).is_valid(value)


def chats(gw) -> list[dict]:
    return [r for r in gw.recorder.ordered() if r["kind"] == "chat"]


def only_chat(gw) -> dict:
    records = chats(gw)
    assert len(records) == 1, records
    return records[0]


# ----------------------------------------------------------------------------------------- chat completions

def test_a_chat_completion(client, gw):
    r = client.chat.completions.create(model="memmatrix-oracle", messages=JUDGE)
    choice = r.choices[0]
    assert choice.finish_reason == "stop" and choice.message.tool_calls is None
    assert json.loads(choice.message.content)["verdict"] == "unqualified"
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens > 0
    assert only_chat(gw)["matched"] is True


def test_a_named_tool_choice_gets_a_call_of_that_tool_with_arguments_of_its_schema(client, gw):
    r = client.chat.completions.create(model="m", messages=UNKNOWN, tools=TOOLS,
                                       tool_choice={"type": "function", "function": {"name": "lookup"}})
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls
    args = json.loads(call.function.arguments)
    assert call.function.name == "lookup" and valid(LOOKUP, args) and args == {"key": "xxx", "exact": False}
    record = only_chat(gw)
    assert record["matched"] is False and record["dialect"] == "unmatched"  # the least answer: still unmatched


def test_required_tool_choice_calls_the_first_tool(client, gw):
    r = client.chat.completions.create(model="m", messages=UNKNOWN, tools=TOOLS, tool_choice="required")
    assert r.choices[0].finish_reason == "tool_calls"
    [call] = r.choices[0].message.tool_calls
    args = json.loads(call.function.arguments)
    assert call.function.name == "weather" and valid(WEATHER, args)
    assert args == {"city": "", "days": 1, "unit": "celsius"} and only_chat(gw)["matched"] is False


def test_required_tool_choice_keeps_the_tool_the_oracle_answered_with(client, gw):
    tools = [*TOOLS, {"type": "function", "function": {"name": RECORD_TOOL, "parameters": RECORD}}]
    r = client.chat.completions.create(model="m", messages=EXTRACT, tools=tools, tool_choice="required")
    [call] = r.choices[0].message.tool_calls
    assert call.function.name == RECORD_TOOL and json.loads(call.function.arguments)["value"] == "P-999"
    assert only_chat(gw)["matched"] is True


def test_a_streamed_forced_tool_call_arrives_whole(client):
    stream = client.chat.completions.create(model="m", messages=UNKNOWN, tools=TOOLS, tool_choice="required",
                                            stream=True)
    chunks = list(stream)
    name = "".join(tc.function.name or "" for c in chunks for tc in c.choices[0].delta.tool_calls or [])
    args = "".join(tc.function.arguments or "" for c in chunks for tc in c.choices[0].delta.tool_calls or [])
    assert name == "weather" and valid(WEATHER, json.loads(args))
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_strict_json_schema_parse_of_an_unmatched_call_gets_the_least_object(client, gw):
    r = client.chat.completions.parse(model="m", messages=UNKNOWN, response_format=Forecast)
    assert r.choices[0].message.parsed == FORECAST_MINIMAL
    record = only_chat(gw)
    assert record["matched"] is False and record["request"]["response_format"]["json_schema"]["strict"] is True


def test_strict_json_schema_parse_of_a_matched_call_gets_the_oracles_answer(client, gw):
    r = client.chat.completions.parse(model="m", messages=JUDGE, response_format=Verdict)
    assert r.choices[0].message.parsed.verdict == "unqualified" and only_chat(gw)["matched"] is True


def test_a_json_schema_that_is_not_strict_keeps_the_empty_answer(client, gw):
    """Only what the contract promises changes: a non-strict schema promises no shape."""
    fmt = {"type": "json_schema", "json_schema": {"name": "Place", "schema": Place.model_json_schema()}}
    r = client.chat.completions.create(model="m", messages=UNKNOWN, response_format=fmt)
    assert r.choices[0].message.content == "{}" and only_chat(gw)["matched"] is False


def test_unmatched_calls_are_counted_and_matched_ones_are_not(client, gw):
    client.chat.completions.parse(model="m", messages=UNKNOWN, response_format=Forecast)
    client.chat.completions.create(model="m", messages=UNKNOWN, tools=TOOLS, tool_choice="required")
    client.responses.create(model="m", input=UNKNOWN, tools=RESPONSES_TOOLS, tool_choice="required")
    client.chat.completions.parse(model="m", messages=JUDGE, response_format=Verdict)
    cost = requests.get(f"{gw.url.removesuffix('/v1')}/_memmatrix/state", timeout=10).json()["cost"]
    assert cost["total"]["llm_calls"] == 4 and cost["total"]["unmatched"] == 3
    assert cost["unmatched"] == {"setup: unmatched": 3}


# ----------------------------------------------------------------------------------------- the Responses API

def test_the_responses_api_returns_function_call_items(client, gw):
    r = client.responses.create(model="m", input=UNKNOWN, tools=RESPONSES_TOOLS,
                                tool_choice={"type": "function", "name": "lookup"})
    [item] = r.output
    assert item.type == "function_call" and item.status == "completed" and item.name == "lookup"
    assert item.call_id and item.id and item.id != item.call_id
    assert valid(LOOKUP, json.loads(item.arguments)) and only_chat(gw)["matched"] is False


def test_the_responses_api_carries_a_dialects_tool_calls(client, gw):
    tools = [{"type": "function", "name": RECORD_TOOL, "parameters": RECORD}]
    r = client.responses.create(model="m", input=EXTRACT, tools=tools)
    assert [(i.type, i.name) for i in r.output] == [("function_call", RECORD_TOOL)]
    assert json.loads(r.output[0].arguments)["value"] == "P-999" and only_chat(gw)["matched"] is True


def test_the_responses_api_strict_text_format_is_met(client):
    r = client.responses.parse(model="m", input=UNKNOWN, text_format=Forecast)
    assert r.output_parsed == FORECAST_MINIMAL


def test_a_streamed_response_is_the_response_in_events(client):
    whole = client.responses.create(model="m", input=JUDGE)
    events = list(client.responses.create(model="m", input=JUDGE, stream=True))
    assert [e.type for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed"]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = events[-1].response
    assert events[0].response.status == "in_progress" and events[0].response.id == final.id
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == whole.output_text and json.loads(text)["verdict"] == "unqualified"
    # the same response but for its ids, which derive from the request (stream: true included)
    same_ids = json.dumps(final.model_dump()).replace(final.id.removeprefix("resp_"), whole.id.removeprefix("resp_"))
    assert json.loads(same_ids) == whole.model_dump() and final.id != whole.id


def test_a_streamed_function_call_sends_its_arguments(client):
    events = list(client.responses.create(model="m", input=UNKNOWN, tools=RESPONSES_TOOLS, tool_choice="required",
                                          stream=True))
    kinds = [e.type for e in events]
    assert kinds == ["response.created", "response.in_progress", "response.output_item.added",
                     "response.function_call_arguments.delta", "response.function_call_arguments.done",
                     "response.output_item.done", "response.completed"]
    done = events[4]
    assert done.arguments == events[3].delta and valid(WEATHER, json.loads(done.arguments))
    assert events[2].item.type == "function_call" and events[2].item.arguments == ""


def test_the_stream_helper_accumulates_the_final_response(client, gw):
    with client.responses.stream(model="m", input=JUDGE) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert final.status == "completed" and final.output_text == "".join(deltas)
    assert json.loads(final.output_text)["verdict"] == "unqualified"
    with client.responses.stream(model="m", input=UNKNOWN, tools=RESPONSES_TOOLS, tool_choice="required") as stream:
        final = stream.get_final_response()
    [item] = final.output
    assert item.type == "function_call" and item.name == "weather" and valid(WEATHER, json.loads(item.arguments))
    with client.responses.stream(model="m", input=UNKNOWN, text_format=Forecast) as stream:
        assert stream.get_final_response().output_parsed == FORECAST_MINIMAL
    records = chats(gw)  # recorded once each, whole, like any call
    assert len(records) == 3 and all(r["request"]["stream"] is True and r["response"]["object"] == "response"
                                     for r in records)


# ----------------------------------------------------------------------------------------- LangChain

@pytest.fixture
def chat_model(gw, monkeypatch):
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    return ChatOpenAI(base_url=gw.url, api_key="x", model="memmatrix-oracle", max_retries=0)


@pytest.mark.parametrize("method", ["json_schema", "json_mode", "function_calling"])
def test_langchain_structured_output_by_each_method(chat_model, gw, method):
    got = chat_model.with_structured_output(Verdict, method=method).invoke(JUDGE)
    assert isinstance(got, Verdict) and got.verdict == "unqualified" and "Berlin" in got.reason
    assert only_chat(gw)["matched"] is True  # the judge's answer, as a tool call for function_calling


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
def test_langchain_structured_output_of_an_unmatched_call_is_the_least_instance(chat_model, gw, method):
    got = chat_model.with_structured_output(Forecast, method=method).invoke(UNKNOWN)
    assert got == FORECAST_MINIMAL
    assert only_chat(gw)["matched"] is False


# ----------------------------------------------------------------------------------------- the oracle's side

class _Says:
    """A dialect that answers every request with ``content``, matched."""

    name = "says"
    content = ""

    @classmethod
    def match(cls, request: dict) -> bool:
        return True

    @classmethod
    def answer(cls, request: dict, gold) -> Reply:
        return Reply("says", True, content=cls.content)


@pytest.mark.parametrize("content, called", [("Nothing worth remembering here.", None),
                                             ('{"key": "abcd", "exact": true}', {"key": "abcd", "exact": True})])
def test_a_dialects_answer_to_a_forced_tool(content, called):
    """A dialect's JSON answer that fits the forced tool becomes its call (still matched); a dialect's text answer
    is left as the dialect gave it, as its recorded runs hold it."""
    says = type("Says", (_Says,), {"content": content})
    reply = Oracle(GoldIndex([]), (says,)).chat({"messages": UNKNOWN, "tools": TOOLS, "tool_choice": "required"})
    assert reply.matched is True
    if called is None:
        assert reply.content == content and reply.tool_calls == []
    else:
        [call] = reply.tool_calls
        assert call["function"]["name"] == "lookup" and json.loads(call["function"]["arguments"]) == called


# ----------------------------------------------------------------------------------------- `memmatrix model serve`

def test_memmatrix_model_serve_answers_the_openai_client(tmp_path):
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(CASES))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMMATRIX_MODEL_")}
    proc = subprocess.Popen([sys.executable, "-m", "memmatrix", "model", "serve", "--port", "0", "--cases", str(cases)],
                            stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        line = proc.stdout.readline()
        assert "listening on http://127.0.0.1:" in line, line
        url = line.split("listening on ", 1)[1].strip()
        client = openai.OpenAI(base_url=url, api_key="dummy", max_retries=0, timeout=30)
        r = client.chat.completions.create(model="m", messages=UNKNOWN, tools=TOOLS,
                                           tool_choice={"type": "function", "function": {"name": "weather"}})
        assert valid(WEATHER, json.loads(r.choices[0].message.tool_calls[0].function.arguments))
        with client.responses.stream(model="m", input=JUDGE) as stream:
            assert json.loads(stream.get_final_response().output_text)["verdict"] == "unqualified"
        cost = requests.get(url.removesuffix("/v1") + "/_memmatrix/state", timeout=10).json()["cost"]
        assert cost["total"]["llm_calls"] == 2 and cost["total"]["unmatched"] == 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)
