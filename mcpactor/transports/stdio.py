# The stdio transport: one session over newline-delimited JSON on stdin/stdout.
#
# The process's real stdout is kept for protocol messages only: while serving, fd 1 is
# pointed at stderr, so a stray print() (or a C library's write) in a handler goes to
# the log instead of corrupting the stream. SIGINT/SIGTERM and stdin EOF end the
# session the same way: stop reading, give running handlers a grace period, cancel the
# rest, flush what is queued, return.

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import signal
import stat
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final

import trio

from .._exceptions import ProtocolError
from ..protocol import DEFAULT_MAX_LINE_BYTES, JSONValue, LineFramer
from ..runtime import (
    ConflictDetector,
    Outbound,
    Outbox,
    SessionActor,
    SessionOptions,
    StatelessHost,
    StatelessOptions,
    collect_when_quiet,
    observed,
    settle_heap,
)
from ..server import Server
from ._pump import WriteThrough, read_frames, write_frames
from ._stdio_stateless import PipeRouter

__all__ = ["serve_stdio", "serve_streams"]

_log = logging.getLogger("mcpactor")

_RECEIVE_SIZE: Final = 65536


async def serve_streams(
    server: Server,
    receive_stream: trio.abc.ReceiveStream,
    send_stream: trio.abc.SendStream,
    *,
    options: SessionOptions | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    stop: trio.Event | None = None,
    stateless: StatelessHost | StatelessOptions | None = None,
    task_status: trio.TaskStatus[SessionActor] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve one session over a pair of byte streams until input ends or ``stop`` is set.

    Requests that carry a stateless envelope (2026-07-28) are served beside the session
    by ``stateless`` (a host, or the options of one made here).
    """
    options = (options or SessionOptions()).with_message_limit(max_line_bytes)
    if not isinstance(stateless, StatelessHost):
        stateless = StatelessHost(server, options=stateless, session_options=options)
    host = stateless
    inbox_send, inbox_receive = trio.open_memory_channel[JSONValue | ProtocolError](64)
    outbox: Outbox
    through: WriteThrough | None = None
    if isinstance(send_stream, _Pipe):
        # Senders write their frames themselves whenever the writer has nothing queued.
        queue_send, queue = trio.open_memory_channel[Outbound | bytes](256)
        through = WriteThrough(send_stream, max_message_bytes=max_line_bytes)
        outbox = through.outbox = Outbox(
            queue_send, through=through, eager=True, max_message_bytes=max_line_bytes
        )
        writer = functools.partial(
            write_frames, send_stream, queue, outbox=outbox, through=through
        )
    else:
        outbox_send, outbox_receive = trio.open_memory_channel[Outbound](256)
        outbox = Outbox(outbox_send, max_message_bytes=max_line_bytes)
        writer = functools.partial(write_frames, send_stream, outbox_receive, outbox=outbox)
    actor = SessionActor(server, outbox, options)
    grace = options.shutdown_grace
    async with observed(actor, host), trio.open_nursery() as nursery:
        # The writer ends when the actor closes the outbox, after its last message.
        nursery.start_soon(writer)
        host.attach()
        async with trio.open_nursery() as tasks:
            # Tasks of stateless requests end with the session (they answer no one after).
            host.open_tasks(tasks)
            async with trio.open_nursery() as inputs:
                reader = trio.CancelScope()
                router = await inputs.start(
                    _read_input,
                    reader,
                    receive_stream,
                    inbox_send,
                    max_line_bytes,
                    host,
                    outbox,
                    grace,
                )
                if through is not None:
                    through.quiet = lambda: not actor.requests_in_flight and not router.in_flight
                if stop is not None:
                    inputs.start_soon(_stop_on, stop, reader)
                started = await inputs.start(
                    _then_cancel, inputs.cancel_scope, actor.run, inbox_receive
                )
                task_status.started(started)
            tasks.cancel_scope.cancel()
        await host.aclose()


async def _then_cancel(
    scope: trio.CancelScope,
    fn: Callable[..., Awaitable[None]],
    *args: object,
    task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED,
) -> None:
    # Run an actor to completion, then cancel its helpers (signal or stop watchers).
    await fn(*args, task_status=task_status)
    scope.cancel()


async def _read_input(
    reader: trio.CancelScope,
    stream: trio.abc.ReceiveStream,
    inbox: trio.MemorySendChannel[JSONValue | ProtocolError],
    max_line_bytes: int,
    host: StatelessHost,
    outbox: Outbox,
    grace: float,
    task_status: trio.TaskStatus[PipeRouter] = trio.TASK_STATUS_IGNORED,
) -> None:
    # The session's inbox closes only once the stateless requests are done: the session
    # then closes the outbox they answer through.
    async with inbox, trio.open_nursery() as requests:
        router = PipeRouter(host, outbox, requests)
        task_status.started(router)
        with reader:
            await read_frames(stream, inbox.clone(), LineFramer(max_line_bytes), route=router)
        # Input is over: listen streams end gracefully, the rest get the grace period.
        host.stop()
        requests.cancel_scope.deadline = trio.current_time() + grace


async def _stop_on(stop: trio.Event, reader: trio.CancelScope) -> None:
    await stop.wait()
    reader.cancel("asked to stop")


async def serve_stdio(
    server: Server,
    *,
    options: SessionOptions | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    handle_signals: bool = True,
    tune_gc: bool = True,
    stateless: StatelessHost | StatelessOptions | None = None,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``server`` on this process's stdin/stdout until EOF, SIGINT or SIGTERM.

    With ``tune_gc``, the process's cycle collector is set up for serving once the
    server has started (``settle_heap``: start-up frozen, fewer young passes), and the
    young generations are collected in quiet spells (``collect_when_quiet``).
    """
    with _protocol_stdout() as stdout_fd:
        stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
        stdout = trio.lowlevel.FdStream(stdout_fd)
        stop = trio.Event()
        async with stdin, stdout, server.running(), trio.open_nursery() as nursery:
            # This process now serves one session until it exits. Freezing what
            # start-up built also keeps interpreter shutdown (a few full collections)
            # from taking tens of ms.
            if tune_gc:
                settle_heap()
                nursery.start_soon(collect_when_quiet)
            if handle_signals:
                nursery.start_soon(_watch_signals, stop, nursery.cancel_scope)
            await nursery.start(
                _then_cancel,
                nursery.cancel_scope,
                functools.partial(
                    serve_streams,
                    server,
                    _Pipe(stdin),
                    _Pipe(stdout),
                    options=options,
                    max_line_bytes=max_line_bytes,
                    stop=stop,
                    stateless=stateless,
                ),
            )
            task_status.started()


class _Pipe(trio.abc.Stream):
    # An FdStream for the one reader or the one writer of a session, without the trip
    # through the scheduler that FdStream's methods begin with: the reader and the writer
    # loops already pass through it whenever they wait (for the pipe, for the outbox), so
    # a request answered at once would otherwise pay for two extra rounds of the run
    # loop, each an epoll_wait. After a short read from a pipe or socket (it was drained)
    # the next read waits for it first instead of trying a read that would fail; a file
    # or a TTY is simply read. Cancellation is still checked on entry; the owner
    # (FdStream) keeps the fd and closes it.

    def __init__(self, stream: trio.lowlevel.FdStream) -> None:
        self._stream = stream
        self._fd = stream.fileno()
        mode = os.fstat(self._fd).st_mode
        self._drains = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
        self._drained = False
        # One writer at a time: the session's writer task, or a sender writing through.
        self._writer = ConflictDetector("another task is writing this pipe")

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        await trio.lowlevel.checkpoint_if_cancelled()
        size = max_bytes or _RECEIVE_SIZE
        if self._drained:
            await self._wait(trio.lowlevel.wait_readable)
        while True:
            try:
                data = os.read(self._fd, size)
            except BlockingIOError:
                await self._wait(trio.lowlevel.wait_readable)
            except OSError as exc:
                raise _translate(exc) from None
            else:
                self._drained = self._drains and 0 < len(data) < size
                return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        with self._writer, memoryview(data) as view:
            sent = 0
            while sent < len(view):
                try:
                    sent += os.write(self._fd, view[sent:])
                except BlockingIOError:
                    await self._wait(trio.lowlevel.wait_writable)
                except OSError as exc:
                    raise _translate(exc) from None

    def write_nowait(self, data: bytes | memoryview) -> int:
        """Write what the pipe takes now; BlockingIOError if it takes nothing.

        Other failures (the reader left) raise their OSError as it is; a write while
        ``send_all`` is under way raises ``trio.BusyResourceError``.
        """
        with self._writer:
            return os.write(self._fd, data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._wait(trio.lowlevel.wait_writable)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def _wait(self, wait: Callable[[int], Awaitable[None]]) -> None:
        try:
            await wait(self._fd)
        except OSError as exc:
            raise _translate(exc) from None


def _translate(exc: OSError) -> trio.ClosedResourceError | trio.BrokenResourceError:
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("the pipe was already closed")
    return trio.BrokenResourceError(f"the pipe broke: {exc}")


async def _watch_signals(stop: trio.Event, everything: trio.CancelScope) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if not stop.is_set():
                _log.info("%s: finishing in-flight requests", signal.Signals(signum).name)
                stop.set()
            else:
                _log.warning("second signal: cancelling everything")
                everything.cancel()


@contextlib.contextmanager
def _protocol_stdout() -> Iterator[int]:
    # Duplicate the real stdout for protocol frames, then point fd 1 (and sys.stdout)
    # at stderr for everything else.
    sys.stdout.flush()
    protocol_fd = os.dup(sys.stdout.fileno())
    saved_fd = os.dup(sys.stdout.fileno())
    saved_stdout = sys.stdout
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    try:
        yield protocol_fd
    finally:
        sys.stdout = saved_stdout
        os.dup2(saved_fd, saved_stdout.fileno())
        os.close(saved_fd)
