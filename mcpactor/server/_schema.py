"""JSON Schemas and argument binding for tool and prompt handlers, from their signatures."""

# Theory of operation
# -------------------
# describe_function() runs once, at registration. It walks every parameter's annotation
# (and the return annotation) and turns each type into a _Shape: the JSON Schema of the
# type plus three closures built bottom-up:
#
#   load   JSON value (already valid against the schema) -> the Python value the handler
#          expects; None when the JSON value already *is* that value (str, int, list[int])
#   dump   Python value -> JSON value for structuredContent; None when already JSON
#   check  a cheap, shallow "could this JSON value belong to this type?"; used only to
#          pick the member of a Union whose members convert differently
#
# A None load/dump propagates upward (list[int] needs no loader because int needs none),
# so FunctionSchema.bind() costs one dict lookup for a plain parameter. Nothing inspects
# types per call, with one exception: a Union with several members that need dumping is
# dumped by _to_json(), which looks at the runtime type of the value.
#
# Models (attrs classes, dataclasses, TypedDicts) are inlined where they are used. A model
# that contains itself, directly or through other models, cannot be inlined: it goes to
# the root schema's "$defs" and every use becomes a "$ref". Its closures reach the
# finished converters through a _Slot, filled in once the model is complete.
#
# Where it lives: this module holds FunctionSchema and describe_function; the _Builder,
# _Shape and _Slot are in _shapes.py, the closures in _convert.py, and what reads
# annotations, model fields and docstrings in _introspect.py.

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, final

import attrs
import orjson

from .._exceptions import SchemaError
from ..protocol import WRAPPED_RESULT, describe
from ._convert import _Convert
from ._introspect import (
    _MISSING,
    _annotated_target,
    _callable_name,
    _docstring_args,
    _is_context,
    _mentions,
    _split_annotated,
    _type_hints,
)
from ._shapes import _Builder

__all__ = ["FunctionSchema", "describe_function"]


@final
@attrs.frozen
class FunctionSchema:
    """The JSON Schemas of a handler, and converters between JSON and its Python values.

    Built once by `describe_function`; `bind` and `structure_output` run per call and only
    apply converters prepared at registration.
    """

    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    wraps_output: bool
    context_param: str | None
    _plain: tuple[str, ...] = attrs.field(repr=False, eq=False)
    _converted: tuple[tuple[str, _Convert], ...] = attrs.field(repr=False, eq=False)
    #: turns a return value into JSON for ``structuredContent`` (None: it already is)
    dump_output: _Convert | None = attrs.field(repr=False, eq=False)
    _load_output: _Convert | None = attrs.field(repr=False, eq=False, default=None)

    @property
    def converts_arguments(self) -> bool:
        """Whether some parameter is loaded from its JSON (else `bind` only copies)."""
        return bool(self._converted)

    def bind(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Return the handler's keyword arguments for JSON ``arguments``.

        ``arguments`` must already be valid against `input_schema`. Missing optional
        parameters are left out so the handler's own defaults apply, and the context
        parameter is never included: the caller adds it.
        """
        kwargs = {}
        for name in self._plain:
            if name in arguments:
                kwargs[name] = arguments[name]
        for name, load in self._converted:
            if name in arguments:
                kwargs[name] = load(arguments[name])
        return kwargs

    def structure_output(self, value: Any) -> Any:
        """Return the JSON-ready ``structuredContent`` for a handler's return value."""
        if self.dump_output is not None:
            value = self.dump_output(value)
        return {"result": value} if self.wraps_output else value

    def load_output(self, structured: Any) -> Any:
        """Return the handler's return value for the ``structuredContent`` it was sent as.

        The inverse of `structure_output`, for a client in the same process; ``structured``
        must be valid against `output_schema`.

        Raises:
            ValueError: ``structured`` is not the ``{"result": ...}`` a wrapped value is.
        """
        if self.wraps_output:
            if type(structured) is not dict or "result" not in structured:
                raise ValueError(f"expected an object with 'result', got {describe(structured)}")
            structured = structured["result"]
        return structured if self._load_output is None else self._load_output(structured)


def describe_function(
    fn: Callable[..., Any],
    *,
    context_types: tuple[type, ...] = (),
    skip_output_types: tuple[type, ...] | Callable[[], tuple[type, ...]] = (),
) -> FunctionSchema:
    """Describe a handler's parameters and return value as JSON Schemas.

    Args:
        fn: the handler, sync or async.
        context_types: a parameter annotated with one of these (or a subclass) receives the
            request context; it is left out of the input schema and of `FunctionSchema.bind`.
        skip_output_types: a return annotation naming one of these, alone or inside a list
            or union (content blocks, a full result class), gets no output schema; or a
            function returning them, called once the annotations are resolved (resolving
            one may be what first builds a class it names).

    Raises:
        SchemaError: a parameter cannot be passed by name as JSON (``*args``, ``**kwargs``,
            positional-only, ``bytes``, an unsupported or unresolvable annotation).
    """
    where = _callable_name(fn)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"cannot read the signature of {where}: {exc}") from exc
    target = _annotated_target(fn)
    hints = _type_hints(target, where)
    docs = _docstring_args(getattr(target, "__doc__", None))
    inputs = _Inputs(where, hints, docs)
    for name, param in signature.parameters.items():
        inputs.add(name, param, context_types)

    skip = skip_output_types() if callable(skip_output_types) else skip_output_types
    output_schema, wraps_output, dump_output, load_output = _describe_output(
        hints.get("return", _MISSING), skip, where
    )
    return FunctionSchema(
        input_schema=_fresh(inputs.schema()),
        output_schema=None if output_schema is None else _fresh(output_schema),
        wraps_output=wraps_output,
        context_param=inputs.context_param,
        plain=tuple(inputs.plain),
        converted=tuple(inputs.converted),
        dump_output=dump_output,
        load_output=load_output,
    )


