# The server side of one MCP session, as a pure state machine (h11-shaped).
#
# Theory of operation
# -------------------
# The owner feeds every decoded JSON value the peer sent to ``receive`` and gets back a
# list of events (_session_events.py); it never does I/O. Events are either things that
# happened (an ``Exchange`` for a request, ``CancelRequested``, ``ResponseReceived``, …) or
# ``Send``: a reply the machine produced itself (errors for bad input, ``initialize``,
# ``ping``, ``logging/setLevel``), which the owner writes to the peer as it is.
#
# Phases (``PHASE_RULES`` below): before ``initialize`` only ``initialize`` and ``ping``
# are served. After answering ``initialize`` the session is operating as far as the
# client's requests go (over HTTP the ``initialized`` notification races the next POST),
# but the server may only send pings and log messages until ``notifications/initialized``
# arrives, as the lifecycle page asks.
#
# Ids: requests the peer sent are "in flight" from their ``Exchange`` until the owner
# answers through it (``respond``/``respond_error``/``abandon``); a second request
# reusing an in-flight id is refused. Requests we send get ids from a counter and are
# tracked until their response arrives or ``forget_outgoing`` is called.
#
# Batches (2025-03-26 only, see the revision table): the replies to the requests of one
# batch are held and sent as one array once the last of them is answered.

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Final

import orjson

from .._exceptions import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    CapabilityError,
    LocalProtocolError,
    RemoteProtocolError,
)
from ._bounded import bounded_value, clip, describe, over_limit
from ._jsonrpc import (
    Batch,
    Body,
    ErrorResponse,
    JSONObject,
    JSONValue,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    batch_refusal,
    classify,
    classify_body,
    error_message,
    result_message,
)
from ._negotiated import Negotiated
from ._revisions import SESSION_REVISIONS, Revision, negotiate
from ._session_events import (
    CancelRequested,
    ErrorReceived,
    Event,
    Exchange,
    Initialized,
    NotificationReceived,
    ResponseReceived,
    RootsChanged,
    Send,
)

__all__ = [
    "LOG_LEVELS",
    "MAX_CLIENT_DECLARATION_BYTES",
    "CancelRequested",
    "ErrorReceived",
    "Event",
    "Exchange",
    "Initialized",
    "Negotiated",
    "NotificationReceived",
    "Phase",
    "ResponseReceived",
    "RootsChanged",
    "Send",
    "ServerSession",
    "unanswered_reply",
]

#: syslog severities in increasing order, as ``logging/setLevel`` names them
LOG_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
_LOG_RANK: Final = {name: rank for rank, name in enumerate(LOG_LEVELS)}

#: the most bytes (as JSON) of what a client declares in ``initialize`` — its
#: ``capabilities`` and ``clientInfo`` together — which the session keeps for its life
MAX_CLIENT_DECLARATION_BYTES: Final = 64 * 1024


class Phase(enum.Enum):
    """Where a session is in its lifecycle."""

    AWAITING_INITIALIZE = "awaiting initialize"
    AWAITING_INITIALIZED = "awaiting initialized"
    OPERATING = "operating"
    CLOSED = "closed"


# What the client may ask, and what we may send, in each phase. None means "anything".
# A plain slotted class: four rows read by the session, never compared or copied.
class _PhaseRule:
    __slots__ = ("client_requests", "server_notifications", "server_requests")

    def __init__(
        self,
        client_requests: frozenset[str] | None,
        server_requests: frozenset[str] | None,
        server_notifications: frozenset[str] | None,
    ) -> None:
        self.client_requests = client_requests
        self.server_requests = server_requests
        self.server_notifications = server_notifications


_LOGGING_ONLY: Final = frozenset({"notifications/message"})
# The requests the core answers itself (logging/setLevel when logging is offered).
_ANSWERED_HERE: Final = frozenset({"initialize", "ping", "logging/setLevel"})
PHASE_RULES: Final = {
    Phase.AWAITING_INITIALIZE: _PhaseRule(
        frozenset({"initialize", "ping"}), frozenset({"ping"}), _LOGGING_ONLY
    ),
    Phase.AWAITING_INITIALIZED: _PhaseRule(
        None, frozenset({"ping"}), _LOGGING_ONLY | {"notifications/progress"}
    ),
    Phase.OPERATING: _PhaseRule(None, None, None),
    Phase.CLOSED: _PhaseRule(frozenset(), frozenset(), frozenset()),
}

# Server→client requests and the client capability each needs (a path into the
# client's capabilities object).
_OUTGOING_GATES: Final[dict[str, tuple[str, ...]]] = {
    "sampling/createMessage": ("sampling",),
    "elicitation/create": ("elicitation",),
    "roots/list": ("roots",),
}


