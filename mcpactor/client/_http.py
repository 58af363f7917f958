# A client connection over Streamable HTTP (transports page, 2025-11-25).
#
# Theory of operation
# -------------------
# The ClientSession writes messages to one channel and reads the server's from another,
# as over stdio; here one writer task turns each outgoing message into a POST, and the
# answers come back on as many HTTP responses as there are POSTs in flight, plus the GET
# stream. Every message the server sends, on whichever response, goes to the session's
# receive channel; the session matches responses to requests by id, as always.
#
# - A POST carrying requests runs in a task of its own (its answer may be a long SSE
#   stream); the writer moves on once the request is on the wire, so messages leave in
#   the order the session sent them. Notifications and responses are POSTed in the
#   writer itself and get 202.
# - The initialize response carries ``Mcp-Session-Id``; its result names the revision,
#   sent as ``MCP-Protocol-Version`` from then on. After ``notifications/initialized``
#   the GET stream is opened for what the server sends outside any request (405: the
#   server has none, and that is fine).
# - An SSE stream that ends before it delivered the responses it owes is resumed with a
#   GET carrying ``Last-Event-ID``, after the ``retry`` delay the server asked for; the
#   server replays what was missed, so each message arrives once. A stream that cannot
#   be resumed (no event id, the server refuses) fails its requests with a JSON-RPC
#   error, never silently.
# - A request cancelled by the session (its ``notifications/cancelled`` passes through
#   the writer) no longer holds its POST open.
# - 404 on a request carrying the session id means the server ended the session: the
#   connection is over, which the session hears as the end of its receive channel.
# - Leaving ``connect_http`` sends DELETE, so the server can free the session at once.
# - A request carrying a stateless envelope (a revision without sessions) is a POST of
#   its own with the headers of _http_headers.py (its revision, method, name and the
#   tool's mirrored parameters, as the last ``tools/list`` gave them) and no session
#   id; cancelling it is closing its response: its ``notifications/cancelled`` is not
#   sent.
#
# What a written message asks of the transport, and what error a refused POST becomes,
# are read in _http_outgoing.py; reading an SSE response and its resumption cursor are
# in _http_stream.py.

from __future__ import annotations

import contextlib
import logging
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Final, Unpack, final

import orjson
import trio

from .._exceptions import INTERNAL_ERROR, ProtocolError, TransportBroken
from ..protocol import LATEST, JSONObject, JSONValue, RequestId, describe
from ._errors import unwrap_single_errors
from ._http_headers import mirrored_params, request_headers
from ._http_outgoing import Refused, failure_replies, is_id, read_outgoing, refusal
from ._http_stream import MAX_ATTEMPTS, Cursor, decoded, read_stream
from ._session import ClientArgs, ClientSession, open_client_session

if TYPE_CHECKING:
    from ._http11 import HttpPool, HttpResponse, Url

__all__ = ["connect_http"]

_log = logging.getLogger("mcpactor.client")

_CHANNEL_SIZE: Final = 64
_ACCEPT_BOTH: Final = "application/json, text/event-stream"
_EVENT_STREAM: Final = "text/event-stream"
# Headers this connection sets itself; the caller's own are dropped for these names.
_OWN_HEADERS: Final = frozenset(
    {
        "accept",
        "content-type",
        "content-length",
        "host",
        "last-event-id",
        "mcp-method",
        "mcp-name",
        "mcp-protocol-version",
        "mcp-session-id",
        "transfer-encoding",
    }
)


# --- the connection --------------------------------------------------------------------


class _Post:
    # One POST that carries requests: the responses it still owes.
    __slots__ = ("cursor", "headers", "pending", "scope")

    def __init__(self, pending: set[RequestId], headers: list[tuple[str, str]]) -> None:
        self.pending = pending
        #: its own headers: a stateless request's revision, method, name, parameters
        self.headers = headers
        self.cursor = Cursor()
        self.scope = trio.CancelScope()


