"""``mcpactor dev``: ``mcpactor serve`` in a child process, started again on every edit.

The supervisor (this process) never imports the served code, so no edit can break it:

- It binds the HTTP port itself and hands the listening socket to each child
  (``serve --worker-socket FD``, as the workers of ``serve --workers`` get theirs), so the
  address stays the same across restarts and a client that connects while the server is
  starting again waits in the socket's backlog instead of being refused.
- Each child also holds the read end of a pipe only the supervisor writes to
  (``--worker-lifeline FD``): however the supervisor ends, the child stops.
- Files are watched with ``watchfiles.awatch``, which is written on anyio and so runs on
  trio. Its watcher runs in a worker thread that only returns when a change arrives, its
  timeout expires or its stop event is set; cancelling the thread's wait does not stop the
  thread, so the watch is stopped through ``stop_event`` (a ``trio.Event``: all it needs is
  ``is_set``) before the task waiting for it is cancelled.
- A child that fails (a syntax error, an exception at import, a lifespan that raises)
  prints its own short report and exits; the supervisor says so and waits for the next
  change to start it again.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple

# Only what building the parser needs is imported with the module (every command builds
# it); the rest is imported where it is used.
if TYPE_CHECKING:
    import socket

    import trio

__all__ = ["add_dev_parser", "dev"]

#: where ``dev`` serves unless told otherwise
DEFAULT_BIND: Final = "127.0.0.1:8000"
# watchfiles groups changes until none came for _STEP_MS, for _DEBOUNCE_MS at most: an
# editor's save (write, rename, chmod) is one restart, and a restart is still quick.
_STEP_MS: Final = 50
_DEBOUNCE_MS: Final = 400
#: seconds a child gets to stop gracefully before it is killed
_STOP_GRACE: Final = 3.0
#: the options of ``dev`` that ``serve`` does not take, and whether each takes a value
_DEV_ONLY: Final = {"--stdio": False, "--inspector": False, "--watch": True}
#: the options of the top-level parser, which may come before the command
_GLOBAL_WITH_VALUE: Final = frozenset({"--log-level"})
#: suffixes of the files watched in a watched directory
_WATCHED_SUFFIXES: Final = (".py", ".toml", ".json", ".yaml", ".yml")
#: the MCP Inspector's web page (its default port)
INSPECTOR_PAGE: Final = "http://localhost:6274/"


def add_dev_parser(commands: Any, serve: argparse.ArgumentParser) -> None:
    """Add ``dev``: every option of ``serve`` (copied from its parser) and its own."""
    dev = commands.add_parser(
        "dev",
        add_help=False,
        help="serve with reload on change, for development (HTTP by default)",
        description="Serve TARGET as `mcpactor serve` does, in a child process that is "
        f"started again when a watched file changes. Serves over HTTP on {DEFAULT_BIND} "
        "unless --http or --stdio say otherwise. Watched: the target's file (and the .py "
        "files beside it) or package, the --config file and what it names, and --watch.",
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
        help="print how to connect the MCP Inspector (with --stdio: print its command line "
        "and exit)",
    )


class DevPlan(NamedTuple):
    """What ``dev`` runs: the child's command line, where it listens, what it watches."""

    #: the ``mcpactor`` arguments of each child, up to the socket and lifeline options
    argv: tuple[str, ...]
    #: ``(host, port)`` to bind, or None over stdio
    bind: tuple[str, int] | None
    path: str
    #: directories watched with their subdirectories, and each directory watched alone
    trees: tuple[Path, ...]
    directories: tuple[Path, ...]
    #: files watched by name (in a directory watched for them)
    files: tuple[Path, ...]


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
        from .._config import load_config

        config = load_config(args.config)
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
    plan = DevPlan(
        argv=tuple(argv),
        bind=bind,
        path=args.path,
        trees=tuple(trees),
        directories=tuple(directories),
        files=tuple(files),
    )
    if args.inspector and bind is None:
        command = [sys.executable, "-m", "mcpactor", *args.argv]
        command = [word for word in command if word != "--inspector"]
        import shlex

        _say("the MCP Inspector starts a stdio server itself; run:")
        print(f"    npx @modelcontextprotocol/inspector {shlex.join(command)}", file=sys.stderr)
        return 0
    return trio.run(_Dev(plan, inspector=args.inspector).run)


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
        if name in _DEV_ONLY:
            if _DEV_ONLY[name] and "=" not in word:
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
    return _unique(trees), _unique(directories), _unique(files)


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


