"""Load the JSON Schemas in schemas/ and report every violation with its location."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema_rs
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
    try:  # once per schema file, not once per definition; jsonschema-rs's meta-check takes a millisecond
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        raise ConfigError(f"schema {Path(schemas_dir) / name}.schema.json is not a valid JSON Schema: "
                          f"{str(exc).splitlines()[0]}") from None
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


@lru_cache(maxsize=None)
def _fast(schemas_dir: str, name: str, definition: str | None = None):
    """The same schema compiled by jsonschema-rs: the yes/no on every adapter answer in a run costs
    microseconds, not the pure-Python validator's 0.2 to 1.3 ms (formats are annotations, as there)."""
    schema = _checked(schemas_dir, name)
    if definition is not None:
        validator(schemas_dir, name, definition)  # the same clear error for a definition that does not exist
        schema = {"$ref": f"#/$defs/{definition}", "$defs": schema.get("$defs", {})}
    return jsonschema_rs.validator_for(schema, validate_formats=False)


def errors(schemas_dir: Path, name: str, instance: Any, definition: str | None = None) -> list[str]:
    """Every violation as 'at /json/pointer: message', sorted by location.

    A valid instance is confirmed by jsonschema-rs alone; an invalid one is explained by ``jsonschema``
    (its messages are the ones users see). Should the two ever disagree, the instance is still invalid."""
    fast = _fast(str(schemas_dir), name, definition)
    if fast.is_valid(instance):
        return []
    v = validator(str(schemas_dir), name, definition)
    found = []
    for err in v.iter_errors(instance):
        where = "/" + "/".join(str(p) for p in err.absolute_path)
        found.append(f"at {where}: {err.message}")
    if not found:  # jsonschema-rs saw a violation the pure-Python validator does not: name it all the same
        err = next(iter(fast.iter_errors(instance)))
        found.append(f"at /{'/'.join(str(p) for p in err.instance_path)}: {err.message}")
    return sorted(found)
