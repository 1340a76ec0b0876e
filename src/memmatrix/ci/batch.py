"""What every run of one command shares (protocols, case files, runtime, model, options), checked before any run.

``memmatrix run``, ``sweep`` and ``bisect`` build their runs from one Batch, so a release measured by a
sweep is set up exactly as ``memmatrix run --system name@version`` would set it up.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..cases import CaseFile, default_case_file, load_cases, read_case_json
from ..common.config import Config
from ..common.errors import MemmatrixError
from ..model import GatewaySettings
from .matrix import split_list
from .private import check_private_out
from ..protocols import EvalProtocol, get_protocol, main_job_protocols
from ..run.request import RunRequest, check_options, check_out
from ..runtimes import require
from ..systems import SystemSpec


def parse_options(items: list[str] | None) -> dict:
    options = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise MemmatrixError(f"--option {item!r} is not KEY=VALUE (e.g. --option forget_path=edge_delete)")
        options[key.strip()] = value
    return options


@dataclass
class Batch:
    protocols: list[EvalProtocol]
    cases: dict[str, CaseFile]
    newest: dict[str, bool]
    runtime: str
    out: Path
    seed: int = 0
    gateway: GatewaySettings = field(default_factory=GatewaySettings)
    judge: bool = True
    options: dict = field(default_factory=dict)
    replace: bool = False
    jobs: int = 1

    @classmethod
    def from_args(cls, config: Config, *, protocol: list[str] | None, cases: str | None, runtime: str, out: str,
                  seed: int = 0, no_judge: bool = False, option: list[str] | None = None,
                  replace: bool = False, jobs: int = 1, gateway: GatewaySettings | None = None) -> "Batch":
        where = Path(out)
        check_out(where)
        if jobs < 1:
            raise MemmatrixError(f"--jobs {jobs}: give a number of instances, 1 or more")
        require(runtime)
        if jobs > 1 and runtime == "compose":
            raise MemmatrixError("--jobs runs several instances with a gateway each in this process; the compose "
                                 "runtime has one gateway service per project: use --runtime embedded, or --jobs 1")
        if protocol is None and cases:  # a case file names its protocol
            protocol = [read_case_json(Path(cases)).get("protocol", "")]
        names = split_list(protocol or main_job_protocols())  # commas, spaces or newlines
        protocols = [get_protocol(p) for p in names]
        if cases and len(protocols) > 1:
            raise MemmatrixError("--cases names one case file, so give exactly one --protocol with it")
        loaded, newest = {}, {}
        for p in protocols:
            default = load_cases(default_case_file(config, p.name), config, p)
            loaded[p.name] = load_cases(Path(cases), config, p) if cases else default
            newest[p.name] = loaded[p.name].sha256 == default.sha256
            check_private_out(loaded[p.name], where, config)
        return cls(protocols=protocols, cases=loaded, newest=newest, runtime=runtime, out=where, seed=seed,
                   gateway=gateway or GatewaySettings.from_env(), judge=not no_judge, options=parse_options(option),
                   replace=replace, jobs=jobs)

    def request(self, spec: SystemSpec, protocol: EvalProtocol, repeat: int = 1) -> RunRequest:
        req = RunRequest(spec=spec, protocol=protocol, cases=self.cases[protocol.name], runtime=self.runtime,
                         out=self.out, seed=self.seed, gateway=self.gateway, judge=self.judge, options=self.options,
                         default_cases=self.newest[protocol.name], replace=self.replace, repeat=repeat,
                         jobs=self.jobs)
        if spec.folder is not None:
            check_options(req, spec.meta.get("options"))
        return req

    def repeats(self, protocol: EvalProtocol, asked: int | None) -> int:
        """How many times a run of ``protocol`` is made: once, or for a repeated protocol ``asked``, by default 3 on
        the oracle and 5 with a real model for a model's variance (door: a system that made no model call runs
        once), and 5 for a race's (concurrency)."""
        if not protocol.repeated:
            return 1
        return asked or (5 if self.gateway.mode == "proxy" or protocol.repeated == "timing" else 3)

    def execute(self, req: RunRequest, config: Config) -> Path | str:
        """One run: the result's folder, or why it produced none (a sentence; the batch goes on)."""
        from ..run.runner import execute
        spec = req.spec
        label = f"{spec.name}{'@' + spec.version if spec.version else ''} · {req.protocol.name} · {self.runtime}"
        print(f"memmatrix: running {label}", file=sys.stderr, flush=True)
        try:
            where = execute(req, config)
        except MemmatrixError as exc:
            print(f"memmatrix: {label} could not run: {exc}", file=sys.stderr, flush=True)
            return f"{label}: {exc}"
        print(f"memmatrix: wrote {where}", file=sys.stderr, flush=True)
        return where
