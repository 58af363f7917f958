# ``[servers.NAME.tools.TOOL]``: how a server's tools are exposed (docs/transformations.md).
#
# Each table becomes a ``ToolTransform`` (its arguments under ``arguments.ARG``); the
# functions it names (``before``, ``after``, an argument's ``value_from``) are references
# checked here and imported when the server is loaded (_assemble.py), so an import error
# is that server's and names the key.

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import attrs

from ..server import ArgTransform, ToolTransform
from ._reader import NOT_A_NAME, Reader
from ._targets import load_hook

__all__ = ["ARGUMENT_KEYS", "TOOL_KEYS", "ToolTransformConfig", "read_tool_transforms"]

_T = TypeVar("_T")

#: every key of a ``[servers.NAME.tools.TOOL]`` table
TOOL_KEYS: Final = frozenset(
    {
        "name",
        "title",
        "description",
        "hide",
        "keep_original",
        "annotations",
        "output_schema",
        "arguments",
        "before",
        "after",
    }
)
#: every key of its ``arguments.ARG`` tables
ARGUMENT_KEYS: Final = frozenset(
    {"name", "description", "default", "hide", "value", "value_from", "constraints"}
)


@attrs.frozen
class ToolTransformConfig:
    """A tool's transformation as the file gives it: its functions still references."""

    #: the full key of its table, for errors
    key: str
    transform: ToolTransform
    before: str | None = None
    after: str | None = None
    #: argument -> the ``module:function`` computing its value from the request's Context
    values_from: Mapping[str, str] = attrs.field(factory=dict)

    def load(self) -> ToolTransform:
        """The ``ToolTransform`` with its functions imported; TargetError naming the key."""
        hooks: dict[str, Any] = {}
        for option in ("before", "after"):
            reference = getattr(self, option)
            if reference is not None:
                hooks[option] = load_hook(reference, option=f"{self.key}.{option}")
        arguments = dict(self.transform.arguments)
        for argument, reference in self.values_from.items():
            fn = load_hook(reference, option=f"{self.key}.arguments.{argument}.value_from")
            arguments[argument] = attrs.evolve(arguments[argument], value=fn)
        return attrs.evolve(self.transform, arguments=arguments, **hooks)


def read_tool_transforms(
    reader: Reader, tables: Mapping[str, Any]
) -> dict[str, ToolTransformConfig]:
    """The ``tools`` table of one server, checked key by key."""
    transforms: dict[str, ToolTransformConfig] = {}
    for tool, table in tables.items():
        if not isinstance(table, dict):
            raise reader.error(tool, "expected a table", table)
        transforms[tool] = _tool(reader.nested(tool), table)
    return transforms


def _tool(reader: Reader, table: Mapping[str, Any]) -> ToolTransformConfig:
    reader.known(table, TOOL_KEYS)
    arguments: dict[str, ArgTransform] = {}
    values_from: dict[str, str] = {}
    arguments_reader = reader.nested("arguments")
    for argument, value in reader.table(table, "arguments").items():
        if not isinstance(value, dict):
            raise arguments_reader.error(argument, "expected a table", value)
        inner = arguments_reader.nested(argument)
        arguments[argument] = _argument(inner, value)
        value_from = inner.reference(value, "value_from")
        if value_from is not None:
            values_from[argument] = value_from
    name = reader.optional(table, "name", str)
    if name is not None and (not name or len(name) > 128 or NOT_A_NAME.search(name)):
        raise reader.error("name", "expected 1 to 128 of A-Z, a-z, 0-9, '_', '-', '.'", name)
    transform = _build(
        reader,
        "name",
        ToolTransform,
        name=name,
        title=reader.optional(table, "title", str),
        description=reader.optional(table, "description", str),
        hide=reader.optional(table, "hide", bool, False),
        keep_original=reader.optional(table, "keep_original", bool, False),
        annotations=dict(reader.table(table, "annotations")) or None,
        output_schema=dict(reader.table(table, "output_schema")) or None,
        arguments=arguments,
    )
    return ToolTransformConfig(
        key=reader.prefix,
        transform=transform,
        before=reader.reference(table, "before"),
        after=reader.reference(table, "after"),
        values_from=values_from,
    )


def _argument(reader: Reader, table: Mapping[str, Any]) -> ArgTransform:
    reader.known(table, ARGUMENT_KEYS)
    hide = reader.optional(table, "hide", bool, False)
    given: dict[str, Any] = {}
    for key in ("default", "value"):
        if key in table:
            given[key] = table[key]
    if ("value" in table or "value_from" in table) and not hide:
        key = "value" if "value" in table else "value_from"
        raise reader.error(key, "only applies to a hidden argument (hide = true)", table[key])
    if "value" in table and "value_from" in table:
        raise reader.error("value_from", "give value or value_from, not both", table["value_from"])
    if "value_from" in table:
        given["value"] = None  # replaced by the function once it is loaded
    return _build(
        reader,
        "constraints",
        ArgTransform,
        name=reader.optional(table, "name", str),
        description=reader.optional(table, "description", str),
        hide=hide,
        constraints=dict(reader.table(table, "constraints")),
        **given,
    )


def _build(reader: Reader, key: str, cls: Callable[..., _T], **fields: Any) -> _T:
    try:
        return cls(**fields)
    except ValueError as exc:
        raise reader.error(key, str(exc), fields.get(key)) from None
