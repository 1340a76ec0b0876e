"""``--model local:NAME``: a GGUF model served on loopback as proxy mode's upstream.

The registry, the errors, the stamp's model identity and the server's message and tool shaping run with the fast
tests (no build). Heavy (llama-cpp-python compiled once into the cache, a ~100 MB model from PyPI): the local
server answering through the gateway in proxy mode, recorded, timed and replayed; and one deletion case of the
reference system run with ``memmatrix run --model local:smollm2``, verified, and re-run by replaying its own model
transcript. Enable with MEMMATRIX_TEST_ENABLE=heavy.
"""

import json

import jsonschema
import pytest
import requests

from conftest import ROOT
from memmatrix.cli import main
from memmatrix.common.config import Config
from memmatrix.common.errors import ConfigError
from memmatrix.model import GatewaySettings
from memmatrix.model.local import MODELS, gateway_settings, identity, lookup, parse_model
from memmatrix.model.local_server import offered_tools, plain_messages, tool_schema

FACTS = {"port": 1, "llama_cpp_python": "0.3.36", "n_ctx": 16384, "n_embd": 576, "embed_ctx": 2048, "threads": 2,
         "seed": 0, "max_tokens": 512, "prefix_cache": "first-turn",
         "sampler": {"temperature": 0.0, "top_k": 1, "top_p": 1.0, "min_p": 0.0, "repeat_penalty": 1.0},
         "gguf": {"general.file_type": 3}}


def test_model_names_parse_and_unknown_ones_name_the_known():
    assert parse_model(None) == (None, None)
    assert parse_model("oracle") == ("oracle", None) and parse_model("replay") == ("replay", None)
    assert parse_model("local:smollm2") == ("proxy", MODELS["smollm2"])
    with pytest.raises(ConfigError, match="known: local:smollm2 .*local:gemma3-270m"):
        lookup("llama-70b")
    with pytest.raises(ConfigError, match="give oracle, oracle-MODE .*, proxy, replay or local:NAME"):
        parse_model("gpt-4o")
    assert parse_model("oracle-paraphrase-0.2-s1") == ("oracle-paraphrase-0.2-s1", None)
    with pytest.raises(ConfigError, match="'typo' is not an oracle ablation"):
        parse_model("oracle-typo")
    for m in MODELS.values():  # every entry pins its package and its file's sha256
        assert all("==" in p for p in m.packages) and len(m.sha256) == 64 and m.id == f"local-{m.name}"


