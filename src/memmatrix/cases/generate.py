"""Case sets generated from a versioned spec (``cases/specs/<protocol>-<version>.yaml``), the same file every time.

A spec names its protocol, version, seed and count, the variation axes (every case takes one value of each in
a balanced rotation), the shapes with their subject families and sentence templates, and the value pools.
``generate`` fills the deletion protocol's thirteen-step script (the structure of ``cases/deletion/1.2.0.json``)
once per case, or the contradiction protocol's (``casegen_contradiction.py``); ``caserules.py`` then rejects any
case that cannot discriminate. The file is a breadth set
(``cases/<protocol>/breadth-<version>.json``, ``"set": "breadth"``): never a protocol's default case file, run
with ``--cases``. A private set is a spec with another seed (or other pools) generated outside the checkout.
"""

from __future__ import annotations

import itertools
import random
import re
from pathlib import Path

import yaml

from ..common.errors import CaseFileError
from ..common.tokens import tokens

ROLES = ("canary", "twin", "shared", "shared_twin")


def load_spec(path: Path) -> dict:
    try:
        spec = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CaseFileError(f"case spec {path} cannot be read as YAML ({exc}); give a cases/specs/*.yaml file") from None
    if not isinstance(spec, dict) or spec.get("kind") != "memmatrix.case-spec":
        raise CaseFileError(f"{path} is not a case spec (kind: memmatrix.case-spec); see cases/specs/")
    if "base" in spec:  # a variant of another spec: its keys over the base's
        spec = {**load_spec(Path(path).parent / spec["base"]), **{k: v for k, v in spec.items() if k != "base"}}
    spec["file"] = Path(path).name  # named in the generated file (cases/specs/<file>)
    if spec.get("protocol") not in ("deletion", "contradiction", "concurrency"):
        raise CaseFileError(f"{path}: the generator makes deletion, contradiction and concurrency cases, not "
                            f"{spec.get('protocol')!r}; set protocol: to one of them")
    return spec


class _Values:
    """High-entropy fictional values: never the same value twice in one file, and no token shared between the
    values of one case (whole-token matching must tell its targets apart)."""

    def __init__(self, spec: dict, rng: random.Random):
        self.pools, self.rng, self.used = spec["values"], rng, set()
        self.case_tokens: set[str] = set()

    def new_case(self) -> None:
        self.case_tokens = set()

    def _fresh(self, make, claim: bool = True) -> str:
        for _ in range(1000):
            value = make()
            toks = set(tokens(value))
            if value not in self.used and not toks & self.case_tokens:
                self.used.add(value)
                if claim:  # a target's tokens; a distractor only keeps clear of them
                    self.case_tokens |= toks
                return value
        raise CaseFileError("the spec's value pools are too small for its count; add words or syllables")

    def make(self, shape: str, claim: bool = True) -> str:
        r, p = self.rng, self.pools.get(shape, {})
        fresh = lambda make: self._fresh(make, claim)  # noqa: E731
        if "format" in p:  # {key}: a choice from the pool's list of that name; {d<n>}: n digits
            return fresh(lambda: _PLACEHOLDER.sub(lambda m: _part(p, m.group(1), r), p["format"]))
        if shape == "identifier":
            letters = p["letters"]
            return fresh(lambda: f"{''.join(r.choices(letters, k=2))}-{r.randint(1000, 9999)}-"
                                 f"{''.join(r.choices(letters, k=3))}")
        if shape == "number":
            digits = p["digits"]
            return fresh(lambda: str(r.randint(10 ** (digits - 1), 10 ** digits - 1)))
        if shape == "name":
            return fresh(lambda: f"{r.choice(p['starts'])}{r.choice(p['ends'])} "
                                 f"{r.choice(p['family_starts'])}{r.choice(p['family_ends'])}")
        if shape == "phrase":
            return fresh(lambda: " ".join(r.choice(p[k]) for k in ("adjectives", "nouns", "verbs", "adverbs")))
        raise CaseFileError(f"the spec has no value pool for shape {shape!r}")


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _part(pool: dict, key: str, r: random.Random) -> str:
    if re.fullmatch(r"d\d+", key):
        n = int(key[1:])
        return str(r.randint(10 ** (n - 1), 10 ** n - 1))
    if key not in pool:
        raise CaseFileError(f"a value pool's format names {{{key}}}, which the pool has no list for; add {key}: [...]")
    return r.choice(pool[key])


