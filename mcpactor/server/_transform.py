# Tool transformations: a mounted server's tool exposed as another tool.
#
# A transformation is declared on a mount (``Server.mount(..., tools={...})``, or
# ``transformed(server, tools)`` for a server served alone) and applied where the parent
# builds its routing table (_routing.py): the child's listed tool is replaced by a
# ``TransformedTool``, a catalogue entry of its own whose definition (name, description,
# inputSchema, outputSchema, annotations) follows the transformed signature and whose
# validator is compiled from that schema. A call of it is checked against the transformed
# schema (refused as any tool's invalid arguments are), its arguments are mapped back
# (renamed, hidden values and defaults filled in, ``before`` run), the original tool is
# called through the mount as any routed call is, and ``after`` sees its result.
#
# Because it works on what a child lists, a local, mounted, proxied or generated tool
# is transformed the same way; a proxied one once its list is known (at start-up, and
# again when the remote's list changes).

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import attrs

from .._exceptions import INVALID_PARAMS, RequestError, SchemaError, ToolError
from ..protocol import LATEST, JSONObject, Revision, describe, describe_error, error_text
from ._context import Context
from ._registered import _validate
from ._registry import Listed, _prune, check_tool_name, compile_validator, validation_errors
from ._results import error_result
from ._scopes import scopes_of
from ._validation import SchemaValidator

__all__ = ["ArgTransform", "ToolTransform", "TransformedTool", "transform_tool"]

_log = logging.getLogger("mcpactor")

#: the JSON Schema keywords an argument's constraints may set (they narrow, never widen)
CONSTRAINTS: Final = frozenset(
    {
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "pattern",
        "minLength",
        "maxLength",
        "format",
        "minItems",
        "maxItems",
        "uniqueItems",
    }
)


class _Unset:
    # Not given (None is a value an argument may be fixed to).
    def __repr__(self) -> str:
        return "UNSET"


_UNSET: Final[Any] = _Unset()

#: ``before(arguments, ctx)``: the arguments the original tool gets (None: unchanged)
Before = Callable[[dict[str, Any], Context], "dict[str, Any] | Awaitable[Any] | None"]
#: ``after(result, ctx)``: the CallToolResult the caller gets (None: unchanged)
After = Callable[[JSONObject, Context], "JSONObject | Awaitable[Any] | None"]


def _check_constraints(instance: Any, attribute: Any, value: Mapping[str, Any]) -> None:
    unknown = sorted(set(value) - CONSTRAINTS)
    if unknown:
        raise ValueError(
            f"constraints: unknown keyword(s) {', '.join(map(repr, unknown))}; "
            f"expected some of {', '.join(sorted(CONSTRAINTS))}"
        )


@attrs.frozen(kw_only=True)
class ArgTransform:
    """How one argument of a transformed tool differs from the original's."""

    #: the name callers use for it (default: the original's)
    name: str | None = None
    #: its description in the transformed inputSchema
    description: str | None = None
    #: its default: no longer required, and sent to the original when left out
    default: Any = _UNSET
    #: leave it out of the transformed tool: callers cannot see or set it
    hide: bool = False
    #: with ``hide``: the value the original gets, or ``fn(ctx)`` computing it per call
    value: Any = _UNSET
    #: JSON Schema keywords that narrow it (``enum``, ``minimum``, ``pattern``, ...)
    constraints: Mapping[str, Any] = attrs.field(factory=dict, validator=_check_constraints)

    def __attrs_post_init__(self) -> None:
        if self.value is not _UNSET and not self.hide:
            raise ValueError("ArgTransform: 'value' is for a hidden argument; set hide=True")


@attrs.frozen(kw_only=True)
class ToolTransform:
    """How a tool is exposed: its name, description, arguments, wrappers, or hidden."""

    #: its new name (the mount's prefix still applies)
    name: str | None = None
    title: str | None = None
    description: str | None = None
    #: by the original's argument names
    arguments: Mapping[str, ArgTransform] = attrs.field(factory=dict)
    #: merged over the original's annotations
    annotations: Mapping[str, Any] | None = None
    #: replaces the original's outputSchema (when ``after`` changes what it returns)
    output_schema: JSONObject | None = None
    #: runs before the original with the arguments it is about to get
    before: Before | None = None
    #: runs after the original with its result
    after: After | None = None
    #: not listed, not callable
    hide: bool = False
    #: list the original too, under its own name
    keep_original: bool = False


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


