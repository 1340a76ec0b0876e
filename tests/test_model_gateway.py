"""The gateway over HTTP: routes, errors, concurrency, and the proxy -> replay round trip."""

import json
import threading

import pytest
import requests

from conftest import ROOT
from helpers import exchanges, run, system_source, text_of
from memmatrix.common.canon import stored_transcript
from memmatrix.common.errors import RuntimeFailure
from memmatrix.model import Gateway, GatewaySettings

CASES = json.loads((ROOT / "cases/deletion/1.0.0.json").read_text())
EXTRACT = {"model": "m", "response_format": {"type": "json_object"}, "messages": [
    {"role": "system", "content": "You are a Memory Extractor"},
    {"role": "user", "content": "## New Messages\nuser: Yes please. The code for my storage locker is QX-4471-TRV.\n"
                                "user: We finally rented a storage locker downtown for the spare furniture.\n"}]}


@pytest.fixture
def gw():
    with Gateway(GatewaySettings(), [CASES], system_source("mem0")) as g:  # EXTRACT is a mem0 prompt
        yield g


def test_routes_and_errors(gw):
    assert requests.get(f"{gw.url}/models").json()["data"][0]["id"] == "memmatrix-oracle"
    bad = requests.post(f"{gw.url}/chat/completions", data=b"{not json")
    assert bad.status_code == 400 and "not JSON" in bad.json()["error"]["message"]
    empty = requests.post(f"{gw.url}/chat/completions", json={"model": "m", "messages": []})
    assert empty.status_code == 400 and "'messages'" in empty.json()["error"]["message"]
    assert requests.post(f"{gw.url}/embeddings", json={"input": [3, "4"]}).status_code == 400
    missing = requests.post(f"{gw.url.rsplit('/v1', 1)[0]}/v1/images", json={})
    assert missing.status_code == 404 and "/v1/chat/completions" in missing.json()["error"]["message"]


def test_embeddings_float_base64_and_dimensions(gw):
    f = requests.post(f"{gw.url}/embeddings", json={"input": ["a b", "c"], "dimensions": 256}).json()
    assert [len(d["embedding"]) for d in f["data"]] == [256, 256]
    b = requests.post(f"{gw.url}/embeddings", json={"input": "a b", "encoding_format": "base64"}).json()
    import base64
    assert len(base64.b64decode(b["data"][0]["embedding"])) == 1536 * 4  # float32, little-endian


def test_concurrent_callers_get_their_own_answers_and_a_stable_transcript(gw):
    answers, errors = [], []

    def call(i):
        try:
            r = requests.post(f"{gw.url}/chat/completions", json=EXTRACT if i % 2 else
                              {**EXTRACT, "messages": EXTRACT["messages"][:1] + [{"role": "user", "content": "## New Messages\nuser: nothing known\n"}]})
            answers.append((i % 2, json.loads(r.json()["choices"][0]["message"]["content"])))
        except Exception as exc:  # collected: an exception in a thread must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(answers) == 40
    for odd, body in answers:
        assert len(body["memory"]) == (2 if odd else 0)
    lines = gw.recorder.text().splitlines()
    assert len(lines) == 40
    assert gw.recorder.cost()["total"]["unmatched"] == 20
    assert gw.recorder.text() == gw.recorder.text()


