"""The adapter's capability declaration, checked against the contract and what it implements."""

from __future__ import annotations

from dataclasses import dataclass

from ..adapterkit import OPERATIONS, REQUIRED, UNDECLARED_UNSUPPORTED
from ..common.errors import AdapterError

#: Operations an adapter must declare a support level for (the required four are always supported).
DECLARED = tuple(op for op in OPERATIONS if op not in REQUIRED)


@dataclass(frozen=True)
class Capabilities:
    raw: dict

    def support(self, op: str) -> str:
        if op in REQUIRED:
            return "supported"
        if op in UNDECLARED_UNSUPPORTED and op not in self.raw["operations"]:
            return "unsupported"
        return self.raw["operations"][op]["support"]

    def reason(self, op: str) -> str:
        if op in UNDECLARED_UNSUPPORTED and op not in self.raw["operations"]:
            return f"the adapter does not declare {op}"
        return self.raw["operations"].get(op, {}).get("reason", "")

    @property
    def doors(self) -> list[str]:
        return [d["name"] for d in self.raw["doors"]]

    @property
    def stores(self) -> list[str]:
        return [s["name"] for s in self.raw["stores"]]

    @property
    def jobs(self) -> list[str]:
        return [j["name"] for j in self.raw["background_jobs"]]

    @property
    def volatile_fields(self) -> frozenset[str]:
        return frozenset(self.raw.get("volatile_fields", []))


def check_capabilities(raw: dict, implemented: list[str], adapter: str) -> Capabilities:
    """Every problem at once, each naming the operation and the fix (the schema was checked before)."""
    ops = raw["operations"]
    problems = []
    missing = [op for op in DECLARED if op not in ops and op not in UNDECLARED_UNSUPPORTED]
    if missing:
        problems.append(f"no support level declared for {missing}; add each to capabilities()['operations'] "
                        f"as {{'support': 'supported' | 'emulated' | 'unsupported', 'reason': ...}}")
    unknown = sorted(set(ops) - set(DECLARED))
    if unknown:
        problems.append(f"operations {unknown} are not in the contract (declarable: {list(DECLARED)})")
    for op in DECLARED:
        level = ops.get(op, {}).get("support")
        if level in ("supported", "emulated") and op not in implemented:
            problems.append(f"{op} is declared {level} but the adapter class has no method {op}()")
    if ops.get("probe", {}).get("support") in ("supported", "emulated") and not raw["stores"]:
        problems.append("probe is declared but no stores are listed; list each derived store by name, "
                        "or declare probe unsupported with the reason")
    if ops.get("run_background_jobs", {}).get("support") in ("supported", "emulated") and not raw["background_jobs"]:
        problems.append("run_background_jobs is declared but no background_jobs are listed; list them, "
                        "or declare it unsupported with the reason")
    from .transcript import SCORED_FIELDS
    masked = sorted(set(raw.get("volatile_fields", [])) & SCORED_FIELDS)
    if masked:
        problems.append(f"volatile_fields {masked} name fields the scorers read; only fields holding wall-clock "
                        "values (created_at, updated_at ...) may be declared volatile")
    names = [d["name"] for d in raw["doors"]]
    if len(set(names)) != len(names):
        problems.append(f"door names repeat: {names}")
    if problems:
        raise AdapterError(f"adapter {adapter} declares capabilities that do not fit the contract:\n  - "
                           + "\n  - ".join(problems))
    return Capabilities(raw)
