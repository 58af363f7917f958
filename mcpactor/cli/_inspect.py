"""``mcpactor inspect``: what a server offers, asked in this process at every revision.

No transport is started: the server is assembled as ``serve`` would, and a client of
this package asks it over a pair of in-memory byte streams served by ``serve_streams``
(the stdio transport's core, so each message is framed and parsed as on a pipe, and a
stateless revision's requests go through the stateless host as they would there). The
server's lifespans are entered once, around all the revisions.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ..client import ClientSession
    from ..server import Server

__all__ = ["add_inspect_parser", "inspect", "inspect_server"]

#: the longest line of a description or schema printed in the table
_WIDEST: Final = 2000
_MAX_MESSAGE: Final = 16 * 1024 * 1024


def add_inspect_parser(
    commands: Any,
    add_global_arguments: Callable[..., None],
    add_composition_arguments: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add ``inspect`` to ``commands``, with the options the adders given add to a command.

    ``add_global_arguments`` and ``add_composition_arguments`` are those of the command
    line's module, passed in so that this module does not import it back.
    """
    inspect = commands.add_parser(
        "inspect",
        help="print the tools, resources, prompts and capabilities a server offers",
        description="Load TARGET as `mcpactor serve` would and print what it offers at each "
        "protocol revision: tools with their input and output schemas, resources, resource "
        "templates, prompts and capabilities. No transport is started.",
    )
    add_global_arguments(inspect, command=True)
    add_composition_arguments(inspect)
    inspect.add_argument("--json", action="store_true", help="print it all as JSON")
    inspect.add_argument(
        "--revision",
        metavar="R",
        help="ask at this protocol revision only (default: every revision; the table "
        "details the latest session revision)",
    )


def inspect(args: argparse.Namespace) -> int:
    """Run ``mcpactor inspect`` as ``args`` say; return the exit status."""
    import orjson
    import trio

    from .._exceptions import ConfigError
    from ..protocol import LATEST, REVISIONS
    from ._extras import require_serve_extras
    from ._serve import _enable_extensions, _served_server

    if args.revision is not None and args.revision not in REVISIONS:
        raise ConfigError(
            f"--revision: expected one of {', '.join(REVISIONS)}, got {args.revision!r}"
        )
    config = None
    if args.config:
        from ..config import load_config

        config = load_config(args.config)
    # A URL among the targets is proxied: that needs the http extra.
    require_serve_extras(args, config, http=False)
    server = _served_server(args, config)
    _enable_extensions(args, config, server)
    revisions = [args.revision] if args.revision is not None else list(REVISIONS)
    report = trio.run(inspect_server, server, revisions)
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        detailed = args.revision or LATEST.version
        sys.stdout.write(render(report, detailed))
    sys.stdout.flush()
    return 0


async def inspect_server(server: Server, revisions: Sequence[str]) -> dict[str, Any]:
    """What ``server`` answers at each of ``revisions``, as a JSON-ready dict."""
    per_revision: dict[str, Any] = {}
    info: Any = None
    async with server.running():
        for version in revisions:
            async with _client(server, version) as client:
                capabilities = client.server.capabilities
                offered: dict[str, Any] = {
                    "serverInfo": client.server.info,
                    "capabilities": capabilities,
                }
                if "tools" in capabilities:
                    offered["tools"] = await client.list_tools()
                if "resources" in capabilities:
                    offered["resources"] = await client.list_resources()
                    offered["resourceTemplates"] = await client.list_resource_templates()
                if "prompts" in capabilities:
                    offered["prompts"] = await client.list_prompts()
                info = client.server.info
                per_revision[version] = offered
    return {
        "server": info,
        "instructions": server.instructions,
        "extensions": _extensions(server),
        "revisions": per_revision,
    }


