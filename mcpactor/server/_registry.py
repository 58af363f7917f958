# Registered handlers: one record per resource, template and prompt (a tool's, which
# also runs its calls, is ``ToolEntry`` in _registered.py), and what builds them.
#
# Everything that can be worked out once is worked out at registration: the JSON
# Schemas, the compiled validators, the wire definitions per revision. A call then costs
# a dict lookup, one validation and the handler itself (DESIGN invariant 8).

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs

from .._exceptions import INVALID_PARAMS, RequestError, SchemaError
from ..protocol import JSONObject, Revision, bounded_value, describe, error_text
from ._caching import CacheHint
from ._schema import FunctionSchema
from ._validation import SchemaValidator, well_formed

if TYPE_CHECKING:
    from ._uritemplate import UriTemplate

__all__ = [
    "Catalog",
    "Listed",
    "ListedTemplate",
    "PromptEntry",
    "ResourceEntry",
    "StringBinder",
    "TemplateEntry",
    "compile_validator",
]

_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_.\-]{1,128}")

# The dialects jsonschema can validate (their metaschema ids, by jsonschema's class name);
# anything else is refused at registration (DESIGN invariant 7), never at call time.
# jsonschema itself is imported only when a schema needs it (see _validation.py).
_LATEST_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
_DIALECTS: Final = {
    _LATEST_DIALECT: "Draft202012Validator",
    "https://json-schema.org/draft/2019-09/schema": "Draft201909Validator",
    "http://json-schema.org/draft-07/schema": "Draft7Validator",
    "http://json-schema.org/draft-06/schema": "Draft6Validator",
    "http://json-schema.org/draft-04/schema": "Draft4Validator",
}


def compile_validator(schema: JSONObject, *, what: str) -> SchemaValidator:
    """Compile a schema once; SchemaError if its dialect is unknown or it is invalid."""
    dialect = schema.get("$schema")
    uri = _LATEST_DIALECT if dialect is None else str(dialect).rstrip("#")
    name = _DIALECTS.get(uri)
    if name is None:
        raise SchemaError(
            f"{what}: unsupported JSON Schema dialect {describe(dialect)}; "
            f"expected one of {sorted(_DIALECTS)}"
        )
    if uri == _LATEST_DIALECT and well_formed(schema):
        return SchemaValidator.lazy(schema, functools.partial(_jsonschema_validator, name, schema))
    import jsonschema

    cls: Any = getattr(jsonschema, name)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SchemaError(f"{what}: invalid schema: {exc.message}") from None
    return SchemaValidator(cls(schema))


def _jsonschema_validator(name: str, schema: JSONObject) -> Any:
    import jsonschema

    return getattr(jsonschema, name)(schema)


def validation_errors(validator: SchemaValidator, value: Any) -> list[JSONObject]:
    """Return every schema violation as ``{"path", "message"}`` (JSON Pointer paths)."""
    return validator.errors(value)


def _wire(fields: Mapping[str, Any]) -> JSONObject:
    return {key: value for key, value in fields.items() if value is not None}


def _prune(definition: JSONObject, allowed: frozenset[str]) -> JSONObject:
    return {key: value for key, value in definition.items() if key in allowed}


def check_tool_name(name: str) -> None:
    """Raise SchemaError unless ``name`` is a valid tool name (1–128 of A-Z a-z 0-9 _ - .)."""
    if not _TOOL_NAME.fullmatch(name):
        raise SchemaError(
            f"invalid tool name {describe(name)}: "
            "use 1 to 128 characters from A-Z, a-z, 0-9, '_', '-', '.'"
        )


