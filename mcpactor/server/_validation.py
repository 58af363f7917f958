# Argument and output validation: jsonschema for the truth, a fast path for the common case.
#
# jsonschema walks a schema interpretively on every call: tens of microseconds for
# ``{"text": "hi"}``, around a hundred for a tool with twenty constrained parameters.
# Most tool schemas use a small subset of JSON Schema (types, properties, required,
# additionalProperties, items, enum, const, string lengths and patterns, numeric bounds,
# sizes), so ``_fast_check`` turns a schema of that subset into the source of one Python
# function, with the schema's constants bound as globals, and compiles it: a value is
# then judged by straight-line tests with an early ``return False``, no call per keyword
# and nothing built. It is only ever used to say *yes*: a value it rejects, and any
# schema using a keyword outside the subset, goes to jsonschema, which stays the single
# source of error messages. Where the function cannot be sure (a subclass of a JSON
# type, a ``multipleOf`` that jsonschema itself cannot compute) it says no, and
# jsonschema decides. Draft 4's few differences are followed (or left to jsonschema),
# and tests hold the function to jsonschema's verdicts on the official test suite.
#
# Importing jsonschema and checking a schema against its metaschema weigh on start-up.
# ``well_formed`` checks a 2020-12 schema of the same subset against the metaschema's
# rules for those keywords, so such a schema needs jsonschema only once a value fails
# the fast check; anything it is unsure of goes to jsonschema's
# ``check_schema`` at registration, as before.

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Set
from typing import TYPE_CHECKING, Any, Final

from ..protocol import MAX_DETAILS, JSONObject, clip

if TYPE_CHECKING:
    import jsonschema.protocols

__all__ = ["SchemaValidator", "well_formed"]

Check = Callable[[Any], bool]

# Keywords that only annotate: they never make a value invalid. "format" is asserted
# only by a validator given a format checker, which the server's never are
# (``_fast_for`` leaves such a validator's formats to jsonschema).
_ANNOTATIONS: Final = frozenset(
    {"$schema", "$comment", "title", "description", "default", "examples", "deprecated", "format"}
)
_STRING_KEYWORDS: Final = ("minLength", "maxLength", "pattern")
_NUMBER_KEYWORDS: Final = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
)
_ARRAY_KEYWORDS: Final = ("items", "minItems", "maxItems")
_OBJECT_KEYWORDS: Final = (
    "properties",
    "required",
    "additionalProperties",
    "minProperties",
    "maxProperties",
)
_SUPPORTED: Final = _ANNOTATIONS.union(
    {"type", "enum", "const"},
    _STRING_KEYWORDS,
    _NUMBER_KEYWORDS,
    _ARRAY_KEYWORDS,
    _OBJECT_KEYWORDS,
)
# Draft 4 has no "const", its exclusive bounds are booleans beside minimum and maximum,
# and its integers are never floats: such schemas are left to jsonschema.
_NOT_IN_DRAFT4: Final = frozenset({"const", "exclusiveMinimum", "exclusiveMaximum"})

_JSON_TYPES: Final = frozenset({str, int, float, bool, type(None), list, dict})
_SIZES: Final = {
    "minLength": "len({v}) < {n}",
    "maxLength": "len({v}) > {n}",
    "minItems": "len({v}) < {n}",
    "maxItems": "len({v}) > {n}",
    "minProperties": "len({v}) < {n}",
    "maxProperties": "len({v}) > {n}",
}
_BOUNDS: Final = {
    "minimum": "{v} < {n}",
    "maximum": "{v} > {n}",
    "exclusiveMinimum": "{v} <= {n}",
    "exclusiveMaximum": "{v} >= {n}",
}
# What a value must be for a group of keywords to apply to it (they ignore other values).
_STRING: Final = "type({v}) is str"
_NUMBER: Final = "(type({v}) is int or type({v}) is float)"
_ARRAY: Final = "type({v}) is list"
_OBJECT: Final = "type({v}) is dict"