def _fill(template: str, thing: str, value: str = "", team: bool = False) -> str:
    the = "the team's" if team else "my"
    text = template.format(the=the, The=the[0].upper() + the[1:], thing=thing, value=value)
    return text[0].upper() + text[1:]


def _things(shape: dict, neighbour: str, rng: random.Random) -> dict[str, str]:
    """Four distinct subjects: the twin from the canary's family (near) or another family (far)."""
    families = list(shape["families"].values())
    home = rng.choice(families)
    canary, near = rng.sample(home, 2)
    other = rng.choice([f for f in families if f is not home])
    twin = near if neighbour == "near" else rng.choice(other)
    rest = [t for f in families for t in f if t not in (canary, twin)]
    shared, shared_twin = rng.sample(rest, 2)
    return {"canary": canary, "twin": twin, "shared": shared, "shared_twin": shared_twin}


def _source(spec: dict, shape_name: str, shape: dict, thing: str, value: str, split: str) -> dict:
    a = "an" if thing[0] in "aeiou" else "a"
    intro, intro_fact = (t.format(a=a, thing=thing) for t in spec["intros"][shape_name])
    statement = _fill(shape["statement"], thing, value)
    if split == "two":
        messages = [{"role": "user", "content": intro}, {"role": "assistant", "content": shape["ask"]},
                    {"role": "user", "content": _fill(shape["split_open"], thing)},
                    {"role": "assistant", "content": "Go on."},
                    {"role": "user", "content": _fill(shape["split_value"], thing, value)}]
    else:
        messages = [{"role": "user", "content": intro}, {"role": "assistant", "content": shape["ask"]},
                    {"role": "user", "content": f"{shape['reply']} {statement}"}]
    gold = [{"subject": "user", "attribute": "has", "value": thing, "statement": intro_fact},
            {"subject": f"user's {thing}", "attribute": shape["attribute"], "value": value, "statement": statement}]
    return {"messages": messages, "gold": gold}


def _case(spec: dict, n: int, shape_name: str, axes: dict, rng: random.Random, values: _Values) -> dict:
    shape = spec["shapes"][shape_name]
    things = _things(shape, axes["neighbour"], rng)
    values.new_case()
    vals = {role: values.make(shape_name) for role in ROLES}
    team = {"shared": True, "shared_twin": True}
    targets = {role: {"token": vals[role], "queries": [_fill(shape["question"], things[role], team=team.get(role, False))],
                      "fact": _fill(shape["statement"], things[role], vals[role], team=team.get(role, False))}
               for role in ROLES}
    src = {role: _source(spec, shape_name, shape, things[role], vals[role], axes["split"]) for role in ("canary", "twin")}
    team_writes = [{"step": 11, "op": "write", "scope": "main",
                    "messages": [{"role": "user", "content": f"{lead} {targets[r]['fact'][0].lower()}{targets[r]['fact'][1:]}"}],
                    "gold": [{"subject": f"the team's {things[r]}", "attribute": shape["attribute"], "value": vals[r],
                              "statement": targets[r]["fact"]}]}
                   for r, lead in (("shared", "Note for the team:"), ("shared_twin", "Also for the team:"))]
    canary_write = {"step": 1, "op": "write", "scope": "main", **src["canary"], "note": "the canary's source conversation"}
    crowd = _distractors(spec, set(things.values()), rng, values) if spec.get("distractors") else []
    expect = {"op": "expect", "scope": "main", "absent": ["canary"], "present": ["twin"]}
    both = ["canary", "twin"]
    ops = [*crowd, canary_write,
           {"step": 1, "op": "write", "scope": "main", **src["twin"], "note": f"the twin ({axes['neighbour']} neighbour)"},
           {"step": 1, "op": "settle"},
           {"step": 2, "op": "expect", "scope": "main", "present": both},
           {"step": 2, "op": "probe", "scope": "main", "targets": both, "note": "baseline of every derived store"},
           {"step": 3, "op": "forget", "scope": "main", "target": "canary", "text": targets["canary"]["fact"]},
           {"step": 3, "op": "settle"},
           {"step": 3, "op": "probe", "scope": "main", "targets": both, "note": "right after the forget"},
           {"step": 4, **expect},
           {"step": 5, "op": "advance", "by": axes["gap"]},
           {**canary_write, "step": 5, "refeed": True, "note": "the original source conversation, not the fact"},
           {"step": 5, "op": "settle"},
           {"step": 6, **expect},
           {"step": 7, "op": "advance", "by": axes["gap"]},
           {"step": 7, "op": "jobs"},
           {"step": 7, "op": "restart", "note": "stop and start the system on the same stores"},
           {"step": 8, **expect},
           {"step": 9, "op": "probe", "scope": "main", "targets": both},
           {"step": 10, "op": "audit", "scope": "main"},
           *team_writes,
           {"step": 11, "op": "settle"},
           {"step": 11, "op": "expect", "scope": "main", "present": ["shared", "shared_twin"]},
           *[{"step": 11, "op": "share", "scope": "main", "to": "second", "target": r, "text": targets[r]["fact"]}
             for r in ("shared", "shared_twin")],
           {"step": 11, "op": "settle"},
           {"step": 11, "op": "expect", "scope": "second", "present": ["shared", "shared_twin"]},
           {"step": 12, "op": "forget", "scope": "main", "target": "shared", "text": targets["shared"]["fact"]},
           {"step": 12, "op": "settle"},
           {"step": 12, "op": "expect", "scope": "main", "absent": ["shared"], "present": ["shared_twin"]},
           {"step": 13, "op": "expect", "scope": "second", "absent": ["shared"], "present": ["shared_twin"]}]
    slug = things["canary"].replace(" ", "-").replace("'", "")
    return {"id": f"{shape_name}-{slug}-{n:03d}", "shape": shape_name,
            "description": (f"deletion durability, {shape_name} canary, stated in {axes['split']} message(s), "
                            f"{axes['neighbour']} twin, {axes['gap']} gaps"),
            "axes": dict(axes), "scopes": {"main": f"user-{n:03d}", "second": f"team-{n:03d}"},
            "targets": targets, "ops": ops}