class ResourceEntry:
    """A registered static resource."""

    # A plain class (as are the other entries): made once per registration, never
    # compared or copied, and an attrs class costs every start-up its build.
    __slots__ = (
        "__weakref__",
        "cache",
        "context_param",
        "definition",
        "fn",
        "is_async",
        "mime_type",
        "scopes",
        "uri",
    )

    def __init__(
        self,
        uri: str,
        fn: Callable[..., Any],
        is_async: bool,
        mime_type: str | None,
        definition: JSONObject,
        context_param: str | None,
        cache: CacheHint | None = None,
        scopes: tuple[str, ...] = (),
    ) -> None:
        self.uri = uri
        self.fn = fn
        self.is_async = is_async
        self.mime_type = mime_type
        self.definition = definition
        self.context_param = context_param
        #: its own cache hint for lists and reads, or None for the server's
        self.cache = cache
        #: the scopes a caller's token must grant to read it
        self.scopes = scopes

    def wire(self, revision: Revision) -> JSONObject:
        """The ``Resource`` object for ``resources/list`` at this revision."""
        return _prune(self.definition, revision.resource_fields)


class TemplateEntry:
    """A registered resource template."""

    __slots__ = (
        "__weakref__",
        "binder",
        "cache",
        "context_param",
        "definition",
        "fn",
        "is_async",
        "mime_type",
        "scopes",
        "template",
    )

    def __init__(
        self,
        template: UriTemplate,
        fn: Callable[..., Any],
        is_async: bool,
        mime_type: str | None,
        definition: JSONObject,
        context_param: str | None,
        binder: StringBinder,
        cache: CacheHint | None = None,
        scopes: tuple[str, ...] = (),
    ) -> None:
        self.template = template
        self.fn = fn
        self.is_async = is_async
        self.mime_type = mime_type
        self.definition = definition
        self.context_param = context_param
        #: turns the matched variables (strings) into the handler's keyword arguments
        self.binder = binder
        #: its own cache hint for lists and the reads it matches, or None for the server's
        self.cache = cache
        #: the scopes a caller's token must grant to read what it matches
        self.scopes = scopes

    def wire(self, revision: Revision) -> JSONObject:
        """The ``ResourceTemplate`` object for ``resources/templates/list``."""
        return _prune(self.definition, revision.resource_fields)

    def arguments(self, values: Mapping[str, str]) -> dict[str, Any]:
        """Convert matched URI variables to the handler's parameter types."""
        return self.binder.bind(values)


class PromptEntry:
    """A registered prompt."""

    __slots__ = (
        "__weakref__",
        "binder",
        "choices",
        "context_param",
        "definition",
        "fn",
        "is_async",
        "name",
        "required",
        "scopes",
    )

    def __init__(
        self,
        name: str,
        fn: Callable[..., Any],
        is_async: bool,
        definition: JSONObject,
        context_param: str | None,
        required: frozenset[str],
        binder: StringBinder,
        choices: Mapping[str, tuple[str, ...]],
        scopes: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.fn = fn
        self.is_async = is_async
        self.definition = definition
        self.context_param = context_param
        self.required = required
        #: turns the prompt's (string) arguments into the handler's keyword arguments
        self.binder = binder
        #: the allowed values of arguments typed as Enum or Literal (for completion)
        self.choices = choices
        #: the scopes a caller's token must grant to get it
        self.scopes = scopes

    def wire(self, revision: Revision) -> JSONObject:
        """The ``Prompt`` object for ``prompts/list`` at this revision."""
        definition = _prune(self.definition, revision.prompt_fields)
        arguments = definition.get("arguments")
        if arguments and "title" not in revision.prompt_fields:
            # PromptArgument gained its title with Prompt (BaseMetadata, 2025-06-18).
            definition["arguments"] = [
                {key: value for key, value in argument.items() if key != "title"}
                for argument in arguments
            ]
        return definition


def _to_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"expected a boolean, got {describe(text)}")


def _identity(text: str) -> str:
    return text


_COERCE_BY_TYPE: Final[Mapping[str, Callable[[str], Any]]] = {
    "integer": int,
    "number": float,
    "boolean": _to_bool,
    "string": _identity,
}


def _json_kind(prop: Any) -> str | None:
    # Optional[int] is {"type": ["integer", "null"]}, Optional[Color] an anyOf with null:
    # the string form is that of the one non-null member.
    if not isinstance(prop, dict):
        return None
    kind = prop.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        kinds = {k for k in kind if k != "null"}
    elif isinstance(prop.get("anyOf"), list):
        kinds = {_json_kind(member) for member in prop["anyOf"]} - {"null"}
    else:
        return None
    return kinds.pop() if len(kinds) == 1 else None