def _keywords(schema: JSONObject) -> Set[str]:
    # The keywords of a schema, less vendor extensions ("x-..."): the published dialects
    # know none of them, so they only annotate (the wrapper of a tool's returned value
    # carries one), and jsonschema ignores them as it ignores every unknown keyword.
    keys = schema.keys()
    if any(type(key) is str and key.startswith("x-") for key in keys):
        return {key for key in keys if not (type(key) is str and key.startswith("x-"))}
    return keys


class _Unsupported(Exception):
    """The schema uses something the fast check does not decide."""


class _Missing:
    __slots__ = ()


def _equal(a: Any, b: Any) -> bool:
    # JSON Schema equality: true is not 1, but 1 equals 1.0, also inside arrays and
    # objects. It recurses only as deep as ``b``, an option of the schema.
    kind, other = type(a), type(b)
    if kind is bool or other is bool:
        return kind is other and a == b
    if kind is list:
        return other is list and len(a) == len(b) and all(map(_equal, a, b))
    if kind is dict:
        return other is dict and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if other is list or other is dict:
        return False
    return bool(a == b)


def _one_of(options: list[Any]) -> Check:
    scalars = frozenset(o for o in options if type(o) in (str, int, float))
    has_true = any(o is True for o in options)
    has_false = any(o is False for o in options)
    has_null = any(o is None for o in options)
    containers = [o for o in options if type(o) in (list, dict)]

    def check(value: Any) -> bool:
        kind = type(value)
        if kind is str or kind is int or kind is float:
            # a set finds 1.0 for 1 and never mixes in booleans, which are kept apart
            return value in scalars
        if kind is bool:
            return has_true if value else has_false
        if value is None:
            return has_null
        if kind is list or kind is dict:
            try:
                return any(_equal(value, option) for option in containers)
            except RecursionError:
                return False
        return False  # a subclass of a JSON type: jsonschema judges it

    return check


def _multiple_of(value: Any, divisor: Any) -> bool:
    # jsonschema's arithmetic, so that both agree on floats. Where jsonschema itself
    # fails (a NaN, an infinity, an int too large for a float), the answer is left to it.
    try:
        if type(divisor) is float:
            quotient = value / divisor
            try:
                return bool(int(quotient) == quotient)
            except OverflowError:
                from fractions import Fraction

                return (Fraction(value) / Fraction(divisor)).denominator == 1
        return not value % divisor
    except (OverflowError, ValueError):
        return False


def _never(value: Any) -> bool:
    # The fast check of a schema outside the subset: jsonschema decides every value.
    return False


def _is_count(value: Any) -> bool:
    # a non-negative integer, which JSON Schema also writes 2.0
    kind = type(value)
    return (kind is int or (kind is float and value.is_integer())) and value >= 0


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