def _unique(paths: Iterable[Path]) -> list[Path]:
    return list(dict.fromkeys(paths))


def _say(text: str) -> None:
    print(f"mcpactor dev: {text}", file=sys.stderr, flush=True)


def _url(host: str, port: int, path: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


def inspector_hint(url: str) -> str:
    """How to connect the MCP Inspector to the Streamable HTTP endpoint ``url``."""
    import urllib.parse

    query = urllib.parse.urlencode({"transport": "streamable-http", "serverUrl": url})
    return (
        "for the MCP Inspector, run:\n"
        "    npx @modelcontextprotocol/inspector\n"
        f"  and open {INSPECTOR_PAGE}?{query}\n"
        f"  (or choose the transport Streamable HTTP and the URL {url});\n"
        "  from a terminal, its CLI mode:\n"
        f"    npx @modelcontextprotocol/inspector --cli {url} --transport http "
        "--method tools/list"
    )


class _Dev:
    # The supervisor: one child at a time, replaced on every batch of changes.

    def __init__(self, plan: DevPlan, *, inspector: bool) -> None:
        self.plan = plan
        self.inspector = inspector
        self.listener: socket.socket | None = None

    async def run(self) -> int:
        import trio

        if self.plan.bind is not None:
            from .._workers import bind_sockets
            from ..transports.http import LISTEN_BACKLOG

            host, port = self.plan.bind
            try:
                (self.listener,) = bind_sockets(host, port, 1, backlog=LISTEN_BACKLOG)[:1]
            except OSError as exc:
                shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
                print(
                    f"mcpactor: cannot listen on {shown}: {exc.strerror or exc}", file=sys.stderr
                )
                return 1
        # Stopped by a signal: a clean end.
        status = 0
        try:
            async with trio.open_nursery() as nursery:
                changes = await nursery.start(self._watch)
                nursery.start_soon(self._stop_on_signal, nursery.cancel_scope)
                status = await self._supervise(changes)
                nursery.cancel_scope.cancel()
            return status
        finally:
            if self.listener is not None:
                self.listener.close()

    async def _stop_on_signal(self, scope: trio.CancelScope) -> None:
        import signal

        import trio

        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                scope.cancel("signal")
                return

    async def _watch(
        self, *, task_status: trio.TaskStatus[trio.MemoryReceiveChannel[set[str]]]
    ) -> None:
        import trio

        send, receive = trio.open_memory_channel[set[str]](16)
        plan = self.plan
        wanted = {str(path) for path in plan.files}
        # A file named by itself is watched through its directory, unless a tree has it.
        alone = [
            file.parent
            for file in plan.files
            if not any(file.is_relative_to(tree) for tree in plan.trees)
        ]
        directories = _unique([*plan.directories, *alone])
        async with send, trio.open_nursery() as nursery:
            for roots, recursive in ((plan.trees, True), (directories, False)):
                existing = [root for root in roots if root.is_dir()]
                if existing:
                    watch = self._watch_roots
                    nursery.start_soon(watch, existing, recursive, wanted, send.clone())
            task_status.started(receive)

    async def _watch_roots(
        self,
        roots: Sequence[Path],
        recursive: bool,
        wanted: set[str],
        send: trio.MemorySendChannel[set[str]],
    ) -> None:
        import trio
        import watchfiles

        class Relevant(watchfiles.DefaultFilter):
            def __call__(self, change: watchfiles.Change, path: str) -> bool:
                return path in wanted or (
                    path.endswith(_WATCHED_SUFFIXES) and super().__call__(change, path)
                )

        stop = trio.Event()

        async def stop_when_cancelled() -> None:
            # Cancelled at once, unlike the watch waiting on its thread: see above.
            try:
                await trio.sleep_forever()
            finally:
                stop.set()

        async with send, trio.open_nursery() as nursery:
            nursery.start_soon(stop_when_cancelled)
            async for batch in watchfiles.awatch(
                *roots,
                watch_filter=Relevant(),
                debounce=_DEBOUNCE_MS,
                step=_STEP_MS,
                stop_event=stop,
                recursive=recursive,
            ):
                await send.send({path for _, path in batch})

    async def _supervise(self, changes: trio.MemoryReceiveChannel[set[str]]) -> int:
        import trio

        first = True
        while True:
            async with self._child() as process:
                if first and self.listener is not None:
                    host, port = self.listener.getsockname()[:2]
                    url = _url(host, port, self.plan.path)
                    _say(f"serving {url} (restarted when a watched file changes; Ctrl-C stops)")
                    if self.inspector:
                        _say(inspector_hint(url))
                first = False
                with trio.CancelScope() as session:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._report_exit, process, session)
                        try:
                            changed = await changes.receive()
                        except trio.EndOfChannel:
                            # Nothing to watch: serve until stopped.
                            await trio.sleep_forever()
                        nursery.cancel_scope.cancel()
                if session.cancelled_caught:
                    return 0
            # Edits saved while the old server stopped: one restart for all of them.
            while True:
                try:
                    changed |= changes.receive_nowait()
                except trio.WouldBlock:
                    break
            _say(f"{_shown(changed)} changed; restarting")

    @contextlib.asynccontextmanager
    async def _child(self) -> AsyncIterator[trio.Process]:
        import trio

        command = [sys.executable, "-m", "mcpactor", *self.plan.argv]
        pass_fds: list[int] = []
        lifeline = held = None
        if self.listener is not None:
            host, port = self.listener.getsockname()[:2]
            shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            command += ["--http", shown]
            if sys.platform != "win32":
                lifeline, held = os.pipe()
                listener = self.listener.fileno()
                pass_fds = [listener, lifeline]
                command += ["--worker-socket", str(listener), "--worker-lifeline", str(lifeline)]
            else:  # pragma: no cover - the child binds the port itself between restarts
                self.listener.close()
        try:
            try:
                process = await trio.lowlevel.open_process(
                    command,
                    pass_fds=pass_fds,
                    # Over HTTP a terminal's Ctrl-C reaches the supervisor alone.
                    start_new_session=self.plan.bind is not None,
                )
            finally:
                if lifeline is not None:
                    os.close(lifeline)
            try:
                yield process
            finally:
                with trio.CancelScope(shield=True):
                    await _stop(process)
        finally:
            if held is not None:
                os.close(held)

    async def _report_exit(self, process: trio.Process, session: trio.CancelScope) -> None:
        code = await process.wait()
        if code == 0 and self.listener is None:
            # Over stdio the client closed the input: the session is over.
            session.cancel()
            return
        _say(f"the server exited with status {code}; waiting for a change to start it again")


async def _stop(process: trio.Process) -> None:
    import trio

    if process.returncode is None:
        process.terminate()
        with trio.move_on_after(_STOP_GRACE):
            await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()


def _shown(paths: set[str], most: int = 3) -> str:
    cwd = Path.cwd()
    names = []
    for path in sorted(paths)[:most]:
        try:
            names.append(str(Path(path).relative_to(cwd)))
        except ValueError:
            names.append(path)
    more = f" and {len(paths) - most} more" if len(paths) > most else ""
    return ", ".join(names) + more
