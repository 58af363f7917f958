# The HTTP+SSE transport of revision 2024-11-05, kept for old clients.
#
# GET on the SSE path opens a session whose one stream is that response: its first
# event, ``endpoint``, names where to POST (``/messages?session_id=…``); every POST
# there is answered 202 and whatever the session says comes back on the stream. The
# stream is the session: when the client drops it, the session ends. Host/Origin and
# authentication were checked by the app before these run.

from __future__ import annotations

import urllib.parse

import orjson

from .._exceptions import INTERNAL_ERROR, INVALID_REQUEST, RemoteProtocolError
from ..protocol import decode, error_message_for
from ..runtime import METRICS
from ..runtime.http import SessionKind, SessionLimitReached
from . import _sse
from ._endpoint import Endpoint
from ._exchange import Exchange, reply, reply_error
from ._http_writer import write_stream
from ._security import counted_client

__all__ = ["serve_legacy_post", "serve_legacy_stream"]


async def serve_legacy_stream(
    app: Endpoint, exchange: Exchange, principal: object, cors: list[tuple[bytes, bytes]]
) -> None:
    """GET on the SSE path: open a session and stream it, starting with ``endpoint``."""
    if exchange.method != "GET":
        await reply(exchange, 405, b"", [(b"allow", b"GET")], content_type=None)
        return
    client = exchange.client
    try:
        session = await app.manager.create(
            SessionKind.LEGACY_SSE,
            principal=principal,
            client=counted_client(client[0] if client else None),
        )
    except SessionLimitReached as exc:
        await reply_error(exchange, 503, INTERNAL_ERROR, str(exc))
        return
    try:
        attachment = await session.listen()
        assert attachment is not None  # a new session has no listener yet
        messages_path = app.options.messages_path
        assert messages_path is not None  # the app routes here only when it is set
        endpoint = f"{exchange.root_path}{messages_path}?session_id={session.id}"
        await write_stream(
            exchange,
            session,
            attachment,
            cors,
            started=True,
            retry_ms=app.options.retry_ms,
            preamble=_sse.endpoint_event(endpoint),
        )
    finally:
        app.manager.close_session(session)


async def serve_legacy_post(
    app: Endpoint, exchange: Exchange, principal: object, cors: list[tuple[bytes, bytes]]
) -> None:
    """POST on the messages path: hand the message to its session; 202."""
    if exchange.method != "POST":
        await reply(exchange, 405, b"", [(b"allow", b"POST")], content_type=None)
        return
    query = urllib.parse.parse_qs(exchange.query_string.decode("latin-1"))
    session_ids = query.get("session_id")
    if not session_ids:
        why = "session_id query parameter required"
        await reply_error(exchange, 400, INVALID_REQUEST, why)
        return
    session = app.manager.get(session_ids[0])
    if (
        session is None
        or session.kind is not SessionKind.LEGACY_SSE
        or session.principal != principal
    ):
        await reply_error(exchange, 404, INVALID_REQUEST, "session not found")
        return
    if principal is not session.principal:
        # The same caller with a new token: its handlers see the new scopes.
        session.principal = principal
    body = await exchange.read_body(app.options.max_body_bytes)
    if body is None:
        await reply_error(exchange, 413, INVALID_REQUEST, "the body is too large", close=True)
        return
    METRICS.received("http", len(body))
    try:
        value = decode(body)
    except RemoteProtocolError as exc:
        await reply(exchange, 400, orjson.dumps(error_message_for(exc)))
        return
    if not await session.feed(value):
        await reply_error(exchange, 404, INVALID_REQUEST, "session not found")
        return
    await reply(exchange, 202, b"Accepted", cors, content_type=b"text/plain")
