"""``memmatrix verify --rerun``: execute a run again from its stamp and compare what it recorded.

verify proves that a result agrees with its transcript and its inputs; only a re-run shows the
system still behaves as recorded. The stamp names everything needed: the system and version (its
adapter and lock checked by sha256), the protocol, the case file (by sha256), the runtime, the
options, the seed, the model, the judge and the limits. An oracle run is re-run on the oracle; a
proxy or replay run is re-run by replaying its own model transcript (no key, no cost), and then
the adapter exchanges are compared (the run header names the model, so it differs).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from .bindings import find_case_file
from ..common.canon import canonical, read_text, sha256_file, sha256_tree
from ..cases import load_cases
from ..common.config import Config
from ..common.errors import MemmatrixError
from ..model import GatewaySettings
from ..model.settings import ablation_of
from ..protocols import get_protocol
from ..run.request import RunRequest
from ..systems import ensure_lock, recorded_system
from .identity import committed_folder, export_folder
from .verify import load_result


def _gateway(stamp: dict, folder: Path, result: dict) -> GatewaySettings:
    model = stamp["model"]
    if model["mode"] == "oracle":
        ablation = ablation_of(model)
        emb = model.get("embedding_model") or ""
        if emb.startswith("feature-hash-v1-"):
            return GatewaySettings(ablation=ablation, embedder="hash", embed_dims=int(emb.rsplit("-", 1)[1]))
        return GatewaySettings(ablation=ablation, embedder="minilm")
    recording = folder / result["model_transcript"]["file"]
    # the adapters are told the embedding width the run had: a local model's (model.local), else the default
    dims = (model.get("local") or {}).get("embedding_dims")
    return GatewaySettings(mode="replay", replay=recording, **({"embed_dims": int(dims)} if dims else {}))


def _system(stamp: dict, config: Config, tmp: Path, remarks: list[str] | None):
    """The system to re-run and the config to run it with: the checkout's folder, or, when it changed since the run,
    the folder as committed at the run's commit (or the later commit whose folder the stamp's hashes name), written
    to ``tmp`` and run from there as a systems root of its own."""
    sysd = stamp["system"]
    found = committed_folder(stamp, config)
    if found is not None:
        commit, rel = found
        root = export_folder(config.home, commit, rel, tmp / "at-commit").parent
        config = config.with_(systems=(root,))
        if remarks is not None:
            remarks.append(f"re-run with {rel} as committed at {commit[:12]} (the checkout's folder changed since)")
    spec = recorded_system(sysd, config)
    if sha256_file(spec.adapter_file) != sysd["adapter_sha256"]:
        raise MemmatrixError(f"the adapter {sysd['adapter']} changed since the run (sha256 differs): a re-run would "
                             "measure another adapter; check out the commit in the stamp")
    if sysd.get("code_sha256") and spec.folder is not None and sha256_tree(spec.folder) != sysd["code_sha256"]:
        raise MemmatrixError(f"the folder of {sysd['name']} (adapter, its modules, oracle or system.yaml) changed since "
                             "the run (code_sha256 differs): a re-run would measure other code; check out the commit "
                             "in the stamp")
    spec = ensure_lock(spec, config)  # a swept release's generated lock (cached, or made again from its input)
    if spec.lock_sha256 != sysd.get("lock_sha256"):
        raise MemmatrixError(f"the lock file of {sysd['name']} {sysd['version']} changed since the run")
    return spec, config


def first_difference(old: str, new: str) -> str:
    a, b = old.splitlines(), new.splitlines()
    for n, (x, y) in enumerate(zip(a, b), 1):
        if x != y:
            at = next(i for i, (p, q) in enumerate(zip(x, y)) if p != q) if any(p != q for p, q in zip(x, y)) \
                else min(len(x), len(y))
            return f"line {n} first differs at character {at}: recorded …{x[max(0, at - 60):at + 60]}… now " \
                   f"…{y[max(0, at - 60):at + 60]}…"
    return f"the recorded text has {len(a)} lines, the re-run {len(b)}"


def rerun(path: Path, config: Config, remarks: list[str] | None = None) -> list[str]:
    """Re-execute the run behind ``path`` (a result.json); the problems, if what it records differs. A protocol
    that measures a race (``repeated == "timing"``) is one draw of an interleaving no re-run repeats: its re-run is
    compared verdict by verdict, and ``remarks`` says so."""
    from ..run.runner import execute
    path = Path(path)
    result = load_result(path, config)
    stamp = result["stamp"]
    if any(v == "~redacted" for v in stamp["system"].get("options", {}).values()):
        return ["the run had a secret option, which the stamp does not keep: it cannot be re-run from the stamp"]
    protocol = get_protocol(stamp["protocol"]["name"])
    cases_file = find_case_file(stamp, config)
    if cases_file is None:
        return [f"the case file {stamp['dataset']['path']} is not in this checkout at the recorded sha256"]
    with tempfile.TemporaryDirectory(prefix="memmatrix-rerun-") as tmp:
        try:
            spec, config = _system(stamp, config, Path(tmp), remarks)
        except MemmatrixError as exc:
            return [str(exc)]
        limits = stamp.get("limits", {})
        cfg = config.with_(call_timeout_s=limits.get("call_timeout_s", config.call_timeout_s),
                           settle_timeout_s=limits.get("settle_timeout_s", config.settle_timeout_s))
        gateway = _gateway(stamp, path.parent, result)
        req = RunRequest(spec=spec, protocol=protocol, cases=load_cases(cases_file, cfg, protocol),
                         runtime=stamp["runtime"]["name"], out=Path(tmp), seed=stamp["seed"], gateway=gateway,
                         judge=stamp.get("judge") is not None, options=dict(stamp["system"].get("options", {})),
                         default_cases=True, replace=True)
        where = execute(req, cfg)
        if protocol.repeated == "timing":
            if remarks is not None:
                remarks.append(f"{protocol.name} measures a race: the re-run was compared verdict by verdict, not byte "
                             "for byte (which write lands first is a draw)")
            return _verdicts(result, load_result(where / "result.json"))
        return _compare(path.parent, result, where, load_result(where / "result.json"))


def _as_scored_then(text: str, stamp: dict, recorded: str) -> str:
    """A re-run's transcript with its header read the way the committed run's header was written: the protocol
    version set to the one the run recorded when it was rescored to this scorer (a rescore, stamp.rescored, is
    exactly the statement that today's scorer reads the same transcript), and the header fields a later harness
    added to ``system`` (code_sha256, oracle_sha256) left out where the recorded header has none. Every other
    byte is compared as it is."""
    head, _, rest = text.partition("\n")
    header, old = json.loads(head), json.loads(recorded.partition("\n")[0])
    rescored = stamp.get("rescored") or {}
    if rescored and header.get("protocol", {}).get("version") == rescored.get("protocol_version"):
        header["protocol"]["version"] = stamp["protocol"]["version"]
    for key in [k for k in header.get("system", {}) if k not in old.get("system", {})]:
        header["system"].pop(key)
    return canonical(header) + "\n" + rest


def _compare(old_dir: Path, old: dict, new_dir: Path, new: dict) -> list[str]:
    problems = []
    replayed = old["stamp"]["model"]["mode"] != "oracle"
    a, b = read_text(old_dir / old["transcript"]["file"]), read_text(new_dir / new["transcript"]["file"])
    if replayed:  # the run header names the model that answered, which a replay changes
        a, b = a.split("\n", 1)[1], b.split("\n", 1)[1]
    else:
        b = _as_scored_then(b, old["stamp"], a)
    if a != b:
        problems.append(f"the re-run's transcript differs: {first_difference(a, b)}")
    if not replayed and old.get("model_transcript") and new.get("model_transcript"):
        if old["model_transcript"]["sha256"] != new["model_transcript"]["sha256"]:
            problems.append("the re-run's model transcript differs: " + first_difference(
                read_text(old_dir / old["model_transcript"]["file"]), read_text(new_dir / new["model_transcript"]["file"])))
    return problems + _verdicts(old, new)


def _verdicts(old: dict, new: dict) -> list[str]:
    """Every cell's verdict of the re-run against the recorded one (a case or cell missing on either side counts)."""
    problems = []
    if [c["id"] for c in old["cases"]] != [c["id"] for c in new["cases"]]:
        problems.append("the re-run scored other cases than the recorded run")
    for c_old, c_new in zip(old["cases"], new["cases"]):
        if [x["step"] for x in c_old["cells"]] != [y["step"] for y in c_new["cells"]]:
            problems.append(f"case {c_old['id']}: the re-run scored other steps")
        for x, y in zip(c_old["cells"], c_new["cells"]):
            if x["verdict"] != y["verdict"]:
                problems.append(f"case {c_old['id']} step {x['step']}: recorded {x['verdict']}, re-run {y['verdict']}")
    return problems