#: ``forward(params, ctx)``: serve a ``tools/call`` of the original tool
Forward = Callable[[JSONObject, Context], Awaitable[JSONObject]]


@attrs.define(eq=False)
class TransformedTool:
    """A tool exposed under a transformation: its definition, and how its calls map."""

    #: the name the owner knows the original by
    source: str
    #: the original's catalogue entry
    entry: Listed
    transform: ToolTransform
    definition: JSONObject
    validator: SchemaValidator
    #: new argument name -> original name
    renamed: Mapping[str, str]
    #: original name -> fixed value or ``fn(ctx)``
    hidden: Mapping[str, Any]
    #: original name -> default
    defaults: Mapping[str, Any]
    #: original names callers may no longer send
    shadowed: frozenset[str]
    #: checks what ``after`` returns against the transformation's ``output_schema``
    output_validator: SchemaValidator | None = None

    @property
    def name(self) -> str:
        return str(self.definition["name"])

    @property
    def scopes(self) -> tuple[str, ...]:
        """The original's scopes: a transformation never lowers them."""
        return scopes_of(self.entry)

    def wire(self, revision: Revision) -> JSONObject:
        """The ``Tool`` object for ``tools/list`` at this revision."""
        return _prune(self.definition, revision.tool_fields)

    async def call(self, params: JSONObject, ctx: Context, forward: Forward) -> JSONObject:
        """Serve a ``tools/call`` of the transformed tool through ``forward``."""
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict:
            raise RequestError(
                INVALID_PARAMS, f"tool {describe(self.name)}: 'arguments' must be an object"
            )
        errors = await _validate(self.validator, arguments)
        if errors:
            message = f"invalid arguments for tool {describe(self.name)}: " + "; ".join(
                f"{e['path']}: {e['message']}" for e in errors
            )
            if ctx.negotiated.revision.input_errors_in_result:
                return error_result(message)
            raise RequestError(INVALID_PARAMS, message, {"tool": self.name, "errors": errors})
        transform = self.transform
        try:
            sent = await self._arguments(arguments, ctx)
            if transform.before is not None:
                changed = await _maybe_await(transform.before(sent, ctx))
                if changed is not None:
                    sent = dict(changed)
        except ToolError as exc:
            return error_result(error_text(exc, None))
        except Exception as exc:
            _log.exception("tool %r: its arguments could not be prepared", self.name)
            return error_result(f"tool {describe(self.name)} failed: {describe_error(exc)}")
        result = await forward({**params, "name": self.source, "arguments": sent}, ctx)
        if transform.after is None or "content" not in result:
            # A task's or an input round's answer is not the tool's result yet.
            return result
        try:
            changed = await _maybe_await(transform.after(result, ctx))
            if changed is not None:
                result = dict(changed)
                if not isinstance(result.get("content"), list):
                    raise TypeError("'after' returned a result without a 'content' list")
        except ToolError as exc:
            return error_result(error_text(exc, None))
        except Exception as exc:
            _log.exception("tool %r: its result could not be finished", self.name)
            return error_result(f"tool {describe(self.name)} failed: {describe_error(exc)}")
        return self._checked_output(result)

    def _checked_output(self, result: JSONObject) -> JSONObject:
        # What ``after`` made must match the outputSchema the transformed tool lists.
        validator = self.output_validator
        structured = result.get("structuredContent")
        if validator is None or structured is None or result.get("isError"):
            return result
        errors = validation_errors(validator, structured)
        if not errors:
            return result
        _log.error("tool %r returned output that breaks its outputSchema: %s", self.name, errors)
        return error_result(
            f"tool {describe(self.name)} returned output that does not match its "
            "outputSchema: " + "; ".join(f"{e['path']}: {e['message']}" for e in errors)
        )

    async def _arguments(self, arguments: JSONObject, ctx: Context) -> dict[str, Any]:
        # What the original gets: names mapped back, defaults and hidden values filled in.
        renamed, shadowed = self.renamed, self.shadowed
        sent: dict[str, Any] = {}
        for key, value in arguments.items():
            original = renamed.get(key)
            if original is not None:
                sent[original] = value
            elif key not in shadowed:
                sent[key] = value
        for original, default in self.defaults.items():
            if original not in sent:
                sent[original] = copy.deepcopy(default)
        for original, value in self.hidden.items():
            sent[original] = await _maybe_await(value(ctx)) if callable(value) else value
        return sent


