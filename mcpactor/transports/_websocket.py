# MCP over WebSocket: one session per connection, one JSON-RPC message per text frame.
#
# The handshake must offer the ``mcp`` subprotocol and pass the same Host/Origin guard
# and authorization (bearer token or authentication hook) as HTTP (a browser page can
# open a WebSocket to any origin, so the Origin check matters here most of all). The
# session lives in the SessionManager's nursery like every other; the connection only
# feeds its inbox and drains its one stream. Closing the socket ends the session (its
# requests get the usual grace period). A client silent for ``websocket_idle_timeout`` seconds (no
# message) is closed with 1001: an open socket holds a connection place and a session.
# A message larger than ``max_body_bytes`` in UTF-8 is closed with 1009: mcpactor's own
# server stops it while it arrives; a server that counts a text's characters instead
# (hypercorn, given the same limit) lets through up to four times as many bytes, which
# are refused here, measured on the encoding the decoder needs anyway.

from __future__ import annotations

import functools
from typing import Any, Final

import trio

from .._exceptions import PARSE_ERROR, ProtocolError, RemoteProtocolError
from ..protocol import JSONValue, decode
from ..runtime.http import Attachment, HttpSession, SessionKind, SessionLimitReached
from ._asgi import AsgiExchange, Headers, Receive, Scope, Send, client_address
from ._endpoint import Endpoint
from ._security import counted_client

__all__ = ["SUBPROTOCOL", "serve_websocket"]

SUBPROTOCOL: Final = "mcp"
# Close codes (RFC 6455 §7.4.1): going away, policy violation, try again later.
_GOING_AWAY: Final = 1001
_POLICY: Final = 1008
_TOO_BIG: Final = 1009
_TRY_LATER: Final = 1013


async def serve_websocket(app: Endpoint, scope: Scope, receive: Receive, send: Send) -> None:
    """Serve one WebSocket connection as one MCP session."""
    connect = await receive()
    if connect["type"] != "websocket.connect":
        return
    path = app.options.websocket_path
    if path is None or scope["path"].rstrip("/") != path.rstrip("/"):
        await send({"type": "websocket.close", "code": _POLICY})
        return
    # A server with ASGI's denial response lets a refused token get the HTTP answer it
    # would get on a POST (a 401 with its challenge); elsewhere, and for every other
    # refusal, the answer is a close, which is a 403.
    denied: list[bool] = []
    admitted, principal = await app.admit(
        Headers.of(scope),
        scope.get("query_string", b""),
        deny=(
            AsgiExchange(scope, receive, functools.partial(_deny, send, denied))
            if "websocket.http.response" in scope.get("extensions", ())
            else None
        ),
    )
    if denied:
        return
    if not admitted or SUBPROTOCOL not in scope.get("subprotocols", ()):
        await send({"type": "websocket.close", "code": _POLICY})
        return
    try:
        session = await app.manager.create(
            SessionKind.WEBSOCKET,
            principal=principal,
            client=counted_client(client_address(scope)),
        )
    except SessionLimitReached:
        await send({"type": "websocket.close", "code": _TRY_LATER})
        return
    attachment = await session.listen()
    assert attachment is not None  # a new session has no listener yet
    try:
        await send({"type": "websocket.accept", "subprotocol": SUBPROTOCOL})
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_write, send, attachment, nursery.cancel_scope)
            options = app.options
            limit = options.max_body_bytes
            code = await _read(receive, session, options.websocket_idle_timeout, limit)
            if code == _TOO_BIG:
                reason = f"message larger than {limit} bytes"
                await send({"type": "websocket.close", "code": code, "reason": reason})
            elif code is not None:
                await send({"type": "websocket.close", "code": code})
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            app.manager.close_session(session)
            await session.release(attachment)


async def _deny(send: Send, denied: list[bool], message: dict[str, Any]) -> None:
    # An HTTP response sent as the WebSocket handshake's denial (ASGI extension).
    denied.append(True)
    await send({**message, "type": "websocket." + message["type"]})


async def _read(
    receive: Receive, session: HttpSession, idle_timeout: float, limit: int
) -> int | None:
    # Returns the code to close the socket with (it is still open), or None: it closed.
    while True:
        message: dict[str, Any] | None = None
        with trio.move_on_after(idle_timeout):
            message = await receive()
        if message is None:
            return _GOING_AWAY
        kind = message["type"]
        if kind == "websocket.disconnect":
            return None
        if kind != "websocket.receive":
            continue
        text = message.get("text")
        item: JSONValue | ProtocolError
        if text is None:
            item = RemoteProtocolError(
                "binary frames are not MCP messages: send one JSON-RPC message per text frame",
                code=PARSE_ERROR,
            )
        else:
            data = text.encode()
            if len(data) > limit:
                return _TOO_BIG
            try:
                item = decode(data)
            except RemoteProtocolError as exc:
                item = exc
        if not await session.feed(item):
            return None


async def _write(send: Send, attachment: Attachment, done: trio.CancelScope) -> None:
    try:
        with attachment:
            async for _event_id, data, _final in attachment:
                await send({"type": "websocket.send", "text": data.decode()})
    finally:
        attachment.abandon()
    # The session ended on our side (shutdown): close the socket properly.
    await send({"type": "websocket.close", "code": _GOING_AWAY})
    done.cancel()
