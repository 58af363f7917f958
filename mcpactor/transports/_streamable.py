# The Streamable HTTP endpoint's methods: POST, GET and DELETE on the MCP path.
#
# The app (_http.py) has checked the request's framing, Host/Origin and authentication
# before these run. POST checks Accept (406), Content-Type (415) and size (413), decodes
# the body (-32700 → 400) and classifies it once (``classify_body``, which returns the
# error of one malformed message, naming its id when one could be read): malformed input
# and bodies that need no answer (202) are settled here, every request reaching a
# session has a stream waiting for its response, and the session takes the classified
# body as it is. GET listens on a session's standalone stream or resumes a stream;
# DELETE ends a session.

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Final

import orjson

from .._exceptions import INTERNAL_ERROR, INVALID_REQUEST, RemoteProtocolError
from ..protocol import (
    HEADERLESS_HTTP,
    REVISIONS,
    SESSION_REVISIONS,
    Batch,
    Body,
    Request,
    batch_refusal,
    classify_body,
    decode,
    describe,
    error_message_for,
    has_envelope,
    owed_ids,
    unowed_errors,
)
from ..runtime import METRICS
from ..runtime.http import (
    DuplicateRequestId,
    HttpSession,
    SessionKind,
    SessionLimitReached,
    StoreUnavailable,
)
from ._endpoint import Endpoint
from ._exchange import Exchange, error_body, reply, reply_error
from ._http_writer import write_stream
from ._security import accepts, counted_client
from ._stateless_http import serve_stateless_post

__all__ = ["STREAMABLE", "Handler"]

#: an endpoint's handler: (app, exchange, principal, CORS headers for its answers)
Handler = Callable[[Endpoint, Exchange, object, list[tuple[bytes, bytes]]], Awaitable[None]]

# What a request without ``MCP-Protocol-Version`` speaks (the revision table says).
_HEADERLESS_VERSION: Final = HEADERLESS_HTTP.version
# What _body_version says of a POST of a revision without sessions (no revision's name).
_STATELESS: Final = ""
# The methods whose target may need scopes of its own, and the param that names it.
_NAMED: Final = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}


async def _not_allowed(
    app: Endpoint, exchange: Exchange, principal: object, cors: list[tuple[bytes, bytes]]
) -> None:
    # A revision without sessions has only POST (and so has the session-era stateless mode).
    stateless = app.options.stateless or _stateless_revision(exchange.headers)
    await reply(
        exchange,
        405,
        error_body(INVALID_REQUEST, f"method {exchange.method} not allowed here"),
        [(b"allow", b"POST" if stateless else b"GET, POST, DELETE")],
    )


async def _session(
    app: Endpoint, exchange: Exchange, principal: object, new: bool = False
) -> tuple[HttpSession | None, int, str]:
    # The session a request is for: a ``new`` one (for a lone initialize, the client's
    # address held to its share) or the one its Mcp-Session-Id names; else the status
    # and why.
    manager = app.manager
    if new:
        try:
            client = exchange.client[0] if exchange.client else None
            created = await manager.create(
                SessionKind.STREAMABLE, principal=principal, client=counted_client(client)
            )
        except SessionLimitReached as exc:
            return None, 503, str(exc)
        return created, 200, ""
    session_id = exchange.headers.get("mcp-session-id")
    if session_id is None:
        return None, 400, "Mcp-Session-Id header required: only initialize may omit it"
    try:
        # The caller's own session (with replicas, adopted here if another opened it).
        session = await manager.find(session_id, principal)
    except SessionLimitReached as exc:
        return None, 503, str(exc)
    except StoreUnavailable as exc:
        return None, 503, f"the session store is unavailable: {exc}"
    if session is None and manager.stopping:
        # Not 404: that would tell the client to start over, on a server going away.
        return None, 503, "the server is shutting down"
    if session is None:
        return None, 404, "session not found: it ended, expired or never existed"
    return session, 200, ""


