"""Load the JSON Schemas in schemas/ and report every violation with its location."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from .errors import ConfigError


@lru_cache(maxsize=None)
def _load(schemas_dir: str, name: str) -> dict:
    path = Path(schemas_dir) / f"{name}.schema.json"
    if not path.is_file():
        raise ConfigError(f"schema {path} is missing; is MEMMATRIX_HOME a memmatrix checkout?")
    return json.loads(path.read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _checked(schemas_dir: str, name: str) -> dict:
    schema = _load(schemas_dir, name)
    Draft202012Validator.check_schema(schema)  # once per schema file, not once per definition
    return schema


@lru_cache(maxsize=None)
def validator(schemas_dir: str, name: str, definition: str | None = None) -> Draft202012Validator:
    """A validator for ``schemas/<name>.schema.json``, or for one of its ``$defs``."""
    schema = _checked(schemas_dir, name)
    if definition is None:
        return Draft202012Validator(schema)
    if definition not in schema.get("$defs", {}):
        raise ConfigError(f"schema {name} has no definition {definition!r}")
    registry = Registry().with_resource(schema["$id"], Resource.from_contents(schema))
    return Draft202012Validator({"$ref": f"{schema['$id']}#/$defs/{definition}"}, registry=registry)


def errors(schemas_dir: Path, name: str, instance: Any, definition: str | None = None) -> list[str]:
    """Every violation as 'at /json/pointer: message', sorted by location."""
    v = validator(str(schemas_dir), name, definition)
    found = []
    for err in v.iter_errors(instance):
        where = "/" + "/".join(str(p) for p in err.absolute_path)
        found.append(f"at {where}: {err.message}")
    return sorted(found)
