# The one cattrs converter for MCP wire types.
#
# snake_case attribute names become camelCase keys and ``meta`` becomes ``_meta``; None
# fields are left out; any other default (a content block's ``type``, an empty list)
# stays on the wire.
# Structuring errors carry Python attribute names in their paths, so ``wire_name`` maps
# them back for the -32602 ``data`` a client sees.
# The converter (and cattrs itself) is built on first use: most servers only ever send
# plain strings and dicts, and importing cattrs is a noticeable share of start-up.

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, TypeVar, get_origin

import attrs

from .._exceptions import INVALID_PARAMS, RemoteProtocolError
from . import _types

if TYPE_CHECKING:
    import cattrs

    converter: cattrs.Converter

__all__ = ["converter", "structure", "unstructure", "wire_name"]

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
    from cattrs.cols import list_structure_factory
    from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

    conv = cattrs.Converter(omit_if_default=True)

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
            raise ValueError(f"unknown content type {kind!r}")
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
    return conv


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
    return _converter().unstructure(value)


def structure(value: Any, cls: type[T]) -> T:
    """Build a wire type from a JSON value; a bad shape is a -32602 RemoteProtocolError."""
    conv = _converter()
    import cattrs

    try:
        return conv.structure(value, cls)
    except (cattrs.BaseValidationError, ValueError, TypeError, KeyError) as exc:
        if isinstance(exc, cattrs.BaseValidationError):
            details = [_wire_path(line) for line in cattrs.transform_error(exc)]
        else:
            details = [str(exc)]
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
