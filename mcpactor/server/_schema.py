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

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import inspect
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import (
    Annotated,
    Any,
    Final,
    Literal,
    NotRequired,
    Required,
    Union,
    final,
    get_args,
    get_origin,
)

import attrs
import orjson

from .._exceptions import SchemaError
from ..protocol import describe

__all__ = ["FunctionSchema", "describe_function"]

_Convert = Callable[[Any], Any]
_Check = Callable[[Any], bool]


class _Missing(enum.Enum):
    MISSING = enum.auto()


_MISSING: Final = _Missing.MISSING

_SUPPORTED: Final = (
    "expected str, int, float, bool, None, Any, a list, tuple, set or dict[str, ...] of "
    "supported types, a Literal, an Enum, a Union, or an attrs class, dataclass or TypedDict"
)


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
    _dump_output: _Convert | None = attrs.field(repr=False, eq=False)

    def bind(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Return the handler's keyword arguments for JSON ``arguments``.

        ``arguments`` must already be valid against `input_schema`. Missing optional
        parameters are left out so the handler's own defaults apply, and the context
        parameter is never included: the caller adds it.
        """
        kwargs = {name: arguments[name] for name in self._plain if name in arguments}
        for name, load in self._converted:
            if name in arguments:
                kwargs[name] = load(arguments[name])
        return kwargs

    def structure_output(self, value: Any) -> Any:
        """Return the JSON-ready ``structuredContent`` for a handler's return value."""
        if self._dump_output is not None:
            value = self._dump_output(value)
        return {"result": value} if self.wraps_output else value


def describe_function(
    fn: Callable[..., Any],
    *,
    context_types: tuple[type, ...] = (),
    skip_output_types: tuple[type, ...] = (),
) -> FunctionSchema:
    """Describe a handler's parameters and return value as JSON Schemas.

    Args:
        fn: the handler, sync or async.
        context_types: a parameter annotated with one of these (or a subclass) receives the
            request context; it is left out of the input schema and of `FunctionSchema.bind`.
        skip_output_types: a return annotation naming one of these, alone or inside a list
            or union (content blocks, a full result class), gets no output schema.

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

    builder = _Builder()
    properties: dict[str, Any] = {}
    required: list[str] = []
    plain: list[str] = []
    converted: list[tuple[str, _Convert]] = []
    context_param: str | None = None
    for name, param in signature.parameters.items():
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
        annotation = hints.get(name, Any)
        if _is_context(annotation, context_types):
            if context_param is not None:
                raise SchemaError(
                    f"{where}: parameters {describe(context_param)} and {describe(name)} "
                    "both take the "
                    "context; expected at most one"
                )
            context_param = name
            continue
        default = _MISSING if param.default is param.empty else param.default
        shape, properties[name] = builder.property_schema(
            annotation,
            description=docs.get(name),
            default=default,
            where=f"{where}: parameter {describe(name)}",
        )
        if default is _MISSING:
            required.append(name)
        if shape.load is None:
            plain.append(name)
        else:
            converted.append((name, shape.load))

    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    if builder.defs:
        input_schema["$defs"] = builder.defs

    output_schema, wraps_output, dump_output = _describe_output(
        hints.get("return", _MISSING), skip_output_types, where
    )
    return FunctionSchema(
        input_schema=_fresh(input_schema),
        output_schema=None if output_schema is None else _fresh(output_schema),
        wraps_output=wraps_output,
        context_param=context_param,
        plain=tuple(plain),
        converted=tuple(converted),
        dump_output=dump_output,
    )


def _fresh(schema: dict[str, Any]) -> dict[str, Any]:
    # The builder shares sub-schemas between the places a model is used (deepcopy would
    # keep that sharing); a JSON round trip unshares them, so editing one use cannot change
    # another, and proves the schema serialisable.
    fresh: dict[str, Any] = orjson.loads(orjson.dumps(schema))
    return fresh


def _describe_output(
    annotation: Any, skip_output_types: tuple[type, ...], where: str
) -> tuple[dict[str, Any] | None, bool, _Convert | None]:
    """Return (output schema, wraps output, dumper) for a return annotation."""
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
        return None, False, None
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
        schema = {"type": "object", "properties": {"result": shape.schema}, "required": ["result"]}
        wraps = True
    if builder.defs:
        schema["$defs"] = builder.defs
    return schema, wraps, shape.dump


# --- shapes ------------------------------------------------------------------------


@attrs.frozen
class _Shape:
    schema: dict[str, Any]
    check: _Check
    load: _Convert | None = None
    dump: _Convert | None = None
    is_object: bool = False


@attrs.define
class _Slot:
    """A model being built; a recursive use reaches its converters through here."""

    name: str | None = None
    shape: _Shape | None = None

    def _done(self) -> _Shape:
        assert self.shape is not None, "a recursive model was used before it was built"
        return self.shape

    def load(self, value: Any) -> Any:
        load = self._done().load
        return value if load is None else load(value)

    def dump(self, value: Any) -> Any:
        dump = self._done().dump
        return value if dump is None else dump(value)

    def check(self, value: Any) -> bool:
        return self._done().check(value)


@attrs.frozen
class _Field:
    key: str  # the JSON property and the __init__ keyword
    attribute: str  # what to read when dumping an instance
    annotation: Any
    default: Any  # _MISSING: none, or one we cannot show (a factory)
    required: bool
    description: str | None


_SEQUENCES: Final[frozenset[type]] = frozenset(
    {list, collections.abc.Sequence, collections.abc.MutableSequence}
)
_SETS: Final[dict[type, type]] = {
    set: set,
    frozenset: frozenset,
    collections.abc.Set: set,
    collections.abc.MutableSet: set,
}
_MAPPINGS: Final[frozenset[type]] = frozenset(
    {dict, collections.abc.Mapping, collections.abc.MutableMapping}
)


class _Builder:
    """Builds shapes for one root schema, collecting the "$defs" of recursive models."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}
        self._models: dict[type, _Shape] = {}
        self._building: dict[type, _Slot] = {}
        self._names: set[str] = set()

    def property_schema(
        self, annotation: Any, *, description: str | None, default: Any, where: str
    ) -> tuple[_Shape, dict[str, Any]]:
        """Build a named member (parameter, field, key) with its description and default."""
        inner, annotated = _split_annotated(annotation)
        try:
            shape = self.build(inner)
        except SchemaError as exc:
            raise SchemaError(f"{where}: {exc}") from None
        schema = dict(shape.schema)
        text = annotated or description
        if text:
            schema["description"] = text
        if default is not _MISSING:
            json_default = _json_default(default, shape)
            if json_default is not _MISSING:
                schema["default"] = json_default
        return shape, schema

    def build(self, tp: Any) -> _Shape:
        if tp is Any:
            return _Shape({}, _always)
        if tp is None or tp is types.NoneType:
            return _Shape({"type": "null"}, _is_null)
        origin = get_origin(tp)
        if origin is Annotated:
            inner, description = _split_annotated(tp)
            shape = self.build(inner)
            if description is None:
                return shape
            return attrs.evolve(shape, schema={**shape.schema, "description": description})
        if origin is Literal:
            return self._literal(tp)
        if origin is Union or origin is types.UnionType:
            return self._union(tp)
        if origin is Required or origin is NotRequired:
            raise SchemaError(f"{tp!r} is only allowed on a TypedDict key")
        if hasattr(tp, "__supertype__"):  # typing.NewType
            return self.build(tp.__supertype__)
        container = tp if origin is None else origin
        if isinstance(container, type):
            if container is tuple:
                return self._tuple(tp)
            if container in _SEQUENCES:
                return self._list(tp)
            if container in _SETS:
                return self._set(tp, _SETS[container])
            if container in _MAPPINGS:
                return self._dict(tp)
        if isinstance(tp, type):
            return self._class(tp)
        raise SchemaError(f"cannot describe {tp!r}; {_SUPPORTED}")

    def _class(self, cls: type) -> _Shape:
        if cls is str:
            return _Shape({"type": "string"}, _is_str)
        if cls is bool:
            return _Shape({"type": "boolean"}, _is_bool)
        if cls is int:
            return _Shape({"type": "integer"}, _is_int)
        if cls is float:
            return _Shape({"type": "number"}, _is_number)
        if issubclass(cls, bytes | bytearray | memoryview):
            raise SchemaError(
                f"{cls.__name__} cannot travel in JSON; take a str (base64, for example) "
                "and decode it in the handler"
            )
        if issubclass(cls, enum.Enum):
            return self._enum(cls)
        if attrs.has(cls) or dataclasses.is_dataclass(cls) or _is_typeddict(cls):
            return self._model(cls)
        raise SchemaError(f"cannot describe {cls.__qualname__}; {_SUPPORTED}")

    # --- scalars and unions

    def _literal(self, tp: Any) -> _Shape:
        args = get_args(tp)
        values = [arg.value if isinstance(arg, enum.Enum) else arg for arg in args]
        for arg, value in zip(args, values, strict=True):
            _json_type_of(value, f"Literal value {describe(arg)}")
        schema = _enum_schema(values)
        table = dict(zip(values, args, strict=True))
        if not any(isinstance(arg, enum.Enum) for arg in args):
            return _Shape(schema, _member_check(table))
        return _Shape(
            schema, _member_check(table), load=_lookup(table, repr(tp)), dump=_enum_value
        )

    def _enum(self, cls: type[enum.Enum]) -> _Shape:
        members = list(cls)
        if not members:
            raise SchemaError(f"enum {cls.__qualname__} has no members; nothing could be passed")
        for member in members:
            _json_type_of(
                member.value, f"{cls.__qualname__}.{member.name} = {describe(member.value)}"
            )
        table = {member.value: member for member in members}
        schema = {**_enum_schema(list(table)), "title": cls.__name__}
        return _Shape(
            schema, _member_check(table), load=_lookup(table, cls.__qualname__), dump=_enum_value
        )

    def _union(self, tp: Any) -> _Shape:
        args = get_args(tp)
        shapes = [self.build(arg) for arg in args]
        schema = _any_of([shape.schema for shape in shapes])
        check = _any_check(tuple(shape.check for shape in shapes))
        others = [shape for arg, shape in zip(args, shapes, strict=True) if arg is not type(None)]
        if len(shapes) == 2 and len(others) == 1:  # Optional[X]: the common case, kept cheap
            inner = others[0]
            return _Shape(schema, check, load=_or_null(inner.load), dump=_or_null(inner.dump))
        load: _Convert | None = None
        if any(shape.load is not None for shape in shapes):
            load = _union_loader(tuple((shape.check, shape.load) for shape in shapes))
        dump = None if all(shape.dump is None for shape in shapes) else _to_json
        return _Shape(schema, check, load=load, dump=dump)

    # --- containers

    def _items(self, tp: Any) -> _Shape:
        args = get_args(tp)
        return self.build(args[0]) if args else _Shape({}, _always)

    def _list(self, tp: Any) -> _Shape:
        item = self._items(tp)
        return _Shape(
            _array_schema(item.schema),
            _is_list,
            load=None if item.load is None else _each(list, item.load),
            dump=None if item.dump is None else _each(list, item.dump),
        )

    def _set(self, tp: Any, kind: type) -> _Shape:
        item = self._items(tp)
        return _Shape(
            {**_array_schema(item.schema), "uniqueItems": True},
            _is_list,
            load=kind if item.load is None else _each(kind, item.load),
            dump=list if item.dump is None else _each(list, item.dump),
        )

    def _tuple(self, tp: Any) -> _Shape:
        args = get_args(tp)
        # tuple, tuple[T, ...]; an empty argument list (bare Tuple, tuple[()]) means any.
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            item = self._items(tp)
            return _Shape(
                _array_schema(item.schema),
                _is_list,
                load=tuple if item.load is None else _each(tuple, item.load),
                dump=list if item.dump is None else _each(list, item.dump),
            )
        shapes = [self.build(arg) for arg in args]
        schema = {
            "type": "array",
            "prefixItems": [shape.schema for shape in shapes],
            "items": False,
            "minItems": len(shapes),
            "maxItems": len(shapes),
        }
        loads = tuple(shape.load for shape in shapes)
        dumps = tuple(shape.dump for shape in shapes)
        return _Shape(
            schema,
            _is_list,
            load=tuple if all(load is None for load in loads) else _positional(tuple, loads),
            dump=list if all(dump is None for dump in dumps) else _positional(list, dumps),
        )

    def _dict(self, tp: Any) -> _Shape:
        args = get_args(tp)
        key, value = args if args else (str, Any)
        if key is not str and key is not Any:
            raise SchemaError(f"JSON object keys are strings; expected dict[str, ...], got {tp!r}")
        item = self.build(value)
        schema: dict[str, Any] = {"type": "object"}
        if item.schema:
            schema["additionalProperties"] = item.schema
        return _Shape(
            schema,
            _is_dict,
            load=None if item.load is None else _each_value(item.load),
            dump=None if item.dump is None else _each_value(item.dump),
            is_object=True,
        )

    # --- models

    def _model(self, cls: type) -> _Shape:
        done = self._models.get(cls)
        if done is not None:
            return done
        slot = self._building.get(cls)
        if slot is not None:  # cls contains itself: describe it once, under "$defs"
            if slot.name is None:
                slot.name = self._def_name(cls)
            return _Shape(
                {"$ref": f"#/$defs/{slot.name}"},
                slot.check,
                load=slot.load,
                dump=slot.dump,
                is_object=True,
            )
        slot = self._building[cls] = _Slot()
        try:
            shape = self._typeddict(cls) if _is_typeddict(cls) else self._class_model(cls)
        finally:
            del self._building[cls]
        if slot.name is not None:
            self.defs[slot.name] = shape.schema
            shape = attrs.evolve(shape, schema={"$ref": f"#/$defs/{slot.name}"})
        slot.shape = self._models[cls] = shape
        return shape

    def _def_name(self, cls: type) -> str:
        # "$defs" keys end up in URI fragments: keep them to characters that need no escaping.
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", cls.__name__)
        name, n = base, 1
        while name in self._names:
            n += 1
            name = f"{base}{n}"
        self._names.add(name)
        return name

    def _members(
        self, cls: type, fields: list[_Field]
    ) -> tuple[dict[str, Any], list[tuple[_Field, _Shape]]]:
        properties: dict[str, Any] = {}
        built: list[tuple[_Field, _Shape]] = []
        for field in fields:
            shape, properties[field.key] = self.property_schema(
                field.annotation,
                description=field.description,
                default=field.default,
                where=f"field {describe(field.key)} of {cls.__qualname__}",
            )
            built.append((field, shape))
        schema: dict[str, Any] = {"type": "object", "title": cls.__name__}
        description = _class_description(cls)
        if description:
            schema["description"] = description
        schema["properties"] = properties
        schema["required"] = [field.key for field in fields if field.required]
        return schema, built

    def _class_model(self, cls: type) -> _Shape:
        schema, built = self._members(cls, _model_fields(cls))
        # The constructor cannot take other keys, so say so rather than fail in bind().
        schema["additionalProperties"] = False
        required = frozenset(schema["required"])
        allowed = frozenset(field.key for field, _ in built)
        return _Shape(
            schema,
            _model_check(required, allowed),
            load=_model_loader(
                cls,
                tuple(field.key for field, shape in built if shape.load is None),
                tuple((field.key, shape.load) for field, shape in built if shape.load),
            ),
            dump=_model_dumper(
                cls, tuple((field.key, field.attribute, shape.dump) for field, shape in built)
            ),
            is_object=True,
        )

    def _typeddict(self, cls: type) -> _Shape:
        # A TypedDict is open: other keys are allowed and kept; the value stays a dict.
        schema, built = self._members(cls, _typeddict_fields(cls))
        loads = tuple((field.key, shape.load) for field, shape in built if shape.load)
        dumps = tuple((field.key, shape.dump) for field, shape in built if shape.dump)
        return _Shape(
            schema,
            _model_check(frozenset(schema["required"]), None),
            load=_key_converter(loads) if loads else None,
            dump=_key_converter(dumps) if dumps else None,
            is_object=True,
        )


# --- model introspection -----------------------------------------------------------


def _model_fields(cls: type) -> list[_Field]:
    """The constructor arguments of an attrs class or dataclass, as fields."""
    hints = _type_hints(cls, cls.__qualname__)
    if attrs.has(cls):
        return [
            _Field(
                key=attribute.alias,
                attribute=attribute.name,
                annotation=hints.get(attribute.name, Any),
                # A factory could be `datetime.now`: do not call it to show a default.
                default=(
                    _MISSING
                    if attribute.default is attrs.NOTHING
                    or isinstance(attribute.default, attrs.Factory)  # type: ignore[arg-type]
                    else attribute.default
                ),
                required=attribute.default is attrs.NOTHING,
                description=attribute.metadata.get("description"),
            )
            for attribute in attrs.fields(cls)
            if attribute.init
        ]
    for name, hint in hints.items():
        if isinstance(hint, dataclasses.InitVar):
            raise SchemaError(f"{cls.__qualname__}.{name} is an InitVar, which is not supported")
    return [
        _Field(
            key=field.name,
            attribute=field.name,
            annotation=hints.get(field.name, Any),
            default=_MISSING if field.default is dataclasses.MISSING else field.default,
            required=(
                field.default is dataclasses.MISSING
                and field.default_factory is dataclasses.MISSING
            ),
            description=field.metadata.get("description"),
        )
        for field in dataclasses.fields(cls)
        if field.init
    ]


def _typeddict_fields(cls: type) -> list[_Field]:
    hints = _type_hints(cls, cls.__qualname__)
    # With string annotations (PEP 563) Python 3.11 cannot see Required/NotRequired when
    # it builds __required_keys__, so the resolved hints have the last word.
    required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
    fields = []
    for key, hint in hints.items():
        annotation, description, required = hint, None, key in required_keys
        while True:
            origin = get_origin(annotation)
            if origin is Annotated:
                annotation, found = _split_annotated(annotation)
                description = description or found
            elif origin is Required or origin is NotRequired:
                required = origin is Required
                annotation = get_args(annotation)[0]
            else:
                break
        fields.append(_Field(key, key, annotation, _MISSING, required, description))
    return fields


def _is_typeddict(cls: type) -> bool:
    # Duck-typed so typing_extensions.TypedDict classes count too.
    return issubclass(cls, dict) and hasattr(cls, "__required_keys__")


def _class_description(cls: type) -> str | None:
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or not doc.strip():
        return None
    if dataclasses.is_dataclass(cls) and doc.startswith(f"{cls.__name__}("):
        return None  # the signature dataclasses writes when there is no docstring
    return inspect.cleandoc(doc).split("\n\n", 1)[0].replace("\n", " ")


# --- converters ----------------------------------------------------------------------


def _always(value: Any) -> bool:
    return True


def _is_null(value: Any) -> bool:
    return value is None


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_bool(value: Any) -> bool:
    return type(value) is bool


def _is_int(value: Any) -> bool:
    # JSON Schema's "integer" also accepts 1.0.
    return type(value) is int or (type(value) is float and value.is_integer())


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


def _is_list(value: Any) -> bool:
    return type(value) is list


def _is_dict(value: Any) -> bool:
    return type(value) is dict


def _is_scalar(value: Any) -> bool:
    return value is None or type(value) in (str, int, float, bool)


def _enum_value(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _member_check(table: dict[Any, Any]) -> _Check:
    def check(value: Any) -> bool:
        return _is_scalar(value) and value in table

    return check


def _lookup(table: dict[Any, Any], what: str) -> _Convert:
    def load(value: Any) -> Any:
        try:
            return table[value]
        except (KeyError, TypeError):
            raise ValueError(
                f"expected one of {describe(list(table))} for {what}; got {describe(value)}"
            ) from None

    return load


def _or_null(convert: _Convert | None) -> _Convert | None:
    if convert is None:
        return None

    def or_null(value: Any) -> Any:
        return None if value is None else convert(value)

    return or_null


def _any_check(checks: tuple[_Check, ...]) -> _Check:
    def check(value: Any) -> bool:
        return any(check(value) for check in checks)

    return check


def _union_loader(members: tuple[tuple[_Check, _Convert | None], ...]) -> _Convert:
    # The first member (in annotation order) that could hold the value converts it.
    def load(value: Any) -> Any:
        for check, convert in members:
            if check(value):
                return value if convert is None else convert(value)
        return value

    return load


def _each(kind: Callable[[Any], Any], convert: _Convert) -> _Convert:
    def each(value: Any) -> Any:
        return kind([convert(item) for item in value])

    return each


def _positional(kind: Callable[[Any], Any], converts: tuple[_Convert | None, ...]) -> _Convert:
    def positional(value: Any) -> Any:
        return kind(
            [
                item if convert is None else convert(item)
                for convert, item in zip(converts, value, strict=True)
            ]
        )

    return positional


def _each_value(convert: _Convert) -> _Convert:
    def each_value(value: Any) -> Any:
        return {key: convert(item) for key, item in value.items()}

    return each_value


def _model_check(required: frozenset[str], allowed: frozenset[str] | None) -> _Check:
    def check(value: Any) -> bool:
        return (
            type(value) is dict
            and value.keys() >= required
            and (allowed is None or value.keys() <= allowed)
        )

    return check


def _model_loader(
    cls: type, plain: tuple[str, ...], converted: tuple[tuple[str, _Convert], ...]
) -> _Convert:
    def load(value: Any) -> Any:
        kwargs = {key: value[key] for key in plain if key in value}
        for key, convert in converted:
            if key in value:
                kwargs[key] = convert(value[key])
        return cls(**kwargs)

    return load


def _model_dumper(cls: type, fields: tuple[tuple[str, str, _Convert | None], ...]) -> _Convert:
    def dump(value: Any) -> Any:
        if not isinstance(value, cls):  # a handler returned a dict for a model, say
            return _to_json(value)
        out = {}
        for key, attribute, convert in fields:
            item = getattr(value, attribute)
            out[key] = item if convert is None else convert(item)
        return out

    return dump


def _key_converter(converts: tuple[tuple[str, _Convert], ...]) -> _Convert:
    def convert_keys(value: Any) -> Any:
        out = dict(value)
        for key, convert in converts:
            if key in out:
                out[key] = convert(out[key])
        return out

    return convert_keys


def _to_json(value: Any) -> Any:
    """Convert any supported Python value to JSON by its runtime type (the slow path)."""
    cls = type(value)
    if value is None or cls in (str, int, float, bool):
        return value
    if isinstance(value, enum.Enum):
        return _to_json(value.value)
    if isinstance(value, Mapping):
        return {key: _to_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_to_json(item) for item in value]
    if attrs.has(cls):
        return {
            field.alias: _to_json(getattr(value, field.name))
            for field in attrs.fields(cls)
            if field.init
        }
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: _to_json(getattr(value, field.name))
            for field in dataclasses.fields(value)
            if field.init
        }
    return value


def _is_json(value: Any) -> bool:
    cls = type(value)
    if value is None or cls in (str, int, bool):
        return True
    if cls is float:
        return math.isfinite(value)
    if cls is list:
        return all(_is_json(item) for item in value)
    if cls is dict:
        return all(type(key) is str and _is_json(item) for key, item in value.items())
    return False


def _json_default(default: Any, shape: _Shape) -> Any:
    """The JSON form of a default, or _MISSING when it has none (the schema omits it)."""
    try:
        value = _to_json(default if shape.dump is None else shape.dump(default))
    except (TypeError, ValueError, AttributeError, KeyError):
        return _MISSING
    return value if _is_json(value) else _MISSING


# --- schema helpers ------------------------------------------------------------------


def _json_type_of(value: Any, what: str) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float) and math.isfinite(value):
        return "number"
    if isinstance(value, str):
        return "string"
    raise SchemaError(f"{what} is not a JSON scalar; expected str, int, float, bool or None")


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    kinds = list(dict.fromkeys(_json_type_of(value, repr(value)) for value in values))
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}


