# Header-mirrored tool parameters (``x-mcp-header``) and the standard request headers.
#
# A tool parameter annotated ``Annotated[str, Header("Region")]`` gets
# ``"x-mcp-header": "Region"`` in its inputSchema property; a client on Streamable HTTP
# then sends its value as ``Mcp-Param-Region`` too, so that a load balancer can route on
# it. The transports page constrains the declarations, and a tool that breaks them is
# refused at registration (``header_params``), whether the schema came from the
# signature or was given: each name is an HTTP token, unique ignoring case, on a
# property reached from the root through ``properties`` only, of type string, integer
# or boolean.
#
# Serving a request, the HTTP transport compares the headers with the body (sans-io
# here): ``check_standard_headers`` for ``Mcp-Method``/``Mcp-Name`` and
# ``check_param_headers`` for a tool's mirrored parameters. Values may be sent as
# ``=?base64?…?=`` and are decoded first. A mismatch, a missing header or a malformed
# one is -32020 (HeaderMismatch, HTTP 400).

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Mapping
from typing import Any, Final

import attrs

from .._exceptions import SchemaError
from ..protocol import HEADER_MISMATCH, NAMED_BY, EnvelopeError, JSONObject, describe

__all__ = [
    "Header",
    "HeaderParam",
    "check_param_headers",
    "check_standard_headers",
    "decode_header_value",
    "header_params",
]

#: the extension keyword of a property schema naming its header
KEYWORD: Final = "x-mcp-header"
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TYPES: Final = ("string", "integer", "boolean")
_SAFE_INTEGER: Final = 2**53 - 1
# Keywords whose value is one subschema, a list of them, or a map of them: walked to
# find declarations that are not reached through ``properties`` alone.
_ONE: Final = frozenset(
    {
        "items",
        "additionalItems",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
    }
)
_LIST: Final = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_MAP: Final = frozenset({"$defs", "definitions", "patternProperties", "dependentSchemas"})
_SENTINEL_START: Final = "=?base64?"
_SENTINEL_END: Final = "?="
# Tools, resources and prompts are named by Mcp-Name: params.name or params.uri; the
# tasks extension's methods by the task id.
_NAMED: Final = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    **NAMED_BY,
}


@attrs.frozen
class Header:
    """Mirror this tool parameter into the ``Mcp-Param-<name>`` HTTP header.

    Use it as ``Annotated[str, Header("Region")]``; only string, integer and boolean
    parameters may be mirrored.
    """

    name: str


@attrs.frozen
class HeaderParam:
    """One mirrored parameter of a tool: its header name, path in the arguments, type."""

    name: str
    path: tuple[str, ...]
    type: str

    @property
    def header(self) -> str:
        """The HTTP header it is sent in."""
        return f"Mcp-Param-{self.name}"


def header_params(schema: JSONObject, *, what: str) -> tuple[HeaderParam, ...]:
    """The mirrored parameters an inputSchema declares; SchemaError if one is invalid."""
    found: list[HeaderParam] = []
    seen: dict[str, str] = {}
    # (node, path through ``properties`` only, or None once off that chain)
    stack: list[tuple[Any, tuple[str, ...] | None]] = [(schema, ())]
    while stack:
        node, path = stack.pop()
        if type(node) is not dict:
            continue
        if KEYWORD in node:
            found.append(_declaration(node, path, what, seen))
        for key, value in node.items():
            if key == "properties" and type(value) is dict:
                for name, sub in value.items():
                    stack.append((sub, None if path is None else (*path, name)))
            elif key in _ONE:
                stack.append((value, None))
            elif key in _LIST and type(value) is list:
                stack.extend((sub, None) for sub in value)
            elif key in _MAP and type(value) is dict:
                stack.extend((sub, None) for sub in value.values())
    found.sort(key=lambda param: param.path)
    return tuple(found)


def _declaration(
    node: JSONObject, path: tuple[str, ...] | None, what: str, seen: dict[str, str]
) -> HeaderParam:
    name = node[KEYWORD]
    where = "/".join(path) if path else "the root"
    if not path:
        raise SchemaError(
            f"{what}: {KEYWORD} {describe(name)} at {where}: it may only mark a property "
            "reached from the root through 'properties' alone (not items, anyOf, $ref, …)"
        )
    if type(name) is not str or not _TOKEN.fullmatch(name):
        raise SchemaError(
            f"{what}: {KEYWORD} of {where!r} must be an HTTP token "
            f"(letters, digits and !#$%&'*+-.^_`|~), got {describe(name)}"
        )
    folded = name.lower()
    if folded in seen:
        raise SchemaError(
            f"{what}: {KEYWORD} {name!r} of {where!r} repeats that of {seen[folded]!r} "
            "(names are compared ignoring case)"
        )
    seen[folded] = where
    kind = node.get("type")
    if kind not in _TYPES:
        raise SchemaError(
            f"{what}: {KEYWORD} {name!r} marks {where!r} of type {describe(kind)}; "
            "only string, integer and boolean parameters may be mirrored"
        )
    return HeaderParam(name, path, kind)


