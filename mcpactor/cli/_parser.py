"""The ``mcpactor`` command line: its parser, and the ``call`` and ``plugins`` commands'.

Each other command adds its own parser from its module, imported only when that command
is built (``serve`` from ``_serve_parser``).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from typing import Any, Final, NoReturn

from .._version import __version__
from ._arguments import add_composition_arguments, add_global_arguments, json_object

__all__ = ["COMMAND_NAMES", "Parser", "asks_for_version", "build_parser", "command_of"]


class Parser(argparse.ArgumentParser):
    # A wrong option is one line that names it, not the usage of thirty options.

    def error(self, message: str) -> NoReturn:
        from ..observability import json_handler

        if json_handler() is not None:
            from ._report import say

            say(f"{self.prog}: error: {message} (see {self.prog} --help)", level=logging.ERROR)
            self.exit(2)
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


#: every command, in the order ``--help`` lists them
COMMAND_NAMES: Final = ("serve", "call", "plugins", "inspect", "install", "top", "new", "dev")


def command_of(arguments: Sequence[str]) -> str | None:
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
            return argument if argument in COMMAND_NAMES else None
    return None


def asks_for_version(arguments: Sequence[str]) -> bool:
    # ``--version`` before any command, after nothing but global options that take no value:
    # the full parser would print the same line, but building it imports every command.
    for argument in arguments:
        if argument == "--version":
            return True
        if argument in _PLAIN_GLOBAL_OPTIONS:
            continue
        if not (
            argument.startswith("-") and len(argument) > 1 and set(argument[1:]) <= {"v", "q"}
        ):
            return False
    return False


#: the global options that take no value, as ``command_of`` accepts them before a command
_PLAIN_GLOBAL_OPTIONS: Final = frozenset({"--debug", "--verbose", "--quiet"})


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    # With ``only``, the other commands' parsers are left out: building them all (and
    # importing their modules) is a good part of a stdio server's start. The command run
    # parses exactly as in the full parser; only ``mcpactor --help``, which needs them
    # all, lists them, and it is never built with ``only``.
    parser = Parser(prog="mcpactor", description="Model Context Protocol servers on trio.")
    parser.add_argument("--version", action="version", version=f"mcpactor {__version__}")
    add_global_arguments(parser, command=False)
    commands = parser.add_subparsers(dest="command", required=True)
    if only is None or only in ("serve", "dev"):
        from ._serve_parser import add_serve_parser

        serve = add_serve_parser(commands)
    if only in (None, "call"):
        _add_call_parser(commands)
    if only in (None, "plugins"):
        _add_plugins_parser(commands)
    if only in (None, "inspect"):
        from ._inspect import add_inspect_parser

        add_inspect_parser(commands, add_global_arguments, add_composition_arguments)
    if only in (None, "install"):
        from ._install import add_install_parser

        add_install_parser(commands, add_global_arguments)
    if only in (None, "top"):
        from ._top import add_top_parser

        add_top_parser(commands, add_global_arguments)
    if only in (None, "new"):
        from ._new import add_new_parser

        add_new_parser(commands, add_global_arguments)
    if only in (None, "dev"):
        from ._dev import add_dev_parser

        # Last: dev takes every option serve has by then.
        add_dev_parser(commands, serve)
    return parser


def _add_plugins_parser(commands: Any) -> None:
    plugins = commands.add_parser(
        "plugins",
        help="list the installed plugins and what each serves",
        description="List the servers installed in the mcpactor.servers entry-point group: "
        "name, distribution, version, how many tools, resources and prompts each serves, "
        "and why one fails to load.",
    )
    add_global_arguments(plugins, command=True)
    plugins.add_argument("--json", action="store_true", help="print the list as JSON")
    plugins.add_argument(
        "--strict", action="store_true", help="exit with status 1 if a plugin fails to load"
    )


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
    add_global_arguments(call, command=True)
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
        type=json_object,
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