class _Compiler:
    """Writes the source of one function that returns False for any invalid value."""

    def __init__(self, *, draft4: bool, formats: bool) -> None:
        self.lines = ["def check(v0):"]
        self.names: dict[str, Any] = {"_M": _Missing(), "_multiple_of": _multiple_of}
        self.variables = 0
        self.draft4 = draft4
        self.formats = formats

    def constant(self, value: Any) -> str:
        name = f"_c{len(self.names)}"
        self.names[name] = value
        return name

    def variable(self) -> str:
        self.variables += 1
        return f"v{self.variables}"

    def fail_if(self, indent: int, condition: str) -> None:
        self.lines.append(f"{'    ' * indent}if {condition}: return False")

    def open(self, indent: int, line: str) -> int:
        """Emit a line that only matters if lines follow it (see ``close``)."""
        self.lines.append(f"{'    ' * indent}{line}")
        return len(self.lines)

    def close(self, mark: int) -> None:
        """Take back the line ``open`` emitted if nothing was emitted after it."""
        if len(self.lines) == mark:
            del self.lines[mark - 1]

    def schema(self, schema: Any, v: str, indent: int) -> None:
        if type(schema) is bool and not self.draft4:  # draft 4 has no boolean schemas
            if schema is False:
                self.lines.append(f"{'    ' * indent}return False")
            return
        if type(schema) is not dict:
            raise _Unsupported
        keys = _keywords(schema)
        if not keys <= _SUPPORTED or (self.draft4 and keys & _NOT_IN_DRAFT4):
            raise _Unsupported
        if self.formats and "format" in keys:
            raise _Unsupported
        kinds = self.types(schema, v, indent) if "type" in keys else None
        if "enum" in keys:
            self.enum(schema["enum"], v, indent, kinds)
        if "const" in keys:
            self.enum([schema["const"]], v, indent, kinds)
        groups = (
            (_STRING_KEYWORDS, {str}, _STRING, self.string),
            (_NUMBER_KEYWORDS, {int, float}, _NUMBER, self.number),
            (_ARRAY_KEYWORDS, {list}, _ARRAY, self.array),
            (_OBJECT_KEYWORDS, {dict}, _OBJECT, self.object),
        )
        present = [group for group in groups if not keys.isdisjoint(group[0])]
        if present and kinds is None:
            # A subclass of a JSON type is one to jsonschema, and exact tests below
            # would skip it: let jsonschema judge it.
            self.fail_if(indent, f"type({v}) not in {self.constant(_JSON_TYPES)}")
        for _, applies_to, test, emit in present:
            if kinds is not None and kinds <= applies_to:
                emit(schema, v, indent)
            elif kinds is None or kinds & applies_to:
                mark = self.open(indent, f"if {test.format(v=v)}:")
                emit(schema, v, indent + 1)
                self.close(mark)

    def types(self, schema: JSONObject, v: str, indent: int) -> set[type]:
        declared = schema["type"]
        names = [declared] if type(declared) is str else declared
        if type(names) is not list or not names:
            raise _Unsupported
        tests: list[str] = []
        kinds: set[type] = set()
        for name in names:
            if name == "string":
                tests.append(f"type({v}) is str")
                kinds.add(str)
            elif name == "integer":
                if self.draft4:
                    tests.append(f"type({v}) is int")
                    kinds.add(int)
                else:
                    tests.append(f"type({v}) is int or (type({v}) is float and {v}.is_integer())")
                    kinds.update((int, float))
            elif name == "number":
                tests.append(f"type({v}) is int or type({v}) is float")
                kinds.update((int, float))
            elif name == "boolean":
                tests.append(f"type({v}) is bool")
                kinds.add(bool)
            elif name == "null":
                tests.append(f"{v} is None")
                kinds.add(type(None))
            elif name == "array":
                tests.append(f"type({v}) is list")
                kinds.add(list)
            elif name == "object":
                tests.append(f"type({v}) is dict")
                kinds.add(dict)
            else:
                raise _Unsupported
        self.fail_if(indent, f"not ({' or '.join(tests)})")
        return kinds

    def enum(self, options: Any, v: str, indent: int, kinds: set[type] | None) -> None:
        if type(options) is not list or not all(type(o) in _JSON_TYPES for o in options):
            raise _Unsupported
        if options and all(type(o) is str for o in options):
            allowed = self.constant(frozenset(options))
            if kinds == {str}:
                self.fail_if(indent, f"{v} not in {allowed}")
            else:
                self.fail_if(indent, f"type({v}) is not str or {v} not in {allowed}")
        else:
            self.fail_if(indent, f"not {self.constant(_one_of(options))}({v})")

    def size(self, schema: JSONObject, keyword: str, v: str, indent: int) -> None:
        if keyword in schema:
            limit = schema[keyword]
            if not _is_count(limit) or limit > sys.maxsize:
                raise _Unsupported  # a count past any real length is left to jsonschema
            self.fail_if(indent, _SIZES[keyword].format(v=v, n=int(limit)))

    def string(self, schema: JSONObject, v: str, indent: int) -> None:
        self.size(schema, "minLength", v, indent)
        self.size(schema, "maxLength", v, indent)
        if "pattern" in schema:
            pattern = schema["pattern"]
            if type(pattern) is not str:
                raise _Unsupported
            try:
                search = re.compile(pattern).search  # what jsonschema's re.search does
            except re.error:
                raise _Unsupported from None
            self.fail_if(indent, f"not {self.constant(search)}({v})")

    def number(self, schema: JSONObject, v: str, indent: int) -> None:
        for keyword, failure in _BOUNDS.items():
            if keyword in schema:
                bound = schema[keyword]
                if not _is_number(bound):
                    raise _Unsupported
                self.fail_if(indent, failure.format(v=v, n=self.constant(bound)))
        if "multipleOf" in schema:
            divisor = schema["multipleOf"]
            if not _is_number(divisor) or not divisor > 0:
                raise _Unsupported
            self.fail_if(indent, f"not _multiple_of({v}, {self.constant(divisor)})")

    def array(self, schema: JSONObject, v: str, indent: int) -> None:
        self.size(schema, "minItems", v, indent)
        self.size(schema, "maxItems", v, indent)
        if "items" in schema:
            item = self.variable()
            mark = self.open(indent, f"for {item} in {v}:")
            self.schema(schema["items"], item, indent + 1)
            self.close(mark)

    def object(self, schema: JSONObject, v: str, indent: int) -> None:
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        extra = schema.get("additionalProperties", True)
        if type(properties) is not dict or not all(type(k) is str for k in properties):
            raise _Unsupported
        if type(required) is not list or not all(type(k) is str for k in required):
            raise _Unsupported
        self.size(schema, "minProperties", v, indent)
        self.size(schema, "maxProperties", v, indent)
        if required:
            # repr() of a str is always a valid, inert Python literal.
            self.fail_if(indent, " or ".join(f"{name!r} not in {v}" for name in required))
        known = self.constant(frozenset(properties))
        if extra is False and set(properties) <= set(required):
            # Every property is there (required): any other key makes the object longer.
            self.fail_if(indent, f"len({v}) != {len(properties)}")
        elif extra is False:
            self.fail_if(indent, f"not {v}.keys() <= {known}")
        elif extra is not True:
            key, value = self.variable(), self.variable()
            outer = self.open(indent, f"for {key}, {value} in {v}.items():")
            inner = self.open(indent + 1, f"if {key} not in {known}:")
            self.schema(extra, value, indent + 2)
            self.close(inner)
            self.close(outer)
        for name, subschema in properties.items():
            value = self.variable()
            if name in required:
                assigned = self.open(indent, f"{value} = {v}[{name!r}]")
                self.schema(subschema, value, indent)
            else:
                assigned = self.open(indent, f"{value} = {v}.get({name!r}, _M)")
                present = self.open(indent, f"if {value} is not _M:")
                self.schema(subschema, value, indent + 1)
                self.close(present)
            self.close(assigned)

    def build(self, schema: Any) -> Check:
        self.schema(schema, "v0", 1)
        self.lines.append("    return True")
        source = "\n".join(self.lines)
        namespace = dict(self.names)
        # Only the schema's shape reaches the source: names as repr() literals, counts as
        # ints; every other value is bound as a global.
        exec(compile(source, "<schema check>", "exec"), namespace)
        check: Check = namespace["check"]
        return check


