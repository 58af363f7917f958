"""The ``mcpactor`` command: serve a server module, call a tool, show the version.

Exit status: 0 when the command did what it was asked; 1 when a server could not be
loaded or started, or failed while serving; 2 when the command line or the configuration
file is wrong. Every error is a short message on stderr that names the culprit (the
option, the key, the file and line); ``--debug`` adds the traceback.

This module hands the command line, read by ``_parser``, to the command's own module:
``_serve`` (``serve``, over stdio), ``_http`` (``serve --http`` and its workers, whose
supervisor is ``_workers``), ``_call``, ``_plugins``; ``_report`` turns what went wrong
into those short messages.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from .._version import __version__ as _version

# Each command's module is imported only when that command runs, to keep start-up short
# (``mcpactor --version`` reads none of them); they import what is heavy where it is used.
from ._arguments import LOG_LEVELS as _LOG_LEVELS
from ._parser import asks_for_version as _asks_for_version
from ._parser import build_parser as _build_parser
from ._parser import command_of as _command_of

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
    if _asks_for_version(arguments):
        # What the parser's --version prints, before it is built (see asks_for_version).
        sys.stdout.write(f"mcpactor {_version}\n")
        return 0
    json_logs = _asks_for_json_logs(arguments)
    if json_logs:
        # Before the command line is read: even a wrong option is said as a JSON line.
        from ..observability import use_json_logs

        use_json_logs()
    parser = _build_parser(only=_command_of(arguments))
    args = parser.parse_args(arguments)
    # Workers of ``serve --workers`` run the very same command line.
    args.argv = arguments
    if args.command == "serve":
        from ..runtime import rare_young_passes

        # Before the logging, the server, its target and trio are imported.
        rare_young_passes()
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
