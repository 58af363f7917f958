# The one cattrs converter for MCP wire types.
#
# snake_case attribute names become camelCase keys and ``meta`` becomes ``_meta``; None
# fields are left out; any other default (a content block's ``type``, an empty list)
# stays on the wire.
# Structuring errors carry Python attribute names in their paths, so ``wire_name`` maps
# them back for the -32602 ``data`` a client sees.
# The converter (and cattrs itself) is built on first use: importing cattrs and
# generating its hooks is a noticeable share of start-up, and most servers never
# structure anything. Unstructuring our own wire types needs no cattrs at all:
# ``unstructure`` walks them (fields under their wire names, None fields left out,
# values walked the same way) and hands anything else — a user's class, an enum, a
# tuple — to the converter, so both give the same result (a test checks it).

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar, get_origin

import attrs

from .._exceptions import INVALID_PARAMS, RemoteProtocolError
from ._bounded import clip_all, describe

if TYPE_CHECKING:
    import cattrs

    converter: cattrs.Converter

__all__ = ["converter", "structure", "unstructure", "wire_classes_loaded", "wire_name"]

T = TypeVar("T")

_SPECIAL: Final = {"meta": "_meta"}


def wire_name(attribute: str) -> str:
    """Return the wire key of a Python attribute name."""
    special = _SPECIAL.get(attribute)
    if special is not None:
        return special
    head, *rest = attribute.split("_")
    return head + "".join(part.title() for part in rest)


def _build() -> cattrs.Converter:
    import cattrs

    conv = cattrs.Converter(omit_if_default=True)
    _rename_fields(conv)
    _strict_json(conv)
    _tagged_unions(conv)
    return conv


def _rename_fields(conv: cattrs.Converter) -> None:
    # Every attrs class: snake_case attributes under their wire names, None omitted.
    from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

    def unstructure_factory(cls: type) -> Any:
        overrides: dict[str, Any] = {}
        for field in attrs.fields(cls):
            # Only None means "absent"; a default list or the type tag is real content.
            overrides[field.name] = override(
                rename=wire_name(field.name), omit_if_default=field.default is None
            )
        return make_dict_unstructure_fn(
            cls, conv, _cattrs_omit_if_default=True, _cattrs_include_init_false=True, **overrides
        )

    def structure_factory(cls: type) -> Any:
        overrides: dict[str, Any] = {
            field.name: override(rename=wire_name(field.name)) for field in attrs.fields(cls)
        }
        structure_fields: Any = make_dict_structure_fn(cls, conv, **overrides)

        # The generated function tests keys with ``in``, which a list or a string also
        # answers: without this check ``[7]`` would become an all-defaults object.
        def structure_object(value: Any, cls: Any) -> Any:
            if type(value) is not dict:
                raise TypeError(f"expected an object, got {type(value).__name__}")
            return structure_fields(value, cls)

        return structure_object

    conv.register_unstructure_hook_factory(attrs.has, unstructure_factory)
    conv.register_structure_hook_factory(attrs.has, structure_factory)


def _strict_json(conv: cattrs.Converter) -> None:
    from cattrs.cols import list_structure_factory

    # cattrs structures scalars by calling the type (``str(5)``, ``bool("false")``),
    # which would turn a peer's wrong shape into a silently wrong value instead of -32602.
    def structure_exact(value: Any, cls: type) -> Any:
        if type(value) is not cls:
            raise TypeError(f"expected {cls.__name__}, got {type(value).__name__}")
        return value

    def structure_number(value: Any, _: Any) -> float:
        if type(value) is not float and type(value) is not int:
            raise TypeError(f"expected a number, got {type(value).__name__}")
        return float(value)

    for scalar in (str, int, bool):
        conv.register_structure_hook(scalar, structure_exact)
    conv.register_structure_hook(float, structure_number)

    # Likewise a string or an object is iterable but is not a JSON array.
    def list_factory(cls: Any) -> Any:
        structure_items = list_structure_factory(cls, conv)

        def structure_list(value: Any, cls: Any) -> Any:
            if type(value) is not list:
                raise TypeError(f"expected an array, got {type(value).__name__}")
            return structure_items(value, cls)

        return structure_list

    def is_list(cls: Any) -> bool:
        return get_origin(cls) is list

    conv.register_structure_hook_factory(is_list, list_factory)


