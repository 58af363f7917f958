# Connections: what carries a ClientSession's messages to a server and back.
#
# Each connection is a pair of small carrier tasks between the session's two channels
# and the server: a SessionActor's inbox/outbox in memory, or a subprocess's pipes. A
# carrier whose far end went away keeps draining its near end (and drops what it reads)
# so that no sender ever blocks on a peer that is gone; ends of input close the channel
# downstream, which is how "the client closed" and "the server exited" propagate.
#
# Closing (leaving the ``async with``) is the stdio shutdown of the lifecycle page in
# both cases: the client's channel closes, so the server sees end of input and winds
# down; a subprocess gets ``shutdown_timeout`` seconds to exit, then SIGTERM, then
# SIGKILL.

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, Unpack

import orjson
import trio

from .._exceptions import ProtocolError, RemoteProtocolError
from ..protocol import (
    DEFAULT_MAX_LINE_BYTES,
    LATEST,
    SESSION_REVISIONS,
    FrameTooLong,
    JSONValue,
    LineFramer,
    decode,
    describe,
    encode,
    serialize,
)
from ..runtime import Outbound, SessionActor, SessionOptions, observed
from ..server import Server
from ._errors import unwrap_single_errors
from ._session import ClientArgs, ClientSession, open_client_session

__all__ = ["connect_memory", "connect_stdio", "connect_streams"]

_log = logging.getLogger("mcpactor.client")

_CHANNEL_SIZE: Final = 64
_OUTBOX_SIZE: Final = 256
_RECEIVE_SIZE: Final = 65536


@contextlib.asynccontextmanager
async def connect_memory(
    server: Server,
    *,
    options: SessionOptions | None = None,
    initialize: bool = False,
    protocol_version: str = LATEST.version,
    lifespan: bool = True,
    **client: Unpack[ClientArgs],
) -> AsyncIterator[ClientSession]:
    """Serve ``server`` in this trio run and yield a client connected to it.

    A ``SessionActor`` runs in a nursery of its own; every message in either direction
    is encoded and decoded with orjson, so what would fail on a real wire fails here.
    With ``initialize=True`` the client is initialized at ``protocol_version`` (and has
    pinged the server, so the server has seen ``notifications/initialized``) before it
    is yielded; otherwise it is connected but not initialized. A ``protocol_version``
    without sessions is asked with ``server/discover`` instead, and ``"auto"`` probes
    with it and falls back to ``initialize`` (``ClientSession.start``). ``lifespan`` enters the
    server's lifespans around the session. ``client`` takes the keyword arguments of
    ``ClientSession`` (``sampling_handler``, ``on_server_message``, …). Its tool results'
    ``data`` is what the tool returned, of its annotated type (``ToolResult``).
    """
    to_server_send, to_server_receive = trio.open_memory_channel[JSONValue](_CHANNEL_SIZE)
    to_client_send, to_client_receive = trio.open_memory_channel[JSONValue | ProtocolError](
        _CHANNEL_SIZE
    )
    inbox_send, inbox_receive = trio.open_memory_channel[JSONValue | ProtocolError](_CHANNEL_SIZE)
    outbox_send, outbox_receive = trio.open_memory_channel[Outbound](_OUTBOX_SIZE)
    actor = SessionActor(server, outbox_send, options)
    running: AbstractAsyncContextManager[Any] = (
        server.running() if lifespan else contextlib.nullcontext()
    )
    with unwrap_single_errors():
        async with running, observed(actor, transport="memory"), trio.open_nursery() as nursery:
            nursery.start_soon(_carry_to_server, to_server_receive, inbox_send)
            nursery.start_soon(_carry_to_client, outbox_receive, to_client_send)
            await nursery.start(actor.run, inbox_receive)
            async with open_client_session(to_server_send, to_client_receive, **client) as session:
                # In the server's process: a tool's value comes back as its own type.
                session._tools.server = server.tool_output
                if initialize and protocol_version in SESSION_REVISIONS:
                    await session.initialize(protocol_version)
                    # A round trip after ``initialized``: once it returns, the server is
                    # operating, so a change made right away is notified, not lost.
                    await session.ping()
                elif initialize:
                    await session.start(protocol_version)
                yield session


def _round_trip(value: JSONValue) -> JSONValue | ProtocolError:
    # As over a byte stream: what the framer refuses (nesting past MAX_DEPTH) arrives
    # as the error the far end answers.
    try:
        return decode(orjson.dumps(value))
    except RemoteProtocolError as exc:
        return exc


async def _carry_to_server(
    source: trio.MemoryReceiveChannel[JSONValue],
    inbox: trio.MemorySendChannel[JSONValue | ProtocolError],
) -> None:
    # The far end is closed only when the near end ended: after a failure (a message
    # JSON cannot carry) the nursery cancels everyone, and the failure is what surfaces.
    async with source:
        async for message in source:
            # A gone actor: keep draining so the client never blocks.
            with contextlib.suppress(trio.BrokenResourceError):
                await inbox.send(_round_trip(message))
    await inbox.aclose()


