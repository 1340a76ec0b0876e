"""The documentation's generated parts, kept in step with the code they describe (the sqlite-utils discipline).

A page marks a generated part with ``<!-- generated: NAME -->`` and ``<!-- end generated -->``; ``memmatrix docs``
rewrites every such part from its source, and ``memmatrix docs --check`` (run by the tests) fails when one is
stale. The parts:

- ``cli``: every subcommand with its description, usage and arguments, from the parser itself;
- ``steps:PROTOCOL``: a protocol's columns, what each checks and every SKIP it can give (``StepDef``);
- ``variables``: every ``MEMMATRIX_*`` variable with its meaning (``VARIABLES`` of config and the model settings);
- ``scorecard``: each system's headline at its newest release (``scorecard.py``), from the committed results;
- ``claims:SYSTEM``: a system's vendor claims with their status, from the registry and the committed results;
- ``layout``: the core's packages in their stages, each module with the first line of its docstring;
- ``plumbing``: the sensitivity matrix, which cells hold under every error mode of the oracle (``sensitivity.py``);
- ``estimate``: what the headline protocols ask of a real model per system, priced with ``examples/prices.yaml``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ..common.config import VARIABLES, Config
from ..model.settings import VARIABLES as MODEL_VARIABLES
from ..protocols import get_protocol

BLOCK = re.compile(r"(<!-- generated: (\S+) -->\n)(.*?)(<!-- end generated -->)", re.S)


def _commands(parser: argparse.ArgumentParser, path: str = "memmatrix"):
    """(command path, its parser, its one-line help) for every subcommand, its own subcommands after it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, p in action.choices.items():
                yield f"{path} {name}", p, helps.get(name) or ""
                yield from _commands(p, f"{path} {name}")


def cli_reference(parser: argparse.ArgumentParser) -> str:
    """Each subcommand (and each of its own): its one-line help, its description, its usage and every argument
    with its help."""
    out = []
    for name, p, helptext in _commands(parser):
        out += [f"### `{name}`", "", helptext, ""]
        if p.description and p.description.lower() != helptext.lower():
            out += [p.description, ""]
        out += ["```console", " ".join(p.format_usage().split()), "```", ""]
        rows = []
        for a in p._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            flag = ", ".join(a.option_strings) or a.metavar or a.dest
            if isinstance(a, argparse._SubParsersAction):
                for sname in a.choices:
                    rows.append((f"{sname}", next((c.help for c in a._choices_actions if c.dest == sname), "")))
                continue
            shown = p._get_formatter()._get_help_string(a) or ""  # with the default, as --help shows it
            rows.append((flag, shown.replace("%(default)s", str(a.default)).replace("%%", "%")))
        if rows:
            out += ["| argument | meaning |", "|---|---|"]
            out += [f"| `{f}` | {h.replace('|', '/')} |" for f, h in rows]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def step_table(protocol: str) -> str:
    p = get_protocol(protocol)
    out = [f"Protocol `{p.name}` {p.version}.", "", "| column | what it checks | when it is SKIP |", "|---|---|---|"]
    for s in p.steps:
        name = s.key if s.key == s.name else f"{s.key} {s.name}"
        skips = "; ".join(when for _, when in s.skips) or "never"
        out.append(f"| **{name}** | {s.title} | {skips} |")
    return "\n".join(out) + "\n"


#: The core's packages from the bottom up, each with what it is for (tests/test_layout.py holds the same order).
STAGES = (
    ("common", "what every stage uses: errors, configuration, canonical JSON, tokens, schemas, releases"),
    ("cases", "case files: loading, the rules that keep them discriminating, generation from specs"),
    ("model", "the model gateway: oracle, proxy and replay, the dialects, the oracle's judge"),
    ("protocols", "the protocols: their steps, their rules, scoring a transcript, the judge"),
    ("systems", "system folders: system.yaml, locks, the interpreter an environment is built with"),
    ("exchange", "what crosses the wire and how it is recorded: the wire, the transcript, capabilities"),
    ("runtimes", "where adapters run: in-process, embedded environments, compose"),
    ("result", "what a result is made of: the stamp, the artifacts, derived cost and findings, histories"),
    ("run", "making a run: the request, the runner, the op interpreter, parallel instances"),
    ("evidence", "checking a result: verify, the bindings, re-asking the oracle, rescore, rerun, repack"),
    ("publish", "what people read: the report, the site, plots, the timeline, claims, the scorecard, these docs"),
    ("ci", "the Action's steps, the matrix plan and merge, batches, release sweeps, private sets"),
)


