"""The ``mcpactor`` command: serve a server module, call a tool, show the version."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Imported only where they are used, to keep start-up short: the configuration file
# reader (``_config``), the client (proxying a URL), importlib.util (a path target).
from ._exceptions import ConfigError, MCPActorError, PluginError, RequestError
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
        from importlib.util import module_from_spec, spec_from_file_location

        path = Path(spec)
        if not path.is_file():
            raise TargetError(f"{target!r}: no such file {str(path)!r}")
        module_name = f"_mcpactor_target_{path.stem}"
        loader_spec = spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise TargetError(f"{target!r}: cannot import {str(path)!r}")
        module = module_from_spec(loader_spec)
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
    serve = commands.add_parser(
        "serve", help="serve one server, several as one, or every installed plugin"
    )
    _add_composition_arguments(serve)
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mcpactor`` command line; return the process exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    # Workers of ``serve --workers`` run the very same command line.
    args.argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=args.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    if args.command == "serve":
        return _serve(args)
    if args.command == "call":
        return _call(args)
    if args.command == "plugins":
        return _plugins(args)
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover - argparse guards


def _serve(args: argparse.Namespace) -> int:
    import attrs
    import trio

    from .runtime import SessionOptions
    from .transports import serve_stdio

    try:
        server = _served_server(args)
    except (TargetError, PluginError, ConfigError) as exc:
        print(f"mcpactor: {exc}", file=sys.stderr)
        return 2
    if args.workers < 1:
        print(f"mcpactor: --workers must be at least 1, got {args.workers}", file=sys.stderr)
        return 2
    if args.workers > 1 and args.http is None:
        print("mcpactor: --workers needs --http", file=sys.stderr)
        return 2
    options = SessionOptions(shutdown_grace=args.grace)
    tasks = getattr(args, "tasks", None)
    if tasks is not None:
        options = attrs.evolve(options, tasks=tasks)
    try:
        if args.http is not None:
            return _serve_http(args, server, options)
        trio.run(
            lambda: serve_stdio(
                server,
                options=options,
                max_line_bytes=args.max_message_bytes,
                tune_gc=not args.no_gc_tuning,
            )
        )
    except (PluginError, BaseExceptionGroup) as exc:
        # Mounted servers that collide only once started (proxies) stop the start-up.
        found = exc.split(PluginError)[0] if isinstance(exc, BaseExceptionGroup) else exc
        if found is None:
            raise
        while isinstance(found, BaseExceptionGroup):
            found = found.exceptions[0]
        print(f"mcpactor: {found}", file=sys.stderr)
        return 2
    return 0


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
        help="a plugin that fails to load stops the server instead of being left out",
    )


def _pairs(items: Sequence[str], option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not equals or not name or not value:
            raise ConfigError(f"{option} expects NAME=VALUE, got {item!r}")
        pairs[name] = value
    return pairs


def _served_server(args: argparse.Namespace) -> Server:
    # One target is served as it is; several, none (every plugin) or a config's servers
    # are mounted in one Server, each under its prefix.
    import attrs

    from .plugins import load_plugin, plugin_names

    config = None
    if args.config:
        from ._config import load_config

        config = load_config(args.config)
        _apply_config(args, config)
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
    strict = args.strict or (config is not None and config.strict)
    return assemble(servers, prefix=use_prefix, strict=strict)


def _apply_config(args: argparse.Namespace, config: Any) -> None:
    # The file fills in what the command line left at its default.
    import os

    os.environ.update(config.env)
    defaults = _build_parser().parse_args(["serve"])
    if config.log_level is not None and args.log_level == defaults.log_level:
        logging.getLogger().setLevel(config.log_level)
    if config.grace is not None and args.grace == defaults.grace:
        args.grace = config.grace
    args.tasks = config.tasks
    if config.transport != "http" or getattr(args, "http", None) is not None:
        return
    http = config.http
    args.http = f"[{http.host}]:{http.port}" if ":" in http.host else f"{http.host}:{http.port}"
    if getattr(args, "path", None) == getattr(defaults, "path", None):
        args.path = http.path
    args.stateless = getattr(args, "stateless", False) or http.stateless
    args.json_response = getattr(args, "json_response", False) or http.json_response
    if getattr(args, "http_server", None) is None:
        args.http_server = http.server
    if getattr(args, "workers", 1) == defaults.workers:
        args.workers = http.workers
    for name in ("allowed_hosts", "allowed_origins"):
        configured = getattr(http, name)
        if getattr(args, name, None) is None and configured is not None:
            setattr(args, name, list(configured))


def _add_plugins_parser(commands: Any) -> None:
    plugins = commands.add_parser(
        "plugins",
        help="list the installed plugins and what each serves",
        description="List the servers installed in the mcpactor.servers entry-point group: "
        "name, distribution, version, how many tools, resources and prompts each serves, "
        "and why one fails to load.",
    )
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


def _add_http_arguments(serve: argparse.ArgumentParser) -> None:
    http = serve.add_argument_group("HTTP (Streamable HTTP, legacy HTTP+SSE and WebSocket)")
    http.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve over HTTP on HOST (default 127.0.0.1) and PORT instead of stdio",
    )
    http.add_argument("--path", default="/mcp", help="the MCP endpoint path (default: /mcp)")
    http.add_argument(
        "--stateless",
        action="store_true",
        help="no sessions: every POST is served on its own (no GET stream, no resumption)",
    )
    http.add_argument(
        "--json-response",
        action="store_true",
        help="answer every POST with application/json, never an SSE stream (progress and "
        "other messages tied to a request then go to the session's GET stream)",
    )
    http.add_argument(
        "--http-server",
        choices=("builtin", "hypercorn"),
        default=None,
        help="the HTTP server: mcpactor's own HTTP/1.1 server (builtin, the default and "
        "the fastest) or hypercorn's trio worker (HTTP/2 and TLS through its config)",
    )
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


def _parse_bind(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise ValueError(f"--http expects [HOST:]PORT, got {text!r}")
    return host, int(port)


def _serve_http(args: argparse.Namespace, server: Server, options: Any) -> int:
    import socket

    import trio

    from ._workers import watch_lifeline
    from .transports import HttpOptions, serve_http

    try:
        host, port = _parse_bind(args.http)
    except ValueError as exc:
        print(f"mcpactor: {exc}", file=sys.stderr)
        return 2
    worker_socket = args.worker_socket
    if args.workers > 1 and worker_socket is None:
        return _serve_workers(args, host, port)
    http_options = HttpOptions(
        stateless=args.stateless,
        response_mode="json" if args.json_response else "auto",
        allowed_hosts=args.allowed_hosts,
        allowed_origins=args.allowed_origins,
        max_body_bytes=args.max_message_bytes,
    )

    stop = trio.Event()

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
        async with trio.open_nursery() as nursery:
            if args.worker_lifeline is not None:
                nursery.start_soon(watch_lifeline, args.worker_lifeline, stop)
            bound_host, bound_port = await nursery.start(serve, nursery)
            if worker_socket is None:
                # A worker's supervisor has said where it serves.
                print(
                    f"mcpactor: serving {_url(bound_host, bound_port, args.path)}",
                    file=sys.stderr,
                    flush=True,
                )

    trio.run(run)
    return 0


def _url(host: str, port: int, path: str) -> str:
    return f"http://[{host}]:{port}{path}" if ":" in host else f"http://{host}:{port}{path}"


def _serve_workers(args: argparse.Namespace, host: str, port: int) -> int:
    import trio

    from ._workers import bind_sockets, supervise
    from .transports.http import LISTEN_BACKLOG

    if not args.stateless:
        print(
            "mcpactor: --workers needs --stateless: a session lives in the process that "
            "opened it, and the workers share nothing",
            file=sys.stderr,
        )
        return 2
    if sys.platform == "win32":
        # Workers inherit their sockets and lifelines as file descriptors.
        print("mcpactor: --workers needs a POSIX system", file=sys.stderr)
        return 2
    try:
        sockets = bind_sockets(host, port, args.workers, backlog=LISTEN_BACKLOG)
    except OSError as exc:
        print(f"mcpactor: cannot listen on {args.http}: {exc}", file=sys.stderr)
        return 2
    try:
        bound_host, bound_port = sockets[0].getsockname()[:2]
        print(
            f"mcpactor: serving {_url(bound_host, bound_port, args.path)} "
            f"with {args.workers} workers",
            file=sys.stderr,
            flush=True,
        )
        command = [sys.executable, "-m", "mcpactor", *args.argv]
        return trio.run(supervise, command, sockets, args.workers)
    finally:
        for sock in sockets:
            sock.close()


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
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
        detail = f": {json.dumps(exc.data)}" if exc.data is not None else ""
        print(f"mcpactor call: error {exc.code}: {exc.message}{detail}", file=sys.stderr)
        return 1
    except trio.TooSlowError:
        print(f"mcpactor call: no answer within {args.timeout} s", file=sys.stderr)
        return 1
    except (MCPActorError, OSError, ValueError) as exc:
        print(f"mcpactor call: {exc}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