async def _refused_for_scope(
    app: Endpoint, exchange: Exchange, principal: object, body: Body, kind: type
) -> bool:
    # A call whose target needs scopes the token lacks: 403 before any session work (a
    # batch is left to the dispatcher, which refuses item by item). True once answered.
    if kind is not Request:
        return False
    request: Request = body  # type: ignore[assignment]
    key = _NAMED.get(request.method)
    params = request.params
    if key is None or params is None:
        return False
    denied = app.scope_refusal(principal, request.method, params.get(key))
    if denied is None:
        return False
    await app.refuse(exchange, exchange.headers, denied, request.id)
    return True


def _stateless_revision(headers: Mapping[str, str]) -> bool:
    # Whether the header names a revision without sessions (the row says).
    version = headers.get("mcp-protocol-version")
    if version is None:
        return False
    row = REVISIONS.get(version.strip())
    return row is not None and not row.sessions


def _header_version(headers: Mapping[str, str]) -> str | None:
    # None when the header names a revision we do not speak.
    version = headers.get("mcp-protocol-version")
    if version is None:
        return _HEADERLESS_VERSION
    version = version.strip()
    return version if version in SESSION_REVISIONS else None


# --- POST -------------------------------------------------------------------------------


async def _post(
    app: Endpoint, exchange: Exchange, principal: object, cors: list[tuple[bytes, bytes]]
) -> None:
    headers = exchange.headers
    options = app.options
    json_only, sse = options.response_mode == "json", options.response_mode == "sse"
    refusal = _framing_refusal(headers.get("accept"), headers.get("content-type"), json_only)
    if refusal is not None:
        await reply_error(exchange, refusal[0], INVALID_REQUEST, refusal[1])
        return
    raw = await exchange.read_body(options.max_body_bytes)
    if raw is None:
        # The rest of the body is not read: the connection cannot go on.
        why = f"the body exceeds {options.max_body_bytes} bytes"
        await reply_error(exchange, 413, INVALID_REQUEST, why, close=True)
        return
    METRICS.received("http", len(raw))
    try:
        body: Body = classify_body(decode(raw))
    except RemoteProtocolError as exc:
        body = exc
    kind = type(body)
    if kind is RemoteProtocolError:
        await reply(exchange, 400, orjson.dumps(error_message_for(body)))  # type: ignore[arg-type]
        return
    named = headers.get("mcp-protocol-version")
    version = _HEADERLESS_VERSION if named is None else _named_revision(named)
    if (named is None or version is None) and kind is Request and has_envelope(body.params):  # type: ignore[union-attr]
        # No revision named that we know, but the body carries an envelope: the
        # stateless revision's own errors say what is wrong.
        version = _STATELESS
    if version == _STATELESS:
        await serve_stateless_post(app, exchange, principal, body, cors)
        return
    if version is None and not _initializes(body, kind):
        await _unsupported_version(exchange, headers)
        return
    if app.resource_server is not None and await _refused_for_scope(
        app, exchange, principal, body, kind
    ):
        return
    if options.stateless:
        await _post_stateless(app, exchange, principal, body, version, cors)
        return
    # A lone initialize without a session id opens a session; anything else names one.
    new_session = (
        "mcp-session-id" not in headers and kind is not Batch and _initializes(body, kind)
    )
    session, status, why = await _session(app, exchange, principal, new_session)
    if session is None:
        await _refuse(exchange, status, why)
        return
    refused = batch_refusal(body, session.revision) if kind is Batch else None  # type: ignore[arg-type]
    if refused is not None:
        await reply_error(exchange, 400, INVALID_REQUEST, refused)
        return
    request_ids = owed_ids(body)
    if not request_ids:
        await _accept_unowed(exchange, session, body, cors)
        return
    try:
        attachment = await session.post(body, request_ids, sse=sse, arrived=exchange.arrived)
    except DuplicateRequestId as exc:
        await reply(exchange, 400, error_body(INVALID_REQUEST, str(exc), exc.request_id))
        return
    if attachment is None:
        await reply_error(exchange, 404, INVALID_REQUEST, "session not found")
        return
    if new_session:
        await _introduce(app, session, cors)
    await write_stream(
        exchange,
        session,
        attachment,
        cors,
        started=False,
        retry_ms=options.retry_ms,
        json_only=json_only,
        step_up=app.step_up if app.resource_server is not None else None,
    )