def layout_table(src: Path) -> str:
    import ast
    out = ["| stage | module | what it is |", "|---|---|---|"]
    for stage, what in STAGES:
        out.append(f"| **{stage}/** | | {what} |")
        for path in sorted((src / stage).rglob("*.py")):
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            first = " ".join(doc.split("\n\n")[0].split()).replace("|", "/")
            out.append(f"| | `{path.relative_to(src).as_posix()}` | {first} |")
    return "\n".join(out) + "\n"


def variables_table() -> str:
    out = ["| variable | meaning |", "|---|---|"]
    out += [f"| `{k}` | {v.replace('|', '/')} |" for k, v in {**VARIABLES, **MODEL_VARIABLES}.items()]
    return "\n".join(out) + "\n"


class Sources:
    """What the generated parts are read from; the committed results and claims are read once, when first asked."""

    def __init__(self, config: Config, parser: argparse.ArgumentParser):
        self.config, self.parser = config, parser
        self._results: list | None = None
        self._claims: list | None = None

    def results(self) -> list[tuple[Path, dict]]:
        if self._results is None:
            from ..evidence.verify import find_results, load_result
            home = self.config.home
            self._results = [(p.relative_to(home), load_result(p)) for p in find_results([home / "results"])]
        return self._results

    def claims(self) -> list[dict]:
        if self._claims is None:
            from .claims import evaluate, load_claims, measured
            home = self.config.home
            self._claims = evaluate(load_claims(home / "claims", self.config),
                                    measured([home / p for p, _ in self.results()], self.config), home)
        return self._claims

    def part(self, name: str, page: Path) -> str:
        base = "../" * (len(page.relative_to(self.config.home).parts) - 1)
        kind, _, arg = name.partition(":")
        if kind == "cli":
            return cli_reference(self.parser)
        if kind == "steps":
            return step_table(arg)
        if kind == "variables":
            return variables_table()
        if kind == "layout":
            return layout_table(Path(__file__).resolve().parents[1])
        if kind == "scorecard":
            from .scorecard import markdown, rows
            return markdown(rows(self.results(), self.claims()), base) + "\n"
        if kind == "plumbing":
            from .sensitivity import markdown
            return markdown(self.results(), base)
        if kind == "estimate":
            from .estimate import default_runs, load_prices, markdown
            runs = default_runs(self.results(), ("deletion", "contradiction"))
            return markdown(runs, load_prices(self.config.home / "examples/prices.yaml"), self.config.home, base)
        if kind == "claims":
            from .claimsview import MARK
            mine = [r for r in self.claims() if r["system"] == arg]
            out = ["| claim | status | evidence |", "|---|---|---|"]
            out += [f"| [{r['id']}]({base}docs/claims.md#{r['id'].lower()}) | {MARK[r['status']]} | {r['summary']} |"
                    for r in mine]
            return "\n".join(out) + "\n"
        raise ValueError(f"{page}: no generated part is called {name!r}")


def render(text: str, page: Path, sources: Sources) -> str:
    return BLOCK.sub(lambda m: m.group(1) + sources.part(m.group(2), page) + m.group(4), text)


def pages(home: Path) -> list[Path]:
    return [home / "README.md", *sorted((home / "docs").rglob("*.md"))]


def update(config: Config, parser: argparse.ArgumentParser, check: bool = False) -> list[Path]:
    """Rewrite every generated part; returns the pages that changed (with ``check``, that would change)."""
    sources, changed = Sources(config, parser), []
    for page in pages(config.home):
        text = page.read_text(encoding="utf-8")
        if "<!-- generated: " not in text:
            continue
        new = render(text, page, sources)
        if new != text:
            changed.append(page)
            if not check:
                page.write_text(new, encoding="utf-8")
    return changed