def transform_tool(
    exposed: str, source: str, entry: Listed, transform: ToolTransform
) -> TransformedTool:
    """The ``TransformedTool`` exposing ``entry`` as ``exposed``.

    Raises:
        SchemaError: the transformation does not fit the tool (an unknown argument, two
            arguments of one name, a hidden required argument without a value).
    """
    what = f"transformation of tool {describe(source)}"
    check_tool_name(exposed)
    original = entry.wire(LATEST)
    definition: JSONObject = {**original, "name": exposed}
    for key, value in (("title", transform.title), ("description", transform.description)):
        if value is not None:
            definition[key] = value
    if transform.annotations is not None:
        definition["annotations"] = {
            **(original.get("annotations") or {}),
            **transform.annotations,
        }
    output_validator = None
    if transform.output_schema is not None:
        definition["outputSchema"] = copy.deepcopy(transform.output_schema)
        output_validator = compile_validator(
            definition["outputSchema"], what=f"outputSchema of tool {describe(exposed)}"
        )
    schema = copy.deepcopy(original.get("inputSchema") or {"type": "object"})
    mapping = _Mapping()
    _transform_arguments(schema, transform.arguments, mapping, what)
    definition["inputSchema"] = schema
    validator = compile_validator(schema, what=f"tool {describe(exposed)}")
    shadowed = set(mapping.renamed.values()) | set(mapping.hidden)
    return TransformedTool(
        source=source,
        entry=entry,
        transform=transform,
        definition=definition,
        validator=validator,
        renamed=mapping.renamed,
        hidden=mapping.hidden,
        defaults=mapping.defaults,
        shadowed=frozenset(shadowed - set(schema["properties"])),
        output_validator=output_validator,
    )


def _claim(properties: dict[str, Any], name: str, prop: Any, what: str) -> None:
    if name in properties:
        raise SchemaError(f"{what}: two arguments are named {describe(name)}")
    properties[name] = prop


@attrs.define
class _Mapping:
    # How a transformed tool's arguments map back to the original's.
    renamed: dict[str, str] = attrs.Factory(dict)
    hidden: dict[str, Any] = attrs.Factory(dict)
    defaults: dict[str, Any] = attrs.Factory(dict)


def _transform_arguments(
    schema: JSONObject, arguments: Mapping[str, ArgTransform], mapping: _Mapping, what: str
) -> None:
    # Rewrites ``schema`` (a copy of the original's inputSchema) in place.
    properties: dict[str, Any] = schema.get("properties") or {}
    required: list[str] = list(schema.get("required") or [])
    new_properties: dict[str, Any] = {}
    new_required: list[str] = []
    for name, prop in properties.items():
        arg = arguments.get(name)
        if arg is None:
            _claim(new_properties, name, prop, what)
            if name in required:
                new_required.append(name)
            continue
        if arg.hide:
            value = arg.value if arg.value is not _UNSET else arg.default
            if value is not _UNSET:
                mapping.hidden[name] = value
            elif name in required:
                raise SchemaError(
                    f"{what}: argument {describe(name)} is required: hiding it needs a value"
                )
            continue
        prop = {**prop} if isinstance(prop, dict) else {}
        if arg.description is not None:
            prop["description"] = arg.description
        prop.update(copy.deepcopy(dict(arg.constraints)))
        new_name = arg.name or name
        if arg.default is not _UNSET:
            prop["default"] = arg.default
            mapping.defaults[name] = arg.default
        elif name in required:
            new_required.append(new_name)
        if new_name != name:
            mapping.renamed[new_name] = name
        _claim(new_properties, new_name, prop, what)
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        raise SchemaError(
            f"{what}: no argument {', '.join(map(describe, unknown))}; "
            f"it has {', '.join(map(describe, properties)) or 'none'}"
        )
    schema["properties"] = new_properties
    if new_required:
        schema["required"] = new_required
    else:
        schema.pop("required", None)
