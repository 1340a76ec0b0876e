"""Evaluation protocols, by name."""

from __future__ import annotations

from ..errors import ConfigError
from .base import ERROR, FAIL, PASS, SKIP, UNSUPPORTED, VERDICTS, Cell, EvalProtocol, StepDef
from .boundaries import BoundariesProtocol
from .contradiction import ContradictionProtocol
from .deletion import DeletionProtocol
from .door import DoorProtocol
from .writepath import WritePathProtocol

_PROTOCOLS: dict[str, EvalProtocol] = {p.name: p for p in (DeletionProtocol(), ContradictionProtocol(), WritePathProtocol(),
                                                           DoorProtocol(), BoundariesProtocol())}


def get_protocol(name: str) -> EvalProtocol:
    try:
        return _PROTOCOLS[name]
    except KeyError:
        raise ConfigError(f"unknown protocol {name!r}; known protocols: {', '.join(sorted(_PROTOCOLS))}") from None


def protocol_names() -> list[str]:
    return sorted(_PROTOCOLS)


__all__ = ["ERROR", "FAIL", "PASS", "SKIP", "UNSUPPORTED", "VERDICTS", "Cell", "EvalProtocol", "StepDef",
           "get_protocol", "protocol_names"]
