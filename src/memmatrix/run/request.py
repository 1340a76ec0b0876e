"""What a run is asked to do, and everything that follows from it before anything starts.

The request names the setup; the setup decides the result's folder (what differs from the
default is in its name), the run header the transcript opens with, and whether an existing
result in that folder may be replaced (only by a result of the same setup, unless asked).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..result.artifacts import result_dir
from ..common.canon import sha256_file, sha256_tree
from ..cases import CaseFile
from ..common.config import Config
from ..common.errors import ConfigError
from ..protocols.judge import JUDGE_MARKER
from ..result.stamp import scoring_version
from ..model import ORACLE_VERSION, GatewaySettings
from ..protocols import EvalProtocol
from ..systems import SystemSpec
from ..exchange.transcript import secret_key, secret_value


@dataclass
class RunRequest:
    spec: SystemSpec
    protocol: EvalProtocol
    cases: CaseFile
    runtime: str
    out: Path
    seed: int = 0
    runtime_config: dict = field(default_factory=dict)
    gateway: GatewaySettings = field(default_factory=GatewaySettings)
    judge: bool = True  # protocols that need a judge get one through the gateway unless this is off
    options: dict = field(default_factory=dict)  # --option key=value: adapter options beyond the version's
    default_cases: bool = True  # the protocol's newest case file in this checkout (else named in the folder)
    replace: bool = False  # may replace a result of a different setup in the target folder
    repeat: int = 1  # which repeat of a repeated protocol (door) this run is
    jobs: int = 1  # instances of the system running cases at once (--jobs); the transcripts do not depend on it

    @property
    def parallel(self) -> bool:
        """May this system run as several instances at once? A folder says so (system.yaml ``parallel: true``:
        its instances share nothing, so a case's records do not depend on which instance ran it); an adapter
        file given by path is the user's to judge."""
        return self.spec.folder is None or bool(self.spec.meta.get("parallel"))

    @property
    def all_options(self) -> dict:
        return {**self.spec.version_meta.get("options", {}), **self.options}

    @property
    def recorded_options(self) -> dict:
        """The options as stamps, headers and folder names may show them: secrets never."""
        return {k: "~redacted" if secret_key(k) or secret_value(str(v)) else v for k, v in self.all_options.items()}

    @property
    def uses_judge(self) -> bool:
        return self.judge and self.protocol.uses_judge

    @property
    def variant(self) -> str:
        """What sets this run apart from the default setup, for its directory name ('' when nothing)."""
        parts = [f"{k}={v}" for k, v in sorted(self.options.items()) if self.recorded_options.get(k) != "~redacted"]
        if self.seed != 0:
            parts.append(f"seed={self.seed}")
        if not self.default_cases:
            named = f"{self.cases.data['set']}-" if self.cases.data.get("set") else ""  # a generated set says which
            parts.append(f"cases={named}{self.cases.version}-{self.cases.sha256[:8]}")
        if self.protocol.uses_judge and not self.judge:
            parts.append("no-judge")
        if self.repeat > 1:
            parts.append(f"repeat-{self.repeat}")
        g = self.gateway
        if g.mode == "proxy":
            parts.append(f"proxy-{g.upstream_model}")
        elif g.mode == "replay":
            parts.append(f"replay-{sha256_file(g.replay)[:12]}")
        else:
            if g.ablation:
                parts.append(f"oracle-{g.ablation}")
            if g.embedder != "hash":
                parts.append(f"embedder={g.embedder}")
        return "+".join(re.sub(r"[^A-Za-z0-9_.=-]+", "-", p) for p in parts)  # '+' parts, as parse_variant reads

    def target(self, name: str | None = None, version: str | None = None) -> Path:
        return result_dir(self.out, self.protocol.name, name or self.spec.name, version or self.spec.version or "adhoc",
                          self.runtime + (f"+{self.variant}" if self.variant else ""))


def parse_variant(folder: str) -> dict:
    """What a result folder's name (``<runtime>[+<variant>]``, as ``RunRequest.variant`` writes it) says about the
    run: its runtime, options, case set, seed, model ablation, embedder, proxy model, replay, repeat and judge."""
    runtime, *parts = folder.split("+")
    out = {"runtime": runtime, "options": {}, "cases": "", "seed": 0, "ablation": "", "embedder": "",
           "proxy": "", "replay": "", "repeat": 1, "no_judge": False, "unknown": []}
    for part in parts:
        key, eq, value = part.partition("=")
        if part.startswith("cases="):
            out["cases"] = part[len("cases="):]
        elif key == "seed" and eq and value.lstrip("-").isdigit():
            out["seed"] = int(value)
        elif key == "embedder" and eq:
            out["embedder"] = value
        elif eq:
            out["options"][key] = value
        elif part.startswith("oracle-"):
            out["ablation"] = part[len("oracle-"):]
        elif part.startswith("proxy-"):
            out["proxy"] = part[len("proxy-"):]
        elif part.startswith("replay-"):
            out["replay"] = part[len("replay-"):]
        elif part.startswith("repeat-") and part[len("repeat-"):].isdigit():
            out["repeat"] = int(part[len("repeat-"):])
        elif part == "no-judge":
            out["no_judge"] = True
        else:
            out["unknown"].append(part)
    return out


def adapter_config(req: RunRequest) -> dict:
    return {"version": req.spec.version, "seed": req.seed, "options": req.all_options}


def portable(path: Path, home: Path) -> str:
    """A path as committed artifacts may name it: relative to the checkout; outside it, a file of a folder in a
    ``systems`` root (MEMMATRIX_SYSTEMS, e.g. the system folder of an earlier commit checked out elsewhere to re-run
    a result) as ``systems/<name>/<file>``, the same label the checkout's folder gives; else just its name."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(home.resolve()))
    except ValueError:
        if path.parent.parent.name == "systems":
            return f"systems/{path.parent.name}/{path.name}"
        return path.name


def setup_of(stamp: dict) -> dict:
    """The parts of a stamp that make two results the same measurement of one system version."""
    model, judge = stamp.get("model") or {}, stamp.get("judge") or {}
    return {"protocol": scoring_version(stamp), "dataset": stamp["dataset"]["sha256"], "seed": stamp["seed"],
            "options": stamp["system"].get("options", {}),
            "model": {k: model.get(k) for k in ("mode", "id", "oracle_version", "embedding_model")},
            "judge": judge.get("prompt") if judge else None}


def planned_setup(req: RunRequest) -> dict:
    """``setup_of`` for a run that has not started (what the stamp will say)."""
    ident = req.gateway.identity(ORACLE_VERSION, "all-MiniLM-L6-v2" if req.gateway.embedder == "minilm"
                                 else f"feature-hash-v1-{req.gateway.embed_dims}")
    if req.gateway.mode == "replay":
        ident["id"] = f"replay:{sha256_file(req.gateway.replay)[:16]}"
    return setup_of({"protocol": {"version": req.protocol.version}, "dataset": {"sha256": req.cases.sha256},
                     "seed": req.seed, "system": {"options": req.recorded_options}, "model": ident,
                     "judge": {"prompt": JUDGE_MARKER} if req.uses_judge else None})


def differences(old: dict, new: dict) -> list[str]:
    return [f"{k} {old.get(k)!r} → {new.get(k)!r}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]


def check_target(req: RunRequest, existing: dict | None, new: dict, where: Path) -> None:
    """Refuse to replace a result of another setup, naming what differs (``--replace`` allows it)."""
    if existing is None or req.replace:
        return
    try:
        old = setup_of(existing["stamp"])
    except (KeyError, TypeError):
        raise ConfigError(f"{where} holds a result.json memmatrix cannot read; remove it, pass --replace, or choose "
                          "another --out") from None
    diff = differences(old, new)
    if diff:
        raise ConfigError(f"{where} holds a result of a different setup ({'; '.join(diff)}); pass --replace to "
                          "overwrite it, or choose another --out")


def check_out(out: Path) -> None:
    """--out must be a folder memmatrix can write (checked before anything starts, by really writing)."""
    import tempfile
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the results")
    probe = out
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"--out {out}: {probe} is a file; give a folder for the results")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise ConfigError(f"--out {out}: {probe} is not writable ({exc.strerror}); give a folder you can write to") from None


def check_options(req: RunRequest, declared: dict | None) -> None:
    """Every --option must be one the system declares (system.yaml `options`, or the adapter's capabilities)."""
    if not req.options:
        return
    known = declared or {}
    unknown = sorted(set(req.options) - set(known))
    if unknown:
        names = ", ".join(sorted(known)) or "none"
        raise ConfigError(f"--option {', '.join(unknown)}: {req.spec.name} declares no such option (it declares: "
                          f"{names}); see its system.yaml or adapter")
    for key, value in req.options.items():
        choices = (known.get(key) or {}).get("choices")
        if choices and value not in choices:
            raise ConfigError(f"--option {key}={value}: {req.spec.name} accepts {key} in {choices}")


def run_header(req: RunRequest, config: Config, runtime: str, model: dict, judge: dict | None, limits: dict) -> dict:
    """The transcript's first record: what produced it (verify compares it with the stamp)."""
    return {"kind": "run", "protocol": {"name": req.protocol.name, "version": req.protocol.version},
            "dataset": {"path": portable(req.cases.path, config.home), "version": req.cases.version,
                        "sha256": req.cases.sha256},
            "system": {"name": req.spec.name, "version": req.spec.version,
                       "adapter": f"{portable(req.spec.adapter_file, config.home)}:{req.spec.adapter.rpartition(':')[2]}",
                       "adapter_sha256": sha256_file(req.spec.adapter_file),
                       "code_sha256": sha256_tree(req.spec.folder) if req.spec.folder is not None else None,
                       **({"oracle_sha256": req.spec.oracle.sha256} if req.spec.oracle is not None else {}),
                       "lock_sha256": req.spec.lock_sha256,
                       "options": req.recorded_options},
            "runtime": runtime, "seed": req.seed, "model": model, "judge": judge, "limits": limits,
            "clock": {"mode": "virtual", "start": req.cases.data["clock"]["start"]}}
