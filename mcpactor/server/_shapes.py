"""Python types to JSON Schema: the _Builder turns each annotation into a _Shape."""

# A _Shape is a type's JSON Schema and its converters (_convert.py); models that contain
# themselves go to ``$defs`` through a _Slot (see _schema.py, "Theory of operation").

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import math
import re
import types
from typing import (
    Annotated,
    Any,
    Final,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
)

import attrs

from .._exceptions import SchemaError
from ..protocol import describe
from ._convert import (
    _always,
    _any_check,
    _Check,
    _Convert,
    _each,
    _each_value,
    _enum_value,
    _is_bool,
    _is_dict,
    _is_int,
    _is_json,
    _is_list,
    _is_null,
    _is_number,
    _is_str,
    _key_converter,
    _lookup,
    _member_check,
    _model_check,
    _model_dumper,
    _model_loader,
    _or_null,
    _positional,
    _to_json,
    _union_loader,
)
from ._introspect import (
    _MISSING,
    _class_description,
    _Field,
    _is_typeddict,
    _model_fields,
    _split_annotated,
    _typeddict_fields,
)

_SUPPORTED: Final = (
    "expected str, int, float, bool, None, Any, a list, tuple, set or dict[str, ...] of "
    "supported types, a Literal, an Enum, a Union, or an attrs class, dataclass or TypedDict"
)


# --- shapes ------------------------------------------------------------------------


class _Shape:
    # Plain classes, not attrs (as _Slot): made for every type a handler names, never
    # compared, and an attrs class costs every start-up its build.
    __slots__ = ("check", "dump", "is_object", "load", "schema")

    def __init__(
        self,
        schema: dict[str, Any],
        check: _Check,
        load: _Convert | None = None,
        dump: _Convert | None = None,
        is_object: bool = False,
    ) -> None:
        self.schema = schema
        self.check = check
        self.load = load
        self.dump = dump
        self.is_object = is_object

    def with_schema(self, schema: dict[str, Any]) -> _Shape:
        """The same shape under another schema."""
        return _Shape(schema, self.check, self.load, self.dump, self.is_object)


class _Slot:
    """A model being built; a recursive use reaches its converters through here."""

    __slots__ = ("name", "shape")

    def __init__(self) -> None:
        self.name: str | None = None
        self.shape: _Shape | None = None

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
        schema.update(_header_keyword(annotation))
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
            # A Header() here, off a parameter, is kept so registration refuses it.
            extra = _header_keyword(tp)
            if description is not None:
                extra["description"] = description
            if not extra:
                return shape
            return shape.with_schema({**shape.schema, **extra})
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
            shape = shape.with_schema({"$ref": f"#/$defs/{slot.name}"})
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


def _header_keyword(annotation: Any) -> dict[str, Any]:
    """``{"x-mcp-header": name}`` for an ``Annotated[..., Header(name)]``, else empty."""
    if get_origin(annotation) is not Annotated:
        return {}
    # Read here: a Header in the metadata means its module is loaded already.
    from ._headers import Header

    for item in get_args(annotation)[1:]:
        if isinstance(item, Header):
            return {"x-mcp-header": item.name}
    return {}
