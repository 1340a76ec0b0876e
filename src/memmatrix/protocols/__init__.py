"""Evaluation protocols, by name."""

from __future__ import annotations

from ..common.errors import ConfigError
from .base import ERROR, FAIL, PASS, SKIP, UNSUPPORTED, VERDICTS, Cell, EvalProtocol, StepDef
from .boundaries import BoundariesProtocol
from .concurrency import ConcurrencyProtocol
from .contradiction import ContradictionProtocol
from .deletion import DeletionProtocol
from .door import DoorProtocol
from .writepath import WritePathProtocol

_PROTOCOLS: dict[str, EvalProtocol] = {p.name: p for p in (DeletionProtocol(), ContradictionProtocol(), WritePathProtocol(),
                                                           DoorProtocol(), BoundariesProtocol(),
                                                           ConcurrencyProtocol())}


def get_protocol(name: str) -> EvalProtocol:
    try:
        return _PROTOCOLS[name]
    except KeyError:
        raise ConfigError(f"unknown protocol {name!r}; known protocols: {', '.join(sorted(_PROTOCOLS))}") from None


def protocol_names() -> list[str]:
    return sorted(_PROTOCOLS)


def main_job_protocols() -> list[str]:
    """The protocols a run without --protocol runs (the stress protocols are asked for by name)."""
    return [n for n in protocol_names() if _PROTOCOLS[n].in_main_job]


__all__ = ["ERROR", "FAIL", "PASS", "SKIP", "UNSUPPORTED", "VERDICTS", "Cell", "EvalProtocol", "StepDef",
           "get_protocol", "main_job_protocols", "protocol_names"]