class _Batch:
    __slots__ = ("replies", "waiting")

    def __init__(self) -> None:
        self.waiting: set[RequestId] = set()
        self.replies: list[JSONValue] = []


class ServerSession:
    """The protocol state of one server session; feed it messages, read its events."""

    def __init__(
        self,
        *,
        server_info: Callable[[Revision], JSONObject],
        capabilities: Callable[[Revision], JSONObject],
        instructions: str | None = None,
        supported: tuple[str, ...] = SESSION_REVISIONS,
        log_level: str = "info",
    ) -> None:
        self._server_info = server_info
        self._capabilities = capabilities
        self._instructions = instructions
        self._supported = supported
        self.phase = Phase.AWAITING_INITIALIZE
        self.negotiated: Negotiated | None = None
        self.server_capabilities: JSONObject = {}
        self.log_level = log_level
        self._in_flight: dict[RequestId, _Batch | None] = {}
        self._outgoing: set[RequestId] = set()
        self._next_id = 0

    # --- what arrives -----------------------------------------------------------

    def receive(self, value: JSONValue | Body) -> list[Event]:
        """Take one decoded JSON value, or a body ``classify_body`` made, from the peer.

        Returns what it means.
        """
        if self.phase is Phase.CLOSED:
            return []
        body: Body
        if type(value) is dict:
            # classify_body's first case, inline: every message of a session comes here.
            try:
                body = classify(value)
            except RemoteProtocolError as exc:
                body = exc
        else:
            body = classify_body(value)
        events: list[Event] = []
        if type(body) is Request:
            reply = self._receive_request(body, events, None)
            if reply is not None:
                events.append(Send(reply, body.id))
            return events
        if isinstance(body, Batch):
            return self._receive_batch(body)
        reply = self._receive_one(body, events, None)
        if reply is not None:
            assert isinstance(body, RemoteProtocolError)
            events.append(Send(reply, body.request_id))
        return events

    def _receive_batch(self, body: Batch) -> list[Event]:
        negotiated = self.negotiated
        why = batch_refusal(body, negotiated.revision if negotiated is not None else None)
        if why is not None:
            return [Send(error_message(None, INVALID_REQUEST, why))]
        batch = _Batch()
        events: list[Event] = []
        for item in body.items:
            reply = self._receive_one(item, events, batch)
            if reply is not None:
                batch.replies.append(reply)
        if not batch.waiting and batch.replies:
            events.append(Send(batch.replies))
        return events

    def _receive_one(
        self, message: Message | RemoteProtocolError, events: list[Event], batch: _Batch | None
    ) -> JSONValue | None:
        if type(message) is Request:
            return self._receive_request(message, events, batch)
        if type(message) is Notification:
            self._receive_notification(message, events)
            return None
        if type(message) is Response:
            if message.id in self._outgoing:
                self._outgoing.discard(message.id)
                events.append(ResponseReceived(message.id, message.result))
            return None
        if type(message) is ErrorResponse:
            if message.id is not None and message.id in self._outgoing:
                self._outgoing.discard(message.id)
                events.append(ErrorReceived(message.id, message))
            return None
        assert isinstance(message, RemoteProtocolError)
        return error_message(message.request_id, message.code, message.message, message.data)

    def _receive_request(
        self, request: Request, events: list[Event], batch: _Batch | None
    ) -> JSONValue | None:
        method = request.method
        if request.id in self._in_flight:
            return error_message(
                request.id,
                INVALID_REQUEST,
                f"request id {describe(request.id)} is already in flight",
            )
        if not method.isprintable():
            # No method is named with control characters: not found in any phase.
            return error_message(
                request.id,
                METHOD_NOT_FOUND,
                f"method not found: {describe(method)}",
                {"method": bounded_value(method)},
            )
        # An operating session serves any method (the enum's hash is a Python call).
        phase = self.phase
        allowed = None if phase is Phase.OPERATING else PHASE_RULES[phase].client_requests
        if allowed is not None and method not in allowed:
            return error_message(
                request.id,
                INVALID_REQUEST,
                f"{describe(method)} before initialize: the session is not initialized",
            )
        if method in _ANSWERED_HERE:
            # One lookup rules the three out for every other request.
            if method == "initialize":
                if self.phase is not Phase.AWAITING_INITIALIZE:
                    # A second handshake would change the revision under in-flight requests.
                    return error_message(
                        request.id, INVALID_REQUEST, "the session is already initialized"
                    )
                return self._initialize(request)
            if method == "ping":
                return result_message(request.id, {})
            if "logging" in self.server_capabilities:
                return self._set_level(request)
        negotiated = self.negotiated
        assert negotiated is not None  # guaranteed by the phase rules
        self._in_flight[request.id] = batch
        if batch is not None:
            batch.waiting.add(request.id)
        events.append(Exchange(request, negotiated, self))
        return None

    def _receive_notification(self, notification: Notification, events: list[Event]) -> None:
        method = notification.method
        params = notification.params or {}
        if method == "notifications/cancelled":
            request_id = params.get("requestId")
            # Unknown or finished ids are ignored, as the cancellation page says; the
            # machine answers initialize itself, so it is never in flight to cancel.
            if _is_id(request_id) and request_id in self._in_flight:
                reason = params.get("reason")
                # The reason ends up in the handler's Cancelled and in logs: clipped.
                events.append(
                    CancelRequested(request_id, clip(reason) if isinstance(reason, str) else None)
                )
        elif method == "notifications/initialized":
            if self.phase is Phase.AWAITING_INITIALIZED:
                self.phase = Phase.OPERATING
                events.append(Initialized())
        elif method == "notifications/roots/list_changed":
            if self.phase is not Phase.AWAITING_INITIALIZE:
                events.append(RootsChanged())
        elif self.phase is not Phase.AWAITING_INITIALIZE:
            events.append(NotificationReceived(notification))

    def _initialize(self, request: Request) -> JSONValue:
        params = request.params or {}
        version = params.get("protocolVersion")
        capabilities = params.get("capabilities")
        client_info = params.get("clientInfo")
        if not isinstance(version, str):
            return error_message(
                request.id,
                INVALID_PARAMS,
                f"initialize needs a string 'protocolVersion', got {describe(version)}",
            )
        if capabilities is not None and not isinstance(capabilities, dict):
            return error_message(
                request.id,
                INVALID_PARAMS,
                f"'capabilities' must be an object, got {type(capabilities).__name__}",
            )
        if client_info is not None and not isinstance(client_info, dict):
            return error_message(
                request.id,
                INVALID_PARAMS,
                f"'clientInfo' must be an object, got {type(client_info).__name__}",
            )
        # Kept as long as the session: held to a size (once per session, so measured by
        # writing it). Decoded JSON can always be written; a value that never was JSON
        # (an in-memory peer's) is not measured.
        try:
            declared = len(orjson.dumps([capabilities, client_info]))
        except orjson.JSONEncodeError:
            declared = 0
        if declared > MAX_CLIENT_DECLARATION_BYTES:
            refusal = over_limit(
                f"'capabilities' and 'clientInfo' take {declared} bytes as JSON, at most "
                f"{MAX_CLIENT_DECLARATION_BYTES}",
                MAX_CLIENT_DECLARATION_BYTES,
            )
            return error_message(request.id, refusal.code, refusal.message, refusal.data)
        revision = negotiate(version, self._supported)
        self.negotiated = Negotiated(revision, capabilities or {}, client_info)
        self.server_capabilities = self._capabilities(revision)
        self.phase = Phase.AWAITING_INITIALIZED
        result: JSONObject = {
            "protocolVersion": revision.version,
            "capabilities": self.server_capabilities,
            "serverInfo": self._server_info(revision),
        }
        if self._instructions:
            result["instructions"] = self._instructions
        return result_message(request.id, result)

    def adopt(
        self,
        protocol_version: str,
        client_info: JSONObject | None = None,
        client_capabilities: JSONObject | None = None,
    ) -> Negotiated:
        """Operate at ``protocol_version`` without a handshake; return what is negotiated.

        For requests that carry their revision themselves (stateless HTTP, and later a
        2026-07-28 envelope), where the client declared no capabilities, and for a
        session another process initialized (its ``client_capabilities``): the session
        is operating at once, as after ``initialize`` and ``notifications/initialized``.

        Raises:
            LocalProtocolError: the session has been initialized already, or closed.
        """
        if self.phase is not Phase.AWAITING_INITIALIZE:
            raise LocalProtocolError(f"cannot adopt a revision while {self.phase.value}")
        revision = negotiate(protocol_version, self._supported)
        self.negotiated = Negotiated(revision, client_capabilities or {}, client_info)
        self.server_capabilities = self._capabilities(revision)
        self.phase = Phase.OPERATING
        return self.negotiated

    def _set_level(self, request: Request) -> JSONValue:
        level = (request.params or {}).get("level")
        if not isinstance(level, str) or level not in _LOG_RANK:
            return error_message(
                request.id,
                INVALID_PARAMS,
                f"unknown log level {describe(level)}",
                {"expected": list(LOG_LEVELS)},
            )
        self.log_level = level
        return result_message(request.id, {})

    # --- what we answer ---------------------------------------------------------

    def settle(self, request_id: RequestId, reply: JSONValue | None) -> JSONValue | None:
        """Count an in-flight request answered by ``reply`` (None: abandoned).

        Its ``Exchange`` calls this; returns what to write (None while a batch waits).
        """
        try:
            batch = self._in_flight.pop(request_id)
        except KeyError:
            raise LocalProtocolError(
                f"request {describe(request_id)} is not in flight: it was never received "
                "or was already answered"
            ) from None
        if batch is None:
            return reply
        batch.waiting.discard(request_id)
        if reply is not None:
            batch.replies.append(reply)
        if batch.waiting or not batch.replies:
            return None
        return batch.replies

    def in_flight(self) -> Iterable[RequestId]:
        """Return the ids of the peer's requests not yet answered."""
        return self._in_flight.keys()

    # --- what we send on our own ------------------------------------------------

    def send_request(self, method: str, params: JSONObject | None = None) -> Request:
        """Allocate an id for a server→client request and check that it may be sent.

        Raises:
            CapabilityError: the client did not declare the capability the method needs.
            LocalProtocolError: the session's phase does not allow this request yet.
        """
        allowed = PHASE_RULES[self.phase].server_requests
        if allowed is not None and method not in allowed:
            raise LocalProtocolError(
                f"cannot send {method!r} while the session is {self.phase.value}"
            )
        gate = _OUTGOING_GATES.get(method)
        if gate is not None:
            negotiated = self.negotiated
            assert negotiated is not None  # guaranteed by the phase rules
            if not negotiated.client_has(*gate):
                raise CapabilityError(
                    f"the client did not declare the {'.'.join(gate)!r} capability, "
                    f"so the server cannot send {method!r}",
                    code=INVALID_REQUEST,
                    data={"requiredCapabilities": {gate[0]: {}}},
                )
        self._next_id += 1
        request = Request(self._next_id, method, params)
        self._outgoing.add(request.id)
        return request

    def expects(self, request_id: RequestId) -> bool:
        """Return whether ``request_id`` is one of our requests still awaiting an answer."""
        return request_id in self._outgoing

    def number_requests_from(self, first: int) -> None:
        """Number our next requests from ``first`` on.

        Copies of one session served by several processes take ranges of their own, so
        that a client's answer names the request of one copy only.
        """
        self._next_id = first - 1

    def forget_outgoing(self, request_id: RequestId) -> None:
        """Stop waiting for the answer to one of our requests (timed out or cancelled)."""
        self._outgoing.discard(request_id)

    def cancel_outgoing(self, request_id: RequestId, reason: str) -> JSONObject:
        """Stop waiting for one of our requests; return the notice that tells the client."""
        self._outgoing.discard(request_id)
        return {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        }

    def may_notify(self, method: str) -> bool:
        """Return whether the phase allows sending this notification now."""
        allowed = PHASE_RULES[self.phase].server_notifications
        return allowed is None or method in allowed

    def notification(self, method: str, params: JSONObject) -> JSONObject | None:
        """Return the notification to send; None if the phase does not allow it now."""
        allowed = PHASE_RULES[self.phase].server_notifications
        if allowed is not None and method not in allowed:
            return None
        return {"jsonrpc": "2.0", "method": method, "params": params}

    def ended_reply(self, request_ids: Iterable[RequestId]) -> JSONValue:
        """Return the answer owed to requests the session ended before answering.

        One error response, or an array of them for several requests of one batch.
        """
        return unanswered_reply(request_ids, "the session ended before the request was answered")

    def log_enabled(self, level: str) -> bool:
        """Return whether a message at ``level`` passes the client's chosen level."""
        return _LOG_RANK.get(level, 0) >= _LOG_RANK[self.log_level]

    def close(self) -> None:
        """Mark the session closed; nothing more is received or answered."""
        self.phase = Phase.CLOSED


def unanswered_reply(request_ids: Iterable[RequestId], message: str) -> JSONValue:
    """Return the answer owed to requests that will never be answered, saying ``message``.

    One error response (-32603), or an array of them for several requests of one batch.
    """
    errors: list[JSONValue] = [
        error_message(request_id, INTERNAL_ERROR, message) for request_id in request_ids
    ]
    return errors[0] if len(errors) == 1 else errors


def _is_id(value: object) -> bool:
    return type(value) is int or type(value) is str