@functools.lru_cache(maxsize=64)
def _framing_refusal(
    accept: str | None, content_type: str | None, json_only: bool
) -> tuple[int, str] | None:
    # A POST's Accept and Content-Type, checked before its body is read (clients send
    # the same few: each decided once).
    if not accepts(accept, json=True, event_stream=not json_only):
        wanted = "application/json" if json_only else "application/json and text/event-stream"
        return 406, f"the Accept header must list {wanted}"
    if (content_type or "").split(";", 1)[0].strip().lower() != "application/json":
        return 415, "the Content-Type must be application/json"
    return None


@functools.lru_cache(maxsize=64)
def _named_revision(named: str) -> str | None:
    # The session-era revision an MCP-Protocol-Version header names; _STATELESS for one
    # without sessions; None for one we do not know.
    named = named.strip()
    row = REVISIONS.get(named)
    if row is None:
        return None
    return named if row.sessions else _STATELESS


def _initializes(body: Body, kind: type) -> bool:
    # Whether the body is, or (a batch) holds, an initialize request.
    if kind is Batch:
        return body.initialize  # type: ignore[union-attr]
    return kind is Request and body.method == "initialize"  # type: ignore[union-attr]


async def _introduce(
    app: Endpoint, session: HttpSession, extra: list[tuple[bytes, bytes]]
) -> None:
    # The answer to the initialize that opened ``session``: it names the session, or,
    # refused (bad params, or the session could not be recorded), its error goes out
    # and nothing else of the session stays or counts.
    if await session.introduce():
        assert session.id is not None
        extra.append((b"mcp-session-id", session.id.encode()))
    else:
        app.manager.close_session(session, everywhere=False)


async def _accept_unowed(
    exchange: Exchange, session: HttpSession, body: Body, cors: list[tuple[bytes, bytes]]
) -> None:
    # A body that owes no answer by id (notifications, responses): the session hears what
    # is well formed, and malformed items get their errors. The 202 carries the CORS
    # headers: a browser client treats an answer without them as a failed request.
    rest, errors = unowed_errors(body)
    if rest is not None and not await session.feed(rest):
        await reply_error(exchange, 404, INVALID_REQUEST, "session not found")
        return
    if errors:
        await _reply_errors(exchange, errors)
        return
    await reply(exchange, 202, b"", cors, content_type=None)


async def _post_stateless(
    app: Endpoint,
    exchange: Exchange,
    principal: object,
    body: Body,
    version: str | None,
    cors: list[tuple[bytes, bytes]],
) -> None:
    initialize = _initializes(body, type(body))
    assert version is not None or initialize
    request_ids = owed_ids(body)
    if type(body) is Batch:
        refusal = batch_refusal(body, REVISIONS[version] if version is not None else None)
        if refusal is not None:
            await reply_error(exchange, 400, INVALID_REQUEST, refusal)
            return
    if not request_ids:
        # No session to tell: a notification or response has nowhere to go.
        _, errors = unowed_errors(body)
        if errors:
            await _reply_errors(exchange, errors)
            return
        await reply(exchange, 202, b"", cors, content_type=None)
        return
    options = app.options
    try:
        session = await app.manager.create(
            SessionKind.STATELESS,
            principal=principal,
            protocol_version=None if initialize else version,
            client=counted_client(exchange.client[0] if exchange.client else None),
        )
    except SessionLimitReached as exc:
        await reply_error(exchange, 503, INTERNAL_ERROR, str(exc))
        return
    try:
        attachment = await session.post(
            body, request_ids, sse=options.response_mode == "sse", arrived=exchange.arrived
        )
        if attachment is None:
            await reply_error(exchange, 503, INTERNAL_ERROR, "the server is shutting down")
            return
        await write_stream(
            exchange,
            session,
            attachment,
            cors,
            started=False,
            retry_ms=options.retry_ms,
            json_only=options.response_mode == "json",
            step_up=app.step_up if app.resource_server is not None else None,
        )
    finally:
        # Served (or the client left, which in stateless mode nobody can resume).
        app.manager.close_session(session)


