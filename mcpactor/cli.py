"""The ``mcpactor`` command: serve a server module, call a tool, show the version.

Exit status: 0 when the command did what it was asked; 1 when a server could not be
loaded or started, or failed while serving; 2 when the command line or the configuration
file is wrong. Every error is a short message on stderr that names the culprit (the
option, the key, the file and line); ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import logging
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Final, NoReturn, cast

# Imported only where they are used, to keep start-up short: the configuration file
# reader (``_config``), the client (proxying a URL), importlib.util (a path target).
from ._exceptions import ConfigError, MCPActorError, PluginError, RequestError
from ._version import __version__
from .protocol._bounded import clip, describe, error_text
from .server import Server

__all__ = ["load_server", "main"]

_DEFAULT_ATTRS = ("server", "mcp", "app")


class TargetError(MCPActorError, ValueError):
    """A ``MODULE:ATTR`` or path given on the command line names no Server."""


def load_server(target: str) -> Server:
    """Load a Server from ``package.module[:attr]`` or ``path/to/file.py[:attr]``.

    A module is looked for in the current directory first, as ``python -m`` does.

    Raises:
        TargetError: the module or file is missing, fails to import (the message names
            the file and line), or holds no Server where the target says.
    """
    spec, _, attr = target.partition(":")
    module = _import_target(target, spec)
    if attr:
        obj: Any = _attribute(target, module, spec, attr)
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


def _load_hook(reference: str, *, option: str) -> Callable[..., Any]:
    """Load the function a ``module:function`` (or ``path/file.py:function``) reference names.

    ``option`` names where the reference came from, in the error.

    Raises:
        TargetError: the module does not import, or has no such callable.
    """
    spec, colon, attr = reference.partition(":")
    if not colon or not spec or not attr:
        raise TargetError(f"{option}: expected MODULE:FUNCTION, got {reference!r}")
    try:
        obj = _attribute(reference, _import_target(reference, spec), spec, attr)
    except TargetError as exc:
        raise TargetError(f"{option}: {exc}") from exc.__cause__
    if not callable(obj):
        raise TargetError(
            f"{option}: {reference!r} is not a function, it is a {type(obj).__name__}"
        )
    return cast("Callable[..., Any]", obj)


def _import_target(target: str, spec: str) -> ModuleType:
    from .plugins import _describe_failure

    if spec.endswith(".py") or "/" in spec:
        return _import_file(target, Path(spec))
    # As ``python -m``: the current directory first, so ``pkg.module`` in it is found.
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if spec == missing or spec.startswith(missing + "."):
            raise TargetError(
                f"{target!r}: no module named {missing!r} (looked in the current directory "
                "and sys.path)"
            ) from exc
        raise TargetError(
            f"{target!r}: importing {spec!r} raised {_describe_failure(exc)}"
        ) from exc
    except SyntaxError as exc:
        raise TargetError(f"{target!r}: {_describe_failure(exc)}{_source(exc)}") from exc
    except Exception as exc:
        # Importing runs the module's code: whatever it raises is the module's failure.
        raise TargetError(
            f"{target!r}: importing {spec!r} raised {_describe_failure(exc)}"
        ) from exc


def _import_file(target: str, path: Path) -> ModuleType:
    from importlib.util import module_from_spec, spec_from_file_location

    from .plugins import _describe_failure

    if not path.is_file():
        raise TargetError(f"{target!r}: no such file {str(path)!r}")
    module_name = f"_mcpactor_target_{path.stem}"
    loader_spec = spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise TargetError(f"{target!r}: cannot import {str(path)!r}")
    module = module_from_spec(loader_spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        loader_spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[module_name]
        raise TargetError(f"{target!r}: {_describe_failure(exc)}{_source(exc)}") from exc
    except Exception as exc:
        del sys.modules[module_name]
        raise TargetError(f"{target!r}: running it raised {_describe_failure(exc)}") from exc
    return module


def _source(exc: SyntaxError) -> str:
    # The offending line under the message, as Python shows it (bounded: it is a file's).
    text = (exc.text or "").strip()
    return f"\n    {text[:200]}" if text else ""


def _attribute(target: str, module: ModuleType, spec: str, attr: str) -> Any:
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(f"{target!r}: module {spec!r} has no attribute {attr!r}") from None
    return obj


class _Parser(argparse.ArgumentParser):
    # A wrong option is one line that names it, not the usage of thirty options.

    def error(self, message: str) -> NoReturn:
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


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mcpactor", description="Model Context Protocol servers on trio.")
    parser.add_argument("--version", action="version", version=f"mcpactor {__version__}")
    _add_global_arguments(parser, command=False)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
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
        help="the longest message accepted on stdin (default: 4 MiB)",
    )
    serve.add_argument(
        "--no-gc-tuning",
        action="store_true",
        help="keep Python's cycle-collector settings (default: freeze start-up and collect "
        "young objects every 100 000 allocations)",
    )
    _add_http_arguments(serve)
    _add_call_parser(commands)
    _add_plugins_parser(commands)
    return parser


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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mcpactor`` command line; return the process exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    # Workers of ``serve --workers`` run the very same command line.
    args.argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=args.log_level or "WARNING",
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        if args.command == "serve":
            return _serve(args)
        if args.command == "call":
            return _call(args)
        if args.command == "plugins":
            return _plugins(args)
    except Exception as exc:
        return _report(exc, debug=args.debug, listen=getattr(args, "listen", None))
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover - argparse guards


# --- reporting what went wrong ---------------------------------------------------------

#: the top-level modules the ``http`` extra installs (its packages and what they need)
_HTTP_EXTRA: Final = frozenset(
    {"httptools", "wsproto", "hypercorn", "h11", "h2", "trio_websocket"}
)
# Groups are flattened to this many failures at most: they come from the start of
# several servers at once, and a few lines say enough.
_MAX_REPORTED: Final = 3


class _StartFailed(MCPActorError):
    # Raised from ``exc``: the server did not reach the point of serving.

    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.__cause__ = exc


def _report(exc: Exception, *, debug: bool, listen: str | None) -> int:
    """Print ``exc`` as a few lines naming the culprit; return the exit status."""
    import traceback

    from .plugins import _describe_failure

    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    starting = isinstance(exc, _StartFailed)
    lines: list[str] = []
    status = 1
    leaves = _leaves(exc.__cause__ if starting and exc.__cause__ is not None else exc)
    for leaf in leaves[:_MAX_REPORTED]:
        if isinstance(leaf, ConfigError):
            status = 2
            lines.append(str(leaf))
        elif isinstance(leaf, (TargetError, PluginError)):
            lines.append(str(leaf))
        elif isinstance(leaf, ModuleNotFoundError) and (leaf.name or "").split(".")[0] in (
            _HTTP_EXTRA
        ):
            lines.append(
                f"serving over HTTP or proxying a URL needs the http extra, which is not "
                f"installed (no module named {leaf.name!r}): pip install 'mcpactor[http]'"
            )
        elif isinstance(leaf, OSError) and starting and _is_bind_error(leaf) and listen:
            lines.append(f"cannot listen on {listen}: {leaf.strerror or leaf}")
        else:
            what = "cannot start" if starting else "failed"
            lines.append(f"{what}: {_describe_failure(leaf)}")
    if len(leaves) > _MAX_REPORTED:
        lines.append(f"… and {len(leaves) - _MAX_REPORTED} more")
    for line in lines:
        print(f"mcpactor: {line}", file=sys.stderr)
    if status == 1 and not debug:
        print("mcpactor: (--debug shows the traceback)", file=sys.stderr)
    return status


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _is_bind_error(exc: OSError) -> bool:
    import errno
    import traceback

    if exc.errno in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
        return True
    frames = list(traceback.walk_tb(exc.__traceback__))
    return bool(frames) and frames[-1][0].f_code.co_name == "bind"


# --- serve -------------------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    import attrs
    import trio

    from .runtime import SessionOptions
    from .transports import serve_stdio

    config = None
    if args.config:
        from ._config import load_config

        config = load_config(args.config)
        _apply_config(args, config)
    if args.workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {args.workers}")
    if args.workers > 1 and args.http is None:
        raise ConfigError("--workers needs --http")
    http_options = None
    if args.http is not None:
        _require_http_extra(args.http_server or "builtin")
        http_options = _http_options(args, config)
    server = _served_server(args, config)
    options = SessionOptions(shutdown_grace=args.grace)
    tasks = getattr(args, "tasks", None)
    if tasks is not None:
        options = attrs.evolve(options, tasks=tasks)
    if http_options is not None:
        return _serve_http(args, server, options, http_options)
    started = False

    async def run() -> None:
        nonlocal started
        async with trio.open_nursery() as nursery:
            await nursery.start(
                functools.partial(
                    serve_stdio,
                    server,
                    options=options,
                    max_line_bytes=args.max_message_bytes,
                    tune_gc=not args.no_gc_tuning,
                )
            )
            started = True

    try:
        trio.run(run)
    except Exception as exc:
        if started:
            raise
        raise _StartFailed(exc) from exc
    return 0


def _require_http_extra(http_server: str) -> None:
    # Said before anything is loaded or started, and in the words of the fix.
    modules = ("hypercorn", "wsproto") if http_server == "hypercorn" else ("httptools", "wsproto")
    for name in modules:
        importlib.import_module(name)


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


def _pairs(items: Sequence[str], option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not equals or not name or not value:
            raise ConfigError(f"{option} expects NAME=VALUE, got {item!r}")
        pairs[name] = value
    return pairs


def _served_server(args: argparse.Namespace, config: Any) -> Server:
    # One target is served as it is; several, none (every plugin) or a config's servers
    # are mounted in one Server, each under its prefix.
    import attrs

    from .plugins import load_plugin, plugin_names

    prefixes = _pairs(args.prefix, "--prefix")
    limits = _pairs(args.max_concurrent, "--max-concurrent")
    installed = plugin_names()
    overridden = bool(prefixes or limits or args.no_prefix)
    if config is None and len(args.targets) == 1 and not overridden:
        (target,) = args.targets
        if "://" in target:
            from ._config import target_configs
            from .client import proxy_url

            (remote,) = target_configs([target], plugins=())
            try:
                return proxy_url(target, name=remote.name)
            except ValueError as exc:
                raise TargetError(str(exc)) from exc
        return load_plugin(target) if target in installed else load_server(target)
    from ._config import ServerConfig, assemble, target_configs

    if config is not None:
        servers = list(config.servers)
        unknown = [t for t in args.targets if t not in {s.name for s in servers}]
        if unknown:
            raise ConfigError(f"{config.source} names no server {', '.join(map(repr, unknown))}")
        if args.targets:
            servers = [s for s in servers if s.name in args.targets]
    elif args.targets:
        servers = target_configs(args.targets, plugins=installed)
    else:
        servers = [ServerConfig(name=name, plugin=name) for name in installed]
    names = {s.name for s in servers}
    for option, given in (("--prefix", prefixes), ("--max-concurrent", limits)):
        unknown = sorted(set(given) - names)
        if unknown:
            raise ConfigError(
                f"{option}: no server named {', '.join(map(repr, unknown))}; "
                f"serving {', '.join(sorted(names)) or 'nothing'}"
            )
    for index, server in enumerate(servers):
        if server.name in prefixes:
            server = attrs.evolve(server, prefix=prefixes[server.name])
        if server.name in limits:
            limit = limits[server.name]
            if not limit.isdigit() or int(limit) < 1:
                raise ConfigError(f"--max-concurrent {server.name}: expected N ≥ 1, got {limit!r}")
            server = attrs.evolve(server, max_concurrent=int(limit))
        servers[index] = server
    use_prefix = not args.no_prefix and (config.prefix if config is not None else True)
    # What the command line names must load; only what was found (every installed
    # plugin) may be left out with a warning.
    strict = args.strict or bool(args.targets and config is None)
    strict = strict or (config is not None and config.strict)
    return assemble(servers, prefix=use_prefix, strict=strict)


def _apply_config(args: argparse.Namespace, config: Any) -> None:
    # The file fills in what the command line left at its default.
    os.environ.update(config.env)
    defaults = _build_parser().parse_args(["serve"])
    if config.log_level is not None and args.log_level is None:
        logging.getLogger().setLevel(config.log_level)
    if config.grace is not None and args.grace == defaults.grace:
        args.grace = config.grace
    args.tasks = config.tasks
    http = config.http
    if config.transport == "http" and args.http is None:
        args.http = (
            f"[{http.host}]:{http.port}" if ":" in http.host else f"{http.host}:{http.port}"
        )
    # The rest of [http] applies whenever serving over HTTP, --http PORT or not.
    if args.path == defaults.path:
        args.path = http.path
    args.stateless = args.stateless or http.stateless
    if args.http_server is None:
        args.http_server = http.server
    if args.workers == defaults.workers:
        args.workers = http.workers
    for name in ("allowed_hosts", "allowed_origins"):
        configured = getattr(http, name)
        if getattr(args, name) is None and configured is not None:
            setattr(args, name, list(configured))


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


def _plugins(args: argparse.Namespace) -> int:
    from .plugins import _listing, discover

    rows = _listing(discover())
    failed = any(row["error"] for row in rows)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 1 if failed and args.strict else 0
    if not rows:
        print("no plugins installed (entry-point group mcpactor.servers)")
        return 0
    header = ("NAME", "DISTRIBUTION", "VERSION", "TOOLS", "RESOURCES", "PROMPTS")
    table = [header] + [
        (
            str(row["name"]),
            str(row["distribution"] or "?"),
            str(row["version"] or "?"),
            *(str(row.get(kind, "-")) for kind in ("tools", "resources", "prompts")),
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line, row in zip(table, [None, *rows], strict=True):
        cells = (cell.ljust(width) for cell, width in zip(line, widths, strict=True))
        print("  ".join(cells).rstrip())
        if row is not None and row["error"]:
            for text in str(row["error"]).splitlines():
                print(f"    {text}")
    return 1 if failed and args.strict else 0


# --- serve --http ------------------------------------------------------------------------


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
        help="live sessions one client address may hold (default: 256)",
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
        help="serve from N processes on the one port, to use N cores (needs --stateless; "
        "default: 1)",
    )
    # What the supervisor of --workers hands each worker: its listening socket, and the
    # pipe whose end tells it that the supervisor is gone.
    serve.add_argument("--worker-socket", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--worker-lifeline", type=int, help=argparse.SUPPRESS)


#: HttpOptions fields set by a command-line flag of the same name
_HTTP_FLAGS: Final = (
    "response_mode",
    "tls_cert",
    "tls_key",
    "cors_origins",
    "max_sessions",
    "max_sessions_per_client",
    "max_connections",
    "session_idle_timeout",
    "keep_alive_timeout",
    "request_timeout",
    "health_path",
)


def _http_options(args: argparse.Namespace, config: Any) -> Any:
    """The HttpOptions of ``serve --http``: the flags, else the config file, else defaults."""
    from .transports import HttpOptions

    given: dict[str, Any] = {}
    # Where each value came from, to name it in an error.
    labels: dict[str, str] = {}
    if config is not None:
        given.update(config.http.options())
        labels.update({name: f"{config.source}: http.{name}" for name in given})
    for name in (*_HTTP_FLAGS, "authenticate"):
        value = getattr(args, name)
        if value is not None:
            given[name] = value
            labels[name] = "--" + name.replace("_", "-")
    if args.no_health:
        given["health_path"] = None
    if args.access_log:
        given["access_log"] = True
    if "authenticate" in given:
        given["authenticate"] = _load_hook(given["authenticate"], option=labels["authenticate"])
    _check_tls(given.get("tls_cert"), given.get("tls_key"), labels)
    return HttpOptions(
        stateless=args.stateless,
        allowed_hosts=args.allowed_hosts,
        allowed_origins=args.allowed_origins,
        max_body_bytes=args.max_message_bytes,
        **given,
    )


def _check_tls(cert: str | None, key: str | None, labels: dict[str, str]) -> None:
    # Read here, so that a wrong file is named before anything starts.
    if cert is None and key is None:
        return
    if cert is None or key is None:
        given, missing = ("tls_key", "--tls-cert") if cert is None else ("tls_cert", "--tls-key")
        raise ConfigError(
            f"{labels[given]}: HTTPS needs a certificate and its key; {missing} is missing"
        )
    import ssl

    for name, path in (("tls_cert", cert), ("tls_key", key)):
        if not os.path.isfile(path):
            raise ConfigError(f"{labels[name]}: no such file {path!r}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(
            f"{labels['tls_cert']} {cert!r}, {labels['tls_key']} {key!r}: cannot use them as "
            f"a PEM certificate and its private key ({exc.strerror or exc})"
        ) from exc


def _parse_bind(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"--http expects [HOST:]PORT, got {text!r}")
    return host, int(port)


def _serve_http(args: argparse.Namespace, server: Server, options: Any, http_options: Any) -> int:
    import socket

    import trio

    from ._workers import USAGE_EXIT, watch_lifeline
    from .transports import serve_http

    host, port = _parse_bind(args.http)
    args.listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    worker_socket = args.worker_socket
    scheme = "https" if http_options.tls_cert is not None else "http"
    if http_options.access_log:
        # Asked for by name: shown whatever --log-level says of the rest.
        logging.getLogger("mcpactor.access").setLevel(logging.INFO)
    if args.workers > 1 and worker_socket is None:
        return _serve_workers(args, host, port, scheme)
    stop = trio.Event()
    started = False

    async def serve(
        nursery: trio.Nursery, *, task_status: trio.TaskStatus[tuple[str, int]]
    ) -> None:
        await serve_http(
            server,
            host=host,
            port=port,
            path=args.path,
            options=http_options,
            session_options=options,
            handle_signals=True,
            stop=stop,
            http_server=args.http_server or "builtin",
            tune_gc=not args.no_gc_tuning,
            sockets=None if worker_socket is None else [socket.socket(fileno=worker_socket)],
            task_status=task_status,
        )
        nursery.cancel_scope.cancel()

    async def run() -> None:
        nonlocal started
        async with trio.open_nursery() as nursery:
            if args.worker_lifeline is not None:
                nursery.start_soon(watch_lifeline, args.worker_lifeline, stop)
            bound_host, bound_port = await nursery.start(serve, nursery)
            started = True
            if worker_socket is None:
                # A worker's supervisor has said where it serves.
                print(
                    f"mcpactor: serving {_url(bound_host, bound_port, args.path, scheme)}",
                    file=sys.stderr,
                    flush=True,
                )

    try:
        trio.run(run)
    except Exception as exc:
        if started:
            raise
        if worker_socket is not None:
            # A worker that cannot start must not be started again and again.
            _report(_StartFailed(exc), debug=args.debug, listen=args.listen)
            return USAGE_EXIT
        raise _StartFailed(exc) from exc
    return 0


def _url(host: str, port: int, path: str, scheme: str = "http") -> str:
    return (
        f"{scheme}://[{host}]:{port}{path}" if ":" in host else f"{scheme}://{host}:{port}{path}"
    )


def _serve_workers(args: argparse.Namespace, host: str, port: int, scheme: str) -> int:
    import trio

    from ._workers import bind_sockets, supervise
    from .transports.http import LISTEN_BACKLOG

    if not args.stateless:
        raise ConfigError(
            "--workers needs --stateless: a session lives in the process that "
            "opened it, and the workers share nothing"
        )
    if sys.platform == "win32":
        # Workers inherit their sockets and lifelines as file descriptors.
        raise ConfigError("--workers needs a POSIX system")
    try:
        sockets = bind_sockets(host, port, args.workers, backlog=LISTEN_BACKLOG)
    except OSError as exc:
        print(f"mcpactor: cannot listen on {args.http}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    try:
        bound_host, bound_port = sockets[0].getsockname()[:2]
        print(
            f"mcpactor: serving {_url(bound_host, bound_port, args.path, scheme)} "
            f"with {args.workers} workers",
            file=sys.stderr,
            flush=True,
        )
        command = [sys.executable, "-m", "mcpactor", *args.argv]
        return trio.run(supervise, command, sockets, args.workers)
    finally:
        for sock in sockets:
            sock.close()


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
        usage="%(prog)s (--list | --tool NAME | --resource URI | --prompt NAME) "
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


def _call(args: argparse.Namespace) -> int:
    import trio

    if args.args is not None and (args.list or args.resource is not None):
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
    return trio.run(_call_server, args)


async def _call_server(args: argparse.Namespace) -> int:
    from contextlib import AbstractAsyncContextManager

    import orjson
    import trio

    from .client import ClientSession, connect_http, connect_stdio
    from .protocol import LATEST

    async def perform(client: ClientSession) -> Any:
        if args.tool is not None:
            return await client.call_tool(args.tool, args.args, timeout=args.timeout)
        if args.resource is not None:
            return await client.request(
                "resources/read", {"uri": args.resource}, timeout=args.timeout
            )
        if args.prompt is not None:
            params: dict[str, Any] = {"name": args.prompt}
            if args.args is not None:
                params["arguments"] = args.args
            return await client.request("prompts/get", params, timeout=args.timeout)
        listing: dict[str, Any] = {}
        capabilities = client.server_capabilities
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
