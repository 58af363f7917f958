# What the server sends a client session, and what the session does about it.
#
# One reader task (``_read``) owns the receive channel and never blocks on anything but
# it. Every JSON value is fed to the core, and each event that comes out is acted on
# by its type:
#
# - a response fills the one-shot slot of the request with that id (_requests.py); the
#   caller, waiting on the slot, returns the result or raises ``RequestError``;
# - a progress notification goes, by token, to a small per-request channel that the
#   *caller's* task drains into its progress handler (so a slow or failing handler
#   blocks or fails its own call only, never the reader);
# - every notification is kept in a bounded log (_notifications.py) that the session's
#   ``notifications`` inbox reads;
# - a listen stream's acknowledgment and notifications go to its ``Subscription``;
# - a server→client request (ping, sampling, elicitation, roots) is answered by the
#   handlers (_handlers.py) in its own task with its own CancelScope, registered by id,
#   so the server's ``notifications/cancelled`` is just ``scope.cancel()`` — the mirror
#   of the server's Request actors.

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

import trio

from .._exceptions import (
    INTERNAL_ERROR,
    ProtocolError,
    RequestError,
    TransportBroken,
    TransportError,
)
from ..protocol import (
    CancelRequested,
    ClientSessionCore,
    Discovered,
    DiscoverRefused,
    ErrorReceived,
    ErrorResponse,
    InitializeRefused,
    JSONObject,
    JSONValue,
    MalformedReceived,
    NotificationReceived,
    ProgressReceived,
    Request,
    RequestId,
    Response,
    ResponseReceived,
    Send,
    ServerRequestReceived,
    SessionInitialized,
    SubscriptionAcknowledged,
    SubscriptionCancelled,
    SubscriptionNotification,
    UnattributedError,
    UnexpectedResponse,
    clip,
    describe,
    describe_error,
)
from ._handlers import ClientHandlers, ServerMessageHook
from ._notifications import NotificationLog
from ._requests import Requests
from ._rounds import request_error

__all__ = ["Reader", "ReaderSettings"]

_log = logging.getLogger("mcpactor.client")


class ReaderSettings(Protocol):
    """What the session's owner may change while it runs (read at each message)."""

    #: sees every message from the server, with the method of the request it answers
    on_server_message: ServerMessageHook | None