async def _carry_to_client(
    outbox: trio.MemoryReceiveChannel[Outbound],
    sink: trio.MemorySendChannel[JSONValue | ProtocolError],
) -> None:
    async with outbox:
        async for item in outbox:
            # What the server cannot write (a result nested too deep) goes out as the
            # error a byte stream would carry, or not at all: as over stdio.
            data = serialize(item.payload)
            if data is None:
                _log.warning(
                    "dropped a message that cannot be written as JSON: %s", describe(item.payload)
                )
                continue
            try:
                message: JSONValue | ProtocolError = decode(data)
            except RemoteProtocolError as exc:
                message = exc
            # A gone client: keep draining so the actor never blocks.
            with contextlib.suppress(trio.BrokenResourceError):
                await sink.send(message)
    await sink.aclose()


@contextlib.asynccontextmanager
async def connect_stdio(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    initialize: bool = False,
    protocol_version: str = LATEST.version,
    shutdown_timeout: float = 5.0,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    own_session: bool = False,
    **client: Unpack[ClientArgs],
) -> AsyncIterator[ClientSession]:
    """Start ``command`` as a stdio MCP server and yield a client connected to it.

    Messages are newline-delimited JSON on the child's stdin and stdout; its stderr is
    ours. ``env`` replaces the child's environment (default: inherit). ``own_session``
    starts it in a process session of its own, so a terminal's Ctrl-C reaches only the
    client (which may cancel a request with it), not the server. On exit stdin is
    closed and the child gets ``shutdown_timeout`` seconds to exit before SIGTERM, and as
    long again before SIGKILL. ``initialize``, ``protocol_version`` (a session revision,
    a stateless one, or ``"auto"``) and ``client`` are as for ``connect_memory``.

    Raises:
        OSError: the command could not be started.
    """
    process = await trio.lowlevel.open_process(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=own_session,
    )
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None
    assert stdout is not None
    try:
        async with connect_streams(
            stdin,
            stdout,
            initialize=initialize,
            protocol_version=protocol_version,
            max_line_bytes=max_line_bytes,
            **client,
        ) as session:
            try:
                yield session
            finally:
                # Closing the session closes its channel, so the writer closes stdin:
                # the server's end of input.
                with trio.CancelScope(shield=True):
                    await session.aclose()
                    await _stop(process, shutdown_timeout)
    finally:
        if process.returncode is None:
            process.kill()  # only when startup failed before the graceful stop
        with trio.CancelScope(shield=True):
            await process.wait()
            await stdin.aclose()
            await stdout.aclose()


@contextlib.asynccontextmanager
async def connect_streams(
    to_server: trio.abc.SendStream,
    from_server: trio.abc.ReceiveStream,
    *,
    initialize: bool = False,
    protocol_version: str = LATEST.version,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    **client: Unpack[ClientArgs],
) -> AsyncIterator[ClientSession]:
    """Yield a client speaking newline-delimited JSON over a pair of byte streams.

    What ``connect_stdio`` speaks over a child's pipes, over any streams: a socket, or
    trio's memory streams to a server in the same process. ``to_server`` is closed when
    the client closes; ``initialize`` and ``protocol_version`` are as for
    ``connect_memory``.
    """
    to_server_send, to_server_receive = trio.open_memory_channel[JSONValue](_CHANNEL_SIZE)
    to_client_send, to_client_receive = trio.open_memory_channel[JSONValue | ProtocolError](
        _CHANNEL_SIZE
    )
    with unwrap_single_errors():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_write_lines, to_server, to_server_receive)
            nursery.start_soon(_read_lines, from_server, to_client_send, max_line_bytes)
            try:
                async with open_client_session(
                    to_server_send, to_client_receive, **client
                ) as session:
                    if initialize:
                        await session.start(protocol_version)
                    yield session
            finally:
                nursery.cancel_scope.cancel("the connection closed")


async def _write_lines(
    stdin: trio.abc.SendStream, source: trio.MemoryReceiveChannel[JSONValue]
) -> None:
    broken = False
    async with stdin, source:
        async for message in source:
            if broken:
                continue  # keep draining so the client never blocks
            try:
                await stdin.send_all(encode(message))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                _log.debug("the server stopped reading its stdin")
                broken = True


async def _read_lines(
    stdout: trio.abc.ReceiveStream,
    sink: trio.MemorySendChannel[JSONValue | ProtocolError],
    max_line_bytes: int,
) -> None:
    framer = LineFramer(max_line_bytes)
    gone = False
    async with sink:
        while True:
            try:
                data = await stdout.receive_some(_RECEIVE_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if data:
                frames = framer.feed(data)
            else:
                last = framer.flush()
                frames = [last] if last is not None else []
            for frame in frames:
                if gone:
                    continue
                try:
                    await sink.send(_decoded(frame))
                except trio.BrokenResourceError:
                    # The client is gone; keep reading so the server never blocks on a
                    # full pipe.
                    gone = True
            if not data:
                return


def _decoded(frame: bytes | FrameTooLong) -> JSONValue | ProtocolError:
    if isinstance(frame, FrameTooLong):
        return frame.to_exception()
    try:
        return decode(frame)
    except RemoteProtocolError as exc:
        return exc


async def _stop(process: trio.Process, timeout: float) -> None:
    with trio.move_on_after(timeout):
        await process.wait()
        return
    _log.warning("the server did not exit %g s after its stdin closed: terminating", timeout)
    process.terminate()
    with trio.move_on_after(timeout):
        await process.wait()
        return
    _log.warning("the server ignored SIGTERM for %g s: killing", timeout)
    process.kill()
    await process.wait()
