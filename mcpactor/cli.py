"""The ``mcpactor`` command: serve a server module, call a tool, show the version."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._exceptions import MCPActorError
from ._version import __version__
from .server import Server

__all__ = ["load_server", "main"]

_DEFAULT_ATTRS = ("server", "mcp", "app")


class TargetError(MCPActorError, ValueError):
    """A ``MODULE:ATTR`` or path given on the command line names no Server."""


def load_server(target: str) -> Server:
    """Load a Server from ``package.module[:attr]`` or ``path/to/file.py[:attr]``."""
    spec, _, attr = target.partition(":")
    if spec.endswith(".py") or "/" in spec:
        path = Path(spec)
        if not path.is_file():
            raise TargetError(f"{target!r}: no such file {str(path)!r}")
        module_name = f"_mcpactor_target_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise TargetError(f"{target!r}: cannot import {str(path)!r}")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module
        sys.path.insert(0, str(path.parent.resolve()))
        loader_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(spec)
        except ImportError as exc:
            raise TargetError(f"{target!r}: cannot import module {spec!r}: {exc}") from exc
    if attr:
        obj: Any = module
        for part in attr.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise TargetError(
                    f"{target!r}: module {spec!r} has no attribute {attr!r}"
                ) from None
        if callable(obj) and not isinstance(obj, Server):
            obj = obj()
        if not isinstance(obj, Server):
            raise TargetError(f"{target!r}: expected a mcpactor.Server, got {type(obj).__name__}")
        return obj
    for name in _DEFAULT_ATTRS:
        obj = getattr(module, name, None)
        if isinstance(obj, Server):
            return obj
    found = [value for value in vars(module).values() if isinstance(value, Server)]
    if len(found) == 1:
        return found[0]
    raise TargetError(
        f"{target!r}: found {len(found)} Server objects in {spec!r}; name one as {spec}:ATTR"
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcpactor", description="Model Context Protocol servers on trio."
    )
    parser.add_argument("--version", action="version", version=f"mcpactor {__version__}")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        help="how much the server logs to stderr (default: WARNING)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve a server module over stdio")
    serve.add_argument("target", help="package.module[:attr] or path/to/server.py[:attr]")
    serve.add_argument(
        "--grace",
        type=float,
        default=5.0,
        help="seconds in-flight requests get to finish at shutdown (default: 5)",
    )
    serve.add_argument(
        "--max-message-bytes",
        type=int,
        default=4 * 1024 * 1024,
        help="the longest message accepted on stdin (default: 4 MiB)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mcpactor`` command line; return the process exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    if args.command == "serve":
        return _serve(args)
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover - argparse guards


def _serve(args: argparse.Namespace) -> int:
    import trio

    from .runtime import SessionOptions
    from .transports import serve_stdio

    try:
        server = load_server(args.target)
    except TargetError as exc:
        print(f"mcpactor: {exc}", file=sys.stderr)
        return 2
    options = SessionOptions(shutdown_grace=args.grace)
    trio.run(lambda: serve_stdio(server, options=options, max_line_bytes=args.max_message_bytes))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