class Reader:
    """The reader task of a client session and the answering of the server's requests."""

    def __init__(
        self,
        receive_channel: trio.abc.ReceiveChannel[JSONValue | ProtocolError],
        core: ClientSessionCore,
        requests: Requests,
        handlers: ClientHandlers,
        log: NotificationLog,
        settings: ReaderSettings,
    ) -> None:
        self._receive_channel = receive_channel
        self._core = core
        self._requests = requests
        self._handlers = handlers
        self._log = log
        self._settings = settings
        #: the scope of each server request being answered
        self.serving: dict[RequestId, trio.CancelScope] = {}
        #: where the server's requests are answered; set by ``open_client_session``
        self.nursery: trio.Nursery | None = None
        # What each event of the core means here, by its type.
        self._actions: dict[type, Callable[[Any], None]] = {
            ResponseReceived: self._answered,
            NotificationReceived: self._notified,
            ProgressReceived: self._progressed,
            ErrorReceived: self._failed,
            SubscriptionAcknowledged: self._acknowledged,
            SubscriptionNotification: self._delivered,
            SubscriptionCancelled: self._ended,
            ServerRequestReceived: self._asked,
            CancelRequested: self._cancelled,
            Send: self._replied,
            SessionInitialized: self._answered,
            Discovered: self._answered,
            InitializeRefused: self._refused,
            DiscoverRefused: self._refused,
            UnexpectedResponse: self._unexpected,
            UnattributedError: self._unattributed,
            MalformedReceived: self._malformed,
        }

    async def _read(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        receive_channel = self._receive_channel
        async with receive_channel:
            task_status.started()
            async for item in receive_channel:
                if isinstance(item, ProtocolError):
                    _log.warning("unreadable message from the server: %s", item)
                elif type(item) is list:
                    for message in item:
                        self.receive(message)
                else:
                    self.receive(item)
        self.connection_lost(TransportBroken("the server closed the connection"))

    def receive(self, value: JSONValue) -> None:
        """Act on one JSON value from the server."""
        hook = self._settings.on_server_message
        if hook is not None:
            hook(value, self._core.answering(value))
        actions = self._actions
        for event in self._core.receive(value):
            actions[type(event)](event)

    def connection_lost(self, error: TransportError) -> None:
        """Fail everyone waiting on the connection and stop answering the server."""
        requests = self._requests
        requests.fail_all(error)
        self._log.fail_waiters(requests.lost_error)
        for scope in self.serving.values():
            scope.cancel("the connection closed")

    # --- answers to our requests ------------------------------------------------

    def _answered(self, event: ResponseReceived | SessionInitialized | Discovered) -> None:
        self._requests.resolve(event.request_id, event.result, None)

    def _failed(self, event: ErrorReceived) -> None:
        error = event.error
        self._requests.resolve(
            event.request_id, None, request_error(error.code, error.message, error.data)
        )

    def _refused(self, event: InitializeRefused | DiscoverRefused) -> None:
        self._requests.resolve(event.request_id, None, event.error)

    def _progressed(self, event: ProgressReceived) -> None:
        slot = self._requests.pending.get(event.request_id)
        if slot is not None and slot.progress_send is not None:
            # A caller that cannot keep up loses updates, never the reader's time.
            with contextlib.suppress(
                trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError
            ):
                slot.progress_send.send_nowait(event.params)

    # --- notifications and listen streams ----------------------------------------

    def _notified(self, event: NotificationReceived) -> None:
        self._log.append(event.notification)

    def _acknowledged(self, event: SubscriptionAcknowledged) -> None:
        listener = self._requests.subscriptions.get(event.subscription_id)
        if listener is not None:
            listener.acknowledge(event.notifications)

    def _delivered(self, event: SubscriptionNotification) -> None:
        listener = self._requests.subscriptions.get(event.subscription_id)
        if listener is not None:
            listener.deliver(event.notification)

    def _ended(self, event: SubscriptionCancelled) -> None:
        _log.debug(
            "the server ended subscription %s: %s",
            describe(event.subscription_id),
            event.reason or "no reason given",
        )
        self._requests.resolve(event.subscription_id, {}, None)

    # --- what is no answer -------------------------------------------------------

    def _unexpected(self, event: UnexpectedResponse) -> None:
        # Late answers to requests we cancelled or gave up on are ignored (spec).
        _log.debug(
            "ignored a response to request %s, which is not pending",
            describe(event.response.id),
        )

    def _unattributed(self, event: UnattributedError) -> None:
        _log.warning("the server could not read a request: %s", clip(event.error.message))

    def _malformed(self, event: MalformedReceived) -> None:
        _log.warning("invalid message from the server: %s: %s", event.error, describe(event.value))

    # --- server→client requests --------------------------------------------------

    def _asked(self, event: ServerRequestReceived) -> None:
        # Registered here, not in the task, so a cancellation right behind the request
        # finds it.
        scope = trio.CancelScope()
        self.serving[event.request.id] = scope
        assert self.nursery is not None, "the reader runs inside open_client_session"
        self.nursery.start_soon(self._serve, event.request, scope)

    def _cancelled(self, event: CancelRequested) -> None:
        found = self.serving.get(event.request_id)
        if found is not None:
            found.cancel(event.reason or "cancelled by the server")

    def _replied(self, event: Send) -> None:
        assert self.nursery is not None, "the reader runs inside open_client_session"
        self.nursery.start_soon(self._reply, event.payload)

    async def _serve(self, request: Request, scope: trio.CancelScope) -> None:
        reply: Response | ErrorResponse | None = None
        payload: JSONObject | None = None
        try:
            with scope:
                # A request cancelled before its task ran is not started at all.
                await trio.lowlevel.checkpoint()
                try:
                    reply = Response(request.id, await self._handlers.answer(request))
                except RequestError as exc:
                    reply = ErrorResponse(request.id, exc.code, exc.message, exc.data)
                except Exception as exc:
                    # The one place a failing handler becomes an error response.
                    _log.exception("answering %s failed", describe(request.method))
                    reply = ErrorResponse(
                        request.id,
                        INTERNAL_ERROR,
                        f"the client failed to answer {describe(request.method)}: "
                        f"{describe_error(exc)}",
                    )
        finally:
            del self.serving[request.id]
            # A handler that finished without a checkpoint never saw its cancellation;
            # the server still gets no answer to a request it cancelled.
            if reply is None or scope.cancel_called:
                self._core.abandon(request.id)
            elif type(reply) is Response:
                payload = self._core.respond(request.id, reply.result)
            else:
                assert isinstance(reply, ErrorResponse)
                payload = self._core.respond_error(
                    request.id, reply.code, reply.message, reply.data
                )
        if payload is not None:
            await self._reply(payload)

    async def _reply(self, payload: JSONValue) -> None:
        with contextlib.suppress(TransportError):
            await self._requests.send(payload)
