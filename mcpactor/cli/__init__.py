"""The ``mcpactor`` command: serve a server module, call a tool, show the version.

Exit status: 0 when the command did what it was asked; 1 when a server could not be
loaded or started, or failed while serving; 2 when the command line or the configuration
file is wrong. Every error is a short message on stderr that names the culprit (the
option, the key, the file and line); ``--debug`` adds the traceback.

This module reads the command line and hands it to the command's own module: ``_serve``
(``serve``, over stdio), ``_http`` (``serve --http`` and its workers), ``_call``,
``_plugins``; ``_report`` turns what went wrong into those short messages.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn

# Each command's module is imported only when that command runs, to keep start-up short
# (``mcpactor --version`` reads none of them); they import what is heavy where it is used.
from .._version import __version__
from ..protocol._bounded import describe

if TYPE_CHECKING:
    from ..config import TargetError as TargetError
    from ..config import load_server as load_server
    from ._call import _printable as _printable
    from ._call import _printable_json as _printable_json
    from ._http import _parse_bind as _parse_bind

__all__ = ["load_server", "main"]

#: names kept importable from here, each from the module that now holds it
_MOVED: Final = {
    "load_server": "mcpactor.config",
    "TargetError": "mcpactor.config",
    "_parse_bind": "mcpactor.cli._http",
    "_printable": "mcpactor.cli._call",
    "_printable_json": "mcpactor.cli._call",
}


#: the commands each module adds with its own parser: module, function that runs it
_COMMANDS: Final = {
    "dev": ("._dev", "dev"),
    "inspect": ("._inspect", "inspect"),
    "install": ("._install", "install"),
    "new": ("._new", "new"),
    "top": ("._top", "top"),
}


def __getattr__(name: str) -> Any:
    # Imported on first use, not with this module: see above.
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mcpactor`` command line; return the process exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    json_logs = _asks_for_json_logs(arguments)
    if json_logs:
        # Before the command line is read: even a wrong option is said as a JSON line.
        from ..observability import use_json_logs

        use_json_logs()
    parser = _build_parser(only=_command_of(arguments))
    args = parser.parse_args(arguments)
    # Workers of ``serve --workers`` run the very same command line.
    args.argv = arguments
    if args.log_level is None and (args.verbose or args.quiet):
        # From WARNING, a step per -v down and per -q up (the file's level gives way too).
        step = min(max(2 - args.verbose + args.quiet, 0), len(_LOG_LEVELS) - 1)
        args.log_level = _LOG_LEVELS[step]
    if json_logs:
        logging.getLogger().setLevel(args.log_level or "WARNING")
    else:
        from ..observability import TextFormatter

        # Text lines that escape what came off the wire (see TextFormatter).
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(TextFormatter())
        logging.basicConfig(level=args.log_level or "WARNING", handlers=[handler])
    try:
        if args.command == "serve":
            from ._serve import serve

            return serve(args, parser)
        if args.command == "call":
            from ._call import call

            return call(args)
        if args.command == "plugins":
            from ._plugins import plugins

            return plugins(args)
        if args.command in _COMMANDS:
            import importlib

            module, function = _COMMANDS[args.command]
            run = getattr(importlib.import_module(module, __name__), function)
            return int(run(args))
    except Exception as exc:
        from ._report import report

        status_fd = getattr(args, "worker_status", None)
        if status_fd is not None:
            # A worker that did not reach serving: its supervisor says why, once.
            return _tell_supervisor(status_fd, exc, args)
        return report(exc, debug=args.debug, listen=getattr(args, "listen", None))
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover - argparse guards


def _tell_supervisor(fd: int, exc: Exception, args: argparse.Namespace) -> int:
    from ._report import failure_lines
    from ._workers import tell_supervisor

    status, lines, traceback_text = failure_lines(
        exc, debug=args.debug, listen=getattr(args, "listen", None)
    )
    tell_supervisor(fd, {"status": status, "lines": lines, "traceback": traceback_text})
    return status


# --- the command line --------------------------------------------------------------------


def _asks_for_json_logs(arguments: Sequence[str]) -> bool:
    # ``--log-format json`` (or ``=json``) anywhere before a ``--``.
    for index, argument in enumerate(arguments):
        if argument == "--":
            return False
        if argument == "--log-format=json" or (
            argument == "--log-format" and arguments[index + 1 : index + 2] == ["json"]
        ):
            return True
    return False


class _Parser(argparse.ArgumentParser):
    # A wrong option is one line that names it, not the usage of thirty options.

    def error(self, message: str) -> NoReturn:
        from ..observability._logs import json_handler

        if json_handler() is not None:
            from ._report import say

            say(f"{self.prog}: error: {message} (see {self.prog} --help)", level=logging.ERROR)
            self.exit(2)
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


_LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _log_level(text: str) -> str:
    level = text.upper()
    if level not in _LOG_LEVELS:
        expected = ", ".join(name.lower() for name in _LOG_LEVELS)
        raise argparse.ArgumentTypeError(f"expected one of {expected}, got {text!r}")
    return level


def _add_global_arguments(parser: argparse.ArgumentParser, *, command: bool) -> None:
    # Given before the command or after it: on a command, an option left out must not
    # overwrite the value given before it (SUPPRESS leaves it unset).
    parser.add_argument(
        "--log-level",
        type=_log_level,
        default=argparse.SUPPRESS if command else None,
        metavar="LEVEL",
        help="how much is logged to stderr: debug, info, warning (the default), error or "
        "critical, in any case",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS if command else False,
        help="on an error, print its traceback too",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS if command else 0,
        help="log more: -v info, -vv debug (--log-level wins)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="count",
        default=argparse.SUPPRESS if command else 0,
        help="log less: -q errors only, -qq critical only (--log-level wins)",
    )


#: every command, in the order ``--help`` lists them
_COMMAND_NAMES: Final = ("serve", "call", "plugins", "inspect", "install", "top", "new", "dev")


def _command_of(arguments: Sequence[str]) -> str | None:
    # The command a command line runs, when it is plain to see: nothing but global options
    # spelled out in full before it (-h and abbreviations print or mean something else).
    # None builds every command's parser.
    skip = False
    for argument in arguments:
        if skip:
            skip = False
        elif argument == "--log-level":
            skip = True
        elif argument.startswith("--log-level=") or argument in _PLAIN_GLOBAL_OPTIONS:
            continue
        elif argument.startswith("-"):
            if not (len(argument) > 1 and set(argument[1:]) <= {"v", "q"}):
                return None
        else:
            return argument if argument in _COMMAND_NAMES else None
    return None


#: the global options that take no value, as ``_command_of`` accepts them before a command
_PLAIN_GLOBAL_OPTIONS: Final = frozenset({"--debug", "--verbose", "--quiet"})


def _build_parser(only: str | None = None) -> argparse.ArgumentParser:
    # With ``only``, the other commands' parsers are left out: building them all (and
    # importing their modules) is a good part of a stdio server's start. The command run
    # parses exactly as in the full parser; only ``mcpactor --help``, which needs them
    # all, lists them, and it is never built with ``only``.
    parser = _Parser(prog="mcpactor", description="Model Context Protocol servers on trio.")
    parser.add_argument("--version", action="version", version=f"mcpactor {__version__}")
    _add_global_arguments(parser, command=False)
    commands = parser.add_subparsers(dest="command", required=True)
    if only is None or only in ("serve", "dev"):
        serve = _add_serve_parser(commands)
    if only in (None, "call"):
        _add_call_parser(commands)
    if only in (None, "plugins"):
        _add_plugins_parser(commands)
    if only in (None, "inspect"):
        from ._inspect import add_inspect_parser

        add_inspect_parser(commands, _add_global_arguments, _add_composition_arguments)
    if only in (None, "install"):
        from ._install import add_install_parser

        add_install_parser(commands, _add_global_arguments)
    if only in (None, "top"):
        from ._top import add_top_parser

        add_top_parser(commands, _add_global_arguments)
    if only in (None, "new"):
        from ._new import add_new_parser

        add_new_parser(commands, _add_global_arguments)
    if only in (None, "dev"):
        from ._dev import add_dev_parser

        # Last: dev takes every option serve has by then.
        add_dev_parser(commands, serve)
    return parser


def _add_serve_parser(commands: Any) -> argparse.ArgumentParser:
    serve: argparse.ArgumentParser = commands.add_parser(
        "serve", help="serve one server, several as one, or every installed plugin"
    )
    _add_global_arguments(serve, command=True)
    _add_composition_arguments(serve)
    serve.add_argument(
        "--grace",
        type=_seconds,
        default=5.0,
        help="seconds in-flight requests get to finish at shutdown (default: 5)",
    )
    serve.add_argument(
        "--max-message-bytes",
        type=_count,
        default=4 * 1024 * 1024,
        help="the longest message read or written, in bytes: a stdin line, an HTTP body, a "
        "WebSocket message, an answer (default: 4 MiB)",
    )
    serve.add_argument(
        "--state-key-file",
        metavar="PATH",
        help="the keys that seal the state of multi round-trip requests (stateless "
        "revisions), one base64 key per line, the first sealing; processes sharing it take "
        "each other's retries (default: $MCPACTOR_STATE_KEYS, else a key of this process)",
    )
    serve.add_argument(
        "--listen-keepalive",
        type=_positive_seconds,
        default=None,
        metavar="SECONDS",
        help="seconds between keep-alive comments on idle listen streams over HTTP (default: 15)",
    )
    serve.add_argument(
        "--no-gc-tuning",
        action="store_true",
        help="keep Python's cycle-collector settings (default: freeze start-up and collect "
        "young objects every 100 000 allocations)",
    )
    _add_http_arguments(serve)
    from ._auth import add_auth_arguments

    add_auth_arguments(serve)
    from ._admin import add_admin_arguments

    add_admin_arguments(serve)
    from ._store import add_store_arguments

    add_store_arguments(serve)
    from ._observability import add_observability_arguments

    add_observability_arguments(serve)
    return serve


def _comma_list(text: str) -> tuple[str, ...]:
    # Addresses or networks, comma-separated, each checked here so a typo is named.
    from ..transports._forwarded import parse_networks

    items = tuple(item.strip() for item in text.split(",") if item.strip())
    try:
        parse_networks(items, option="--forwarded-allow-ips")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).partition(": ")[2]) from None
    if not items:
        raise argparse.ArgumentTypeError(f"expected addresses or networks, got {text!r}")
    return items


def _count(text: str) -> int:
    # A positive integer; ``1_000`` reads as in Python and TOML.
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    value = _seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _endpoint_path(text: str) -> str:
    if not text.startswith("/"):
        raise argparse.ArgumentTypeError(f"expected a path starting with '/', got {text!r}")
    return text


def _add_composition_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help="an installed plugin's name, package.module[:attr], path/to/server.py[:attr] "
        "or an http(s):// or ws:// URL; several are served as one, each under a prefix "
        "(default: every installed plugin, or the servers of --config)",
    )
    serve.add_argument(
        "--config",
        metavar="FILE",
        help="serve what FILE names (mcpactor.toml, or pyproject.toml with [tool.mcpactor]; "
        "a directory: the one in it); TARGETs then pick servers of it by name",
    )
    serve.add_argument(
        "--no-prefix",
        action="store_true",
        help="serve tool and prompt names unprefixed (a name served twice is an error)",
    )
    serve.add_argument(
        "--prefix",
        action="append",
        default=[],
        metavar="NAME=PREFIX",
        help="the prefix of the server NAME (default: NAME); repeatable",
    )
    serve.add_argument(
        "--max-concurrent",
        action="append",
        default=[],
        metavar="NAME=N",
        help="serve at most N requests of the server NAME at once; repeatable",
    )
    serve.add_argument(
        "--strict",
        action="store_true",
        help="a plugin that fails to load stops the server instead of being left out "
        "(a TARGET named on the command line always does)",
    )


def _add_plugins_parser(commands: Any) -> None:
    plugins = commands.add_parser(
        "plugins",
        help="list the installed plugins and what each serves",
        description="List the servers installed in the mcpactor.servers entry-point group: "
        "name, distribution, version, how many tools, resources and prompts each serves, "
        "and why one fails to load.",
    )
    _add_global_arguments(plugins, command=True)
    plugins.add_argument("--json", action="store_true", help="print the list as JSON")
    plugins.add_argument(
        "--strict", action="store_true", help="exit with status 1 if a plugin fails to load"
    )


def _add_http_arguments(serve: argparse.ArgumentParser) -> None:
    http = serve.add_argument_group("HTTP (Streamable HTTP, legacy HTTP+SSE and WebSocket)")
    http.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve over HTTP on HOST (default 127.0.0.1) and PORT instead of stdio",
    )
    http.add_argument(
        "--path",
        type=_endpoint_path,
        default="/mcp",
        help="the MCP endpoint path (default: /mcp)",
    )
    http.add_argument(
        "--stateless",
        action="store_true",
        help="no sessions: every POST is served on its own (no GET stream, no resumption)",
    )
    http.add_argument(
        "--response-mode",
        choices=("auto", "json", "sse"),
        default=None,
        help="how a POST is answered: auto (JSON unless something precedes the response; "
        "the default), json (always application/json: what precedes the response goes "
        "to the session's GET stream) or sse (always an SSE stream)",
    )
    http.add_argument(
        "--json-response",
        dest="response_mode",
        action="store_const",
        const="json",
        help="the same as --response-mode json",
    )
    http.add_argument(
        "--http-server",
        choices=("builtin", "hypercorn"),
        default=None,
        help="the HTTP server: mcpactor's own HTTP/1.1 server (builtin, the default and "
        "the fastest) or hypercorn's trio worker (HTTP/2)",
    )
    http.add_argument(
        "--tls-cert",
        metavar="FILE",
        help="serve HTTPS with this PEM certificate (chain); needs --tls-key",
    )
    http.add_argument("--tls-key", metavar="FILE", help="the PEM private key of --tls-cert")
    http.add_argument(
        "--allowed-hosts",
        nargs="+",
        metavar="HOST",
        help="Host header values to accept (default on loopback: localhost, 127.0.0.1, "
        "[::1]; '*' accepts any)",
    )
    http.add_argument(
        "--allowed-origins",
        nargs="+",
        metavar="ORIGIN",
        help="Origin header values to accept (default on loopback: loopback origins, "
        "elsewhere same-origin only; '*' accepts any)",
    )
    http.add_argument(
        "--cors-origins",
        nargs="+",
        metavar="ORIGIN",
        help="origins whose browser pages may read the answers (CORS headers; default: none)",
    )
    http.add_argument(
        "--authenticate",
        metavar="MODULE:FUNCTION",
        help="call FUNCTION(headers) on every request: a principal, or a false value for "
        "401 (default: no authentication)",
    )
    http.add_argument(
        "--health-path",
        type=_endpoint_path,
        default=None,
        metavar="PATH",
        help="where the liveness endpoint answers 200 (default: /healthz)",
    )
    http.add_argument(
        "--no-health",
        action="store_true",
        help="serve no liveness endpoint",
    )
    http.add_argument(
        "--access-log",
        action="store_true",
        help="log one line per HTTP request (logger mcpactor.access, at INFO)",
    )
    http.add_argument(
        "--max-sessions",
        type=_count,
        metavar="N",
        help="live sessions at most; 503 past it (default: 10000)",
    )
    http.add_argument(
        "--max-sessions-per-client",
        type=_count,
        metavar="N",
        help="live sessions one client address may hold, and at the stateless revision "
        "its requests in flight (default: 256)",
    )
    http.add_argument(
        "--forwarded-allow-ips",
        type=_comma_list,
        metavar="ADDRESSES",
        help="comma-separated addresses or networks of reverse proxies whose forwarded "
        "client address (X-Forwarded-For, or --forwarded-header) counts for the per-client "
        "limit and the access log (default: none, the peer's address counts)",
    )
    http.add_argument(
        "--forwarded-header",
        choices=("x-forwarded-for", "forwarded"),
        help="the header those proxies write the client's address to (default: "
        "x-forwarded-for); only that one is read",
    )
    http.add_argument(
        "--max-connections",
        type=_count,
        metavar="N",
        help="open connections at most, WebSockets included (default: 1000)",
    )
    http.add_argument(
        "--session-idle-timeout",
        type=_positive_seconds,
        metavar="SECONDS",
        help="a session without requests or connections this long ends (default: 1800)",
    )
    http.add_argument(
        "--keep-alive-timeout",
        type=_positive_seconds,
        metavar="SECONDS",
        help="an idle keep-alive connection is closed after this long (default: 75)",
    )
    http.add_argument(
        "--request-timeout",
        type=_positive_seconds,
        metavar="SECONDS",
        help="a request's head and body must arrive within this long (default: 30)",
    )
    http.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="serve from N processes on the one port, to use N cores (needs --stateless "
        "or --store; default: 1)",
    )
    # What the supervisor of --workers hands each worker: its listening socket, and the
    # pipe whose end tells it that the supervisor is gone.
    serve.add_argument("--worker-socket", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--worker-lifeline", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--worker-status", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--worker-number", type=int, help=argparse.SUPPRESS)


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {describe(text)}") from None
    except RecursionError:
        raise argparse.ArgumentTypeError(f"nested too deeply: {describe(text)}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {describe(text)}")
    return value


def _add_call_parser(commands: Any) -> None:
    call = commands.add_parser(
        "call",
        help="make one request to a stdio or HTTP server, print the result as JSON",
        description=(
            "Start COMMAND as a stdio MCP server (or connect to the Streamable HTTP "
            "server at --url), initialize it, perform one action and print its JSON "
            "result. A JSON-RPC error goes to stderr with exit status 1; a tool result "
            "with isError: true is a result (exit status 0)."
        ),
        usage="%(prog)s (--list | --tool NAME | --resource URI | --prompt NAME | --repl) "
        "[--args JSON] [--protocol-version V] (--url URL [--header 'NAME: VALUE'] | "
        "-- COMMAND [ARGS...])",
    )
    _add_global_arguments(call, command=True)
    action = call.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--list", action="store_true", help="list the tools, resources and prompts it serves"
    )
    action.add_argument("--tool", metavar="NAME", help="call the tool NAME")
    action.add_argument("--resource", metavar="URI", help="read the resource at URI")
    action.add_argument("--prompt", metavar="NAME", help="get the prompt NAME")
    action.add_argument(
        "--repl",
        action="store_true",
        help="an interactive session: list, call, read, get prompts, see notifications "
        "('help' lists the commands; history in the user's state directory)",
    )
    call.add_argument(
        "--args",
        type=_json_object,
        metavar="JSON",
        help="arguments of --tool or --prompt, as a JSON object",
    )
    call.add_argument(
        "--protocol-version",
        default=None,
        metavar="V",
        help="the protocol revision to ask for (default: the latest)",
    )
    call.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="give up waiting for the answer after this long (default: wait)",
    )
    call.add_argument(
        "--progress",
        choices=("auto", "bar", "lines", "none"),
        default="auto",
        help="how progress is shown on stderr: a bar (the default on a terminal), plain "
        "lines (the default elsewhere) or not at all",
    )
    call.add_argument(
        "--url",
        metavar="URL",
        help="the Streamable HTTP endpoint of a running server (http://host:port/mcp)",
    )
    call.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header sent with every request to --url (e.g. Authorization); repeatable",
    )
    call.add_argument(
        "server_command", nargs="*", metavar="COMMAND", help="the server command, after --"
    )