def _extensions(server: Server) -> list[dict[str, Any]]:
    # What is enabled, as declared: the wire shows only the settings.
    return [
        {
            "identifier": extension.identifier,
            "server": owner.name,
            "description": extension.description,
            "settings": extension.settings,
            "requires": list(extension.requires),
            "methods": [
                {
                    "name": method.name,
                    "description": method.description,
                    "paramsSchema": method.params_schema,
                    "resultSchema": method.result_schema,
                }
                for method in extension.methods
            ],
            "notifications": [
                {
                    "name": notification.name,
                    "description": notification.description,
                    "paramsSchema": notification.params_schema,
                    "received": notification.handler is not None,
                }
                for notification in extension.notifications
            ],
        }
        for owner, extension in server.extensions.tree()
    ]


@contextlib.asynccontextmanager
async def _client(server: Server, version: str) -> AsyncIterator[ClientSession]:
    import functools

    import trio
    import trio.testing

    from ..client import connect_streams
    from ..runtime import StatelessOptions
    from ..transports import serve_streams

    to_server, server_input = trio.testing.memory_stream_one_way_pair()
    server_output, from_server = trio.testing.memory_stream_one_way_pair()
    async with trio.open_nursery() as nursery:
        serving = functools.partial(
            serve_streams,
            server,
            server_input,
            server_output,
            max_line_bytes=_MAX_MESSAGE,
            stateless=StatelessOptions(),
        )
        nursery.start_soon(serving)
        async with connect_streams(to_server, from_server, max_line_bytes=_MAX_MESSAGE) as session:
            await session.start(version)
            yield session
        # serve_streams leaves its output open to its owner: nothing more will come.
        nursery.cancel_scope.cancel()


# --- the table ----------------------------------------------------------------------------


def render(report: Mapping[str, Any], detailed: str) -> str:
    """``report`` as text for a terminal: capabilities per revision, then one in detail."""
    from ._call import _printable

    # A terminal's width clips the long lines; elsewhere they are whole (and bounded).
    width = max(60, shutil.get_terminal_size().columns) if sys.stdout.isatty() else _WIDEST
    lines: list[str] = []
    info = report.get("server") or {}
    title = f" ({_printable(str(info['title']), 200)})" if info.get("title") else ""
    name = _printable(str(info.get("name", "?")), 200)
    lines.append(f"{name} {_printable(str(info.get('version', '?')), 100)}{title}")
    if report.get("instructions"):
        lines.append(f"instructions: {_clip(report['instructions'], width - 14)}")
    revisions: Mapping[str, Any] = report["revisions"]
    lines += ["", "Capabilities"]
    rows: list[tuple[str, ...]] = [
        ("REVISION", "TOOLS", "RESOURCES", "PROMPTS", "LOGGING", "COMPLETIONS", "MORE")
    ]
    for version, offered in revisions.items():
        capabilities = offered["capabilities"]
        more = [key for key in capabilities if key not in _CAPABILITY_COLUMNS]
        rows.append(
            (
                version,
                *(_capability(capabilities, key) for key in _CAPABILITY_COLUMNS),
                ", ".join(_capability_more(capabilities, key) for key in more) or "-",
            )
        )
    lines += _table(rows)
    offered = revisions.get(detailed) or next(iter(revisions.values()))
    shown = detailed if detailed in revisions else next(iter(revisions))
    tools = offered.get("tools", [])
    lines += ["", f"Tools ({len(tools)}, at {shown})"]
    for tool in tools:
        lines.append(f"  {_signature(tool)}")
        if tool.get("description"):
            lines.append(f"      {_clip(tool['description'], width - 6)}")
        lines.append(f"      input:  {_schema(tool.get('inputSchema'), width - 14)}")
        if "outputSchema" in tool:
            lines.append(f"      output: {_schema(tool['outputSchema'], width - 14)}")
    resources = offered.get("resources", [])
    lines += ["", f"Resources ({len(resources)})"]
    if resources:
        rows = [("URI", "NAME", "MIME TYPE")]
        rows += [
            (_clip(r.get("uri"), 80), _clip(r.get("name"), 40), _clip(r.get("mimeType"), 40))
            for r in resources
        ]
        lines += ["  " + row for row in _table(rows)]
    templates = offered.get("resourceTemplates", [])
    lines += ["", f"Resource templates ({len(templates)})"]
    if templates:
        rows = [("URI TEMPLATE", "NAME", "MIME TYPE")]
        rows += [
            (
                _clip(t.get("uriTemplate"), 80),
                _clip(t.get("name"), 40),
                _clip(t.get("mimeType"), 40),
            )
            for t in templates
        ]
        lines += ["  " + row for row in _table(rows)]
    prompts = offered.get("prompts", [])
    lines += ["", f"Prompts ({len(prompts)})"]
    for prompt in prompts:
        arguments = ", ".join(
            _clip(a.get("name"), 60) + ("*" if a.get("required") else "")
            for a in prompt.get("arguments") or []
        )
        lines.append(f"  {_clip(prompt.get('name'), 100)}({arguments})")
        if prompt.get("description"):
            lines.append(f"      {_clip(prompt['description'], width - 6)}")
    if prompts:
        lines.append("  (* required)")
    lines += _render_extensions(report.get("extensions") or [], width)
    return "\n".join(lines) + "\n"


