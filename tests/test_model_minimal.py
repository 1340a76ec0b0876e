"""minimal_instance: the least value a JSON Schema accepts, for the answers the oracle owes a client it could not
answer (a strict json_schema response format, a forced tool's arguments). Each instance is checked by jsonschema
itself, on hand-written schemas and on what pydantic v2 emits."""

from __future__ import annotations

import enum
from typing import Literal, Optional

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from memmatrix.model.minimal import minimal_instance


def valid(schema: dict, value) -> bool:
    return Draft202012Validator(schema).is_valid(value)


SCHEMAS = {
    "string": ({"type": "string"}, ""),
    "integer": ({"type": "integer"}, 0),
    "number": ({"type": "number"}, 0),
    "boolean": ({"type": "boolean"}, False),
    "null": ({"type": "null"}, None),
    "array": ({"type": "array", "items": {"type": "string"}}, []),
    "enum first": ({"type": "string", "enum": ["b", "a"]}, "b"),
    "const": ({"const": "fixed"}, "fixed"),
    "nullable type list": ({"type": ["string", "null"]}, None),
    "anyOf first": ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, 0),
    "anyOf nullable": ({"anyOf": [{"type": "string"}, {"type": "null"}]}, None),
    "oneOf": ({"oneOf": [{"type": "boolean"}, {"type": "string"}]}, False),
    "required only": ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
                       "required": ["b"], "additionalProperties": False}, {"b": 0}),
    "nested": ({"type": "object", "properties": {"o": {"type": "object", "properties": {"x": {"type": "boolean"}},
                                                         "required": ["x"]}}, "required": ["o"]}, {"o": {"x": False}}),
    "$defs": ({"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}}, "required": ["p"],
               "$defs": {"P": {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"]}}},
              {"p": {"n": ""}}),
    "definitions": ({"properties": {"k": {"$ref": "#/definitions/K"}}, "required": ["k"],
                     "definitions": {"K": {"enum": [3, 4]}}}, {"k": 3}),
    "allOf": ({"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                         {"properties": {"b": {"type": "integer"}}, "required": ["b"]}]}, {"a": "", "b": 0}),
    "minimum": ({"type": "integer", "minimum": 3}, 3),
    "exclusiveMinimum": ({"type": "integer", "exclusiveMinimum": 0}, 1),
    "maximum below zero": ({"type": "integer", "maximum": -2}, -2),
    "multipleOf": ({"type": "integer", "minimum": 7, "multipleOf": 5}, 10),
    "number in an open interval": ({"type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 1.5}, 1.25),
    "minLength": ({"type": "string", "minLength": 2}, "xx"),
    "minItems": ({"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 2}, [1, 1]),
    "prefixItems": ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "minItems": 2},
                    ["", False]),
    "recursive": ({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object", "properties": {
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}, "required": ["children"]}}},
                  {"children": []}),
    "empty": ({}, None),
}


@pytest.mark.parametrize("name", SCHEMAS)
def test_the_least_value_of_each_kind_of_schema(name):
    schema, expected = SCHEMAS[name]
    got = minimal_instance(schema)
    assert got == expected and type(got) is type(expected)
    assert valid(schema, got)


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str
    number: int = Field(ge=1)
    unit: Optional[str] = None


class Person(BaseModel):
    name: str
    age: int
    nickname: Optional[str]
    home: Address
    previous: list[Address]
    kind: Literal["friend", "colleague"]
    only: Literal["x"]
    colour: Colour
    score: float = Field(gt=0, lt=1)
    partner: Optional["Person"] = None
    tags: dict[str, int] = {}


@pytest.mark.parametrize("model", [Address, Person], ids=lambda m: m.__name__)
def test_what_pydantic_emits_gets_an_instance_pydantic_accepts(model):
    schema = model.model_json_schema()
    got = minimal_instance(schema)
    assert valid(schema, got), got
    assert isinstance(model.model_validate(got), model)


def test_a_pydantic_model_gets_the_least_of_every_required_field():
    got = minimal_instance(Person.model_json_schema())
    assert got == {"name": "", "age": 0, "nickname": None, "home": {"street": "", "number": 1}, "previous": [],
                   "kind": "friend", "only": "x", "colour": "red", "score": 0.5}


def test_the_openai_clients_strict_schema_is_met():
    """What client.chat.completions.parse sends: every property required, optional ones nullable."""
    from openai.lib._pydantic import to_strict_json_schema

    class Reply(BaseModel):
        answer: str
        people: list[Person]
        best: Optional[Address]

    schema = to_strict_json_schema(Reply)
    got = minimal_instance(schema)
    assert got == {"answer": "", "people": [], "best": None} and valid(schema, got)
    Reply.model_validate(got)


def test_a_pointer_outside_the_schema_is_refused():
    with pytest.raises(ValueError, match="outside the schema"):
        minimal_instance({"$ref": "https://example.invalid/s.json"})