def test_an_unknown_local_model_is_refused_before_anything_starts(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MEMMATRIX_CACHE_DIR", str(tmp_path / "cache"))
    rc = main(["run", "--system", "reference", "--protocol", "deletion", "--model", "local:nope",
               "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and "local:nope" in err and "local:smollm2" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()
    assert main(["model", "setup"]) == 2 and "local:smollm2" in capsys.readouterr().err


def test_the_stamp_records_the_local_model_and_its_folder_names_it():
    from memmatrix.evidence.identity import parse_variant
    m = MODELS["smollm2"]
    s = gateway_settings(m, "http://127.0.0.1:1/v1", FACTS, identity(m, FACTS, m.sha256), GatewaySettings(), 600.0)
    ident = s.identity("x", "y")
    assert ident["mode"] == "proxy" and ident["id"] == ident["embedding_model"] == "local-smollm2"
    local = ident["local"]
    assert local["sha256"] == m.sha256 and local["quantisation"] == "Q4_1" and local["llama_cpp_python"] == "0.3.36"
    assert local["sampler"]["temperature"] == 0 and local["seed"] == 0 and local["max_tokens"] == ident["max_tokens"]
    assert s.embed_dims == 576 and s.api_key is None and s.timeout_s == 600.0
    schema = json.loads((ROOT / "schemas/result.schema.json").read_text())
    jsonschema.validate(ident, {**schema["$defs"]["stamp"]["properties"]["model"], "$defs": schema["$defs"]})
    from memmatrix.run.request import RunRequest
    req = RunRequest.__new__(RunRequest)  # only the variant is asked of it
    req.options, req.seed, req.default_cases, req.repeat, req.judge, req.gateway = {}, 0, True, 1, True, s
    req.spec = type("S", (), {"version_meta": {}})()
    req.protocol = type("P", (), {"uses_judge": False})()
    assert req.variant == "proxy-local-smollm2"
    assert parse_variant("embedded+" + req.variant)["proxy"] == ident["id"]  # what verify compares


def test_messages_become_plain_turns_and_a_tools_request_a_forced_call():
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {
        "x": {"type": "string"}}, "required": ["x"]}}}, {"type": "function", "function": {"name": "rm"}}]
    msgs = [{"role": "system", "content": "be brief"}, {"role": "developer", "content": "and kind"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "add", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"}]
    out = plain_messages(msgs, tools)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert "You can call these tools" in out[0]["content"] and "and kind" in out[1]["content"]
    assert "Tool result (c1): done" in out[3]["content"]
    assert plain_messages([{"role": "assistant", "content": "x"}], None)[-1]["role"] == "user"
    assert offered_tools({"tools": tools, "tool_choice": "none"}) == []
    assert [t["function"]["name"] for t in offered_tools({"tools": tools, "tool_choice": {
        "type": "function", "function": {"name": "rm"}}})] == ["rm"]
    schema = tool_schema(tools)
    ok = {"name": "add", "arguments": {"x": "1"}}
    jsonschema.validate(ok, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"name": "drop_table", "arguments": {}}, schema)


# ----------------------------------------------------------------------------------------------- heavy

@pytest.fixture(scope="module")
def local_config(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    return Config.from_env({"MEMMATRIX_HOME": str(ROOT), "MEMMATRIX_CACHE_DIR": str(cache),
                            "MEMMATRIX_SETTLE_TIMEOUT": "5", "MEMMATRIX_START_TIMEOUT": "120"})


def one_case(tmp_path, name="deletion-one.json"):
    data = json.loads((ROOT / "cases/deletion/1.2.0.json").read_text())
    data["cases"] = data["cases"][:1]
    f = tmp_path / "private" / name
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(data, indent=1))
    return f


@pytest.mark.heavy
def test_proxy_mode_records_times_and_replays_against_the_local_server(local_config, tmp_path):
    """The proxy path against a real upstream: JSON under a grammar, a forced tool call, embeddings, each call
    recorded with its time, then answered again from the recording alone."""
    from memmatrix.common.canon import stored_transcript  # noqa: F401  (the replay reads what proxy recorded)
    from memmatrix.model import Gateway
    from memmatrix.model.local import LocalServer
    with LocalServer(MODELS["smollm2"], local_config) as server:
        settings = server.settings(GatewaySettings(), timeout_s=300)
        asks = [("/chat/completions", {"model": "any", "response_format": {"type": "json_object"}, "messages": [
                    {"role": "system", "content": "Extract facts as JSON {\"facts\": [...]}"},
                    {"role": "user", "content": "The code for my storage locker is QX-4471-TRV."}]}),
                ("/chat/completions", {"model": "any", "messages": [{"role": "user", "content": "Remember milk"}],
                                       "tools": [{"type": "function", "function": {"name": "remember", "parameters": {
                                           "type": "object", "properties": {"text": {"type": "string"}},
                                           "required": ["text"]}}}]}),
                ("/chat/completions", {"model": "any", "response_format": {"type": "json_schema", "json_schema": {
                    "name": "v", "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}},
                                            "required": ["ok"]}}}, "messages": [{"role": "user", "content": "ok?"}]}),
                ("/embeddings", {"model": "any", "input": ["milk", "locker code"]})]
        with Gateway(settings, []) as gw:
            answers = [requests.post(gw.url + path, json=body, timeout=300).json() for path, body in asks]
            state = gw.state()
    def complete(answer):  # the grammar holds to the end; only the answer-length cap can cut the JSON short
        return answer["choices"][0]["finish_reason"] != "length"
    if complete(answers[0]):
        json.loads(answers[0]["choices"][0]["message"]["content"])  # valid JSON, whatever the model thought
    if complete(answers[1]):
        call = answers[1]["choices"][0]["message"]["tool_calls"][0]["function"]
        assert call["name"] == "remember" and isinstance(json.loads(call["arguments"])["text"], str)
    if complete(answers[2]):
        assert isinstance(json.loads(answers[2]["choices"][0]["message"]["content"])["ok"], bool)
    assert any(complete(a) for a in answers[:3]), "every answer ran into the length cap"
    assert [len(d["embedding"]) for d in answers[3]["data"]] == [576, 576]
    assert state["upstream"]["ok"] == 4 and not state["upstream"]["errors"]
    records = [json.loads(line) for line in state["transcript"].splitlines()]
    assert all(r["upstream_model"] == "local-smollm2" and r["status"] == 200 for r in records)
    assert state["identity"]["local"]["sha256"] == MODELS["smollm2"].sha256
    assert state["latency"], "every upstream call is timed"
    recording = tmp_path / "model-transcript.jsonl"
    recording.write_text(state["transcript"])
    with Gateway(GatewaySettings(mode="replay", replay=recording), []) as replay:  # no server running now
        again = [requests.post(replay.url + path, json=body, timeout=30).json() for path, body in asks]
    assert again == answers


