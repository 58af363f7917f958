"""The supervisor of ``mcpactor dev``: a front for the clients, and a child behind it.

The supervisor (this process) never imports the served code, so no edit can break it.
It stays in front of the children and holds the clients' connections itself:

- Over HTTP it listens on the address it was given and forwards each request to the
  current child (``_dev_http``), which serves on a listening socket of its own, handed
  down (``serve --worker-socket FD``), one per start. Over stdio it holds the client's
  pipes and relays each message (``_dev_messages``), as it does for each WebSocket.
- Each start is a generation (``_dev_child``). The child says through a pipe when it
  serves, or why it cannot start (``--worker-status FD``, as the workers of
  ``serve --workers`` do). While it starts, requests wait; while it cannot, they are
  answered with its report (the file and line); sessions are carried over to the next
  child by replaying their ``initialize``.
- Each child also holds the read end of a pipe only the supervisor writes to
  (``--worker-lifeline FD``): however the supervisor ends, the child stops.
- Files are watched with ``watchfiles.awatch``, which is written on anyio and so runs on
  trio. Its watcher runs in a worker thread that only returns when a change arrives, its
  timeout expires or its stop event is set; cancelling the thread's wait does not stop the
  thread, so the watch is stopped through ``stop_event`` (a ``trio.Event``: all it needs is
  ``is_set``) before the task waiting for it is cancelled.
- ``--inspector`` starts the MCP Inspector (``npx @modelcontextprotocol/inspector``)
  pointed at the server; without ``npx`` it says how to start it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

# What the supervisor runs on is imported where it runs: ``dev``'s parser, built by every
# command, imports this module.
if TYPE_CHECKING:
    import socket

    import trio

    from ._dev_child import Children, Generation

__all__ = [
    "INSPECTOR_PAGE",
    "INSPECTOR_SPEC",
    "DevPlan",
    "Supervisor",
    "inspector_command",
    "inspector_hint",
    "say",
    "unique",
]

# watchfiles groups changes until none came for _STEP_MS, for _DEBOUNCE_MS at most: an
# editor's save (write, rename, chmod) is one restart, and a restart is still quick.
_STEP_MS: Final = 50
_DEBOUNCE_MS: Final = 400
#: seconds a child gets to stop gracefully before it is killed
_STOP_GRACE: Final = 3.0
#: suffixes of the files watched in a watched directory
_WATCHED_SUFFIXES: Final = (".py", ".toml", ".json", ".yaml", ".yml")
#: the MCP Inspector's web page (its default port)
INSPECTOR_PAGE: Final = "http://localhost:6274/"
#: the MCP Inspector's npm package, run with ``npx``; the latest by name, because on a
#: Node.js older than the latest Inspector asks for, npx would pick an Inspector from
#: before ``--server-url`` and ``--`` (0.15)
INSPECTOR_SPEC: Final = "@modelcontextprotocol/inspector@latest"


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
    #: the largest message, in bytes (the front holds clients to it, as the child does)
    max_message_bytes: int = 4 * 1024 * 1024
    #: the certificate and key of HTTPS, if served
    tls: tuple[str, str] | None = None


def unique(paths: Iterable[Path]) -> list[Path]:
    """``paths`` without repeats, in order."""
    return list(dict.fromkeys(paths))


def say(text: str) -> None:
    """Say ``text`` on stderr, as ``mcpactor dev``."""
    print(f"mcpactor dev: {text}", file=sys.stderr, flush=True)


def _url(host: str, port: int, path: str, scheme: str = "http") -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}{path}"


def inspector_hint(url: str) -> str:
    """How to connect the MCP Inspector to the Streamable HTTP endpoint ``url``."""
    import urllib.parse

    query = urllib.parse.urlencode({"transport": "streamable-http", "serverUrl": url})
    return (
        "for the MCP Inspector, run:\n"
        f"    npx {INSPECTOR_SPEC} --transport http --server-url {url}\n"
        f"  (or run npx {INSPECTOR_SPEC} and open {INSPECTOR_PAGE}?{query});\n"
        "  from a terminal, its CLI mode:\n"
        f"    npx {INSPECTOR_SPEC} --cli {url} --transport http --method tools/list"
    )


def inspector_command(npx: str, url: str) -> list[str]:
    """The command line that starts the MCP Inspector connected to ``url``."""
    # --yes: asked for by name, the package is fetched without a question on the way.
    return [npx, "--yes", INSPECTOR_SPEC, "--transport", "http", "--server-url", url]


def _connectable(host: str) -> str:
    # Where a local client reaches a server bound to every address.
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


class Supervisor:
    """The front clients talk to, and one child at a time behind it, replaced on every
    batch of changes."""

    def __init__(self, plan: DevPlan, *, inspector: bool) -> None:
        self.plan = plan
        self.inspector = inspector
        self.listener: socket.socket | None = None
        self.children: Children | None = None
        self.scheme = "https" if plan.tls is not None else "http"

    async def run(self) -> int:
        import trio

        from ._dev_child import Children

        self.children = children = Children()
        if self.plan.bind is not None:
            from ..transports.http import LISTEN_BACKLOG
            from ._workers import bind_sockets

            host, port = self.plan.bind
            try:
                (self.listener,) = bind_sockets(host, port, 1, backlog=LISTEN_BACKLOG)[:1]
            except OSError as exc:
                shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
                print(
                    f"mcpactor: cannot listen on {shown}: {exc.strerror or exc}", file=sys.stderr
                )
                return 1
        stop = trio.Event()
        input_over = trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                changes = await nursery.start(self._watch)
                nursery.start_soon(self._stop_on_signal, stop, nursery.cancel_scope)
                front_done = trio.Event()
                shutdown = trio.Event()
                if self.listener is not None:
                    await nursery.start(self._serve_http, shutdown, front_done)
                    host, port = self.listener.getsockname()[:2]
                    url = _url(host, port, self.plan.path, self.scheme)
                    say(f"serving {url} (restarted when a watched file changes; Ctrl-C stops)")
                    if self.inspector:
                        nursery.start_soon(
                            self._run_inspector,
                            _url(_connectable(host), port, self.plan.path, self.scheme),
                        )
                else:
                    nursery.start_soon(self._serve_stdio, input_over, front_done)
                status = await self._supervise(changes, stop, input_over)
                # Requests still waiting are told; those under way were answered by the
                # child as it stopped.
                children.close()
                shutdown.set()
                with trio.move_on_after(_STOP_GRACE):
                    await front_done.wait()
                nursery.cancel_scope.cancel()
            return status
        finally:
            if self.listener is not None:
                self.listener.close()

    async def _stop_on_signal(self, stop: trio.Event, everything: trio.CancelScope) -> None:
        import signal

        import trio

        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                if stop.is_set():
                    everything.cancel("second signal")
                    return
                stop.set()

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
        directories = unique([*plan.directories, *alone])
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

    async def _serve_http(
        self,
        shutdown: trio.Event,
        done: trio.Event,
        *,
        task_status: trio.TaskStatus[tuple[str, int]],
    ) -> None:
        import functools
        import ssl

        import trio

        from ..transports import http_error_body
        from ..transports.h1 import H1Config, serve_h1
        from ..transports.http import LISTEN_BACKLOG
        from ._dev_http import HttpFront
        from ._dev_messages import serve_websocket_front

        assert self.children is not None
        assert self.listener is not None
        plan = self.plan
        server_ssl = child_ssl = None
        if plan.tls is not None:
            server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            server_ssl.load_cert_chain(*plan.tls)
            server_ssl.set_alpn_protocols(["http/1.1"])
            # The child's certificate names the public address, not the loopback one it
            # is reached on from here.
            child_ssl = ssl.create_default_context()
            child_ssl.check_hostname = False
            child_ssl.verify_mode = ssl.CERT_NONE
        front = HttpFront(
            self.children,
            max_message_bytes=plan.max_message_bytes,
            child_ssl=child_ssl,
            on_websocket=functools.partial(
                serve_websocket_front,
                self.children,
                max_message_bytes=plan.max_message_bytes,
                child_ssl=child_ssl,
            ),
        )
        config = H1Config(
            max_body_bytes=plan.max_message_bytes,
            max_message_bytes=plan.max_message_bytes,
            backlog=LISTEN_BACKLOG,
            ssl_context=server_ssl,
        )
        host, port = self.listener.getsockname()[:2]
        try:
            await serve_h1(
                front,
                host=host,
                port=port,
                config=config,
                shutdown=shutdown,
                graceful_timeout=_STOP_GRACE,
                sockets=[self.listener],
                error_body=http_error_body,
                task_status=task_status,
            )
        finally:
            done.set()
            with trio.CancelScope(shield=True):
                await front.aclose()

    async def _serve_stdio(self, input_over: trio.Event, done: trio.Event) -> None:
        from ._dev_messages import serve_stdio_front

        assert self.children is not None
        try:
            await serve_stdio_front(self.children, max_message_bytes=self.plan.max_message_bytes)
        finally:
            input_over.set()
            done.set()

    async def _run_inspector(self, url: str) -> None:
        import shlex
        import shutil
        import subprocess

        import trio

        npx = shutil.which("npx")
        if npx is None:
            say(
                "npx was not found (it comes with Node.js): the MCP Inspector was not started; "
                + inspector_hint(url)
            )
            return
        command = inspector_command(npx, url)
        say(f"starting the MCP Inspector: {shlex.join(command)}")
        # Its own process group: a terminal's Ctrl-C reaches the supervisor alone, which
        # stops the Inspector (npx and the node processes it starts) with the server.
        process = await trio.lowlevel.open_process(
            command,
            stdin=subprocess.DEVNULL,
            stdout=sys.stderr.fileno(),
            start_new_session=sys.platform != "win32",
        )
        try:
            code = await process.wait()
            say(f"the MCP Inspector exited with status {code}")
        finally:
            with trio.CancelScope(shield=True):
                await _stop(process, group=sys.platform != "win32")

    async def _supervise(
        self,
        changes: trio.MemoryReceiveChannel[set[str]],
        stop: trio.Event,
        input_over: trio.Event,
    ) -> int:
        import trio

        assert self.children is not None
        children = self.children
        generation = children.begin()
        while True:
            async with self._child(generation):
                changed: set[str] | None = None

                async def next_change() -> None:
                    nonlocal changed
                    try:
                        changed = await changes.receive()
                    except trio.EndOfChannel:
                        await trio.sleep_forever()  # nothing to watch: serve until stopped

                await _first_of(next_change, stop.wait, input_over.wait)
                if changed is None:
                    # Stopped, or (over stdio) the client is done.
                    children.close()
                    return 0
                # From here on requests wait for the next child, not this one, which
                # finishes what it has under way as it stops.
                generation = children.begin()
            # Edits saved while the old server stopped: one restart for all of them.
            while True:
                try:
                    changed |= changes.receive_nowait()
                except trio.WouldBlock:
                    break
            say(f"{_shown(changed)} changed; restarting")

    @contextlib.asynccontextmanager
    async def _child(self, generation: Generation) -> AsyncIterator[trio.Process]:
        import subprocess

        import trio

        from ._dev_child import handover

        command, pass_fds, passed, status, held, internal = handover(
            self.plan.argv, self.listener, generation, scheme=self.scheme, path=self.plan.path
        )
        pass_fds += passed
        stdio = self.listener is None
        try:
            try:
                process = await trio.lowlevel.open_process(
                    command,
                    pass_fds=pass_fds,
                    stdin=subprocess.PIPE if stdio else None,
                    stdout=subprocess.PIPE if stdio else None,
                    # Over HTTP a terminal's Ctrl-C reaches the supervisor alone.
                    start_new_session=not stdio,
                )
            except BaseException:
                if status is not None:
                    os.close(status)
                raise
            finally:
                for fd in passed:
                    os.close(fd)
                if internal is not None:
                    # The child's now: it closes when the child stops accepting or exits,
                    # and connections waiting in its backlog are refused with it.
                    internal.close()
            generation.process = process
            if stdio or status is None:
                # Nothing to say it serves: what it is sent waits in its pipe or socket.
                generation.serve()
            async with trio.open_nursery() as nursery:
                heard = trio.Event()
                nursery.start_soon(self._listen, status, generation, heard)
                nursery.start_soon(self._watch_exit, process, generation, heard)
                try:
                    yield process
                finally:
                    generation.stopping = True
                    with trio.CancelScope(shield=True):
                        await _stop(process)
                        await generation.ended.wait()
                        # Its pipes (over stdio): stdout is closed by the front reading
                        # it, once read to its end.
                        if process.stdin is not None:
                            await process.stdin.aclose()
                        if process.stdout is not None and not generation.claimed:
                            await process.stdout.aclose()
                    nursery.cancel_scope.cancel()
        finally:
            if held is not None:
                os.close(held)

    async def _listen(self, status: int | None, generation: Generation, heard: trio.Event) -> None:
        import trio

        from ._dev_child import read_status

        try:
            if status is not None:
                await read_status(status, generation)
        finally:
            heard.set()
        if generation.ready and generation.number > 1 and self.listener is not None:
            took = trio.current_time() - generation.begun
            say(f"serving again ({took:.2f} s after the change)")

    async def _watch_exit(
        self, process: trio.Process, generation: Generation, heard: trio.Event
    ) -> None:
        import trio

        from ._dev_child import STOPPED, Failure
        from ._report import say_failure

        code = await process.wait()
        # What it wrote before it exited is read to the end of the pipe.
        with trio.move_on_after(_STOP_GRACE):
            await heard.wait()
        try:
            if generation.stopping:
                return
            if code == 0 and self.listener is None:
                # Over stdio the client closed the input: the session is over.
                generation.fail(STOPPED)
                return
            failure = generation.report or Failure((f"the server exited with status {code}",))
            generation.fail(failure)
            if generation.report is not None:
                say_failure(list(failure.lines), failure.traceback)
            say(
                f"the server exited with status {code}; waiting for a change to start it "
                "again (until then, clients are answered with its error)"
            )
        finally:
            generation.ended.set()


async def _stop(process: trio.Process, *, group: bool = False) -> None:
    # SIGTERM, then SIGKILL after the grace period; with ``group``, to the process group
    # the process leads (what it started itself goes with it).
    import signal

    import trio

    def send(signum: int) -> None:
        if group:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)

    if process.returncode is None:
        send(signal.SIGTERM)
        with trio.move_on_after(_STOP_GRACE):
            await process.wait()
    if process.returncode is None:
        send(signal.SIGKILL)
        await process.wait()


async def _first_of(*waits: Callable[[], Awaitable[object]]) -> None:
    # Return once one of ``waits`` has returned; the others are cancelled.
    import trio

    async with trio.open_nursery() as nursery:
        for wait in waits:
            nursery.start_soon(_then_cancel, wait, nursery.cancel_scope)


async def _then_cancel(fn: Callable[[], Awaitable[object]], scope: trio.CancelScope) -> None:
    await fn()
    scope.cancel()


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