def string_coercers(signature: FunctionSchema) -> dict[str, Callable[[str], Any]]:
    """For each parameter, a function from its string form (URI variable, prompt argument)."""
    coercers: dict[str, Callable[[str], Any]] = {}
    for name, prop in signature.input_schema.get("properties", {}).items():
        kind = _json_kind(prop)
        coercers[name] = _COERCE_BY_TYPE.get(kind, _identity) if kind else _identity
    return coercers


class StringBinder:
    """Binds string arguments (URI variables, prompt arguments) to a handler's parameters.

    Each string is converted by its parameter's JSON type, the result is validated against
    the handler's input schema (so an Enum or Literal parameter only sees its values) and
    then loaded as the handler's types (an Enum parameter receives the member).
    """

    # Plain, as the entries are: made once per template or prompt, never compared.
    __slots__ = ("coercers", "signature", "validator", "what")

    def __init__(
        self,
        signature: FunctionSchema,
        coercers: Mapping[str, Callable[[str], Any]],
        validator: SchemaValidator,
        what: str,
    ) -> None:
        self.signature = signature
        self.coercers = coercers
        self.validator = validator
        self.what = what

    @classmethod
    def build(cls, signature: FunctionSchema, *, what: str) -> StringBinder:
        """Prepare the converters and the validator once, at registration."""
        return cls(
            signature,
            string_coercers(signature),
            compile_validator(signature.input_schema, what=what),
            what,
        )

    def bind(self, values: Mapping[str, str]) -> dict[str, Any]:
        """Return the handler's keyword arguments; a bad value is a -32602 RequestError."""
        converted = coerce_strings(values, self.coercers, what=self.what)
        errors = validation_errors(self.validator, converted)
        if errors:
            raise RequestError(
                INVALID_PARAMS,
                f"{self.what}: invalid arguments: "
                + "; ".join(f"{e['path']}: {e['message']}" for e in errors),
                {"errors": errors},
            )
        return self.signature.bind(converted)


def coerce_strings(
    values: Mapping[str, str], coercers: Mapping[str, Callable[[str], Any]], *, what: str
) -> dict[str, Any]:
    """Convert string arguments by their coercers; a bad value is a -32602 RequestError."""
    converted: dict[str, Any] = {}
    for name, text in values.items():
        coerce = coercers.get(name)
        if coerce is None:
            continue
        try:
            converted[name] = coerce(text)
        except ValueError as exc:
            raise RequestError(
                INVALID_PARAMS,
                f"{what}: invalid value for {describe(name)}: {error_text(exc)}",
                {"argument": bounded_value(name), "value": bounded_value(text)},
            ) from None
    return converted


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """Return whether calling ``fn`` gives a coroutine (async def, or a callable object's)."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - a callable object's method
    return call is not None and inspect.iscoroutinefunction(call)


def description_of(fn: Callable[..., Any], description: str | None) -> str | None:
    """The description of a handler: the one given, else the docstring's first paragraph."""
    if description is not None:
        return description
    doc = inspect.getdoc(fn)
    if not doc:
        return None
    return doc.split("\n\n", 1)[0].strip() or None


wire = _wire


# --- what a server lists, for list results and composition ------------------------------


class Listed(Protocol):
    """Something a server lists: a tool, resource, template or prompt."""

    def wire(self, revision: Revision) -> JSONObject:
        """Its definition for a list result at ``revision``."""
        ...


class ListedTemplate(Listed, Protocol):
    """A listed resource template; ``template`` is None when it cannot be matched."""

    @property
    def template(self) -> UriTemplate | None:
        """The parsed template, used to route reads of the URIs it matches."""
        ...


@attrs.frozen
class Catalog:
    """What a server lists, by kind: names (tools, prompts) and URIs to entries."""

    tools: Mapping[str, Listed]
    prompts: Mapping[str, Listed]
    resources: Mapping[str, Listed]
    templates: Mapping[str, ListedTemplate]
