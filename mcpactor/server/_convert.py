"""Converters between JSON values and the Python values handlers take and return."""

# The closures a _Shape carries (see _schema.py): ``load`` (JSON -> Python), ``dump``
# (Python -> JSON) and ``check`` (could this JSON value belong to the type?), each built
# once at registration from what the type needs, so a call runs no type inspection.

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from ..protocol import describe

_Convert = Callable[[Any], Any]
_Check = Callable[[Any], bool]


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
