# A client connection over WebSocket (subprotocol ``mcp``): one message per text frame.
#
# Two carrier tasks sit between the session's channels and the socket, as for stdio:
# the writer sends every message as one text frame; the reader decodes each frame (a
# bad one becomes a -32700 error for the session) and closes the session's channel when
# the server closes the socket.

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Final, Unpack

import orjson
import trio

from .._exceptions import ProtocolError, RemoteProtocolError
from ..protocol import LATEST, JSONValue, decode
from ._errors import unwrap_single_errors
from ._session import ClientArgs, ClientSession, open_client_session

if TYPE_CHECKING:
    import trio_websocket

__all__ = ["connect_websocket"]

_SUBPROTOCOL: Final = "mcp"
_CHANNEL_SIZE: Final = 64


@contextlib.asynccontextmanager
async def connect_websocket(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    initialize: bool = False,
    protocol_version: str = LATEST.version,
    max_message_bytes: int = 4 * 1024 * 1024,
    **client: Unpack[ClientArgs],
) -> AsyncIterator[ClientSession]:
    """Connect to an MCP server's WebSocket endpoint (``ws://host:port/ws``).

    ``headers`` are sent with the handshake (``Authorization``, ``Origin``);
    ``initialize`` and ``client`` are as for ``connect_memory``. Needs the
    ``trio-websocket`` package (the ``http`` extra).

    Raises:
        trio_websocket.HandshakeError: the server refused the connection.
    """
    import trio_websocket

    to_server_send, to_server_receive = trio.open_memory_channel[JSONValue](_CHANNEL_SIZE)
    to_client_send, to_client_receive = trio.open_memory_channel[JSONValue | ProtocolError](
        _CHANNEL_SIZE
    )
    with unwrap_single_errors():
        async with (
            trio_websocket.open_websocket_url(
                url,
                subprotocols=[_SUBPROTOCOL],
                extra_headers=[(k.encode(), v.encode()) for k, v in (headers or {}).items()],
                max_message_size=max_message_bytes,
            ) as socket,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(_send_frames, socket, to_server_receive)
            nursery.start_soon(_receive_frames, socket, to_client_send, max_message_bytes)
            async with open_client_session(to_server_send, to_client_receive, **client) as session:
                if initialize:
                    await session.initialize(protocol_version)
                yield session
            nursery.cancel_scope.cancel("the client session was closed")


async def _send_frames(
    socket: trio_websocket.WebSocketConnection, source: trio.MemoryReceiveChannel[JSONValue]
) -> None:
    import trio_websocket

    async with source:
        async for message in source:
            try:
                await socket.send_message(orjson.dumps(message).decode())
            except trio_websocket.ConnectionClosed:
                continue  # keep draining so the session never blocks on a gone server


async def _receive_frames(
    socket: trio_websocket.WebSocketConnection,
    sink: trio.MemorySendChannel[JSONValue | ProtocolError],
    limit: int,
) -> None:
    import trio_websocket

    async with sink:
        while True:
            try:
                frame = await socket.get_message()
            except trio_websocket.ConnectionClosed:
                return
            data = frame.encode() if isinstance(frame, str) else frame
            if len(data) > limit:
                # trio-websocket counts a text's characters: up to four times the bytes
                # pass it. Refused as it refuses a message too long in characters.
                await socket.aclose(code=1009, reason=f"message larger than {limit} bytes")
                return
            item: JSONValue | ProtocolError
            try:
                item = decode(data)
            except RemoteProtocolError as exc:
                item = exc
            try:
                await sink.send(item)
            except trio.BrokenResourceError:
                return
