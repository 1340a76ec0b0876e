"""Errors a user must fix. Each message names the thing that is wrong and the fix.

Failures *inside* a run are never raised to the user: they are recorded as data
(an ERROR verdict with its reason). Only ``cli.py`` turns these into exit codes.
"""


class MemmatrixError(Exception):
    """Base class: something the user must fix before memmatrix can go on."""


class ConfigError(MemmatrixError):
    """A MEMMATRIX_* setting or a command-line value is invalid."""


class SystemNotFound(MemmatrixError):
    """No system by that name, version or adapter path."""


class SystemSpecError(MemmatrixError):
    """A systems/<name>/system.yaml does not fit schemas/system.schema.json."""


class OracleModuleError(MemmatrixError):
    """A system's oracle module (system.yaml ``oracle``) is missing, does not load or defines no dialects."""


class AdapterError(MemmatrixError):
    """The adapter file, class or process cannot be used."""


class CaseFileError(MemmatrixError):
    """A case file does not fit schemas/cases.schema.json or its protocol's rules."""


class SchemaViolation(MemmatrixError):
    """An artifact does not fit its JSON Schema; nothing was written."""


class RuntimeFailure(MemmatrixError):
    """A runtime (virtualenv, containers) could not be set up or started."""


class VerifyFailure(MemmatrixError):
    """A committed result could not be re-derived from its artifacts."""
