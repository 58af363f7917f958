# The client side of one MCP session, as a pure state machine (the mirror of _session.py).
#
# Theory of operation
# -------------------
# The owner asks the machine for every message it sends (``send_request``,
# ``initialize``, ``notification``, ``cancel``, ``respond``…) and writes what it gets
# back; it feeds every decoded JSON value the server sent to ``receive`` and acts on the
# events that come out. The machine does no I/O, keeps no clock and starts no task, so a
# client and a ``ServerSession`` can be wired together in plain synchronous code.
#
# Our requests: ids come from a counter; each is pending, with its method, from
# ``send_request`` until its response arrives, ``cancel`` tells the server we gave up,
# or ``forget`` drops it silently (the owner stopped waiting and sends nothing). A
# response to an id that is not pending is a protocol problem (``UnexpectedResponse``),
# as late answers to cancelled requests are: the owner ignores them.
#
# The server's requests: each is in flight from ``ServerRequestReceived`` until the
# owner calls ``respond``/``respond_error``/``abandon``; a second request reusing an
# in-flight id is refused by the machine itself (``Send``), and ``notifications/cancelled``
# for an in-flight id becomes ``CancelRequested``.
#
# Notifications: every one the server sends comes out as ``NotificationReceived`` (the
# owner keeps a log of them all), preceded by ``ProgressReceived`` when its progress
# token belongs to a pending request, or by ``CancelRequested``.
#
# ``initialize``: its response is judged here. A revision outside ``SESSION_REVISIONS``
# is refused (``InitializeRefused``), anything else opens the session
# (``SessionInitialized``) and fixes the revision, the server's capabilities and info.
# Nothing else is gated by phase: what a client may ask before ``initialize`` is the
# server's to refuse.
#
# Bad input never raises out of ``receive``: it becomes ``MalformedReceived`` (and an
# error reply when it was a request whose id could be read).
#
# At a revision without sessions (``Revision.request_envelope``) there is no handshake:
# ``discover`` builds ``server/discover`` carrying the envelope of the revision asked
# for, and its answer is judged like ``initialize``'s (``Discovered`` when the server
# lists a stateless revision we speak, ``DiscoverRefused`` otherwise). ``use_envelope``
# (called by ``discover``'s success, or by an owner who forces the revision) fixes the
# envelope every later request carries in ``params._meta``: the revision, the client's
# capabilities and info, and its log level. ``listen`` opens ``subscriptions/listen``;
# notifications tagged with its id come out as ``SubscriptionAcknowledged`` (first,
# with the honoured filter) and ``SubscriptionNotification`` (after it), each besides
# the ``NotificationReceived`` every notification makes; the server's
# ``notifications/cancelled`` for it (stdio) is ``SubscriptionCancelled``.
#
# The events are in _client_events.py; the tables of our requests, of the server's
# and of listen streams, and the judging of the two openings, in _client_tables.py.

from __future__ import annotations

import enum
from typing import Final

from .._exceptions import LocalProtocolError, RemoteProtocolError
from ._bounded import clip, describe
from ._client_events import (
    ClientEvent,
    Discovered,
    DiscoverRefused,
    InitializeRefused,
    MalformedReceived,
    ProgressReceived,
    ServerRequestReceived,
    SessionInitialized,
    SubscriptionAcknowledged,
    SubscriptionCancelled,
    SubscriptionNotification,
    UnattributedError,
    UnexpectedResponse,
)
from ._client_tables import Listening, Outstanding, Serving, judge_discover, judge_initialize
from ._envelope import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    HEADER_MISMATCH,
    LOG_LEVEL,
    MISSING_CLIENT_CAPABILITY,
    PROTOCOL_VERSION,
    SUBSCRIPTION_ID,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ._jsonrpc import (
    ErrorResponse,
    JSONObject,
    JSONValue,
    Notification,
    Request,
    RequestId,
    Response,
    classify,
)
from ._revisions import REVISIONS, STATELESS_REVISIONS, Revision
from ._session_events import (
    SERVER_INFO,
    CancelRequested,
    ErrorReceived,
    NotificationReceived,
    ResponseReceived,
    Send,
)