def _render_extensions(extensions: Sequence[Mapping[str, Any]], width: int) -> list[str]:
    import orjson

    if not extensions:
        return []  # most servers enable none: no section
    lines = ["", f"Extensions ({len(extensions)})"]
    for extension in extensions:
        settings = orjson.dumps(extension["settings"]).decode()
        lines.append(f"  {_clip(extension['identifier'], 120)}  settings: {_clip(settings, 200)}")
        if extension.get("description"):
            lines.append(f"      {_clip(extension['description'], width - 6)}")
        if extension.get("requires"):
            lines.append(f"      requires: {_clip(', '.join(extension['requires']), width - 16)}")
        for method in extension["methods"]:
            lines.append(f"      request {_clip(method['name'], 120)}")
            lines.append(f"          params: {_schema(method['paramsSchema'], width - 18)}")
            lines.append(f"          result: {_schema(method['resultSchema'], width - 18)}")
        for notification in extension["notifications"]:
            way = "received" if notification["received"] else "sent"
            lines.append(f"      notification {_clip(notification['name'], 120)} ({way})")
            lines.append(f"          params: {_schema(notification['paramsSchema'], width - 18)}")
    return lines


_CAPABILITY_COLUMNS: Final = ("tools", "resources", "prompts", "logging", "completions")


def _capability(capabilities: Mapping[str, Any], key: str) -> str:
    if key not in capabilities:
        return "-"
    value = capabilities[key]
    flags = [name for name, on in value.items() if on is True] if isinstance(value, dict) else []
    return ", ".join(flags) or "yes"


def _capability_more(capabilities: Mapping[str, Any], key: str) -> str:
    value = capabilities[key]
    if isinstance(value, dict) and value and key == "extensions":
        return ", ".join(_clip(name, 80) for name in value)
    return _clip(key, 80)


def _signature(tool: Mapping[str, Any]) -> str:
    schema = tool.get("inputSchema") or {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    parts = []
    if isinstance(properties, dict):
        for name, spec in properties.items():
            kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
            kind = "|".join(map(str, kind)) if isinstance(kind, list) else str(kind)
            mark = "" if name in required else "?"
            parts.append(f"{_clip(name, 60)}{mark}: {_clip(kind, 40)}")
    returns = ""
    output = tool.get("outputSchema")
    if isinstance(output, dict):
        returns = f" -> {_clip(output.get('type', 'object'), 40)}"
    return f"{_clip(tool.get('name'), 120)}({', '.join(parts)}){returns}"


def _schema(schema: Any, width: int) -> str:
    import orjson

    try:
        text = orjson.dumps(schema).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = repr(schema)
    return _clip(text, max(width, 40))


def _clip(value: Any, length: int) -> str:
    from ._call import _printable

    text = " ".join(str(value if value is not None else "").split())
    return _printable(text, min(length, _WIDEST))


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