def _array_schema(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items} if items else {"type": "array"}


def _any_of(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    # {"type": ["string", "null"]} reads better than an anyOf of bare types.
    if all(schema.keys() == {"type"} for schema in schemas):
        kinds: list[str] = []
        for schema in schemas:
            kind = schema["type"]
            kinds.extend(kind if isinstance(kind, list) else [kind])
        unique = list(dict.fromkeys(kinds))
        return {"type": unique[0] if len(unique) == 1 else unique}
    return {"anyOf": schemas}


# --- annotations and callables -------------------------------------------------------


def _split_annotated(annotation: Any) -> tuple[Any, str | None]:
    """Return (the annotated type, the first plain-string metadata as its description)."""
    if get_origin(annotation) is not Annotated:
        return annotation, None
    inner, *metadata = get_args(annotation)
    return inner, next((item for item in metadata if isinstance(item, str)), None)


def _is_context(annotation: Any, context_types: tuple[type, ...]) -> bool:
    if not context_types:
        return False
    annotation, _ = _split_annotated(annotation)
    if get_origin(annotation) in (Union, types.UnionType):  # Context | None
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(members) != 1:
            return False
        annotation = members[0]
    cls = get_origin(annotation) or annotation  # Context[AppState]
    return isinstance(cls, type) and issubclass(cls, context_types)


def _mentions(annotation: Any, classes: tuple[type, ...]) -> bool:
    """Whether ``annotation`` is, or contains (list[X], X | Y, ...), one of ``classes``."""
    if not classes:
        return False
    annotation, _ = _split_annotated(annotation)
    origin = get_origin(annotation)
    if origin is Literal:
        return False
    cls = annotation if origin is None else origin
    if isinstance(cls, type) and issubclass(cls, classes):
        return True
    return any(_mentions(arg, classes) for arg in get_args(annotation))


def _callable_name(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name if isinstance(name, str) else repr(fn)


def _annotated_target(fn: Any) -> Any:
    """The object whose annotations describe calling ``fn``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if isinstance(fn, type):
        return typing.cast(Any, fn).__init__
    if inspect.isroutine(fn):
        return fn
    return type(fn).__call__  # a callable instance


def _type_hints(target: Any, where: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(target, include_extras=True)
    except (NameError, TypeError, SyntaxError, AttributeError) as exc:
        raise SchemaError(
            f"cannot resolve the annotations of {where}: {exc}; types named in annotations "
            "must be importable from the module that uses them (not only under TYPE_CHECKING)"
        ) from exc


_SECTION_RE: Final = re.compile(r"(?:Args|Arguments|Parameters|Keyword Args|Keyword Arguments):")
_ENTRY_RE: Final = re.compile(r"\*{0,2}(?P<name>\w+)\s*(?:\([^)]*\))?\s*:(?P<text>.*)")


def _docstring_args(doc: str | None) -> dict[str, str]:
    """Parameter descriptions from a Google-style ``Args:`` section."""
    if not doc:
        return {}
    found: dict[str, list[str]] = {}
    section: int | None = None  # indentation of the section header while inside it
    entry: int | None = None  # indentation of its entries
    current: list[str] | None = None
    for line in inspect.cleandoc(doc).splitlines():
        text = line.strip()
        indent = len(line) - len(line.lstrip())
        if section is not None and text and indent <= section:
            section = None
        if section is None:
            if _SECTION_RE.fullmatch(text):
                section, entry, current = indent, None, None
            continue
        if not text:
            continue
        if entry is None:
            entry = indent
        match = _ENTRY_RE.fullmatch(text)
        if indent == entry and match:
            current = found[match["name"]] = []
            if match["text"].strip():
                current.append(match["text"].strip())
        elif indent > entry and current is not None:
            current.append(text)
    return {name: " ".join(parts) for name, parts in found.items() if parts}