__all__ = [
    "DEFAULT_MAX_PENDING",
    "DEFAULT_MAX_SERVING",
    "MODERN_ERRORS",
    "CancelRequested",
    "ClientEvent",
    "ClientPhase",
    "ClientSessionCore",
    "DiscoverRefused",
    "Discovered",
    "ErrorReceived",
    "InitializeRefused",
    "MalformedReceived",
    "NotificationReceived",
    "ProgressReceived",
    "ResponseReceived",
    "Send",
    "ServerRequestReceived",
    "SessionInitialized",
    "SubscriptionAcknowledged",
    "SubscriptionCancelled",
    "SubscriptionNotification",
    "UnattributedError",
    "UnexpectedResponse",
    "make_envelope",
]

#: our requests that may wait for a response at once
DEFAULT_MAX_PENDING: Final = 65536
#: server→client requests that may be in flight at once; more are refused
DEFAULT_MAX_SERVING: Final = 1024
#: the error codes only a server of the stateless era sends: one that answers
#: ``server/discover`` with any other error is of the session era
MODERN_ERRORS: Final = frozenset(
    {HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
)


class ClientPhase(enum.Enum):
    """Where the client side of a session is in its lifecycle."""

    NEW = "new"
    INITIALIZING = "initializing"
    INITIALIZED = "initialized"
    OPERATING = "operating"


def make_envelope(
    protocol_version: str,
    capabilities: JSONObject,
    client_info: JSONObject,
    log_level: str | None = None,
) -> JSONObject:
    """The ``params._meta`` keys of a request at ``protocol_version`` (a stateless one)."""
    envelope: JSONObject = {
        PROTOCOL_VERSION: protocol_version,
        CLIENT_CAPABILITIES: capabilities,
        CLIENT_INFO: client_info,
    }
    if log_level is not None:
        envelope[LOG_LEVEL] = log_level
    return envelope


class ClientSessionCore:
    """The protocol state of one client session; ask it what to send, feed it what came."""

    def __init__(
        self,
        *,
        max_pending: int = DEFAULT_MAX_PENDING,
        max_serving: int = DEFAULT_MAX_SERVING,
    ) -> None:
        self.phase = ClientPhase.NEW
        #: the revision the server chose, once ``initialize`` was answered
        self.revision: Revision | None = None
        #: the ``initialize`` result, once the server answered it acceptably
        self.initialize_result: JSONObject | None = None
        #: the ``server/discover`` result, once the server answered it acceptably
        self.discover_result: JSONObject | None = None
        self._outstanding = Outstanding(max_pending)
        self._serving = Serving(max_serving)
        self._listening = Listening()
        self._handshakes: set[RequestId] = set()
        # What every request carries in params._meta at a stateless revision.
        self._envelope: JSONObject | None = None
        # Each server/discover in flight, with the envelope it proposed.
        self._discovering: dict[RequestId, JSONObject] = {}

    # --- what initialize told us --------------------------------------------------

    @property
    def server_capabilities(self) -> JSONObject:
        """The capabilities the server declared (empty before ``initialize``/discovery)."""
        answer = self.initialize_result or self.discover_result
        if answer is None:
            return {}
        capabilities: JSONObject = answer.get("capabilities") or {}
        return capabilities

    @property
    def server_info(self) -> JSONObject | None:
        """The server's ``serverInfo``, or None before ``initialize``/discovery."""
        if self.initialize_result is not None:
            info: JSONObject | None = self.initialize_result.get("serverInfo")
            return info
        if self.discover_result is not None:
            meta = self.discover_result.get("_meta")
            found = meta.get(SERVER_INFO) if type(meta) is dict else None
            return found if type(found) is dict else None
        return None

    @property
    def stateless(self) -> bool:
        """Whether requests carry an envelope (a revision without sessions is in use)."""
        return self._envelope is not None

    @property
    def envelope(self) -> JSONObject | None:
        """The ``params._meta`` keys every request carries, at a stateless revision."""
        return None if self._envelope is None else dict(self._envelope)

    @property
    def log_level(self) -> str | None:
        """The log level every request asks for at a stateless revision (None: none)."""
        level = (self._envelope or {}).get(LOG_LEVEL)
        return level if isinstance(level, str) else None

    @log_level.setter
    def log_level(self, level: str | None) -> None:
        if self._envelope is None:
            raise LocalProtocolError("a per-request log level needs a stateless revision")
        if level is None:
            self._envelope.pop(LOG_LEVEL, None)
        else:
            self._envelope[LOG_LEVEL] = level

    # --- the stateless era ----------------------------------------------------------

    def use_envelope(
        self,
        protocol_version: str,
        capabilities: JSONObject,
        client_info: JSONObject,
        log_level: str | None = None,
    ) -> None:
        """Speak ``protocol_version`` (a stateless revision): every request carries it.

        Raises:
            LocalProtocolError: it is not a stateless revision of the table.
        """
        row = REVISIONS.get(protocol_version)
        if row is None or not row.request_envelope:
            raise LocalProtocolError(
                f"{describe(protocol_version)} is not a revision served request by request; "
                f"those are {', '.join(STATELESS_REVISIONS)}"
            )
        self.revision = row
        self._envelope = make_envelope(protocol_version, capabilities, client_info, log_level)
        self.phase = ClientPhase.OPERATING

    def discover(
        self,
        protocol_version: str,
        capabilities: JSONObject,
        client_info: JSONObject,
        log_level: str | None = None,
    ) -> Request:
        """Build ``server/discover`` at ``protocol_version``; ``receive`` judges its answer.

        A ``Discovered`` answer makes this revision (or the newest stateless one the
        server lists that we speak) the one every later request carries.

        Raises:
            LocalProtocolError: ``max_pending`` requests are waiting already.
        """
        envelope = make_envelope(protocol_version, capabilities, client_info, log_level)
        request = self._outstanding.track("server/discover", {"_meta": envelope}, progress=False)
        self._discovering[request.id] = envelope
        return request

    def listen(self, notifications: JSONObject) -> Request:
        """Build ``subscriptions/listen`` asking for ``notifications`` (the filter).

        Raises:
            LocalProtocolError: no stateless revision is in use, or ``max_pending``
                requests are waiting already.
        """
        if self._envelope is None:
            raise LocalProtocolError("subscriptions/listen needs a stateless revision")
        request = self.send_request("subscriptions/listen", {"notifications": notifications})
        self._listening.acknowledged[request.id] = False
        return request

    # --- what we send -------------------------------------------------------------

    def send_request(
        self, method: str, params: JSONObject | None = None, *, progress: bool = False
    ) -> Request:
        """Allocate an id for a request and track it until its response.

        With ``progress``, ``params["_meta"]["progressToken"]`` is set to the id unless a
        token is there already; progress notifications for that token then come out as
        ``ProgressReceived`` for this request.

        Raises:
            LocalProtocolError: ``max_pending`` requests are waiting already.
        """
        if self._envelope is not None and method != "initialize":
            params = dict(params or {})
            # The caller's own _meta keys (a progress token) stay; the envelope's win.
            params["_meta"] = {**(params.get("_meta") or {}), **self._envelope}
        return self._outstanding.track(method, params, progress=progress)

    def initialize(
        self,
        protocol_version: str,
        capabilities: JSONObject,
        client_info: JSONObject,
    ) -> Request:
        """Build the ``initialize`` request; its response is judged by ``receive``.

        A second handshake is not refused here: refusing it is the server's part, and
        its answer is judged like the first.

        Raises:
            LocalProtocolError: ``max_pending`` requests are waiting already.
        """
        request = self.send_request(
            "initialize",
            {
                "protocolVersion": protocol_version,
                "capabilities": capabilities,
                "clientInfo": client_info,
            },
        )
        self._handshakes.add(request.id)
        if self.phase is ClientPhase.NEW:
            self.phase = ClientPhase.INITIALIZING
        return request

    def notification(self, method: str, params: JSONObject | None = None) -> Notification:
        """Build a notification; ``notifications/initialized`` makes the session operating."""
        if method == "notifications/initialized" and self.phase is ClientPhase.INITIALIZED:
            self.phase = ClientPhase.OPERATING
        return Notification(method, params)

    def cancel(self, request_id: RequestId, reason: str | None = None) -> Notification | None:
        """Give up a pending request; return the cancellation notice to send, if any.

        None when the request is not pending (answered, forgotten, never sent), and for
        ``initialize``, which the spec forbids cancelling (it is forgotten all the same).
        """
        method = self._outstanding.methods.get(request_id)
        if method is None:
            return None
        self.forget(request_id)
        if method == "initialize":
            return None
        params: JSONObject = {"requestId": request_id}
        if reason is not None:
            params["reason"] = reason
        return Notification("notifications/cancelled", params)

    def forget(self, request_id: RequestId) -> None:
        """Stop waiting for the response to one of our requests, telling nobody."""
        if not self._outstanding.drop(request_id):
            return
        self._discovering.pop(request_id, None)
        self._listening.acknowledged.pop(request_id, None)
        if request_id in self._handshakes:
            self._handshakes.discard(request_id)
            if not self._handshakes and self.phase is ClientPhase.INITIALIZING:
                # Given up unanswered: the handshake may be tried again.
                self.phase = ClientPhase.NEW

    def pending(self) -> dict[RequestId, str]:
        """Return the id and method of every request waiting for its response."""
        return dict(self._outstanding.methods)

    def answering(self, value: JSONValue) -> str | None:
        """Return the method of the pending request ``value`` answers, if it is a response.

        For whoever looks at messages before ``receive`` (a validator, a proxy).
        """
        if type(value) is dict and "method" not in value:
            request_id = value.get("id")
            if type(request_id) is int or type(request_id) is str:
                return self._outstanding.methods.get(request_id)
        return None

    def batch(self, messages: list[Request | Notification]) -> list[JSONObject]:
        """Return ``messages`` as one JSON-RPC batch, where the revision allows one.

        Raises:
            LocalProtocolError: the negotiated revision has no batches (or none is
                negotiated yet), the batch is empty, or it holds ``initialize``.
        """
        if self.revision is None or not self.revision.batching:
            version = self.revision.version if self.revision else None
            raise LocalProtocolError(
                "no batches before initialize"
                if version is None
                else f"revision {version} does not allow JSON-RPC batches"
            )
        if not messages:
            raise LocalProtocolError("a batch must not be empty")
        if any(type(m) is Request and m.method == "initialize" for m in messages):
            raise LocalProtocolError("initialize must not be part of a batch")
        return [message.to_json() for message in messages]

    # --- what we answer -----------------------------------------------------------

    def respond(self, request_id: RequestId, result: JSONObject) -> JSONObject:
        """Answer an in-flight server request; return what to write.

        Raises:
            LocalProtocolError: the request is not in flight.
        """
        self._serving.finish(request_id)
        return Response(request_id, result).to_json()

    def respond_error(
        self, request_id: RequestId, code: int, message: str, data: JSONValue = None
    ) -> JSONObject:
        """Answer an in-flight server request with an error; return what to write.

        Raises:
            LocalProtocolError: the request is not in flight.
        """
        self._serving.finish(request_id)
        return ErrorResponse(request_id, code, message, data).to_json()

    def abandon(self, request_id: RequestId) -> None:
        """Forget a server request without answering it (the server cancelled it).

        Raises:
            LocalProtocolError: the request is not in flight.
        """
        self._serving.finish(request_id)

    def serving(self) -> frozenset[RequestId]:
        """Return the ids of the server's requests not yet answered."""
        return frozenset(self._serving.ids)

    # --- what arrives -------------------------------------------------------------

    def receive(self, value: JSONValue) -> list[ClientEvent]:
        """Take one decoded JSON value from the server; return what it means.

        A batch (a list) is taken apart: the events of its items, in order.
        """
        events: list[ClientEvent] = []
        for item in value if type(value) is list else (value,):
            try:
                message = classify(item)
            except RemoteProtocolError as exc:
                events.append(MalformedReceived(exc, item))
                if type(item) is dict and "method" in item and exc.request_id is not None:
                    reply = ErrorResponse(exc.request_id, exc.code, exc.message)
                    events.append(Send(reply.to_json(), exc.request_id))
                continue
            kind = type(message)
            if kind is Response or kind is ErrorResponse:
                assert isinstance(message, Response | ErrorResponse)
                self._answered(message, events)
            elif kind is Notification:
                assert isinstance(message, Notification)
                self._notified(message, events)
            else:
                assert isinstance(message, Request)
                events.append(self._serving.admit(message))
        return events

    def _answered(self, answer: Response | ErrorResponse, events: list[ClientEvent]) -> None:
        # A response or an error response: the end of one of our requests.
        request_id = answer.id
        if request_id is None:
            assert isinstance(answer, ErrorResponse)
            events.append(UnattributedError(answer))
            return
        if request_id not in self._outstanding.methods:
            events.append(UnexpectedResponse(answer))
            return
        handshake = request_id in self._handshakes
        proposed = self._discovering.pop(request_id, None)
        self.forget(request_id)
        if type(answer) is ErrorResponse:
            events.append(ErrorReceived(request_id, answer))
            return
        assert isinstance(answer, Response)
        if handshake:
            judged = judge_initialize(request_id, answer.result)
            if type(judged) is SessionInitialized:
                self.revision = judged.revision
                self.initialize_result = answer.result
                # The handshake's request was forgotten just before, which left the
                # phase NEW unless a second handshake (the server's to refuse) waits.
                if self.phase is not ClientPhase.OPERATING:
                    self.phase = ClientPhase.INITIALIZED
            events.append(judged)
        elif proposed is not None:
            found = judge_discover(request_id, answer.result, proposed)
            if type(found) is Discovered:
                self.discover_result = answer.result
                self.use_envelope(
                    found.revision.version,
                    proposed[CLIENT_CAPABILITIES],
                    proposed[CLIENT_INFO],
                    proposed.get(LOG_LEVEL),
                )
            events.append(found)
        else:
            events.append(ResponseReceived(request_id, answer.result))

    def _notified(self, notification: Notification, events: list[ClientEvent]) -> None:
        method = notification.method
        params = notification.params or {}
        meta = params.get("_meta")
        subscription = meta.get(SUBSCRIPTION_ID) if type(meta) is dict else None
        listening = self._listening
        if (
            (type(subscription) is int or type(subscription) is str)
            and subscription in listening.acknowledged
            and method != "notifications/cancelled"
        ):
            listening.notification(subscription, notification, events)
        if method == "notifications/progress":
            token = params.get("progressToken")
            if type(token) is int or type(token) is str:
                request_id = self._outstanding.by_token.get(token)
                if request_id is not None:
                    events.append(ProgressReceived(request_id, params))
        elif method == "notifications/cancelled":
            request_id = params.get("requestId")
            reason = params.get("reason")
            # The reason ends up in a CancelScope and in logs: clipped.
            clipped = clip(reason) if isinstance(reason, str) else None
            if type(request_id) is int or type(request_id) is str:
                if request_id in listening.acknowledged:
                    # On stdio the server ends a listen stream so; it is answered by it.
                    self.forget(request_id)
                    events.append(SubscriptionCancelled(request_id, clipped))
                elif request_id in self._serving.ids:
                    events.append(CancelRequested(request_id, clipped))
        events.append(NotificationReceived(notification))
