"""``mcpactor dev``: ``mcpactor serve`` in a child process, started again on every edit.

The command line, what is watched and what the child is run with; the supervisor that
runs it all, and keeps the clients' connections while children come and go, is
``_dev_supervisor``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from ._dev_supervisor import INSPECTOR_SPEC, DevPlan, say, unique
from ._dev_supervisor import inspector_command as inspector_command
from ._dev_supervisor import inspector_hint as inspector_hint

__all__ = ["add_dev_parser", "dev", "inspector_command", "inspector_hint", "serve_argv"]

#: where ``dev`` serves unless told otherwise
DEFAULT_BIND: Final = "127.0.0.1:8000"
#: the options of ``dev`` not passed on to the child, and whether each takes a value
#: (``--http`` is where ``dev`` listens: the child is told that address once, with the
#: socket it serves on)
_NOT_PASSED: Final = {"--stdio": False, "--inspector": False, "--watch": True, "--http": True}
#: the options of the top-level parser, which may come before the command
_GLOBAL_WITH_VALUE: Final = frozenset({"--log-level"})


def add_dev_parser(commands: Any, serve: argparse.ArgumentParser) -> None:
    """Add ``dev``: every option of ``serve`` (copied from its parser) and its own."""
    dev = commands.add_parser(
        "dev",
        add_help=False,
        help="serve with reload on change, for development (HTTP by default)",
        description="Serve TARGET as `mcpactor serve` does, in a child process that is "
        f"started again when a watched file changes. Serves over HTTP on {DEFAULT_BIND} "
        "unless --http or --stdio say otherwise. Watched: the target's file (and the .py "
        "files beside it) or package, the --config file and what it names, and --watch. "
        "Clients keep their sessions across restarts; while the edited server cannot "
        "start, they are answered with its error.",
    )
    # serve's own actions (its -h included), so that dev takes exactly what serve takes,
    # the options added to serve later too.
    dev._add_container_actions(serve)
    own = dev.add_argument_group("development")
    own.add_argument(
        "--stdio",
        action="store_true",
        help="serve over stdio (for a client that starts `mcpactor dev --stdio` itself)",
    )
    own.add_argument(
        "--watch",
        action="append",
        default=[],
        metavar="PATH",
        help="a file or directory to watch as well; repeatable",
    )
    own.add_argument(
        "--inspector",
        action="store_true",
        help="start the MCP Inspector (npx @modelcontextprotocol/inspector) connected to the "
        "server; with --stdio, the Inspector starts `mcpactor dev --stdio` itself",
    )


def dev(args: argparse.Namespace) -> int:
    """Run ``mcpactor dev`` as ``args`` say; return the exit status."""
    import trio

    from .._exceptions import ConfigError
    from ._extras import modules_of, require, require_serve_extras
    from ._http import _parse_bind

    if args.stdio and args.http is not None:
        raise ConfigError("--stdio and --http exclude each other")
    config = None
    if args.config:
        from ..config import load_config

        config = load_config(args.config)
        if args.stdio and config.transport == "http":
            raise ConfigError(
                f'--stdio: {config.source} serves over HTTP (transport = "http"); '
                "leave out --stdio, or the file's transport"
            )
    # What the served child needs is checked here, before anything says "serving": a
    # child that cannot start would fail again on every change. Over HTTP (the default)
    # that is the dev-loop extra whole, which brings the http extra.
    watch = ("watchfiles",) if args.stdio else modules_of("dev-loop")
    require("dev-loop", "mcpactor dev (reload on change)", modules=watch)
    require_serve_extras(args, config, http=not args.stdio)
    argv = serve_argv(args.argv)
    bind: tuple[str, int] | None = None
    if not args.stdio:
        http = args.http
        if http is None and config is not None and config.transport == "http":
            host = config.http.host
            http = f"[{host}]:{config.http.port}" if ":" in host else f"{host}:{config.http.port}"
        bind = _parse_bind(http or DEFAULT_BIND)
    trees, directories, files = watched_paths(args.targets, config, args.watch)
    cert = args.tls_cert or (config.http.tls_cert if config is not None else None)
    key = args.tls_key or (config.http.tls_key if config is not None else None)
    plan = DevPlan(
        argv=tuple(argv),
        bind=bind,
        path=args.path,
        trees=tuple(trees),
        directories=tuple(directories),
        files=tuple(files),
        max_message_bytes=args.max_message_bytes,
        tls=(cert, key) if cert and key and bind is not None else None,
    )
    if args.inspector and bind is None:
        return _inspect_stdio(args.argv)
    from ._dev_supervisor import Supervisor

    return trio.run(Supervisor(plan, inspector=args.inspector).run)


def serve_argv(argv: Sequence[str]) -> list[str]:
    """The ``mcpactor`` arguments that serve what the ``dev`` command line ``argv`` does."""
    words = list(argv)
    index = 0
    # The top-level options (--log-level LEVEL, --debug) stand before the command.
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in _GLOBAL_WITH_VALUE else 1
    if index >= len(words) or words[index] != "dev":
        raise ValueError(f"not a dev command line: {words!r}")
    served = [*words[:index], "serve"]
    rest = iter(words[index + 1 :])
    for word in rest:
        name = word.partition("=")[0]
        if name in _NOT_PASSED:
            if _NOT_PASSED[name] and "=" not in word:
                next(rest, None)
            continue
        served.append(word)
    return served


def watched_paths(
    targets: Sequence[str], config: Any, extra: Sequence[str]
) -> tuple[list[Path], list[Path], list[Path]]:
    """The directory trees, single directories and files that changing restarts a server.

    Nothing is imported: a module is found with ``importlib.util.find_spec`` of its
    top-level package, which reads the file system only.
    """
    trees: list[Path] = []
    directories: list[Path] = []
    files: list[Path] = []
    names: list[str] = list(targets)
    if config is not None:
        files.append(Path(config.source).resolve())
        for server in config.servers:
            names.extend(n for n in (server.target, server.plugin) if n is not None)
    if not names:
        from ..plugins import plugin_names

        names = plugin_names()
    for name in names:
        _watch_target(name, trees, directories, files)
    for item in extra:
        path = Path(item).resolve()
        (trees if path.is_dir() else files).append(path)
    return unique(trees), unique(directories), unique(files)


def _watch_target(
    name: str, trees: list[Path], directories: list[Path], files: list[Path]
) -> None:
    if "://" in name:
        return
    spec = name.partition(":")[0]
    if spec.endswith(".py") or "/" in spec or os.sep in spec:
        path = Path(spec).resolve()
        # Its neighbours too: the file's directory is on sys.path when it is served.
        directories.append(path.parent)
        files.append(path)
        return
    module = _plugin_module(name) or spec
    origin = _find_module(module.partition(".")[0])
    if origin is None:
        # Not there yet: it may be written in the current directory.
        directories.append(Path.cwd())
    elif origin.name == "__init__.py":
        trees.append(origin.parent)
    else:
        directories.append(origin.parent)
        files.append(origin)


def _plugin_module(name: str) -> str | None:
    from ..plugins import _entry_points

    for entry in _entry_points("mcpactor.servers"):
        if entry.name == name:
            return entry.value.partition(":")[0].strip()
    return None


def _find_module(name: str) -> Path | None:
    import importlib.util

    # As the child will: the current directory first.
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    finally:
        if added:
            sys.path.remove(cwd)
    if spec is None or spec.origin is None or not os.path.isfile(spec.origin):
        return None
    return Path(spec.origin).resolve()


def _inspect_stdio(argv: Sequence[str]) -> int:
    # Over stdio the Inspector starts the server itself: it runs this command line,
    # less --inspector, once for each of its connections.
    import shlex
    import shutil

    served = [sys.executable, "-m", "mcpactor", *(word for word in argv if word != "--inspector")]
    npx = shutil.which("npx")
    command = [npx or "npx", "--yes", INSPECTOR_SPEC, "--", *served]
    if npx is None:
        say("npx was not found (it comes with Node.js): the MCP Inspector was not started; run:")
        print(f"    {shlex.join(command)}", file=sys.stderr, flush=True)
        return 0
    say(f"starting the MCP Inspector, which starts the server: {shlex.join(command)}")
    sys.stdout.flush()
    if sys.platform == "win32":  # pragma: no cover - no exec there
        import subprocess

        return subprocess.call(command)
    os.execv(npx, command)
