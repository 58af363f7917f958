# The tables a client session's core keeps, and its judging of the two openings.
#
# ``Outstanding``: our requests waiting for their responses, by id (a counter), with
# each one's method and progress token, bounded by ``max_pending``. ``Serving``: the
# server's requests in flight until the owner answers or abandons them, bounded by
# ``max_serving``; a request reusing an in-flight id, or one past the bound, is refused
# here with an error reply. ``Listening``: the open listen streams and whether each was
# acknowledged. ``judge_initialize`` and ``judge_discover`` read the answer to
# ``initialize`` and ``server/discover``; the core applies what they decide.

from __future__ import annotations

from .._exceptions import INTERNAL_ERROR, INVALID_REQUEST, LocalProtocolError, RemoteProtocolError
from ._bounded import describe
from ._client_events import (
    ClientEvent,
    Discovered,
    DiscoverRefused,
    InitializeRefused,
    MalformedReceived,
    ServerRequestReceived,
    SessionInitialized,
    SubscriptionAcknowledged,
    SubscriptionNotification,
)
from ._envelope import PROTOCOL_VERSION
from ._jsonrpc import ErrorResponse, JSONObject, Notification, Request, RequestId
from ._revisions import REVISIONS, SESSION_REVISIONS, STATELESS_REVISIONS
from ._session_events import Send

__all__ = ["Listening", "Outstanding", "Serving", "judge_discover", "judge_initialize"]


class Outstanding:
    """Our requests waiting for their responses: ids, methods and progress tokens."""

    def __init__(self, max_pending: int) -> None:
        self._max_pending = max_pending
        self._next_id = 0
        #: the method of each request waiting for its response
        self.methods: dict[RequestId, str] = {}
        #: the request each progress token belongs to
        self.by_token: dict[RequestId, RequestId] = {}
        self._tokens: dict[RequestId, RequestId] = {}

    def track(self, method: str, params: JSONObject | None, *, progress: bool) -> Request:
        """Allocate an id for a request and keep it until its response.

        Raises:
            LocalProtocolError: ``max_pending`` requests are waiting already.
        """
        if len(self.methods) >= self._max_pending:
            raise LocalProtocolError(
                f"too many requests waiting for a response (limit {self._max_pending})"
            )
        self._next_id += 1
        request_id = self._next_id
        if progress:
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            token = meta.setdefault("progressToken", request_id)
            params["_meta"] = meta
            if type(token) is int or type(token) is str:
                self.by_token[token] = request_id
                self._tokens[request_id] = token
        self.methods[request_id] = method
        return Request(request_id, method, params)

    def drop(self, request_id: RequestId) -> bool:
        """Stop waiting for ``request_id``; whether it was waiting."""
        if self.methods.pop(request_id, None) is None:
            return False
        token = self._tokens.pop(request_id, None)
        if token is not None and self.by_token.get(token) == request_id:
            del self.by_token[token]
        return True


class Serving:
    """The server's requests in flight, until answered or abandoned."""

    def __init__(self, max_serving: int) -> None:
        self._max_serving = max_serving
        #: the ids of the server's requests not yet answered
        self.ids: set[RequestId] = set()

    def admit(self, request: Request) -> ClientEvent:
        """A request from the server: to answer, or refused with the reply to send."""
        if request.id in self.ids:
            reply = ErrorResponse(
                request.id,
                INVALID_REQUEST,
                f"request id {describe(request.id)} is already in use",
            )
            return Send(reply.to_json(), request.id)
        if len(self.ids) >= self._max_serving:
            reply = ErrorResponse(
                request.id,
                INTERNAL_ERROR,
                f"client busy: too many requests in flight (limit {self._max_serving})",
            )
            return Send(reply.to_json(), request.id)
        self.ids.add(request.id)
        return ServerRequestReceived(request)

    def finish(self, request_id: RequestId) -> None:
        """The owner answered (or abandoned) a request.

        Raises:
            LocalProtocolError: the request is not in flight.
        """
        try:
            self.ids.remove(request_id)
        except KeyError:
            raise LocalProtocolError(
                f"server request {describe(request_id)} is not in flight: it was never "
                "received or was already answered"
            ) from None


class Listening:
    """The open listen streams, by the id of their ``subscriptions/listen``."""

    def __init__(self) -> None:
        #: whether each stream was acknowledged yet
        self.acknowledged: dict[RequestId, bool] = {}

    def notification(
        self, subscription: RequestId, notification: Notification, events: list[ClientEvent]
    ) -> None:
        """A notification tagged with an open stream's id: what it means for the stream."""
        params = notification.params or {}
        if notification.method == "notifications/subscriptions/acknowledged":
            if self.acknowledged[subscription]:
                return  # a second acknowledgment says nothing new
            self.acknowledged[subscription] = True
            honoured = params.get("notifications")
            events.append(
                SubscriptionAcknowledged(subscription, honoured if type(honoured) is dict else {})
            )
        elif self.acknowledged[subscription]:
            events.append(SubscriptionNotification(subscription, notification))
        else:
            error = RemoteProtocolError(
                f"{describe(notification.method)} on subscription {describe(subscription)} "
                "came before its acknowledgment"
            )
            events.append(MalformedReceived(error, notification.to_json()))


def judge_initialize(
    request_id: RequestId, result: JSONObject
) -> SessionInitialized | InitializeRefused:
    """The answer to ``initialize``: a revision this client speaks, or a refusal."""
    chosen = result.get("protocolVersion")
    if not isinstance(chosen, str) or chosen not in SESSION_REVISIONS:
        error = RemoteProtocolError(
            f"the server chose protocol revision {describe(chosen)}; this client supports "
            f"{', '.join(SESSION_REVISIONS)}",
            data={"protocolVersion": chosen},
        )
        return InitializeRefused(request_id, error)
    return SessionInitialized(request_id, result, REVISIONS[chosen])


def judge_discover(
    request_id: RequestId, result: JSONObject, proposed: JSONObject
) -> Discovered | DiscoverRefused:
    """The answer to ``server/discover`` proposing ``proposed``: the revision to speak."""
    listed = result.get("supportedVersions")
    versions = [v for v in listed if isinstance(v, str)] if type(listed) is list else []
    ours = [v for v in reversed(STATELESS_REVISIONS) if v in versions]
    if not ours:
        error = RemoteProtocolError(
            f"the server supports {describe(listed)}; this client speaks "
            f"{', '.join(STATELESS_REVISIONS)} without a session",
            data={"supportedVersions": listed if type(listed) is list else None},
        )
        return DiscoverRefused(request_id, error)
    # The revision proposed if the server lists it, else the newest it lists.
    chosen = proposed[PROTOCOL_VERSION] if proposed[PROTOCOL_VERSION] in ours else ours[0]
    return Discovered(request_id, result, REVISIONS[chosen])