@final
class _StreamableHttp:
    def __init__(
        self,
        url: Url,
        headers: Mapping[str, str] | None,
        pool: HttpPool,
        sink: trio.MemorySendChannel[JSONValue | ProtocolError],
        nursery: trio.Nursery,
        max_message_bytes: int,
    ) -> None:
        self.url = url
        self.pool = pool
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._headers = [
            (name, value)
            for name, value in (headers or {}).items()
            if name.lower() not in _OWN_HEADERS
        ]
        self._sink = sink
        self._nursery = nursery
        self._max_bytes = max_message_bytes
        self._posts: dict[RequestId, _Post] = {}
        self._initializing: set[RequestId] = set()
        self._listing_tools: set[RequestId] = set()
        # Whether the last request written spoke a stateless revision, and which.
        self._stateless = False
        self._stateless_version: str | None = None
        # The mirrored parameters of each tool, from the last tools/list answers.
        self._tool_headers: dict[str, dict[tuple[str, ...], str]] = {}
        self._listening = False
        self._lost = False
        self._closing = False

    def headers(self, *extra: tuple[str, str], own: bool = False) -> list[tuple[str, str]]:
        headers = list(self._headers)
        if own:
            # A stateless request names its own revision, and no session.
            headers.extend(extra)
            return headers
        if self.session_id is not None:
            headers.append(("mcp-session-id", self.session_id))
        if self.protocol_version is not None:
            headers.append(("mcp-protocol-version", self.protocol_version))
        headers.extend(extra)
        return headers

    # --- what the session sends ---------------------------------------------------------

    async def write_all(self, source: trio.MemoryReceiveChannel[JSONValue]) -> None:
        async with source:
            async for message in source:
                if not self._lost:  # else keep draining, so the session never blocks
                    await self._write(message)

    async def _write(self, message: JSONValue) -> None:
        outgoing = read_outgoing(message)
        self._initializing.update(outgoing.initializing)
        self._listing_tools.update(outgoing.listing_tools)
        for request_id in outgoing.cancelled:
            self._abandon(request_id)
        if outgoing.cancelled and self._stateless:
            return  # closing the response was the cancellation
        body = orjson.dumps(message)
        if outgoing.request_ids:
            self._stateless = outgoing.stateless
            own = (
                request_headers(message, self._tool_headers)
                if outgoing.stateless and type(message) is dict
                else []
            )
            for name, value in own:
                if name == "mcp-protocol-version":
                    self._stateless_version = value
            await self._nursery.start(self._post_requests, body, outgoing.request_ids, own)
            return
        await self._post_other(body)
        if outgoing.initialized and not self._listening:
            self._listening = True
            self._nursery.start_soon(self._listen)

    def _abandon(self, request_id: object) -> None:
        if not is_id(request_id):
            return
        post = self._posts.get(request_id)
        if post is not None:
            post.pending.discard(request_id)
            if not post.pending:
                post.scope.cancel("the client cancelled its request")

    async def _post_other(self, body: bytes) -> None:
        # A notification or a response: the server takes it with 202 and no body. At a
        # stateless revision it names the revision the requests name, and no session.
        extra = [("accept", _ACCEPT_BOTH), ("content-type", "application/json")]
        version = self._stateless_version
        if self._stateless and version is not None:
            headers = self.headers(("mcp-protocol-version", version), *extra, own=True)
        else:
            headers = self.headers(*extra)
        try:
            async with self.pool.request(
                "POST", self.url, headers, body, bounded=False
            ) as response:
                if response.status in (200, 202):
                    await response.read(self._max_bytes)
                    return
                refused = await self._refusal(response)
        except TransportBroken as exc:
            _log.warning("could not send a message to %s: %s", self.url, exc)
            return
        if refused.status == 404 and self.session_id is not None:
            self._session_ended(f"{self.url} ended session {self.session_id}")
            return
        _log.warning("%s refused a message: %s", self.url, refused.message)

    async def _post_requests(
        self,
        body: bytes,
        request_ids: list[RequestId],
        own: list[tuple[str, str]],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        post = _Post(set(request_ids), own)
        for request_id in request_ids:
            self._posts[request_id] = post
        started = False

        def on_sent() -> None:
            nonlocal started
            if not started:
                started = True
                task_status.started()

        failure: Refused | None = None
        try:
            with post.scope:
                failure = await self._exchange(body, post, on_sent)
        finally:
            on_sent()
            for request_id in request_ids:
                if self._posts.get(request_id) is post:
                    del self._posts[request_id]
        if failure is not None and post.pending:
            await self._fail(post, failure)
        if failure is not None and failure.status == 404 and self.session_id is not None:
            self._session_ended(f"{self.url} ended session {self.session_id}")

    async def _exchange(
        self, body: bytes, post: _Post, on_sent: Callable[[], None]
    ) -> Refused | None:
        headers = self.headers(
            ("accept", _ACCEPT_BOTH),
            ("content-type", "application/json"),
            *post.headers,
            own=bool(post.headers),
        )
        cursor = post.cursor
        try:
            async with self.pool.request(
                "POST", self.url, headers, body, sent=on_sent
            ) as response:
                if self.session_id is None and self._initializing & post.pending:
                    self._take_session_id(response)
                status = response.status
                if status == 200 and response.content_type == _EVENT_STREAM:
                    await self._read_stream(response, cursor)
                elif status == 200:
                    await self._deliver(decoded(await response.read(self._max_bytes)))
                elif status == 202:
                    await response.read(self._max_bytes)
                else:
                    return await self._refusal(response)
        except TransportBroken as exc:
            if not cursor.last_event_id:
                return Refused(0, INTERNAL_ERROR, f"the connection to {self.url} failed: {exc}")
            _log.debug("a response stream from %s broke; resuming it: %s", self.url, exc)
        attempts = 0
        while post.pending and cursor.last_event_id and not self._lost:
            if attempts == MAX_ATTEMPTS:
                return Refused(
                    0,
                    INTERNAL_ERROR,
                    f"could not resume the response stream from {self.url} "
                    f"after {attempts} attempts",
                )
            await trio.sleep(cursor.retry)
            attempts += 1
            received = cursor.received
            try:
                async with self.pool.request(
                    "GET",
                    self.url,
                    self.headers(
                        ("accept", _EVENT_STREAM), ("last-event-id", cursor.last_event_id)
                    ),
                ) as response:
                    if response.status != 200 or response.content_type != _EVENT_STREAM:
                        return await self._refusal(response)
                    await self._read_stream(response, cursor)
            except TransportBroken as exc:
                _log.debug("resuming a response stream from %s failed: %s", self.url, exc)
            if cursor.received > received:
                attempts = 0
        if post.pending and not self._lost:
            return Refused(
                0,
                INTERNAL_ERROR,
                f"{self.url} ended the response without answering, and it cannot be resumed",
            )
        return None

    def _take_session_id(self, response: HttpResponse) -> None:
        session_id = response.headers.get("mcp-session-id")
        if session_id is None:
            return  # a server without sessions
        if session_id and all(0x21 <= ord(c) <= 0x7E for c in session_id):
            self.session_id = session_id
        else:
            _log.warning(
                "ignored an Mcp-Session-Id that is not visible ASCII: %s", describe(session_id)
            )

    async def _refusal(self, response: HttpResponse) -> Refused:
        # An error naming one of our requests goes to the session as it is.
        try:
            body = await response.read(self._max_bytes)
        except TransportBroken:
            body = b""
        refused, answer = refusal(self.url, response.status, body)
        if answer is not None and is_id(answer.get("id")) and answer["id"] in self._posts:
            await self._deliver(answer)
        return refused

    async def _fail(self, post: _Post, failure: Refused) -> None:
        for reply in failure_replies(self.url, post.pending, failure):
            await self._deliver(reply)

    def _session_ended(self, why: str) -> None:
        # The connection is over: the session hears it as the end of its channel.
        if not self._lost:
            self._lost = True
            if not self._closing:
                _log.warning("%s", why)
            self._sink.close()

    # --- what the server sends -----------------------------------------------------------

    async def _read_stream(self, response: HttpResponse, cursor: Cursor) -> None:
        await read_stream(response, cursor, self._max_bytes, self._deliver, self.url)

    async def _deliver(self, value: JSONValue | ProtocolError) -> None:
        if not isinstance(value, ProtocolError):
            for item in value if type(value) is list else [value]:
                if type(item) is dict and "method" not in item:
                    self._answered(item)
        # A session that is gone (or a connection that ended) just misses it.
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self._sink.send(value)

    def _answered(self, response: JSONObject) -> None:
        request_id = response.get("id")
        if not is_id(request_id):
            return
        post = self._posts.get(request_id)
        if post is not None:
            post.pending.discard(request_id)
        if request_id in self._listing_tools:
            self._listing_tools.discard(request_id)
            self._learn_tools(response.get("result"))
        if request_id in self._initializing:
            self._initializing.discard(request_id)
            result = response.get("result")
            version = result.get("protocolVersion") if type(result) is dict else None
            if isinstance(version, str):
                self.protocol_version = version

    def _learn_tools(self, result: object) -> None:
        tools = result.get("tools") if type(result) is dict else None
        for tool in tools if type(tools) is list else []:
            name = tool.get("name") if type(tool) is dict else None
            if isinstance(name, str):
                assert type(tool) is dict
                self._tool_headers[name] = mirrored_params(tool.get("inputSchema"))

    async def _listen(self) -> None:
        # The GET stream: what the server sends outside any request, for as long as the
        # connection lasts. A server that stays unreachable has lost the session.
        cursor = Cursor()
        attempts = 0
        while not (self._lost or self._closing):
            extra = [("accept", _EVENT_STREAM)]
            if cursor.last_event_id:
                extra.append(("last-event-id", cursor.last_event_id))
            received = cursor.received
            broken: TransportBroken | None = None
            try:
                async with self.pool.request(
                    "GET", self.url, self.headers(*extra), bounded=False
                ) as response:
                    if response.status == 405:
                        await response.read(self._max_bytes)
                        _log.debug("%s offers no GET stream", self.url)
                        return
                    if response.status == 200 and response.content_type == _EVENT_STREAM:
                        await self._read_stream(response, cursor)
                    else:
                        refused = await self._refusal(response)
                        if refused.status == 404 and self.session_id is not None:
                            self._session_ended(f"{self.url} ended session {self.session_id}")
                            return
                        if refused.status == 400 and cursor.last_event_id:
                            cursor.last_event_id = ""  # forgotten: listen afresh
                        _log.debug("the GET stream was refused: %s", refused.message)
            except TransportBroken as exc:
                broken = exc
                _log.debug("the GET stream from %s broke: %s", self.url, exc)
            attempts = 0 if cursor.received > received else attempts + 1
            if attempts > MAX_ATTEMPTS:
                if broken is not None:
                    self._session_ended(f"lost the connection to {self.url}: {broken}")
                else:
                    _log.warning("gave up on the GET stream from %s", self.url)
                return
            await trio.sleep(cursor.retry)

    # --- the end -------------------------------------------------------------------------

    async def terminate(self, timeout: float) -> None:
        """Tell the server the session is over (DELETE), within ``timeout`` seconds."""
        self._closing = True
        if self.session_id is None or self._lost:
            return
        with trio.move_on_after(timeout):
            try:
                async with self.pool.request(
                    "DELETE", self.url, self.headers(), bounded=False
                ) as response:
                    await response.read(self._max_bytes)
            except TransportBroken as exc:
                _log.debug("could not end session %s: %s", self.session_id, exc)
                return
            if response.status not in (200, 202, 204, 404, 405):
                _log.debug("DELETE of session %s: HTTP %d", self.session_id, response.status)


@contextlib.asynccontextmanager
async def connect_http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    initialize: bool = False,
    protocol_version: str = LATEST.version,
    max_message_bytes: int = 4 * 1024 * 1024,
    ssl_context: ssl.SSLContext | None = None,
    shutdown_timeout: float = 5.0,
    **client: Unpack[ClientArgs],
) -> AsyncIterator[ClientSession]:
    """Connect to an MCP server's Streamable HTTP endpoint (``http://host:port/mcp``).

    ``headers`` go with every request (``Authorization``, …; the transport's own headers
    win). Leaving the block ends the session on the server (DELETE, given
    ``shutdown_timeout`` seconds). https uses ``ssl_context`` (default: the system's
    trust store). A request the server cannot be reached for, or whose response stream
    breaks beyond resumption, fails with a JSON-RPC error (-32603) saying so; a server
    that ends the session (404) ends the connection. ``initialize``, ``protocol_version``
    (a session revision, a stateless one, or ``"auto"``) and ``client`` are as for
    ``connect_memory``. Needs the ``h11`` package (the ``http`` extra).

    Raises:
        ValueError: ``url`` is not an http:// or https:// URL.
    """
    # h11 comes with the ``http`` extra: imported on use, like trio-websocket.
    from ._http11 import HttpPool, Url

    target = Url.parse(url)
    to_server_send, to_server_receive = trio.open_memory_channel[JSONValue](_CHANNEL_SIZE)
    to_client_send, to_client_receive = trio.open_memory_channel[JSONValue | ProtocolError](
        _CHANNEL_SIZE
    )
    with unwrap_single_errors():
        async with HttpPool(ssl_context=ssl_context) as pool, trio.open_nursery() as nursery:
            transport = _StreamableHttp(
                target, headers, pool, to_client_send, nursery, max_message_bytes
            )
            nursery.start_soon(transport.write_all, to_server_receive)
            try:
                async with open_client_session(
                    to_server_send, to_client_receive, **client
                ) as session:
                    if initialize:
                        await session.start(protocol_version)
                    yield session
            finally:
                with trio.CancelScope(shield=True):
                    await transport.terminate(shutdown_timeout)
                nursery.cancel_scope.cancel("the client session was closed")
                to_client_send.close()
