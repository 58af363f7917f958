"""``mcpactor call --repl``: one session with a server, driven a line at a time.

The session is opened once (a stdio command, or a Streamable HTTP URL) and each line is
a command: list what the server offers, call a tool with its arguments as JSON, read a
resource, get a prompt, subscribe, set the log level. Progress of a call is shown while
it runs; notifications (log messages, list changes, resource updates) whenever they
come, above the prompt when it is waiting. Ctrl-C cancels the running call (the server
is told), and at the prompt a second Ctrl-C leaves, as Ctrl-D and ``quit`` do.

Lines are read with readline where there is one, in a worker thread, so the trio run
keeps serving the session while the prompt waits; the history is kept in a file of the
user's state directory (``$XDG_STATE_HOME/mcpactor/call_history``). Everything printed
that came from the server is escaped (no terminal control sequences) and bounded. The
terminal's side of this is ``_repl_terminal``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Final, TextIO

import trio

from .._exceptions import MCPActorError, RequestError, TransportError
from ..protocol import clip, error_text
from ._repl_terminal import (
    Console,
    LineReader,
    escaped,
    history_path,
    in_main_thread,
    terminal_kept,
)

if TYPE_CHECKING:
    from ..client import ClientSession

__all__ = ["history_path", "repl"]

#: pages of a list followed at most
_MAX_PAGES: Final = 100

#: command: (arguments, what it does)
COMMANDS: Final = {
    "tools": ("", "list the tools (name, arguments, description)"),
    "resources": ("", "list the resources and resource templates"),
    "prompts": ("", "list the prompts"),
    "call": ("TOOL [JSON]", "call TOOL with its arguments as a JSON object"),
    "read": ("URI", "read the resource at URI"),
    "prompt": ("NAME [JSON]", "get the prompt NAME with its arguments as a JSON object"),
    "subscribe": ("URI", "be told when the resource at URI changes"),
    "unsubscribe": ("URI", "stop being told"),
    "log": ("LEVEL", "have the server send log messages at LEVEL and above"),
    "ping": ("", "ping the server"),
    "info": ("", "the server's name, version, protocol revision and capabilities"),
    "history": ("[N]", "the last N commands (default 20)"),
    "help": ("[COMMAND]", "this list, or one command's"),
    "quit": ("", "end the session (or Ctrl-D)"),
}


def repl(args: argparse.Namespace, progress_display: Callable[[TextIO, str], Any]) -> int:
    """Run the session ``args`` name, a line at a time; return the exit status.

    ``progress_display(stream, mode)`` makes what shows a call's progress (``call``'s
    display, passed in so that this module does not import that one back).
    """
    terminal = sys.stdin.isatty()
    with terminal_kept(terminal):
        lines = LineReader(terminal, list(COMMANDS))
        try:
            status = trio.run(_session, args, lines, progress_display)
        finally:
            lines.save()
    if lines.reading:
        # Left with Ctrl-C while the reading thread waits in readline: nothing wakes it,
        # and the interpreter's finalization is no place for a thread inside readline.
        # The history is saved and the terminal restored: end here.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


async def _session(
    args: argparse.Namespace, lines: LineReader, progress_display: Callable[[TextIO, str], Any]
) -> int:
    from ..protocol import LATEST

    console = Console(lines)
    try:
        async with _connect(args, console) as client:
            await client.initialize(args.protocol_version or LATEST.version)
            info = client.server.info or {}
            console.say(
                f"connected to {escaped(clip(str(info.get('name', '?')), 200))} "
                f"{escaped(clip(str(info.get('version', '')), 50))} "
                f"(protocol {client.server.protocol_version}); 'help' lists the commands"
            )
            mode = getattr(args, "progress", "auto")
            repl = _Repl(
                client, console, lines, args.timeout, lambda: progress_display(sys.stderr, mode)
            )
            await repl.names()
            return await repl.run()
    except RequestError as exc:
        console.notice(f"mcpactor call: error {exc.code}: {escaped(clip(exc.message, 2000))}")
        return 1
    except trio.TooSlowError:
        console.notice(f"mcpactor call: no answer within {args.timeout} s")
        return 1
    except (MCPActorError, OSError, ValueError) as exc:
        console.notice(f"mcpactor call: {error_text(exc, 2000)}")
        return 1


@contextlib.asynccontextmanager
async def _connect(args: argparse.Namespace, console: Console) -> AsyncIterator[ClientSession]:
    from ..client import connect_http, connect_stdio

    def seen(message: Any, answering: str | None) -> None:
        # Notifications as they arrive; a call's own progress is its display's.
        if isinstance(message, dict) and "id" not in message and "method" in message:
            text = _notification_text(message)
            if text is not None:
                console.notice(text)

    if args.url is not None:
        connection = connect_http(args.url, headers=args.headers, on_server_message=seen)
    else:
        # Ctrl-C is the REPL's (it cancels a call), never the server's.
        connection = connect_stdio(args.server_command, own_session=True, on_server_message=seen)
    async with connection as client:
        yield client


def _notification_text(message: dict[str, Any]) -> str | None:
    import orjson

    method = str(message.get("method"))
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    if method == "notifications/progress":
        return None
    if method == "notifications/message":
        data = params.get("data")
        words = data if isinstance(data, str) else orjson.dumps(data).decode()
        logger = f" {params['logger']}" if isinstance(params.get("logger"), str) else ""
        text = f"[log {params.get('level')}{logger}] {words}"
    elif method.endswith("/list_changed"):
        text = f"[{method.removeprefix('notifications/').removesuffix('/list_changed')} changed]"
    elif method == "notifications/resources/updated":
        text = f"[resource updated] {params.get('uri')}"
    else:
        text = f"[{method}] {orjson.dumps(params).decode()}"
    return escaped(clip(text, 2000))


class _Repl:
    """The loop: read a line, run its command, show what came of it."""

    def __init__(
        self,
        client: ClientSession,
        console: Console,
        lines: LineReader,
        timeout: float | None,
        progress: Callable[[], Any],
    ) -> None:
        self.client = client
        self.console = console
        self.lines = lines
        self.timeout = timeout
        self.progress = progress
        #: the running command's scope, which Ctrl-C cancels
        self.running: trio.CancelScope | None = None
        #: whether the last thing pressed at the prompt was Ctrl-C
        self.interrupted = False
        self.done = False
        #: the loop's scope, which a second Ctrl-C at the prompt cancels
        self.loop: trio.CancelScope | None = None

    async def run(self) -> int:
        """Serve lines until the input ends or ``quit``; return the exit status."""
        async with trio.open_nursery() as nursery:
            if self.lines.terminal and in_main_thread():
                await nursery.start(self._watch_interrupts)
            with trio.CancelScope() as self.loop:
                while not self.done:
                    self.console.prompting = True
                    try:
                        # Left waiting in its thread if the loop is cancelled meanwhile.
                        line = await trio.to_thread.run_sync(
                            self.lines.read, abandon_on_cancel=True
                        )
                    finally:
                        self.console.prompting = False
                    if line is None:
                        break
                    self.interrupted = False
                    if line.strip():
                        self.lines.remember(line)
                        await self.execute(line)
            nursery.cancel_scope.cancel()
        return 0

    async def _watch_interrupts(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        import signal

        with trio.open_signal_receiver(signal.SIGINT) as interrupts:
            task_status.started()
            async for _ in interrupts:
                if self.running is not None:
                    self.running.cancel("interrupted")
                elif self.interrupted:
                    # Twice at the prompt: leave (the reading thread is left behind).
                    self.console.prompting = False
                    self.console.notice("")
                    self.done = True
                    if self.loop is not None:
                        self.loop.cancel("left with Ctrl-C")
                else:
                    self.interrupted = True
                    self.console.notice("(Ctrl-C again, Ctrl-D or quit leaves)")

    async def execute(self, line: str) -> None:
        """Run one command line, reporting its failure without ending the session."""
        name, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        command = getattr(self, f"do_{name}", None)
        if name not in COMMANDS or command is None:
            self.console.notice(f"unknown command {escaped(clip(name, 100))!r}; 'help' lists them")
            return
        with trio.CancelScope() as scope:
            self.running = scope
            try:
                await command(rest)
            except _UsageError as exc:
                self.console.notice(f"{name}: {exc}")
            except RequestError as exc:
                detail = ""
                if exc.data is not None:
                    detail = f": {escaped(clip(_json(exc.data), 2000))}"
                message = escaped(clip(exc.message, 2000))
                self.console.notice(f"error {exc.code}: {message}{detail}")
            except trio.TooSlowError:
                self.console.notice(f"no answer within {self.timeout} s (the server was told)")
            except TransportError:
                raise
            except MCPActorError as exc:
                self.console.notice(error_text(exc, 2000))
            finally:
                self.running = None
        if scope.cancelled_caught:
            self.console.notice("cancelled (the server was told)")

    # --- the commands ----------------------------------------------------------------

    async def do_help(self, rest: str) -> None:
        if rest:
            if rest not in COMMANDS:
                raise _UsageError(f"no command {escaped(clip(rest, 100))!r}")
            usage, what = COMMANDS[rest]
            self.console.say(f"{rest} {usage}".rstrip() + f"\n    {what}")
            return
        width = max(len(f"{name} {usage}") for name, (usage, _) in COMMANDS.items())
        rows = [
            f"  {f'{name} {usage}'.ljust(width)}  {what}"
            for name, (usage, what) in COMMANDS.items()
        ]
        self.console.say(
            "Commands:\n" + "\n".join(rows) + "\nJSON arguments are an object, e.g. "
            'call add {"a": 2, "b": 3}. Tab completes; Up and Down walk the history; '
            "Ctrl-C cancels a running call."
        )

    async def do_quit(self, rest: str) -> None:
        self.done = True

    async def do_tools(self, rest: str) -> None:
        tools = await self._list("tools/list", "tools")
        self.console.say(_count(len(tools), "tool"))
        for tool in tools:
            signature = _signature(tool.get("inputSchema"))
            self.console.say(_row(f"{tool.get('name')}({signature})", tool.get("description")))

    async def do_resources(self, rest: str) -> None:
        resources = await self._list("resources/list", "resources")
        templates = await self._list("resources/templates/list", "resourceTemplates")
        self.console.say(
            f"{_count(len(resources), 'resource')}, {_count(len(templates), 'template')}"
        )
        for resource in resources:
            self.console.say(_row(str(resource.get("uri")), resource.get("description")))
        for template in templates:
            self.console.say(_row(str(template.get("uriTemplate")), template.get("description")))

    async def do_prompts(self, rest: str) -> None:
        prompts = await self._list("prompts/list", "prompts")
        self.console.say(_count(len(prompts), "prompt"))
        for prompt in prompts:
            arguments = prompt.get("arguments")
            names = [
                f"{argument.get('name')}{'' if argument.get('required') else '?'}"
                for argument in (arguments if isinstance(arguments, list) else [])
                if isinstance(argument, dict)
            ]
            self.console.say(
                _row(f"{prompt.get('name')}({', '.join(names)})", prompt.get("description"))
            )

    async def do_call(self, rest: str) -> None:
        name, arguments = _name_and_object(rest, "call TOOL [JSON]")
        display = self.progress()
        try:
            result = await self.client.request(
                "tools/call",
                {"name": name, "arguments": arguments},
                timeout=self.timeout,
                progress_handler=display.update,
            )
        finally:
            display.close()
        self.console.result(result)

    async def do_read(self, rest: str) -> None:
        uri = _one_word(rest, "read URI")
        self.console.result(
            await self.client.request("resources/read", {"uri": uri}, timeout=self.timeout)
        )

    async def do_prompt(self, rest: str) -> None:
        name, arguments = _name_and_object(rest, "prompt NAME [JSON]")
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = arguments
        self.console.result(await self.client.request("prompts/get", params, timeout=self.timeout))

    async def do_subscribe(self, rest: str) -> None:
        uri = _one_word(rest, "subscribe URI")
        await self.client.request("resources/subscribe", {"uri": uri}, timeout=self.timeout)
        self.console.say(f"subscribed to {escaped(clip(uri, 500))}")

    async def do_unsubscribe(self, rest: str) -> None:
        uri = _one_word(rest, "unsubscribe URI")
        await self.client.request("resources/unsubscribe", {"uri": uri}, timeout=self.timeout)
        self.console.say(f"unsubscribed from {escaped(clip(uri, 500))}")

    async def do_log(self, rest: str) -> None:
        level = _one_word(rest, "log LEVEL")
        await self.client.request("logging/setLevel", {"level": level}, timeout=self.timeout)
        self.console.say(f"log level {escaped(clip(level, 50))}")

    async def do_ping(self, rest: str) -> None:
        await self.client.request("ping", timeout=self.timeout)
        self.console.say("pong")

    async def do_info(self, rest: str) -> None:
        self.console.result(
            {
                "serverInfo": self.client.server.info,
                "protocolVersion": self.client.server.protocol_version,
                "capabilities": self.client.server.capabilities,
            }
        )

    async def do_history(self, rest: str) -> None:
        count = 20
        if rest:
            if not rest.isdigit():
                raise _UsageError(f"expected a number of commands, got {rest!r}")
            count = int(rest)
        entries = self.lines.history()
        first = max(len(entries) - count, 0)
        for number, entry in enumerate(entries[first:], start=first + 1):
            self.console.say(f"{number:5}  {entry}")

    # --- helpers ---------------------------------------------------------------------

    async def _list(self, method: str, key: str) -> list[dict[str, Any]]:
        # Every page, up to a bound; what a page holds that is not an object is skipped.
        items: list[dict[str, Any]] = []
        cursor: Any = None
        for _ in range(_MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else None
            page = await self.client.request(method, params, timeout=self.timeout)
            found = page.get(key)
            items.extend(item for item in (found or []) if isinstance(item, dict))
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str):
                break
        return items

    async def names(self) -> None:
        """Learn the names to complete (what the server offers, when it says so)."""
        capabilities = self.client.server.capabilities
        names = self.lines.names
        with contextlib.suppress(MCPActorError):
            if "tools" in capabilities:
                names["call"] = [
                    str(t.get("name")) for t in await self._list("tools/list", "tools")
                ]
            if "resources" in capabilities:
                uris = [str(r.get("uri")) for r in await self._list("resources/list", "resources")]
                names["read"] = names["subscribe"] = names["unsubscribe"] = uris
            if "prompts" in capabilities:
                names["prompt"] = [
                    str(p.get("name")) for p in await self._list("prompts/list", "prompts")
                ]
        names["help"] = list(COMMANDS)
        names["log"] = ["debug", "info", "notice", "warning", "error", "critical", "alert"]


class _UsageError(Exception):
    # A command line that is wrong: said, and the session goes on.
    pass


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _json(value: Any) -> str:
    import orjson

    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def _row(head: str, description: Any) -> str:
    text = f"  {head}"
    if isinstance(description, str) and description.strip():
        first = description.strip().splitlines()[0]
        text += f"  {first}"
    return escaped(clip(text, 300))


def _signature(schema: Any) -> str:
    # ``a: integer, b?: string`` from an object schema; ``…`` for anything else.
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return ""
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    parts = []
    for name, prop in schema["properties"].items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        mark = "" if name in required else "?"
        parts.append(f"{name}{mark}: {kind}" if isinstance(kind, str) else f"{name}{mark}")
    return ", ".join(parts)


def _one_word(rest: str, usage: str) -> str:
    if not rest or len(rest.split()) != 1:
        raise _UsageError(f"usage: {usage}")
    return rest


def _name_and_object(rest: str, usage: str) -> tuple[str, dict[str, Any]]:
    import json

    name, _, text = rest.partition(" ")
    if not name:
        raise _UsageError(f"usage: {usage}")
    text = text.strip()
    if not text:
        return name, {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise _UsageError(f"arguments: not valid JSON ({exc})") from None
    except RecursionError:
        raise _UsageError("arguments: nested too deeply") from None
    if not isinstance(value, dict):
        raise _UsageError(f"arguments: expected a JSON object, got {type(value).__name__}")
    return name, value
