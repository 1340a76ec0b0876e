"""Errors a contributor meets while writing an adapter point at the fix: an exception inside the adapter carries
where it was raised (its last frames, by file name and line), and a missing config key lists the keys there are."""

from __future__ import annotations

import pytest

from memmatrix.adapterkit import Keys, raised_at
from memmatrix.exchange.wire import CallError, InProcessEndpoint


def _lookup(table: dict):
    return table["boom"]


class _Raising:
    def __init__(self, config):
        self.chat = config["model"]["chat_model"]

    def write(self, scope, at, messages):
        return _lookup({})


def test_an_adapter_exception_names_the_file_line_and_function_it_was_raised_in():
    ep = InProcessEndpoint(_Raising, {})
    try:
        ep.call("init", {"config": {"model": {"chat_model": "m"}}}, 5)
        with pytest.raises(CallError) as err:
            ep.call("write", {"scope": "s", "at": "t", "messages": [{"role": "user", "content": "x"}]}, 5)
        message = err.value.message
        assert message.startswith("write raised KeyError: 'boom' (at test_error_messages.py:")
        assert "in _lookup < test_error_messages.py:" in message and "in write" in message
        assert "/" not in message.split("(at ", 1)[1]   # file names only: a result may be committed
    finally:
        ep.close()


def test_a_missing_config_key_lists_the_keys_there_are():
    ep = InProcessEndpoint(_Raising, {})
    try:
        with pytest.raises(CallError) as err:
            ep.call("init", {"config": {"model": {"chat_model_name": "m", "base_url": "u"}}}, 5)
        assert "config['model'] has no such key; it has ['base_url', 'chat_model_name']" in err.value.message
        assert "'chat_model'" in err.value.message
    finally:
        ep.close()


def test_keys_behave_as_a_dict_otherwise():
    keys = Keys.wrap({"model": {"a": 1}, "n": [1]}, "config")
    assert keys["model"]["a"] == 1 and keys.get("missing") is None and dict(keys) == {"model": {"a": 1}, "n": [1]}
    with pytest.raises(KeyError, match=r"config has no such key; it has \['model', 'n'\]"):
        keys["x"]
    try:
        {}["k"]
    except KeyError as exc:
        assert raised_at(exc).startswith("test_error_messages.py:")


def test_an_exception_inside_a_system_dialect_names_the_dialect_its_file_and_line(tmp_path):
    from memmatrix.model.dialectsource import DialectSource, load_dialects
    from memmatrix.model.gold import GoldIndex
    from memmatrix.model.oracle import DialectError, Oracle
    source = "\n".join([
        "class Pick:",
        "    name = 'mysys-pick'",
        "    @staticmethod",
        "    def match(request):",
        "        return bool(request.get('tools'))",
        "    @staticmethod",
        "    def answer(request, gold):",
        "        return request['tools'][5]",
        "DIALECTS = (Pick,)",
    ])
    dialects = load_dialects(DialectSource("mysys", "oracle.py", "DIALECTS", source, "systems/mysys/oracle.py"))
    oracle = Oracle(GoldIndex([]), dialects)
    with pytest.raises(DialectError) as err:
        oracle.chat({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function",
                                                                                "function": {"name": "t"}}]})
    text = str(err.value)
    assert text.startswith("dialect 'mysys-pick' (Pick.answer) raised IndexError: list index out of range at "
                           "mysys/oracle.py:8 in answer"), text
    assert "fix the dialect" in text
    assert oracle.chat({"messages": [{"role": "user", "content": "hi"}]}).matched is False  # no match: no call


def test_the_gateway_answers_a_broken_dialect_with_an_error_naming_it(tmp_path):
    import requests
    from memmatrix.model import Gateway, GatewaySettings
    from memmatrix.model.dialectsource import DialectSource
    source = ("class Pick:\n    name = 'mysys-pick'\n    match = staticmethod(lambda request: True)\n"
              "    answer = staticmethod(lambda request, gold: {}['missing'])\nDIALECTS = (Pick,)\n")
    with Gateway(GatewaySettings(), [{"cases": []}], DialectSource("mysys", "oracle.py", "DIALECTS", source)) as gw:
        r = requests.post(f"{gw.url}/chat/completions", json={"model": "m", "messages": [{"role": "user",
                                                                                          "content": "hi"}]})
    assert r.status_code == 500
    message = r.json()["error"]["message"]
    assert message.startswith("oracle failed: dialect 'mysys-pick' (Pick.answer) raised KeyError: 'missing' at "
                              "mysys/oracle.py:4 in <lambda>"), message
