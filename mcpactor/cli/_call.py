"""``mcpactor call``: one request to a stdio or HTTP server, its result printed as JSON."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Final, TextIO

from .._exceptions import MCPActorError, RequestError
from ..protocol import clip, describe, error_text

__all__ = ["call"]


def _printable(text: str, length: int = 2000) -> str:
    # A server's words reach a terminal: escape what could steer it, and bound them.
    head = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text[: length + 1])
    return clip(head, length)


def _printable_json(value: Any) -> str:
    import orjson

    try:
        return _printable(orjson.dumps(value).decode())
    except (TypeError, orjson.JSONEncodeError):
        return describe(value)


#: cells of the progress bar
_BAR_CELLS: Final = 30


class ProgressDisplay:
    """Shows a request's progress notifications on ``stream``: a bar or plain lines.

    A bar is redrawn in place (carriage return, erase to the end of the line), so it
    belongs on a terminal; plain lines suit a log or a pipe. ``auto`` picks the bar when
    ``stream`` is a terminal.
    """

    def __init__(self, stream: TextIO, mode: str = "auto") -> None:
        if mode == "auto":
            mode = "bar" if stream.isatty() else "lines"
        self.stream = stream
        self.mode = mode
        self.drawn = False

    async def update(self, progress: float, total: float | None, message: str | None) -> None:
        """Show one notification (a ``ProgressHandler``)."""
        if self.mode == "none":
            return
        if self.mode == "bar":
            import shutil

            width = shutil.get_terminal_size().columns
            line = _printable(bar_text(progress, total, message), max(width - 1, 20))
            self.stream.write(f"\r{line}\x1b[K")
            self.drawn = True
        else:
            amount = _amount(progress, total, message, percent=True)
            self.stream.write(f"mcpactor call: progress {_printable(amount, 300)}\n")
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line, so what follows starts on a line of its own."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False


def bar_text(progress: float, total: float | None, message: str | None) -> str:
    """One frame of the bar: ``[#####.....]  50% 5/10 message``."""
    if total is not None and total > 0:
        fraction = min(max(progress / total, 0.0), 1.0)
        filled = round(fraction * _BAR_CELLS)
        bar = f"[{'#' * filled}{'.' * (_BAR_CELLS - filled)}] {fraction:4.0%}"
    else:
        # No total: how far, without a bar to fill.
        bar = f"[{'?' * _BAR_CELLS}]"
    return f"{bar} {_amount(progress, total, message)}"


def _amount(
    progress: float, total: float | None, message: str | None, *, percent: bool = False
) -> str:
    text = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
    if percent and total is not None and total > 0:
        text += f" ({min(max(progress / total, 0.0), 1.0):.0%})"
    if message:
        # A server's words: one line, bounded (and escaped by the caller).
        text += f" {' '.join(message[:1000].split())}"
    return text


def call(args: argparse.Namespace) -> int:
    """Make the one request ``args`` ask for; return the exit status."""
    import trio

    if args.args is not None and (args.list or args.repl or args.resource is not None):
        print("mcpactor call: error: --args goes with --tool or --prompt", file=sys.stderr)
        return 2
    if (args.url is None) == (not args.server_command):
        print("mcpactor call: error: give either --url or COMMAND (after --)", file=sys.stderr)
        return 2
    headers: dict[str, str] = {}
    for header in args.header:
        name, colon, value = header.partition(":")
        if not colon or not name.strip():
            print(
                f"mcpactor call: error: --header expects 'NAME: VALUE', got {header!r}",
                file=sys.stderr,
            )
            return 2
        headers[name.strip()] = value.strip()
    args.headers = headers
    if args.url is not None:
        from ._extras import require

        require("http", "mcpactor call --url", modules=("h11",))
    if args.repl:
        from ._repl import repl

        return repl(args, ProgressDisplay)
    return trio.run(_call_server, args)


async def _call_server(args: argparse.Namespace) -> int:
    from contextlib import AbstractAsyncContextManager

    import orjson
    import trio

    from ..client import ClientSession, connect_http, connect_stdio
    from ..protocol import LATEST

    progress = ProgressDisplay(sys.stderr, getattr(args, "progress", "auto"))

    async def perform(client: ClientSession) -> Any:
        shown = progress.update
        try:
            if args.tool is not None:
                return await client.call_tool(
                    args.tool, args.args, timeout=args.timeout, progress_handler=shown
                )
            if args.resource is not None:
                return await client.request(
                    "resources/read",
                    {"uri": args.resource},
                    timeout=args.timeout,
                    progress_handler=shown,
                )
            if args.prompt is not None:
                params: dict[str, Any] = {"name": args.prompt}
                if args.args is not None:
                    params["arguments"] = args.args
                return await client.request(
                    "prompts/get", params, timeout=args.timeout, progress_handler=shown
                )
        finally:
            progress.close()
        listing: dict[str, Any] = {}
        capabilities = client.server.capabilities
        if "tools" in capabilities:
            listing["tools"] = await client.list_tools()
        if "resources" in capabilities:
            listing["resources"] = await client.list_resources()
            listing["resourceTemplates"] = await client.list_resource_templates()
        if "prompts" in capabilities:
            listing["prompts"] = await client.list_prompts()
        return listing

    connection: AbstractAsyncContextManager[ClientSession]
    try:
        if args.url is not None:
            connection = connect_http(args.url, headers=args.headers)
        else:
            connection = connect_stdio(args.server_command)
        async with connection as client:
            await client.initialize(args.protocol_version or LATEST.version)
            result = await perform(client)
    except RequestError as exc:
        detail = f": {_printable_json(exc.data)}" if exc.data is not None else ""
        message = _printable(exc.message)
        print(f"mcpactor call: error {exc.code}: {message}{detail}", file=sys.stderr)
        return 1
    except trio.TooSlowError:
        print(f"mcpactor call: no answer within {args.timeout} s", file=sys.stderr)
        return 1
    except (MCPActorError, OSError, ValueError) as exc:
        print(f"mcpactor call: {error_text(exc, 2000)}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()
    return 0
