# The headers a request carries over Streamable HTTP at a revision without sessions.
#
# Each request is a POST of its own, and says in headers what its body says, so that a
# load balancer can route it without reading the body: ``MCP-Protocol-Version`` (its
# envelope's revision), ``Mcp-Method``, ``Mcp-Name`` (the tool or prompt name, the
# resource URI, the task id) and, for ``tools/call``, one ``Mcp-Param-<name>`` for each
# argument the tool's inputSchema marks with ``x-mcp-header`` (as ``tools/list`` gave
# it). A value that is not plain visible ASCII (or looks like the sentinel) is sent as
# ``=?base64?…?=``. Sans-io: the transport remembers the schemas and asks here.

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Final

from ..protocol import PROTOCOL_VERSION, JSONObject

__all__ = ["ToolHeaders", "encode_header_value", "mirrored_params", "request_headers"]

#: for each tool, the path of each mirrored argument and its header's name part
ToolHeaders = Mapping[str, Mapping[tuple[str, ...], str]]

_KEYWORD: Final = "x-mcp-header"
_SENTINEL_START: Final = "=?base64?"
_SENTINEL_END: Final = "?="
# Where Mcp-Name comes from, by method.
_NAMED: Final = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def encode_header_value(text: str) -> str:
    """``text`` as a header value: itself when plain visible ASCII, else base64-wrapped."""
    plain = (
        text != ""
        and all(0x20 <= ord(c) <= 0x7E for c in text)
        and text == text.strip(" ")
        and not (text.startswith(_SENTINEL_START) and text.endswith(_SENTINEL_END))
    )
    if plain:
        return text
    encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return f"{_SENTINEL_START}{encoded}{_SENTINEL_END}"


def mirrored_params(input_schema: Any) -> dict[tuple[str, ...], str]:
    """The arguments a tool's inputSchema marks for mirroring: path → header name part.

    Only properties reached from the root through ``properties`` count, as the
    transports page says; a malformed schema mirrors nothing it cannot read.
    """
    found: dict[tuple[str, ...], str] = {}
    _walk(input_schema, (), found, depth=0)
    return found


def _walk(
    schema: Any, path: tuple[str, ...], found: dict[tuple[str, ...], str], depth: int
) -> None:
    if type(schema) is not dict or depth > 32:
        return
    properties = schema.get("properties")
    if type(properties) is not dict:
        return
    for key, below in properties.items():
        if type(below) is not dict:
            continue
        name = below.get(_KEYWORD)
        if isinstance(name, str) and name:
            found[(*path, key)] = name
        _walk(below, (*path, key), found, depth + 1)


def _header_text(value: Any) -> str | None:
    # Only strings, integers and booleans are mirrored; anything else is left out.
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is str:
        return value
    return None


def request_headers(message: JSONObject, tools: ToolHeaders) -> list[tuple[str, str]]:
    """The headers a request at a stateless revision carries (none for anything else)."""
    method = message.get("method")
    params = message.get("params")
    if not isinstance(method, str) or type(params) is not dict:
        return []
    meta = params.get("_meta")
    version = meta.get(PROTOCOL_VERSION) if type(meta) is dict else None
    if not isinstance(version, str):
        return []
    headers = [("mcp-protocol-version", version), ("mcp-method", encode_header_value(method))]
    source = _NAMED.get(method)
    name = params.get(source) if source is not None else None
    if isinstance(name, str):
        headers.append(("mcp-name", encode_header_value(name)))
    if method == "tools/call" and isinstance(name, str):
        arguments = params.get("arguments")
        for path, header in (tools.get(name) or {}).items():
            value: Any = arguments
            for key in path:
                value = value.get(key) if type(value) is dict else None
            text = _header_text(value)
            if text is not None:
                headers.append((f"mcp-param-{header}", encode_header_value(text)))
    return headers