def _tagged_unions(conv: cattrs.Converter) -> None:
    # The unions the wire tells apart: content blocks by ``type``, resource contents by
    # whether they carry a ``blob``.
    from . import _types

    content_kinds: dict[str, type] = {
        "text": _types.TextContent,
        "image": _types.ImageContent,
        "audio": _types.AudioContent,
        "resource": _types.EmbeddedResource,
        "resource_link": _types.ResourceLink,
    }

    def structure_content(value: Any, _: Any) -> Any:
        kind = value.get("type") if isinstance(value, dict) else None
        cls = content_kinds.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise ValueError(f"unknown content type {describe(kind)}")
        return conv.structure(value, cls)

    def structure_resource_contents(value: Any, _: Any) -> Any:
        if isinstance(value, dict) and "blob" in value:
            return conv.structure(value, _types.BlobResourceContents)
        return conv.structure(value, _types.TextResourceContents)

    for union in (
        _types.ContentBlock,
        _types.TextContent | _types.ImageContent | _types.AudioContent,
    ):
        conv.register_structure_hook(union, structure_content)
    conv.register_structure_hook(_types.ResourceContents, structure_resource_contents)


_built: list[cattrs.Converter] = []


def _converter() -> cattrs.Converter:
    if not _built:
        _built.append(_build())
    return _built[0]


def __getattr__(name: str) -> Any:
    if name == "converter":
        return _converter()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def unstructure(value: Any) -> Any:
    """Turn wire types (and lists and dicts of them) into JSON-ready values."""
    if value is None:
        return None
    try:
        return _walk(value)
    except _NotPlain:
        return _converter().unstructure(value)


class _NotPlain(Exception):
    """A value that only the converter knows how to unstructure."""


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
#: (attribute, wire key, left out when None) per wire type, made on first use
_Plan: TypeAlias = tuple[tuple[str, str, bool], ...]
_plans: dict[type, _Plan] = {}


#: the modules of wire types, each loaded on first use: until one has, none of its
#: classes exist, so no value is an instance of one and no annotation names one
_TYPES: Final = f"{__package__}._types"
_WIRE_MODULES: Final = (_TYPES, f"{__package__}._described", f"{__package__}._client_types")


def wire_classes_loaded(*names: str) -> tuple[type, ...]:
    """The content and result classes named (``"CallToolResult"`` …), once they exist.

    Empty until something has used one of them: then nothing can be an instance of one
    (``isinstance(value, ())`` is False) and no annotation can name one, so a check
    against them needs no loading of theirs.
    """
    module = sys.modules.get(_TYPES)
    return () if module is None else tuple(getattr(module, name) for name in names)


def _is_wire_type(cls: type) -> bool:
    for name in _WIRE_MODULES:
        module = sys.modules.get(name)
        if module is not None and any(getattr(module, n) is cls for n in module.__all__):
            return attrs.has(cls)
    return False


def _plan(cls: type) -> _Plan:
    if not _is_wire_type(cls):
        raise _NotPlain
    # As the converter's hooks: every field (the type tag too), None left out only where
    # None is the default.
    plan = tuple(
        (field.name, wire_name(field.name), field.default is None) for field in attrs.fields(cls)
    )
    _plans[cls] = plan
    return plan


def _walk(value: Any) -> Any:
    cls = type(value)
    if cls in _SCALARS:
        return value
    if cls is list:
        return [_walk(item) for item in value]
    if cls is dict:
        if not all(type(key) is str for key in value):
            raise _NotPlain
        return {key: _walk(item) for key, item in value.items()}
    plan = _plans.get(cls) or _plan(cls)
    result = {}
    for name, key, omit_none in plan:
        item = getattr(value, name)
        if item is None and omit_none:
            continue
        result[key] = _walk(item)
    return result


def structure(value: Any, cls: type[T]) -> T:
    """Build a wire type from a JSON value; a bad shape is a -32602 RemoteProtocolError."""
    conv = _converter()
    import cattrs

    try:
        return conv.structure(value, cls)
    except (cattrs.BaseValidationError, ValueError, TypeError, KeyError) as exc:
        if isinstance(exc, cattrs.BaseValidationError):
            details = clip_all([_wire_path(line) for line in cattrs.transform_error(exc)])
        else:
            details = clip_all([str(exc)])
        raise RemoteProtocolError(
            f"invalid {getattr(cls, '__name__', cls)}: {'; '.join(details)}",
            code=INVALID_PARAMS,
            data={"errors": details},
        ) from None


def _wire_path(line: str) -> str:
    # transform_error writes "... @ $.mime_type[0]"; rename each attribute step.
    message, sep, path = line.rpartition(" @ ")
    if not sep:
        return line
    steps = path.split(".")
    renamed = [steps[0], *(_rename_step(step) for step in steps[1:])]
    return f"{message} @ {'.'.join(renamed)}"


def _rename_step(step: str) -> str:
    name, bracket, rest = step.partition("[")
    return wire_name(name) + bracket + rest