@pytest.mark.heavy
def test_one_deletion_case_with_the_local_model_verifies_and_reruns(local_config, tmp_path, monkeypatch, capsys):
    cases = one_case(tmp_path)
    for k, v in {"MEMMATRIX_HOME": str(ROOT), "MEMMATRIX_CACHE_DIR": str(local_config.cache_dir),
                 "MEMMATRIX_PRIVATE_CASES": str(cases.parent), "MEMMATRIX_SETTLE_TIMEOUT": "5"}.items():
        monkeypatch.setenv(k, v)
    out = tmp_path / "out"
    assert main(["run", "--system", "reference", "--runtime", "inprocess", "--protocol", "deletion",
                 "--cases", str(cases), "--model", "local:smollm2", "--out", str(out)]) == 0
    [result_file] = list(out.rglob("result.json"))
    assert result_file.parent.name.endswith("+proxy-local-smollm2")
    result = json.loads(result_file.read_text())
    model = result["stamp"]["model"]
    assert model["mode"] == "proxy" and model["local"]["quantisation"] == "Q4_1"
    assert result["cost"]["total"]["llm_calls"] > 0 and result["stamp"]["limits"]["call_timeout_s"] >= 600
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0, capsys.readouterr().out
    assert main(["verify", "--rerun", str(out)]) == 0, capsys.readouterr().out
    assert "re-run reproduced it" in capsys.readouterr().out


def test_a_rerun_replays_with_the_embedding_width_the_local_model_had(tmp_path):
    """mem0 sizes its vector store from what the adapter is told: a replay must tell it the local model's width."""
    from memmatrix.evidence.rerun import _gateway
    m = MODELS["smollm2"]
    stamp = {"model": gateway_settings(m, "http://127.0.0.1:1/v1", FACTS, identity(m, FACTS, m.sha256),
                                       GatewaySettings(), 600.0).identity("x", "y")}
    s = _gateway(stamp, tmp_path, {"model_transcript": {"file": "model-transcript.jsonl.xz"}})
    assert s.mode == "replay" and s.embed_dims == 576
    plain = _gateway({"model": {"mode": "proxy", "id": "gpt-x"}}, tmp_path, {"model_transcript": {"file": "m"}})
    assert plain.embed_dims == 1536