def _fast_check(schema: Any, *, draft4: bool = False, formats: bool = False) -> Check | None:
    """A function deciding validity for the simple subset, or None outside it.

    ``draft4``: judge by draft 4's rules; ``formats``: "format" is asserted (not decided here).
    """
    try:
        return _Compiler(draft4=draft4, formats=formats).build(schema)
    except _Unsupported:
        return None
    except (SyntaxError, RecursionError, MemoryError):
        # Nested too deeply for one function (or for the compiler): jsonschema judges.
        return None


def _fast_for(validator: jsonschema.protocols.Validator) -> Check | None:
    # The fast check follows the published dialects' rules; a validator class of its own
    # (extended keywords, other type checks) is left to itself.
    import jsonschema

    kind = type(validator)
    if kind not in (
        jsonschema.Draft202012Validator,
        jsonschema.Draft201909Validator,
        jsonschema.Draft7Validator,
        jsonschema.Draft6Validator,
        jsonschema.Draft4Validator,
    ):
        return None
    return _fast_check(
        validator.schema,
        draft4=kind is jsonschema.Draft4Validator,
        formats=validator.format_checker is not None,  # type: ignore[attr-defined]
    )


_SIMPLE_TYPES: Final = frozenset(
    {"string", "integer", "number", "boolean", "null", "array", "object"}
)
_TEXT_KEYWORDS: Final = ("title", "description", "$comment", "format")
_COUNT_KEYWORDS: Final = (
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
)
_BOUND_KEYWORDS: Final = tuple(_BOUNDS)