# --- GET and DELETE ---------------------------------------------------------------------


async def _get(
    app: Endpoint, exchange: Exchange, principal: object, cors: list[tuple[bytes, bytes]]
) -> None:
    headers = exchange.headers
    if app.options.stateless or _stateless_revision(headers):
        await _not_allowed(app, exchange, principal, cors)
        return
    if not accepts(headers.get("accept"), json=False, event_stream=True):
        await reply_error(
            exchange, 406, INVALID_REQUEST, "the Accept header must list text/event-stream"
        )
        return
    session, status, why = await _session(app, exchange, principal)
    if session is None:
        await _refuse(exchange, status, why)
        return
    if _header_version(headers) is None:
        await _unsupported_version(exchange, headers)
        return
    last_event_id = headers.get("last-event-id")
    try:
        if last_event_id is not None:
            attachment = await session.resume(last_event_id.strip())
        else:
            attachment = await session.listen()
    except StoreUnavailable as exc:
        why = f"the event store is unavailable: {exc}"
        await reply_error(exchange, 503, INTERNAL_ERROR, why)
        return
    if attachment is None:
        if last_event_id is not None:
            why = f"unknown Last-Event-ID {describe(last_event_id)}"
            await reply_error(exchange, 400, INVALID_REQUEST, why)
        else:
            why = "this session already has a GET stream open"
            await reply_error(exchange, 409, INVALID_REQUEST, why)
        return
    await write_stream(
        exchange, session, attachment, cors, started=True, retry_ms=app.options.retry_ms
    )


async def _delete(
    app: Endpoint, exchange: Exchange, principal: object, cors: list[tuple[bytes, bytes]]
) -> None:
    headers = exchange.headers
    if app.options.stateless or _stateless_revision(headers):
        await _not_allowed(app, exchange, principal, cors)
        return
    session, status, why = await _session(app, exchange, principal)
    if session is None:
        await _refuse(exchange, status, why)
        return
    app.manager.close_session(session)
    await reply(exchange, 204, b"", cors, content_type=None)


#: the MCP path's handlers by method (None: any other)
STREAMABLE: Final[Mapping[str | None, Handler]] = {
    "POST": _post,
    "GET": _get,
    "DELETE": _delete,
    None: _not_allowed,
}


async def _reply_errors(exchange: Exchange, errors: tuple[RemoteProtocolError, ...]) -> None:
    # A batch that owes no answer by id but its malformed items' errors: 400, as a lone
    # malformed message gets, with each error in the batch's order.
    await reply(exchange, 400, orjson.dumps([error_message_for(error) for error in errors]))


async def _refuse(exchange: Exchange, status: int, why: str) -> None:
    code = INTERNAL_ERROR if status >= 500 else INVALID_REQUEST
    await reply_error(exchange, status, code, why)


async def _unsupported_version(exchange: Exchange, headers: Mapping[str, str]) -> None:
    await reply_error(
        exchange,
        400,
        INVALID_REQUEST,
        f"unsupported MCP-Protocol-Version {describe(headers.get('mcp-protocol-version'))}; "
        f"supported: {', '.join(SESSION_REVISIONS)}",
    )
