# A WebSocket upgrade served on the HTTP/1.1 connection, with wsproto, as ASGI.

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Message,
    Ping,
    RejectConnection,
    RejectData,
    TextMessage,
)
from wsproto.events import Request as WsRequest
from wsproto.utilities import ProtocolError as WsProtocolError

from ._protocol import ProtocolError, Upgrade

__all__ = ["serve_websocket"]

_log = logging.getLogger("mcpactor.http.server")

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
Read = Callable[[], Awaitable[bytes]]
Write = Callable[[bytes], Awaitable[None]]


async def serve_websocket(
    app: App,
    scope: dict[str, Any],
    upgrade: Upgrade,
    read: Read,
    write: Write,
    *,
    max_message_bytes: int,
) -> None:
    """Run ``app`` on an upgraded connection until the WebSocket closes.

    Raises ``ProtocolError`` (400) if the handshake is malformed, before the app runs.
    """
    ws = WSConnection(ConnectionType.SERVER)
    request = upgrade.request
    # wsproto checks the handshake itself: give it the request head as it arrived.
    head = [b"GET ", request.target, b" HTTP/1.1\r\n"]
    for name, value in request.raw_headers:
        head += [name, b": ", value, b"\r\n"]
    head.append(b"\r\n")
    try:
        ws.receive_data(b"".join(head) + upgrade.trailing)
        handshake = next(ws.events(), None)
    except WsProtocolError as exc:
        # A missing key or version, say: the client's mistake, a 400 and one line.
        raise ProtocolError(f"malformed WebSocket handshake: {exc}") from None
    if not isinstance(handshake, WsRequest):
        raise ProtocolError("malformed WebSocket handshake")
    scope["subprotocols"] = list(handshake.subprotocols)
    # The denial response (ASGI's websocket.http.response): a refusal can be a 401 with
    # its WWW-Authenticate header, not only a bare 403.
    scope["extensions"] = {"websocket.http.response": {}}
    socket = _WebSocket(ws, read, write, max_message_bytes)
    try:
        await app(scope, socket.receive, socket.send)
    except Exception:
        _log.exception("the ASGI app failed on a WebSocket connection")
    await socket.finish()


class _WebSocket:
    # The ASGI side of one WebSocket: ``receive`` reads frames, ``send`` writes them.

    def __init__(self, ws: WSConnection, read: Read, write: Write, limit: int) -> None:
        self.ws = ws
        self.read = read
        self.write = write
        self.limit = limit
        self.write_lock = trio.StrictFIFOLock()
        self.connected = False
        self.accepted = False
        self.closed = False
        self.text: list[str] = []
        self.data: list[bytes] = []
        self.size = 0

    async def _send(self, event: Any) -> None:
        data = self.ws.send(event)
        async with self.write_lock:
            await self.write(data)

    async def receive(self) -> dict[str, Any]:
        if not self.connected:
            self.connected = True
            return {"type": "websocket.connect"}
        while True:
            for event in self.ws.events():
                if isinstance(event, TextMessage | BytesMessage):
                    # The limit counts bytes as they arrived: a text fragment (wsproto
                    # hands each over decoded) by its UTF-8 size, before it is kept.
                    data = event.data
                    self.size += (
                        len(data)
                        if type(data) is not str or data.isascii()
                        else len(data.encode("utf-8", "surrogatepass"))
                    )
                    if self.size > self.limit:
                        await self._close(1009, f"message larger than {self.limit} bytes")
                        return {"type": "websocket.disconnect", "code": 1009}
                    if isinstance(event, TextMessage):
                        self.text.append(event.data)
                    else:
                        self.data.append(bytes(event.data))
                    if event.message_finished:
                        self.size = 0
                        if isinstance(event, TextMessage):
                            text, self.text = "".join(self.text), []
                            return {"type": "websocket.receive", "text": text}
                        data, self.data = b"".join(self.data), []
                        return {"type": "websocket.receive", "bytes": data}
                elif isinstance(event, Ping):
                    await self._send(event.response())
                elif isinstance(event, CloseConnection):
                    if not self.closed:
                        self.closed = True
                        with contextlib.suppress(Exception):
                            await self._send(event.response())
                    return {"type": "websocket.disconnect", "code": event.code}
            if self.closed:
                return {"type": "websocket.disconnect", "code": 1000}
            data = await self.read()
            if not data:
                self.closed = True
                return {"type": "websocket.disconnect", "code": 1006}
            self.ws.receive_data(data)

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "websocket.accept":
            self.accepted = True
            await self._send(
                AcceptConnection(
                    subprotocol=message.get("subprotocol"),
                    extra_headers=list(message.get("headers", ())),
                )
            )
        elif kind == "websocket.send":
            if self.closed:
                return
            text = message.get("text")
            await self._send(Message(data=text if text is not None else message["bytes"]))
        elif kind == "websocket.http.response.start" and not self.accepted and not self.closed:
            self.closed = True
            await self._send(
                RejectConnection(
                    status_code=message["status"],
                    headers=list(message.get("headers", ())),
                    has_body=True,
                )
            )
        elif kind == "websocket.http.response.body":
            more = message.get("more_body", False)
            await self._send(RejectData(data=message.get("body", b""), body_finished=not more))
        elif kind == "websocket.close":
            if not self.accepted:
                # A close before the handshake is answered is an HTTP 403 (ASGI).
                self.closed = True
                await self._send(RejectConnection(status_code=403))
            else:
                await self._close(message.get("code", 1000), message.get("reason"))
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r}")

    async def _close(self, code: int, reason: str | None) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(Exception):
                await self._send(CloseConnection(code=code, reason=reason))

    async def finish(self) -> None:
        if not self.accepted and not self.closed:
            with contextlib.suppress(Exception):
                await self._send(RejectConnection(status_code=500))
        elif not self.closed:
            await self._close(1000, None)
