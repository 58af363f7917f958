"""The fast validation path agrees with jsonschema on every value it accepts."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpactor.server._validation import SchemaValidator, _fast_check, well_formed

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "number", "default": 2}},
        "required": ["a"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {
            "mode": {"enum": ["fast", "slow", 1, True]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "maybe": {"type": ["string", "null"]},
            "flag": {"type": "boolean"},
            "fixed": {"const": 3},
        },
    },
    {"type": "object", "properties": {"nested": {"type": "object", "properties": {"x": {}}}}},
    # every property required and no other allowed: decided by the object's length
    {
        "type": "object",
        "properties": {"text": {"type": "string"}, "a": {"type": "integer"}},
        "required": ["text", "a"],
        "additionalProperties": False,
    },
    # ... also where a required name is no property (never valid when present)
    {
        "type": "object",
        "properties": {"a": {}},
        "required": ["a", "zz"],
        "additionalProperties": False,
    },
]

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["text", "a", "b", "mode", "tags", "maybe", "flag", "fixed", "nested", "x", "zz"]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=8,
)


@pytest.mark.parametrize("schema", SCHEMAS)
def test_the_subset_compiles_to_a_fast_check(schema: dict[str, Any]) -> None:
    assert _fast_check(schema) is not None


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"n": {"type": "array", "uniqueItems": True}}},
        {"type": "object", "$defs": {}, "properties": {"a": {"$ref": "#/$defs/a"}}},
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"type": "strange"},
    ],
)
def test_keywords_outside_the_subset_fall_back_to_jsonschema(schema: dict[str, Any]) -> None:
    assert _fast_check(schema) is None


@settings(max_examples=300, deadline=None)
@given(value=JSON, index=st.integers(min_value=0, max_value=len(SCHEMAS) - 1))
def test_fast_and_full_validation_agree(value: Any, index: int) -> None:
    schema = SCHEMAS[index]
    reference = jsonschema.Draft202012Validator(schema)
    fast = _fast_check(schema)
    assert fast is not None
    assert fast(value) == reference.is_valid(value)
    errors = SchemaValidator(reference).errors(value)
    assert (errors == []) == reference.is_valid(value)


def test_errors_come_from_jsonschema_with_pointer_paths() -> None:
    validator = SchemaValidator(jsonschema.Draft202012Validator(SCHEMAS[1]))
    assert validator.errors({"a": "x", "zz": 1}) == [
        {"path": "/", "message": "Additional properties are not allowed ('zz' was unexpected)"},
        {"path": "/a", "message": "'x' is not of type 'integer'"},
    ]


def test_integers_and_numbers_follow_json_schema() -> None:
    validator = SchemaValidator(jsonschema.Draft202012Validator(SCHEMAS[1]))
    assert validator.errors({"a": 3.0}) == []
    assert validator.errors({"a": True}) != []
    assert validator.errors({"a": 1, "b": True}) != []


SUBSET_SCHEMAS = st.recursive(
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["string", "integer", "number", "boolean", "null"])
            | st.lists(st.sampled_from(["string", "integer", "null"]), min_size=1, max_size=3),
            "enum": st.lists(st.none() | st.booleans() | st.integers() | st.text(max_size=3)),
            "const": st.integers() | st.text(max_size=3),
            "title": st.text(max_size=3) | st.integers(),
            "description": st.text(max_size=3),
            "deprecated": st.booleans() | st.just("yes"),
            "examples": st.lists(st.integers(), max_size=2) | st.just({}),
        },
    )
    | st.booleans(),
    lambda children: st.fixed_dictionaries(
        {"type": st.just("object")},
        optional={
            "properties": st.dictionaries(st.text(max_size=3), children, max_size=3),
            "required": st.lists(st.text(max_size=2), max_size=3),
            "additionalProperties": st.booleans() | children,
            "items": children,
        },
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(schema=SUBSET_SCHEMAS)
def test_well_formed_only_vouches_for_schemas_the_metaschema_accepts(schema: Any) -> None:
    if well_formed(schema):
        jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": None},
        {"type": []},
        {"type": ["string", "string"]},
        {"type": "strange"},
        {"required": "a"},
        {"required": ["a", "a"]},
        {"title": 5},
        {"enum": "abc"},
        {"properties": {"x": {"type": "array", "uniqueItems": True}}},
        {"minLength": -1},
        {"maxItems": 2.5},
        {"minimum": "0"},
        {"multipleOf": 0},
        {"pattern": "("},
        {"format": 5},
        {"properties": {"x": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}},
        {"items": [{"type": "string"}]},
    ],
)
def test_well_formed_leaves_doubtful_schemas_to_jsonschema(schema: Any) -> None:
    assert not well_formed(schema)


@pytest.mark.parametrize("schema", SCHEMAS)
def test_the_subset_is_well_formed(schema: dict[str, Any]) -> None:
    assert well_formed(schema)


def test_an_object_of_required_properties_only_is_checked_by_its_length() -> None:
    check = _fast_check(SCHEMAS[4])
    assert check is not None
    assert check({"text": "t", "a": 1})
    assert not check({"text": "t", "a": 1, "zz": 2})
    assert not check({"text": "t"})
    assert not check({"text": "t", "zz": 1})
    lone = _fast_check(SCHEMAS[5])
    assert lone is not None
    assert not lone({"a": 1})
    assert not lone({"a": 1, "zz": 2})