def output_path(spec: dict) -> str:
    """``cases/<protocol>/<set>-<version>.json``; a spec with ``default: true`` makes the protocol's own case file,
    ``cases/<protocol>/<version>.json``."""
    if spec.get("default"):
        return f"cases/{spec['protocol']}/{spec['version']}.json"
    return f"cases/{spec['protocol']}/{spec.get('set', 'breadth')}-{spec['version']}.json"


def _distractors(spec: dict, avoid: set[str], rng: random.Random, values: _Values) -> list[dict]:
    """``spec['distractors']`` writes of other facts in the canary's scope before it (the store at scale): each a
    subject of any shape's families but the case's own four, with a value of its own."""
    pool = [(name, thing) for name, shape in spec["shapes"].items() for fam in shape["families"].values()
            for thing in fam if thing not in avoid]
    out = []
    for k in range(spec["distractors"]):
        name, thing = pool[rng.randrange(len(pool))]
        shape, value = spec["shapes"][name], values.make(name, claim=False)
        statement = _fill(shape["statement"], thing, value)
        out.append({"step": 1, "op": "write", "scope": "main",
                    "messages": [{"role": "user", "content": f"For the record, note {k + 1}: {statement[0].lower()}{statement[1:]}"}],
                    "gold": [{"subject": f"user's {thing}", "attribute": shape["attribute"], "value": value,
                              "statement": statement}], "note": "a distractor"})
    return out


def generate(spec: dict) -> dict:
    """The case file ``spec`` describes (deterministic: the spec's seed fixes every choice)."""
    rng = random.Random(spec["seed"])
    values = _Values(spec, rng)
    if spec["protocol"] == "contradiction":
        from .generate_contradiction import cases as contradiction_cases
        cases = contradiction_cases(spec, rng, values)
    elif spec["protocol"] == "concurrency":
        from .generate_concurrency import cases as concurrency_cases
        cases = concurrency_cases(spec, rng, values)
    else:
        shapes = list(spec["shapes"])
        names, choices = list(spec["axes"]), list(itertools.product(*spec["axes"].values()))
        cases = []
        for n in range(spec["count"]):
            axes = dict(zip(names, choices[(n // len(shapes)) % len(choices)]))
            cases.append(_case(spec, n, shapes[n % len(shapes)], axes, rng, values))
    return {"$schema": "../../schemas/cases.schema.json", "kind": "memmatrix.cases", "protocol": spec["protocol"],
            "version": str(spec["version"]), "description": " ".join(str(spec["description"]).split()),
            **({} if spec.get("default") else {"set": spec.get("set", "breadth")}),
            "generated_from": {"spec": f"cases/specs/{spec['file']}", "seed": spec["seed"]},
            "clock": spec["clock"], "cases": cases}
