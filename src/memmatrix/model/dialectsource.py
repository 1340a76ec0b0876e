"""A system's own oracle dialects: the module its ``system.yaml`` names under ``oracle``.

``oracle: oracle.py:DIALECTS`` names a file in the system's folder and an attribute of it: an
ordered tuple of dialect classes, each with ``match(request) -> bool`` and
``answer(request, gold) -> Reply``. The module runs inside the gateway, in memmatrix's
environment (not the system's), so it imports only the standard library and
``memmatrix.model.dialects.common``. It travels as its text: the harness reads it, checks it
loads before any run starts, and hands it to the gateway, in this process (embedded, inprocess)
or over the wire to the gateway service (compose), which loads the same text the same way.
"""

from __future__ import annotations

import hashlib
import sys
import types
from dataclasses import dataclass
from pathlib import Path

from ..common.errors import OracleModuleError

_FIX = "it runs in memmatrix's environment: import only the standard library and memmatrix.model.dialects.common"


@dataclass(frozen=True)
class DialectSource:
    system: str      # the system's name
    file: str        # the module's file, relative to the system folder
    attribute: str   # the tuple of dialect classes in it
    source: str      # the module's text
    shown: str = ""  # how messages name the file (systems/<name>/oracle.py)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()

    @property
    def where(self) -> str:
        return self.shown or f"{self.system}/{self.file}"

    def wire(self) -> dict:
        return {"system": self.system, "file": self.file, "attribute": self.attribute, "source": self.source}

    @classmethod
    def from_wire(cls, data) -> "DialectSource":
        keys = ("system", "file", "attribute", "source")
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in keys):
            raise OracleModuleError(f"'dialects' must be an object with string fields {', '.join(keys)}")
        return cls(*(data[k] for k in keys))


def read_dialect_source(system: str, folder: Path, spec: str, shown_folder: str) -> DialectSource:
    """The module ``spec`` (``file.py:ATTRIBUTE``) of the system in ``folder``; the error names the file and fix."""
    file, _, attribute = spec.rpartition(":")
    shown = f"{shown_folder.rstrip('/')}/{file}"
    path = folder / file
    try:
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise OracleModuleError(f"{shown} does not exist but {shown_folder.rstrip('/')}/system.yaml names it under "
                                f"'oracle'; create it or remove the 'oracle' key") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise OracleModuleError(f"{shown} cannot be read ({type(exc).__name__}); make it a UTF-8 Python file") from None
    return DialectSource(system, file, attribute, source, shown)


def load_dialects(src: DialectSource) -> tuple:
    """Execute the module's text as a fresh module and return its dialects, checked."""
    name = f"memmatrix_oracle_{src.system.replace('-', '_')}_{src.sha256[:12]}"
    if name in sys.modules:  # the same text loads once per process
        module = sys.modules[name]
    else:
        module = types.ModuleType(name)
        module.__file__ = src.where
        sys.modules[name] = module  # dataclasses and typing look a class's module up while it is created
        try:
            exec(compile(src.source, f"{src.system}/{src.file}", "exec"), module.__dict__)
        except BaseException as exc:
            del sys.modules[name]
            if isinstance(exc, KeyboardInterrupt):
                raise
            why = " ".join(f"{type(exc).__name__}: {exc}".split())
            raise OracleModuleError(f"{src.where} does not load ({why}); fix it ({_FIX})") from None
    dialects = getattr(module, src.attribute, None)
    if not isinstance(dialects, tuple):
        got = "no " + src.attribute if dialects is None else f"{src.attribute} as a {type(dialects).__name__}"
        raise OracleModuleError(f"{src.where} defines {got}; define {src.attribute} = (FirstDialect, ...), a tuple "
                                "of dialect classes, or fix the 'oracle' key (file.py:ATTRIBUTE) in system.yaml")
    for i, dialect in enumerate(dialects):
        if not (callable(getattr(dialect, "match", None)) and callable(getattr(dialect, "answer", None))):
            raise OracleModuleError(f"{src.where} has {src.attribute}[{i}] ({getattr(dialect, '__name__', dialect)!r}) "
                                    "without match(request) and answer(request, gold); give it both as static methods")
    return dialects
