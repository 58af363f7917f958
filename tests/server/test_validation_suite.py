"""The compiled fast check and jsonschema agree: on the official test suite, and at random.

The suite's cases (``tests/data/json-schema-test-suite``, see the README there) cover
the keywords the fast check decides, and some it must leave to jsonschema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema.validators
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mcpactor.server._validation import (
    _NOT_IN_DRAFT4,
    _SUPPORTED,
    SchemaValidator,
    _fast_check,
    _fast_for,
    well_formed,
)

SUITE = Path(__file__).parent.parent / "data" / "json-schema-test-suite"
DIALECTS: dict[str, Any] = {
    "draft2020-12": jsonschema.Draft202012Validator,
    "draft7": jsonschema.Draft7Validator,
    "draft4": jsonschema.Draft4Validator,
}


def _suite() -> Iterator[Any]:
    for path in sorted(SUITE.rglob("*.json")):
        relative = path.relative_to(SUITE)
        dialect = relative.parts[0]
        for group in json.loads(path.read_text("utf-8")):
            for case in group["tests"]:
                yield pytest.param(
                    dialect,
                    group["schema"],
                    case["data"],
                    case["valid"],
                    id=f"{relative.as_posix()}: {group['description']}: {case['description']}",
                )


CASES = list(_suite())


def _in_subset(schema: Any, *, draft4: bool) -> bool:
    """Whether every keyword of ``schema``, at every level, is one the fast check decides."""
    if type(schema) is bool:
        return not draft4
    if type(schema) is not dict or not schema.keys() <= _SUPPORTED:
        return False
    if draft4 and schema.keys() & _NOT_IN_DRAFT4:
        return False
    subschemas = list(schema.get("properties", {}).values())
    if "items" in schema:
        subschemas.append(schema["items"])
    if type(schema.get("additionalProperties")) is dict:  # true and false are the keyword's own
        subschemas.append(schema["additionalProperties"])
    return all(_in_subset(sub, draft4=draft4) for sub in subschemas)


def test_the_suite_is_there() -> None:
    # Guards against a data directory that went missing: every case would vanish.
    assert len(CASES) > 500


@pytest.mark.parametrize(("dialect", "schema", "data", "valid"), CASES)
def test_fast_check_and_jsonschema_agree_on_the_suite(
    dialect: str, schema: Any, data: Any, valid: bool
) -> None:
    reference = DIALECTS[dialect](schema)
    fast = _fast_for(reference)
    try:
        expected = reference.is_valid(data)
    except re.error:
        # A pattern Python's re cannot read (\p{...}): jsonschema fails, and the fast
        # check must not pretend to know better.
        assert fast is None
        return
    assert expected == valid  # the suite's verdict (optional cases included)
    if _in_subset(schema, draft4=dialect == "draft4") and not _decimal_count(schema):
        assert fast is not None, "a schema of the subset must compile"
    if fast is not None:
        assert fast(data) == expected
    if type(schema) is not dict:
        return  # a tool's schemas are objects: SchemaValidator takes nothing else
    assert (SchemaValidator(reference).errors(data) == []) == expected
    if dialect == "draft2020-12" and well_formed(schema):
        jsonschema.Draft202012Validator.check_schema(schema)
        lazy = SchemaValidator.lazy(schema, lambda: DIALECTS[dialect](schema))
        assert lazy.passes_fast(data) == expected
        assert (lazy.errors(data) == []) == expected


def _decimal_count(schema: Any) -> bool:
    # Counts written as 2.0 compile too; only a count like 2.5 (invalid) is refused.
    return type(schema) is dict and any(
        type(schema.get(k)) is float and not schema[k].is_integer()
        for k in ("minLength", "maxLength", "minItems", "maxItems")
    )


def test_draft4_integers_are_never_floats() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    for cls, accepted in (
        (jsonschema.Draft4Validator, False),
        (jsonschema.Draft7Validator, True),
        (jsonschema.Draft202012Validator, True),
    ):
        validator = SchemaValidator(cls(schema))
        assert validator.passes_fast({"n": 1.0}) is accepted
        assert (validator.errors({"n": 1.0}) == []) is accepted
        assert validator.passes_fast({"n": 1}) is True


def test_draft4_const_is_no_keyword_and_left_to_jsonschema() -> None:
    validator = SchemaValidator(jsonschema.Draft4Validator({"const": 1}))
    assert validator.passes_fast(2) is False
    assert validator.errors(2) == []  # draft 4 has no "const": anything goes


def test_formats_are_left_to_a_validator_that_asserts_them() -> None:
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    email = {"type": "string", "format": "email"}
    assert _fast_for(jsonschema.Draft202012Validator(email, format_checker=checker)) is None
    fast = _fast_for(jsonschema.Draft202012Validator(email))
    assert fast is not None
    assert fast("not an address")
    plain = {"type": "string"}
    assert _fast_for(jsonschema.Draft202012Validator(plain, format_checker=checker)) is not None


def test_a_validator_class_of_its_own_is_left_to_itself() -> None:
    strict = jsonschema.validators.extend(jsonschema.Draft202012Validator, {})
    assert _fast_for(strict({"type": "string"})) is None


def test_property_names_cannot_reach_the_compiled_source() -> None:
    name = "a'] or True or v0['\n\"\\"
    schema = {
        "type": "object",
        "properties": {name: {"type": "integer"}},
        "required": [name],
        "additionalProperties": False,
    }
    fast = _fast_check(schema)
    assert fast is not None
    assert fast({name: 1}) is True
    assert fast({}) is False
    assert fast({name: "1"}) is False
    assert fast({name: 1, "a": 1}) is False


@pytest.mark.parametrize("kind", ["array", "object"])
def test_schemas_too_deep_for_one_function_are_left_to_jsonschema(kind: str) -> None:
    # Python refuses more than 20 nested loops or 100 levels of indentation in a function.
    deep: Any = {"type": "string"}
    value: Any = "x"
    for _ in range(120):
        if kind == "array":
            deep, value = {"type": "array", "items": deep}, [value]
        else:
            deep, value = {"type": "object", "properties": {"k": deep}}, {"k": value}
    assert _fast_check(deep) is None
    validator = SchemaValidator(jsonschema.Draft202012Validator(deep))
    assert validator.passes_fast(value) is False
    assert validator.errors(value) == []


def _has_boolean_schema(schema: Any) -> bool:
    if type(schema) is bool:
        return True
    subschemas = [*schema.get("properties", {}).values()]
    if "items" in schema:
        subschemas.append(schema["items"])
    if type(schema.get("additionalProperties")) is dict:
        subschemas.append(schema["additionalProperties"])
    return any(_has_boolean_schema(sub) for sub in subschemas)


NAMES = ["a", "b", "c"]
PATTERNS = ["^a", "b$", "^[ab]*$", "c+", "^.{2}$"]
NUMBERS = st.integers(-3, 3) | st.sampled_from([0.5, 1.0, -1.5, 2.25, 1e300])
COUNTS = st.integers(0, 3) | st.just(2.0)
LEAF_KEYWORDS: dict[str, Any] = {
    "type": st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object"])
    | st.lists(st.sampled_from(["string", "integer", "null", "array"]), min_size=1, max_size=2),
    "enum": st.lists(
        st.none() | st.booleans() | NUMBERS | st.sampled_from(NAMES) | st.just([1]) | st.just({}),
        max_size=3,
    ),
    "const": st.none() | st.booleans() | NUMBERS | st.sampled_from(NAMES) | st.just([True]),
    "minLength": COUNTS,
    "maxLength": COUNTS,
    "pattern": st.sampled_from(PATTERNS),
    "format": st.sampled_from(["email", "date-time"]),
    "minimum": NUMBERS,
    "maximum": NUMBERS,
    "exclusiveMinimum": NUMBERS,
    "exclusiveMaximum": NUMBERS,
    "multipleOf": st.sampled_from([1, 2, 0.5, 0.25, 1.5]),
    "minItems": COUNTS,
    "maxItems": COUNTS,
    "minProperties": COUNTS,
    "maxProperties": COUNTS,
    "required": st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
    "title": st.just("t"),
}
SCHEMAS = st.recursive(
    st.booleans() | st.fixed_dictionaries({}, optional=LEAF_KEYWORDS),
    lambda children: st.fixed_dictionaries(
        {},
        optional={
            **LEAF_KEYWORDS,
            "properties": st.dictionaries(st.sampled_from(NAMES), children, max_size=3),
            "additionalProperties": st.booleans() | children,
            "items": children,
        },
    ),
    max_leaves=5,
)
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | NUMBERS
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)  # what JSON (orjson) can carry
    | st.text(alphabet="abc", max_size=4),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from([*NAMES, "z"]), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=1000, deadline=None)
@given(schema=SCHEMAS, value=VALUES, draft=st.sampled_from(sorted(DIALECTS)))
def test_fast_check_and_jsonschema_agree_at_random(schema: Any, value: Any, draft: str) -> None:
    # Draft 4 has no boolean schemas (jsonschema fails on them): only its own keywords'.
    assume(draft != "draft4" or not _has_boolean_schema(schema))
    reference = DIALECTS[draft](schema)
    fast = _fast_for(reference)
    expected = reference.is_valid(value)
    if fast is not None:
        assert fast(value) == expected
    if draft == "draft2020-12" and well_formed(schema):
        jsonschema.Draft202012Validator.check_schema(schema)
    if type(schema) is dict:
        assert (SchemaValidator(reference).errors(value) == []) == expected


def test_a_count_past_any_real_length_is_left_to_jsonschema() -> None:
    # Written out, such an int would be a literal too long for Python to print.
    assert _fast_check({"type": "string", "maxLength": 10**5000}) is None
    assert _fast_check({"type": "string", "maxLength": 2.0}) is not None


@pytest.mark.parametrize("draft", sorted(DIALECTS))
def test_vendor_keywords_only_annotate(draft: str) -> None:
    # The wrapper of a tool's returned value carries one: the fast check still decides,
    # and as jsonschema does, which ignores every keyword it does not know.
    schema = {
        "type": "object",
        "properties": {"result": {"type": "string", "x-note": {"type": "integer"}}},
        "required": ["result"],
        "x-mcpactor-wrap-result": True,
    }
    reference = DIALECTS[draft](schema)
    fast = _fast_for(reference)
    assert fast is not None
    for value in ({"result": "a"}, {"result": 1}, {}, "a"):
        assert fast(value) == reference.is_valid(value)
    assert well_formed(schema)
    assert not well_formed({**schema, "y-other": True})
