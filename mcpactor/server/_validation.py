# Argument and output validation: jsonschema for the truth, a fast path for the common case.
#
# jsonschema walks a schema interpretively on every call, which costs tens of
# microseconds even for ``{"text": "hi"}``. Most tool schemas are flat objects of
# primitives, lists and enums, so ``_fast_check`` compiles that subset into one closure
# that answers "valid?" in a few hundred nanoseconds. It is only ever used to say *yes*:
# a value it rejects, and any schema using a keyword outside the subset, goes to
# jsonschema, which stays the single source of error messages.
#
# Importing jsonschema and checking a schema against its metaschema costs tens of
# milliseconds of start-up. ``well_formed`` checks a 2020-12 schema of the same subset
# against the metaschema's rules for those keywords, so such a schema needs jsonschema
# only once a value fails the fast check; anything it is unsure of goes to jsonschema's
# ``check_schema`` at registration, as before.

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ..protocol import JSONObject, clip
from ..protocol._bounded import MAX_DETAILS

if TYPE_CHECKING:
    import jsonschema.protocols

__all__ = ["SchemaValidator", "well_formed"]

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


_CONTAINERS: Final = (list, dict)


def _same_json(a: Any, b: Any) -> bool:
    # JSON Schema equality: true is not 1, but 1 equals 1.0. Python's == says [true]
    # equals [1] and recurses without bound, so arrays and objects are left to
    # jsonschema (a fast "no" only sends the value there).
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if type(a) in _CONTAINERS or type(b) in _CONTAINERS:
        return False
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
    if len(checks) == 2:
        # The usual shape ("type" plus one more keyword), without a generator per value.
        first, second = checks
        return lambda v: first(v) and second(v)
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


_SIMPLE_TYPES: Final = frozenset(_TYPE_CHECKS)
_STRING_KEYWORDS: Final = ("title", "description", "$comment")


def _unique_strings(value: Any) -> bool:
    return (
        type(value) is list
        and all(type(item) is str for item in value)
        and len(set(value)) == len(value)
    )


def _well_formed(schema: Any, *, root: bool) -> bool:
    if type(schema) is bool:
        return True
    if type(schema) is not dict or not schema.keys() <= _SUPPORTED:
        return False
    if "$schema" in schema and not (root and type(schema["$schema"]) is str):
        return False
    if "type" in schema:
        kind = schema["type"]
        if not (
            (type(kind) is str and kind in _SIMPLE_TYPES)
            or (_unique_strings(kind) and kind and set(kind) <= _SIMPLE_TYPES)
        ):
            return False
    if "enum" in schema and type(schema["enum"]) is not list:
        return False
    if "required" in schema and not _unique_strings(schema["required"]):
        return False
    for keyword in _STRING_KEYWORDS:
        if keyword in schema and type(schema[keyword]) is not str:
            return False
    if "examples" in schema and type(schema["examples"]) is not list:
        return False
    if "deprecated" in schema and type(schema["deprecated"]) is not bool:
        return False
    properties = schema.get("properties", {})
    if type(properties) is not dict:
        return False
    return all(_well_formed(sub, root=False) for sub in properties.values()) and all(
        _well_formed(schema[keyword], root=False)
        for keyword in ("items", "additionalProperties")
        if keyword in schema
    )


def well_formed(schema: Any) -> bool:
    """Return True only if ``schema`` is a valid JSON Schema 2020-12 of the fast subset.

    False means "not sure": check the schema with jsonschema.
    """
    return _well_formed(schema, root=True)


class SchemaValidator:
    """A compiled JSON Schema: a fast yes for common schemas, jsonschema for the rest."""

    __slots__ = ("_fast", "_make", "_validator", "schema")

    def __init__(self, validator: jsonschema.protocols.Validator) -> None:
        self._validator: jsonschema.protocols.Validator | None = validator
        self._make: Callable[[], jsonschema.protocols.Validator] | None = None
        #: the schema, exactly as the user wrote it
        self.schema: JSONObject = dict(validator.schema)  # type: ignore[arg-type]
        self._fast = _fast_check(validator.schema)

    @classmethod
    def lazy(
        cls, schema: JSONObject, make: Callable[[], jsonschema.protocols.Validator]
    ) -> SchemaValidator:
        """A validator whose jsonschema half is built by ``make`` when first needed."""
        self = cls.__new__(cls)
        self._validator = None
        self._make = make
        self.schema = dict(schema)
        self._fast = _fast_check(schema)
        return self

    def passes_fast(self, value: Any) -> bool:
        """Return whether the compiled fast check alone accepts ``value``."""
        fast = self._fast
        return fast is not None and fast(value)

    def errors(self, value: Any) -> list[JSONObject]:
        """Return every violation as ``{"path", "message"}`` (JSON Pointer paths)."""
        fast = self._fast
        if fast is not None and fast(value):
            return []
        validator = self._validator
        if validator is None:
            assert self._make is not None
            validator = self._validator = self._make()
        errors: list[JSONObject] = []
        more = False
        try:
            for error in validator.iter_errors(value):
                # The first few violations say what is wrong; finding all of a million
                # bad items would only cost time and a huge answer.
                if len(errors) == MAX_DETAILS:
                    more = True
                    break
                pointer = "".join(f"/{clip(str(step), 100)}" for step in error.absolute_path)
                errors.append({"path": clip(pointer) or "/", "message": clip(error.message)})
        except RecursionError:
            # A recursive schema follows the value down; past what the stack allows,
            # the value is refused rather than judged.
            return [{"path": "/", "message": "the value is nested too deeply to validate"}]
        errors.sort(key=lambda e: (e["path"], e["message"]))
        if more:
            errors.append({"path": "/", "message": "… and more violations"})
        return errors
