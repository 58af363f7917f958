# The stdio transport: one session over newline-delimited JSON on stdin/stdout.
#
# The process's real stdout is kept for protocol messages only: while serving, fd 1 is
# pointed at stderr, so a stray print() (or a C library's write) in a handler goes to
# the log instead of corrupting the stream. SIGINT/SIGTERM and stdin EOF end the
# session the same way: stop reading, give running handlers a grace period, cancel the
# rest, flush what is queued, return.

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import trio

from .._exceptions import ProtocolError
from ..protocol import DEFAULT_MAX_LINE_BYTES, JSONValue
from ..runtime import (
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
from ._pipe import Pipe, PipeSink
from ._stdio_input import read_input

__all__ = ["serve_stdio", "serve_streams"]

_log = logging.getLogger("mcpactor")


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
    # Everything to the client leaves through the one sink: the session's messages and
    # the stateless requests' alike.
    sink = PipeSink(send_stream, max_message_bytes=max_line_bytes)
    outbox = Outbox(None, deliver=sink.send, max_message_bytes=max_line_bytes)
    actor = SessionActor(server, outbox, options)
    async with observed(actor, host), trio.open_nursery() as nursery:
        # The sink's writer ends once the sink is closed, after its last message.
        nursery.start_soon(sink.drain)
        host.attach()
        async with trio.open_nursery() as tasks:
            # Tasks of stateless requests end with the session (they answer no one after).
            host.open_tasks(tasks)
            async with trio.open_nursery() as inputs:
                reader = trio.CancelScope()
                router = await inputs.start(
                    functools.partial(
                        read_input,
                        receive_stream,
                        inbox_send,
                        host=host,
                        sink=sink,
                        session=actor,
                        max_line_bytes=max_line_bytes,
                        grace=options.shutdown_grace,
                        reader=reader,
                    )
                )
                sink.quiet = router.quiet
                if stop is not None:
                    inputs.start_soon(_stop_on, stop, reader)
                started = await inputs.start(
                    _run_session, actor, inbox_receive, sink, inputs.cancel_scope
                )
                task_status.started(started)
            tasks.cancel_scope.cancel()
        await host.aclose()


async def _run_session(
    actor: SessionActor,
    inbox: trio.MemoryReceiveChannel[JSONValue | ProtocolError],
    sink: PipeSink,
    scope: trio.CancelScope,
    *,
    task_status: trio.TaskStatus[SessionActor] = trio.TASK_STATUS_IGNORED,
) -> None:
    # Run the session to its end, then close the sink and cancel the helpers (signal or
    # stop watchers). The session ends last of all the pipe's senders (after the
    # stateless requests, whose end closes its inbox), and what it sent is in the sink
    # when its run returns.
    try:
        await actor.run(inbox, task_status=task_status)
    finally:
        sink.close()
    scope.cancel()


async def _then_cancel(
    scope: trio.CancelScope,
    fn: Callable[..., Awaitable[None]],
    *args: object,
    task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED,
) -> None:
    # Run an actor to completion, then cancel its helpers (signal or stop watchers).
    await fn(*args, task_status=task_status)
    scope.cancel()


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
                    Pipe(stdin),
                    Pipe(stdout),
                    options=options,
                    max_line_bytes=max_line_bytes,
                    stop=stop,
                    stateless=stateless,
                ),
            )
            task_status.started()


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