# --- serving ----------------------------------------------------------------------------


def decode_header_value(value: str) -> str:
    """The value a header carries, ``=?base64?…?=`` decoded; ValueError if malformed."""
    if value.startswith(_SENTINEL_START) and value.endswith(_SENTINEL_END):
        encoded = value[len(_SENTINEL_START) : len(value) - len(_SENTINEL_END)]
        try:
            return base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise ValueError("not valid base64 of UTF-8 text") from None
    if not all(" " <= ch <= "~" or ch == "\t" for ch in value):
        raise ValueError("a header value must be visible ASCII, spaces and tabs")
    return value


def _mismatch(message: str) -> EnvelopeError:
    return EnvelopeError(f"Header mismatch: {message}", code=HEADER_MISMATCH)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    # HTTP header names ignore case; a transport may hand them over in any case. The
    # optional whitespace around a field value is not part of it (RFC 9110 5.5).
    value = headers.get(name)
    if value is not None:
        return value.strip(" \t")
    lowered = name.lower()
    for key, found in headers.items():
        if key.lower() == lowered:
            return found.strip(" \t")
    return None


def check_standard_headers(
    method: str, params: JSONObject | None, headers: Mapping[str, str]
) -> None:
    """Check ``Mcp-Method`` (and ``Mcp-Name`` where the method names something).

    Raises:
        EnvelopeError: -32020, a header is missing, malformed or differs from the body.
    """
    sent = _header(headers, "Mcp-Method")
    if sent is None:
        raise _mismatch("the Mcp-Method header is missing")
    if sent != method:
        raise _mismatch(
            f"Mcp-Method header value {describe(sent)} does not match body value "
            f"{describe(method)}"
        )
    key = _NAMED.get(method)
    if key is None:
        return
    name = _header(headers, "Mcp-Name")
    if name is None:
        raise _mismatch(f"the Mcp-Name header is missing for {method}")
    try:
        decoded = decode_header_value(name)
    except ValueError as exc:
        raise _mismatch(f"Mcp-Name header value {describe(name)}: {exc}") from None
    body = (params or {}).get(key)
    if decoded != body:
        raise _mismatch(
            f"Mcp-Name header value {describe(decoded)} does not match body value {describe(body)}"
        )


def check_param_headers(
    declared: tuple[HeaderParam, ...], arguments: JSONObject, headers: Mapping[str, str]
) -> None:
    """Check a tool call's ``Mcp-Param-*`` headers against its arguments.

    A parameter with no value in the arguments must have no header; one with a value
    must have its header, equal to it (integers compared as numbers).

    Raises:
        EnvelopeError: -32020 naming the first header that is missing, extra, malformed
            or different.
    """
    for param in declared:
        value = _lookup(arguments, param.path)
        sent = _header(headers, param.header)
        if value is _ABSENT:
            if sent is not None:
                raise _mismatch(f"{param.header} was sent but the argument is absent")
            continue
        if sent is None:
            raise _mismatch(f"the {param.header} header is missing")
        try:
            decoded = decode_header_value(sent)
        except ValueError as exc:
            raise _mismatch(f"{param.header} header value {describe(sent)}: {exc}") from None
        if not _equal(param.type, decoded, value):
            raise _mismatch(
                f"{param.header} header value {describe(decoded)} does not match body "
                f"value {describe(value)}"
            )


_ABSENT: Final = object()


def _lookup(arguments: Any, path: tuple[str, ...]) -> Any:
    node = arguments
    for key in path:
        if type(node) is not dict or key not in node:
            return _ABSENT
        node = node[key]
    return node


def _equal(kind: str, header: str, value: Any) -> bool:
    if kind == "boolean":
        return type(value) is bool and header == ("true" if value else "false")
    if kind == "integer":
        if type(value) is bool or not isinstance(value, int | float):
            return False
        if not math.isfinite(value) or abs(value) > _SAFE_INTEGER or value != int(value):
            return False
        # Compared as numbers: "42.0" and "42" are the same integer (the page says so).
        try:
            number = int(header) if header.lstrip("+-").isdigit() else float(header)
        except (ValueError, OverflowError):
            return False
        return bool(number == value)
    return type(value) is str and header == value