def test_proxy_run_then_replay_reproduces_it_byte_for_byte(config, tmp_path):
    from memmatrix.cases import default_case_file, load_cases
    from memmatrix.protocols import get_protocol
    from memmatrix.run.runner import RunRequest, execute
    from memmatrix.systems import resolve_system
    p = get_protocol("contradiction")
    cases = load_cases(default_case_file(config, "contradiction"), config, p)

    def go(settings, out):
        return execute(RunRequest(spec=resolve_system("reference", config), protocol=p, cases=cases,
                                  runtime="inprocess", out=out, gateway=settings), config)

    with Gateway(GatewaySettings(), [cases.data]) as upstream:  # the fake upstream: a second gateway, oracle mode
        proxied = go(GatewaySettings(mode="proxy", upstream_url=upstream.url, upstream_model="memmatrix-oracle",
                                     api_key="sk-never-written"), tmp_path / "proxy")
        assert upstream.recorder.cost()["total"]["llm_calls"] > 0
        assert all(r["request"]["temperature"] == 0 and r["request"]["seed"] == 0
                   for r in upstream.recorder.ordered() if r["kind"] == "chat")
    result = json.loads((proxied / "result.json").read_text())
    assert result["stamp"]["model"]["mode"] == "proxy" and result["stamp"]["model"]["id"] == "memmatrix-oracle"
    assert "sk-never-written" not in text_of(proxied) + text_of(proxied, "model-transcript") + (proxied / "result.json").read_text()

    replayed = go(GatewaySettings(mode="replay", replay=stored_transcript(proxied, "model-transcript")), tmp_path / "replay")
    assert exchanges(proxied) == exchanges(replayed)  # the run headers differ only in who answered the model

    def answered(run_dir):  # each call's record, without its provenance (upstream model vs recording)
        return [{k: v for k, v in json.loads(line).items() if k not in ("upstream_model", "replayed")}
                for line in text_of(run_dir, "model-transcript").splitlines()]
    assert answered(proxied) == answered(replayed)
    assert all(json.loads(line)["upstream_model"] == "memmatrix-oracle"
               for line in text_of(proxied, "model-transcript").splitlines())
    assert all(json.loads(line)["replayed"] for line in text_of(replayed, "model-transcript").splitlines())


def test_replay_names_the_first_differing_request(config, tmp_path):
    from memmatrix.cases import load_cases
    from memmatrix.protocols import get_protocol
    from memmatrix.run.runner import RunRequest, execute
    from memmatrix.systems import resolve_system
    p = get_protocol("deletion")
    recorded = run(config, "reference", tmp_path / "a")
    changed = json.loads((ROOT / "cases/deletion/1.0.0.json").read_text())
    for op in changed["cases"][0]["ops"]:
        if op["op"] == "write" and op["messages"][0]["content"].startswith("We finally rented"):
            op["messages"][0]["content"] += " It is blue."  # the source and its re-feed change together
    f = tmp_path / "changed.json"
    f.write_text(json.dumps(changed))
    out = execute(RunRequest(spec=resolve_system("reference", config), protocol=p, runtime="inprocess",
                             cases=load_cases(f, config, p), out=tmp_path / "b",
                             gateway=GatewaySettings(mode="replay", replay=stored_transcript(recorded, "model-transcript"))), config)
    result = json.loads((out / "result.json").read_text())
    miss = [x for x in result["findings"] if "not in the recording" in x]
    assert miss and "first differs from recorded request" in miss[0] and "It is blue" in miss[0]
    assert result["cases"][0]["cells"][0]["verdict"] == "ERROR"  # the write whose prompt changed


def test_a_run_that_never_reaches_its_real_model_writes_nothing(config, tmp_path):
    from memmatrix.cases import default_case_file, load_cases
    from memmatrix.protocols import get_protocol
    from memmatrix.run.runner import RunRequest, execute
    from memmatrix.systems import resolve_system
    p = get_protocol("deletion")
    dead = GatewaySettings(mode="proxy", upstream_url="http://127.0.0.1:9/v1", upstream_model="gpt-x", timeout_s=2)
    with pytest.raises(RuntimeFailure, match="never reached it"):
        execute(RunRequest(spec=resolve_system("reference", config), protocol=p, runtime="inprocess",
                           cases=load_cases(default_case_file(config, "deletion"), config, p), out=tmp_path,
                           gateway=dead), config)
    assert not list(tmp_path.rglob("result.json"))