def _unique_strings(value: Any) -> bool:
    return (
        type(value) is list
        and all(type(item) is str for item in value)
        and len(set(value)) == len(value)
    )


def _is_regex(value: Any) -> bool:
    # The metaschema's "format": "regex", as jsonschema's check_schema tests it.
    if type(value) is not str:
        return False
    try:
        re.compile(value)
    except re.error:
        return False
    return True


def _well_formed(schema: Any, *, root: bool) -> bool:
    if type(schema) is bool:
        return True
    if type(schema) is not dict or not _keywords(schema) <= _SUPPORTED:
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
    for keyword in _TEXT_KEYWORDS:
        if keyword in schema and type(schema[keyword]) is not str:
            return False
    # nonNegativeInteger in the metaschema (which would also take 2.0: not vouched for)
    for keyword in _COUNT_KEYWORDS:
        if keyword in schema and not _is_count(schema[keyword]):
            return False
    for keyword in _BOUND_KEYWORDS:
        if keyword in schema and not _is_number(schema[keyword]):
            return False
    if "multipleOf" in schema and not (
        _is_number(schema["multipleOf"]) and schema["multipleOf"] > 0
    ):
        return False
    if "pattern" in schema and not _is_regex(schema["pattern"]):
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

    __slots__ = ("_make", "_validator", "passes_fast", "schema")

    #: whether the compiled fast check alone accepts a value: the check itself once
    #: compiled (a call is the schema's straight-line tests, nothing in between)
    passes_fast: Check

    def __init__(self, validator: jsonschema.protocols.Validator) -> None:
        self._validator: jsonschema.protocols.Validator | None = validator
        self._make: Callable[[], jsonschema.protocols.Validator] | None = None
        #: the schema, exactly as the user wrote it
        self.schema: JSONObject = dict(validator.schema)  # type: ignore[arg-type]
        self.passes_fast = self._compiled_on_first_use(lambda: _fast_for(validator))

    @classmethod
    def lazy(
        cls, schema: JSONObject, make: Callable[[], jsonschema.protocols.Validator]
    ) -> SchemaValidator:
        """A validator whose jsonschema half is built by ``make`` when first needed."""
        self = cls.__new__(cls)
        self._validator = None
        self._make = make
        self.schema = dict(schema)
        self.passes_fast = self._compiled_on_first_use(lambda: _fast_check(schema))
        return self

    def _compiled_on_first_use(self, compile_check: Callable[[], Check | None]) -> Check:
        # Compiling a check is not free: a tool's first call pays for it, so that
        # registering a plugin's tools at start-up stays as cheap as before.
        def first_use(value: Any) -> bool:
            fast = compile_check()
            self.passes_fast = _never if fast is None else fast
            return self.passes_fast(value)

        return first_use

    def errors(self, value: Any) -> list[JSONObject]:
        """Return every violation as ``{"path", "message"}`` (JSON Pointer paths)."""
        if self.passes_fast(value):
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