class _Inputs:
    # The input schema of a function, one parameter at a time, and how each parameter is
    # loaded from its JSON (plain, or converted) or whether it takes the context.

    def __init__(self, where: str, hints: dict[str, Any], docs: dict[str, str]) -> None:
        self.where = where
        self.hints = hints
        self.docs = docs
        self.builder = _Builder()
        self.properties: dict[str, Any] = {}
        self.required: list[str] = []
        self.plain: list[str] = []
        self.converted: list[tuple[str, _Convert]] = []
        self.context_param: str | None = None

    def add(self, name: str, param: inspect.Parameter, context_types: tuple[type, ...]) -> None:
        where = self.where
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise SchemaError(
                f"{where}: parameter {star}{name} cannot be described by a JSON Schema; "
                "MCP arguments are named, so declare each one as its own parameter"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise SchemaError(
                f"{where}: parameter {describe(name)} is positional-only, but MCP arguments are "
                "passed by name; remove the '/' from the signature"
            )
        annotation = self.hints.get(name, Any)
        if _is_context(annotation, context_types):
            if self.context_param is not None:
                raise SchemaError(
                    f"{where}: parameters {describe(self.context_param)} and {describe(name)} "
                    "both take the "
                    "context; expected at most one"
                )
            self.context_param = name
            return
        default = _MISSING if param.default is param.empty else param.default
        shape, self.properties[name] = self.builder.property_schema(
            annotation,
            description=self.docs.get(name),
            default=default,
            where=f"{where}: parameter {describe(name)}",
        )
        if default is _MISSING:
            self.required.append(name)
        if shape.load is None:
            self.plain.append(name)
        else:
            self.converted.append((name, shape.load))

    def schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": self.properties,
            "required": self.required,
            "additionalProperties": False,
        }
        if self.builder.defs:
            schema["$defs"] = self.builder.defs
        return schema


def _fresh(schema: dict[str, Any]) -> dict[str, Any]:
    # The builder shares sub-schemas between the places a model is used (deepcopy would
    # keep that sharing); a JSON round trip unshares them, so editing one use cannot change
    # another, and proves the schema serialisable.
    fresh: dict[str, Any] = orjson.loads(orjson.dumps(schema))
    return fresh


def _describe_output(
    annotation: Any, skip_output_types: tuple[type, ...], where: str
) -> tuple[dict[str, Any] | None, bool, _Convert | None, _Convert | None]:
    """Return (output schema, wraps output, dumper, loader) for a return annotation."""
    inner, _ = _split_annotated(annotation)
    if (
        inner is _MISSING
        or inner is Any
        or inner is None
        or inner is types.NoneType
        or inner is typing.NoReturn
        or inner is typing.Never
        or _mentions(annotation, skip_output_types)
    ):
        return None, False, None, None
    builder = _Builder()
    try:
        shape = builder.build(annotation)
    except SchemaError as exc:
        raise SchemaError(f"{where}: return annotation: {exc}") from None
    if shape.is_object:
        # A recursive model is a bare {"$ref": ...}; MCP wants "type": "object" at the root.
        schema = {"type": "object", **shape.schema}
        wraps = False
    else:
        schema = {
            "type": "object",
            "properties": {"result": shape.schema},
            "required": ["result"],
            # Tells a client the object is only the value's envelope (MCP's structured
            # content is an object): mcpactor's clients unwrap it into ToolResult.data.
            WRAPPED_RESULT: True,
        }
        wraps = True
    if builder.defs:
        schema["$defs"] = builder.defs
    return schema, wraps, shape.dump, shape.load