def test_a_proxy_run_with_a_call_that_did_not_complete_writes_nothing(config, tmp_path):
    """The upstream answers, but one call times out: the result could not say what the model answered."""
    import time
    from memmatrix.cases import default_case_file, load_cases
    from memmatrix.protocols import get_protocol
    from memmatrix.run.runner import RunRequest, execute
    from memmatrix.systems import resolve_system
    p = get_protocol("deletion")
    cases = load_cases(default_case_file(config, "deletion"), config, p)
    with Gateway(GatewaySettings(), [cases.data]) as upstream:
        real = upstream.handle
        seen = []

        def slow_once(method, path, raw):
            seen.append(path)
            if len(seen) == 3:
                time.sleep(3)  # longer than the proxy's timeout below
            return real(method, path, raw)
        upstream.handle = slow_once
        flaky = GatewaySettings(mode="proxy", upstream_url=upstream.url, upstream_model="memmatrix-oracle", timeout_s=1)
        with pytest.raises(RuntimeFailure, match="failed or timed out"):
            execute(RunRequest(spec=resolve_system("reference", config), protocol=p, runtime="inprocess", cases=cases,
                               out=tmp_path, gateway=flaky), config)
    assert len(seen) > 3  # the upstream was reached, and answered the other calls
    assert not list(tmp_path.rglob("result.json"))


def test_the_flaky_provider_fails_a_quarter_of_distinct_requests_once_and_answers_them_asked_again():
    from memmatrix.common.canon import sha256_json
    from memmatrix.result.derive import model_findings
    from memmatrix.model.upstream import normalize_request
    bodies = [{**EXTRACT, "messages": [*EXTRACT["messages"], {"role": "user", "content": f"note {n}"}]}
              for n in range(40)]
    chosen = [b for b in bodies if sha256_json(normalize_request(b))[0] in "0123"]
    assert 3 <= len(chosen) <= 20  # a quarter, give or take, of forty distinct requests
    with Gateway(GatewaySettings(ablation="flaky"), [CASES], system_source("mem0")) as g:
        first = [requests.post(f"{g.url}/chat/completions", json=b).status_code for b in bodies]
        again = [requests.post(f"{g.url}/chat/completions", json=b).status_code for b in bodies]
        state = g.state()
    assert [s == 500 for s in first] == [b in chosen for b in bodies]  # the same ones on every run
    assert set(again) == {200}
    records = [json.loads(line) for line in state["transcript"].splitlines()]
    assert state["cost"]["total"]["errors"] == len(chosen)
    assert any(f.startswith(f"{len(chosen)} model call(s) failed on purpose") for f in model_findings(records, state["cost"]))
    assert state["identity"]["oracle_version"].endswith("+flaky")


def test_the_stalling_provider_holds_the_same_quarter_then_gives_up_and_answers_them_asked_again(monkeypatch):
    import time
    from memmatrix.common.canon import sha256_json
    from memmatrix.result.derive import model_findings
    from memmatrix.model import gateway as gw
    from memmatrix.model.upstream import normalize_request
    monkeypatch.setattr(gw, "STALL_S", 0.3)
    bodies = [{**EXTRACT, "messages": [*EXTRACT["messages"], {"role": "user", "content": f"note {n}"}]}
              for n in range(12)]
    chosen = [b for b in bodies if sha256_json(normalize_request(b))[0] in "0123"]
    assert chosen and len(chosen) < len(bodies)
    with Gateway(GatewaySettings(ablation="stall"), [CASES], system_source("mem0")) as g:
        timed = []
        for b in bodies:
            t0 = time.perf_counter()
            status = requests.post(f"{g.url}/chat/completions", json=b).status_code
            timed.append((status, time.perf_counter() - t0))
        again = [requests.post(f"{g.url}/chat/completions", json=b).status_code for b in bodies]
        state = g.state()
    assert [s == 504 for s, _ in timed] == [b in chosen for b in bodies]
    assert all(t >= 0.3 for s, t in timed if s == 504)
    assert set(again) == {200}
    records = [json.loads(line) for line in state["transcript"].splitlines()]
    found = model_findings(records, state["cost"])
    assert any(f.startswith(f"{len(chosen)} model call(s) stalled on purpose") for f in found), found
    assert not any("failed on purpose" in f for f in found)
    assert state["identity"]["oracle_version"].endswith("+stall")
