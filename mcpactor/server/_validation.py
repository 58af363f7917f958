# Argument and output validation: jsonschema for the truth, a fast path for the common case.
#
# jsonschema walks a schema interpretively on every call, which costs tens of
# microseconds even for ``{"text": "hi"}``. Most tool schemas are flat objects of
# primitives, lists and enums, so ``_fast_check`` compiles that subset into one closure
# that answers "valid?" in a few hundred nanoseconds. It is only ever used to say *yes*:
# a value it rejects, and any schema using a keyword outside the subset, goes to
# jsonschema, which stays the single source of error messages.

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import jsonschema.protocols

from ..protocol import JSONObject

__all__ = ["SchemaValidator"]

Check = Callable[[Any], bool]

# Keywords that only annotate: they never make a value invalid.
_ANNOTATIONS: Final = frozenset(
    {"$schema", "$comment", "title", "description", "default", "examples", "deprecated"}
)
_SUPPORTED: Final = _ANNOTATIONS | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
}


def _is_integer(value: Any) -> bool:
    kind = type(value)
    return kind is int or (kind is float and value.is_integer())


def _is_number(value: Any) -> bool:
    kind = type(value)
    return kind is int or kind is float


_TYPE_CHECKS: Final[dict[str, Check]] = {
    "string": lambda v: type(v) is str,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "array": lambda v: type(v) is list,
    "object": lambda v: type(v) is dict,
}


def _same_json(a: Any, b: Any) -> bool:
    # JSON Schema equality: true is not 1, but 1 equals 1.0.
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    return bool(a == b)


def _fast_check(schema: Any) -> Check | None:
    """A closure deciding validity for the simple subset, or None outside it."""
    if schema is True or schema == {}:
        return lambda _: True
    if not isinstance(schema, dict) or not schema.keys() <= _SUPPORTED:
        return None
    checks: list[Check] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else kind
        if not isinstance(kinds, list) or not all(k in _TYPE_CHECKS for k in kinds):
            return None
        type_checks = [_TYPE_CHECKS[k] for k in kinds]
        if len(type_checks) == 1:
            checks.append(type_checks[0])
        else:
            checks.append(lambda v: any(check(v) for check in type_checks))
    if "enum" in schema:
        options = schema["enum"]
        if not isinstance(options, list):
            return None
        checks.append(lambda v: any(_same_json(v, option) for option in options))
    if "const" in schema:
        constant = schema["const"]
        checks.append(lambda v: _same_json(v, constant))
    if "items" in schema:
        item_check = _fast_check(schema["items"])
        if item_check is None:
            return None
        checks.append(lambda v: type(v) is not list or all(item_check(item) for item in v))
    if {"properties", "required", "additionalProperties"} & schema.keys():
        object_check = _object_check(schema)
        if object_check is None:
            return None
        checks.append(object_check)
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


def _object_check(schema: JSONObject) -> Check | None:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    if not isinstance(extra, bool):
        return None
    property_checks: dict[str, Check] = {}
    for name, subschema in properties.items():
        check = _fast_check(subschema)
        if check is None:
            return None
        property_checks[name] = check
    required_keys = tuple(required)

    def check_object(value: Any) -> bool:
        if type(value) is not dict:
            return True  # "type" decides whether a non-object is acceptable
        for key in required_keys:
            if key not in value:
                return False
        for key, item in value.items():
            check = property_checks.get(key)
            if check is None:
                if not extra:
                    return False
            elif not check(item):
                return False
        return True

    return check_object


class SchemaValidator:
    """A compiled JSON Schema: a fast yes for common schemas, jsonschema for the rest."""

    __slots__ = ("_fast", "_validator", "schema")

    def __init__(self, validator: jsonschema.protocols.Validator) -> None:
        self._validator = validator
        #: the schema, exactly as the user wrote it
        self.schema: JSONObject = dict(validator.schema)  # type: ignore[arg-type]
        self._fast = _fast_check(validator.schema)

    def errors(self, value: Any) -> list[JSONObject]:
        """Return every violation as ``{"path", "message"}`` (JSON Pointer paths)."""
        fast = self._fast
        if fast is not None and fast(value):
            return []
        errors = []
        for error in self._validator.iter_errors(value):
            pointer = "".join(f"/{step}" for step in error.absolute_path)
            errors.append({"path": pointer or "/", "message": error.message})
        errors.sort(key=lambda e: (e["path"], e["message"]))
        return errors
