# Why this module is long (~620 lines): ``ClientSession`` is one object whose reader task,
# waiting slots and request path share the core and the channels; its typed methods
# (_methods.py) and the stateless revision's part (_stateless.py) are already bases of
# their own, and what is left is the trio half of every request.
#
# The client side of one MCP session, over a pair of message channels.
#
# Theory of operation
# -------------------
# A ``ClientSession`` sends JSON values on one channel and reads the server's JSON values
# from another; how they reach the server (memory, a subprocess's pipes) is the
# connection's business (see _connect.py). The protocol's bookkeeping (ids, the method
# of each pending request, progress tokens, the server's requests in flight, the
# ``initialize`` handshake) is the sans-io ``ClientSessionCore``
# (protocol/_client_session.py): every message sent is built by it, every message
# received is fed to it, and this module acts on its events with trio: tasks, the
# waiting slots, timeouts and the channels. One reader task (``_read``) owns the receive
# channel and never blocks on anything but it:
#
# - a response fills the one-shot slot (_pending.py) of the request with that id; the
#   caller, waiting on the slot, returns the result or raises ``RequestError``;
# - a progress notification goes, by token, to a small per-request channel that the
#   *caller's* task drains into its progress handler (so a slow or failing handler
#   blocks or fails its own call only, never the reader);
# - every notification is kept in a bounded log (_notifications.py) that
#   ``wait_for_notification`` reads;
# - a server→client request (ping, sampling, elicitation, roots) is answered by the
#   handlers (_handlers.py) in its own task with its own CancelScope, registered by id,
#   so the server's ``notifications/cancelled`` is just ``scope.cancel()`` — the mirror
#   of the server's Request actors.
#
# A caller whose scope is cancelled (or whose timeout expires) while waiting sends
# ``notifications/cancelled`` for its request on the way out, shielded and bounded;
# the late response, if any, is then ignored.
#
# The typed MCP methods (``list_tools``, ``call_tool`` …) are built on ``request`` in
# _methods.py, which ``ClientSession`` inherits.
#
# At a revision without sessions there is no handshake and no server→client request:
# every request carries the envelope (the core stamps it), a request the server may
# answer ``input_required`` is run in rounds, and the reader hands a listen stream's
# notifications to its ``Subscription``; how is in _stateless.py, which
# ``ClientSession`` inherits too.

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, TypedDict, Unpack, final

import attrs
import trio

from .._exceptions import (
    INTERNAL_ERROR,
    ProtocolError,
    RequestError,
    TransportBroken,
    TransportClosed,
    TransportError,
)
from .._version import __version__
from ..protocol import (
    LATEST,
    REVISIONS,
    CancelRequested,
    ClientEvent,
    ClientSessionCore,
    Discovered,
    DiscoverRefused,
    ErrorReceived,
    ErrorResponse,
    InitializeRefused,
    JSONObject,
    JSONValue,
    MalformedReceived,
    Notification,
    NotificationReceived,
    ProgressReceived,
    Request,
    RequestId,
    Response,
    ResponseReceived,
    Revision,
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
from ._errors import RequestCancelled, unwrap_single_errors
from ._handlers import (
    ClientHandlers,
    ClientMessageHook,
    ElicitationHandler,
    ProgressHandler,
    RootsSource,
    SamplingHandler,
    ServerMessageHook,
)
from ._methods import ClientMethods
from ._notifications import NotificationLog, NotificationPredicate
from ._pending import Pending, report_progress
from ._results import OutputDecoder
from ._rounds import (
    request_error,
)
from ._stateless import DEFAULT_MAX_INPUT_ROUNDS, StatelessMethods
from ._subscription import Subscription

__all__ = ["ClientArgs", "ClientSession", "ClientStatistics", "open_client_session"]

_log = logging.getLogger("mcpactor.client")

_DEFAULT_LOG_SIZE: Final = 1000
# How long a cancelled caller may spend telling the server so.
_CANCEL_NOTICE_TIMEOUT: Final = 5.0


class ClientArgs(TypedDict, total=False):
    """The keyword arguments of ``ClientSession`` that connections pass through."""

    sampling_handler: SamplingHandler | None
    elicitation_handler: ElicitationHandler | None
    roots: RootsSource | None
    client_info: JSONObject | None
    on_server_message: ServerMessageHook | None
    on_client_message: ClientMessageHook | None
    request_timeout: float | None
    max_notifications: int
    max_input_rounds: int


@attrs.frozen
class ClientStatistics:
    """A snapshot of one client session, for tests and debug output."""

    #: our requests still waiting for a response
    requests_pending: int
    #: server→client requests being answered right now
    requests_serving: int
    #: notifications in the log
    notifications_logged: int


@final
class ClientSession(StatelessMethods, ClientMethods):
    """A trio MCP client over a pair of message channels; use ``open_client_session``."""

    def __init__(
        self,
        send_channel: trio.abc.SendChannel[JSONValue],
        receive_channel: trio.abc.ReceiveChannel[JSONValue | ProtocolError],
        *,
        sampling_handler: SamplingHandler | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        roots: RootsSource | None = None,
        client_info: JSONObject | None = None,
        on_server_message: ServerMessageHook | None = None,
        on_client_message: ClientMessageHook | None = None,
        request_timeout: float | None = None,
        max_notifications: int = _DEFAULT_LOG_SIZE,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
    ) -> None:
        self._send_channel = send_channel
        self._receive_channel = receive_channel
        #: what answers the server's requests (sampling, elicitation, roots)
        self.handlers = ClientHandlers(sampling_handler, elicitation_handler, roots)
        self.client_info: JSONObject = client_info or {"name": "mcpactor", "version": __version__}
        self.on_server_message = on_server_message
        #: sees every message this client sends, before it leaves (a validator's hook)
        self.on_client_message = on_client_message
        #: seconds a request waits for its response unless the call says otherwise
        self.request_timeout = request_timeout
        #: input_required rounds one request may take (stateless revisions)
        self.max_input_rounds = max_input_rounds
        self._core = ClientSessionCore()
        # The waiting caller of each of our requests, and the scope of each server
        # request being answered; the core keeps the protocol's side of both.
        self._pending: dict[RequestId, Pending] = {}
        self._serving: dict[RequestId, trio.CancelScope] = {}
        self._subscriptions: dict[RequestId, Subscription] = {}
        self._log = NotificationLog(max_notifications)
        self._tool_output: OutputDecoder | None = None
        self._task_tools: dict[str, str] = {}
        self._lost: TransportError | None = None
        self._nursery: trio.Nursery | None = None

    # --- what initialize told us ------------------------------------------------

    @property
    def initialize_result(self) -> JSONObject | None:
        """The ``initialize`` result, once initialized."""
        return self._core.initialize_result

    @property
    def discover_result(self) -> JSONObject | None:
        """The ``server/discover`` result, once a stateless revision was chosen by it."""
        return self._core.discover_result

    @property
    def stateless(self) -> bool:
        """Whether a revision without sessions is in use (each request carries its envelope)."""
        return self._core.stateless

    @property
    def protocol_version(self) -> str | None:
        """The revision in use (chosen by ``initialize`` or discovery), or None before."""
        revision = self._core.revision
        return None if revision is None else revision.version

    @property
    def server_capabilities(self) -> JSONObject:
        """The capabilities the server declared (empty before ``initialize``)."""
        return self._core.server_capabilities

    @property
    def server_info(self) -> JSONObject | None:
        """The server's ``serverInfo``, or None before ``initialize``."""
        return self._core.server_info

    def capabilities(self, revision: Revision = LATEST) -> JSONObject:
        """The capabilities this client declares at ``revision``: one per handler it has."""
        return self.handlers.capabilities(revision)

    def statistics(self) -> ClientStatistics:
        """Return how busy the client is right now."""
        return ClientStatistics(
            requests_pending=len(self._pending),
            requests_serving=len(self._serving),
            notifications_logged=len(self._log),
        )

    def pending_requests(self) -> dict[RequestId, str]:
        """Return the id and method of every request still waiting for its response."""
        return {request_id: slot.method for request_id, slot in self._pending.items()}

    # --- the lifecycle ----------------------------------------------------------

    async def initialize(
        self,
        protocol_version: str = LATEST.version,
        capabilities: JSONObject | None = None,
        client_info: JSONObject | None = None,
    ) -> JSONObject:
        """Open the session: send ``initialize``, then ``notifications/initialized``.

        The declared capabilities are those of the handlers given to the client, updated
        with ``capabilities``. Returns the ``initialize`` result.

        Raises:
            RemoteProtocolError: the server chose a revision this client does not know.
        """
        declared = self.capabilities(REVISIONS.get(protocol_version, LATEST))
        declared.update(capabilities or {})
        self._check_open()
        request = self._core.initialize(
            protocol_version, declared, client_info or self.client_info
        )
        result = await self._call(request, None, None)
        await self.notify("notifications/initialized")
        return result

    async def aclose(self) -> None:
        """Close the connection to the server; requests still waiting fail."""
        self._connection_lost(TransportClosed("the client session was closed"))
        await self._send_channel.aclose()

    # --- requests ---------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: JSONObject | None = None,
        *,
        timeout: float | None = None,
        progress_handler: ProgressHandler | None = None,
    ) -> JSONObject:
        """Send a request and return its result.

        With ``progress_handler``, a progress token is added to ``params["_meta"]`` (unless
        one is there) and each progress notification for it is passed to the handler, in
        the caller's task. Cancelling the caller sends ``notifications/cancelled``.

        At a stateless revision the request carries the envelope, and one the server may
        answer ``input_required`` is tried again (a new id each round, at most
        ``max_input_rounds`` more) with the handlers' answers until its result is
        ``complete`` or ``task``; ``timeout`` bounds each round.

        Raises:
            RequestError: the server answered with a JSON-RPC error (-32020, -32021 and
                -32022 as ``HeaderMismatch``, ``MissingClientCapability`` and
                ``UnsupportedProtocolVersion``), or a handler refused a question.
            RemoteProtocolError: a malformed ``input_required`` result, or one more
                than ``max_input_rounds`` rounds.
            RequestCancelled: ``cancel`` was called for this request.
            trio.TooSlowError: no response within ``timeout`` (or ``request_timeout``)
                seconds; the server is told the request is cancelled.
            TransportError: the connection closed before the response arrived.
        """
        self._check_open()
        revision = self._core.revision
        if (
            self._core.stateless
            and revision is not None
            and method in revision.input_required_methods
        ):
            return await self._rounds(revision, method, params, timeout, progress_handler)
        request = self._core.send_request(method, params, progress=progress_handler is not None)
        return await self._call(request, timeout, progress_handler)

    async def _call(
        self, request: Request, timeout: float | None, progress_handler: ProgressHandler | None
    ) -> JSONObject:
        request_id = request.id
        slot = Pending(request.method, progress=progress_handler is not None)
        self._pending[request_id] = slot
        if timeout is None:
            timeout = self.request_timeout
        sent = False
        reason = "the caller stopped waiting"
        try:
            with trio.fail_after(math.inf if timeout is None else timeout):
                await self._send(request.to_json())
                sent = True
                if progress_handler is not None:
                    assert slot.progress_receive is not None
                    with slot.progress_receive:
                        async for update in slot.progress_receive:
                            await report_progress(progress_handler, update)
                await slot.done.wait()
        except trio.TooSlowError:
            reason = f"no response within {timeout} s"
            raise
        finally:
            del self._pending[request_id]
            # None for initialize, which the spec forbids cancelling.
            notice = (
                self._core.cancel(request_id, reason) if sent and not slot.done.is_set() else None
            )
            self._core.forget(request_id)
            if notice is not None:
                await self._send_notice(notice)
        if slot.error is not None:
            raise slot.error
        assert slot.result is not None
        return slot.result

    async def notify(self, method: str, params: JSONObject | None = None) -> None:
        """Send a notification."""
        await self._send(self._core.notification(method, params).to_json())

    async def cancel(self, request_id: RequestId, reason: str | None = None) -> bool:
        """Cancel one of our pending requests; its caller gets ``RequestCancelled``.

        Returns False (and sends nothing) if the request is not pending any more.
        """
        slot = self._pending.get(request_id)
        if slot is None or slot.done.is_set():
            return False
        slot.finish(None, RequestCancelled(request_id, reason))
        notice = self._core.cancel(request_id, reason)
        if notice is not None:
            await self._send_notice(notice)
        return True

    async def _send_notice(self, notice: Notification) -> None:
        # Runs on the way out of a cancelled caller: shielded, but bounded.
        with (
            trio.CancelScope(shield=True),
            trio.move_on_after(_CANCEL_NOTICE_TIMEOUT),
            contextlib.suppress(TransportError),
        ):
            await self._send(notice.to_json())

    def _lost_error(self) -> TransportError:
        # A fresh exception per raise: one shared instance would collect every raiser's
        # traceback.
        assert self._lost is not None
        return type(self._lost)(str(self._lost))

    def _check_open(self) -> None:
        if self._lost is not None:
            raise self._lost_error()

    async def _send(self, message: JSONValue) -> None:
        self._check_open()
        if self.on_client_message is not None:
            self.on_client_message(message)
        try:
            await self._send_channel.send(message)
        except trio.ClosedResourceError:
            raise TransportClosed("the client session was closed") from None
        except trio.BrokenResourceError:
            raise TransportBroken("the server closed the connection") from None

    # --- notifications ----------------------------------------------------------

    @property
    def notifications(self) -> list[Notification]:
        """The notifications received, oldest first (at most ``max_notifications``)."""
        return self._log.notifications()

    async def wait_for_notification(
        self, method: str, predicate: NotificationPredicate | None = None
    ) -> Notification:
        """Wait for a notification of ``method`` (matching ``predicate``, if given).

        Returns the oldest logged match that no earlier call returned, so a notification
        that arrived before the call is not missed and none is returned twice.

        Raises:
            TransportError: the connection closed first.
        """
        found = self._log.claim(method, predicate)
        if found is not None:
            return found
        self._check_open()
        return await self._log.wait_for(method, predicate)

    def clear_notifications(self) -> None:
        """Forget every logged notification."""
        self._log.clear()

    # --- the reader -------------------------------------------------------------

    async def _read(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with self._receive_channel:
            task_status.started()
            async for item in self._receive_channel:
                if isinstance(item, ProtocolError):
                    _log.warning("unreadable message from the server: %s", item)
                elif type(item) is list:
                    for message in item:
                        self._receive(message)
                else:
                    self._receive(item)
        self._connection_lost(TransportBroken("the server closed the connection"))

    def _receive(self, value: JSONValue) -> None:
        if self.on_server_message is not None:
            self.on_server_message(value, self._core.answering(value))
        for event in self._core.receive(value):
            self._act(event)

    def _act(self, event: ClientEvent) -> None:
        kind = type(event)
        if kind is ResponseReceived:
            assert isinstance(event, ResponseReceived)
            self._resolve(event.request_id, event.result, None)
        elif kind is NotificationReceived:
            assert isinstance(event, NotificationReceived)
            self._log.append(event.notification)
        elif kind is ProgressReceived:
            assert isinstance(event, ProgressReceived)
            slot = self._pending.get(event.request_id)
            if slot is not None and slot.progress_send is not None:
                # A caller that cannot keep up loses updates, never the reader's time.
                with contextlib.suppress(
                    trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError
                ):
                    slot.progress_send.send_nowait(event.params)
        elif kind is ErrorReceived:
            assert isinstance(event, ErrorReceived)
            error = event.error
            self._resolve(
                event.request_id, None, request_error(error.code, error.message, error.data)
            )
        elif kind is SubscriptionAcknowledged:
            assert isinstance(event, SubscriptionAcknowledged)
            listener = self._subscriptions.get(event.subscription_id)
            if listener is not None:
                listener.acknowledge(event.notifications)
        elif kind is SubscriptionCancelled:
            assert isinstance(event, SubscriptionCancelled)
            _log.debug(
                "the server ended subscription %s: %s",
                describe(event.subscription_id),
                event.reason or "no reason given",
            )
            self._resolve(event.subscription_id, {}, None)
        elif kind is SubscriptionNotification:
            assert isinstance(event, SubscriptionNotification)
            listener = self._subscriptions.get(event.subscription_id)
            if listener is not None:
                listener.deliver(event.notification)
        elif kind is ServerRequestReceived:
            assert isinstance(event, ServerRequestReceived)
            # Registered here, not in the task, so a cancellation right behind the
            # request finds it.
            scope = trio.CancelScope()
            self._serving[event.request.id] = scope
            self._start(self._serve, event.request, scope)
        elif kind is CancelRequested:
            assert isinstance(event, CancelRequested)
            found = self._serving.get(event.request_id)
            if found is not None:
                found.cancel(event.reason or "cancelled by the server")
        elif kind is Send:
            assert isinstance(event, Send)
            self._start(self._reply, event.payload)
        elif kind is SessionInitialized:
            assert isinstance(event, SessionInitialized)
            self._resolve(event.request_id, event.result, None)
        elif kind is InitializeRefused:
            assert isinstance(event, InitializeRefused)
            self._resolve(event.request_id, None, event.error)
        elif kind is Discovered:
            assert isinstance(event, Discovered)
            self._resolve(event.request_id, event.result, None)
        elif kind is DiscoverRefused:
            assert isinstance(event, DiscoverRefused)
            self._resolve(event.request_id, None, event.error)
        elif kind is UnexpectedResponse:
            assert isinstance(event, UnexpectedResponse)
            # Late answers to requests we cancelled or gave up on are ignored (spec).
            _log.debug(
                "ignored a response to request %s, which is not pending",
                describe(event.response.id),
            )
        elif kind is UnattributedError:
            assert isinstance(event, UnattributedError)
            _log.warning("the server could not read a request: %s", clip(event.error.message))
        else:
            assert isinstance(event, MalformedReceived)
            _log.warning(
                "invalid message from the server: %s: %s", event.error, describe(event.value)
            )

    def _resolve(
        self, request_id: RequestId, result: JSONObject | None, error: Exception | None
    ) -> None:
        slot = self._pending.get(request_id)
        if slot is not None:
            slot.finish(result, error)
        subscription = self._subscriptions.get(request_id)
        if subscription is not None:
            subscription.end(result, error)

    def _connection_lost(self, error: TransportError) -> None:
        if self._lost is None:
            self._lost = error
        for slot in list(self._pending.values()):
            slot.finish(None, self._lost_error())
        for subscription in list(self._subscriptions.values()):
            subscription.end(None, self._lost_error())
        self._log.fail_waiters(self._lost_error)
        for scope in self._serving.values():
            scope.cancel("the connection closed")

    def _start(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        assert self._nursery is not None, "the reader runs inside open_client_session"
        self._nursery.start_soon(fn, *args)

    # --- server→client requests -------------------------------------------------

    async def _serve(self, request: Request, scope: trio.CancelScope) -> None:
        reply: Response | ErrorResponse | None = None
        payload: JSONObject | None = None
        try:
            with scope:
                # A request cancelled before its task ran is not started at all.
                await trio.lowlevel.checkpoint()
                try:
                    reply = Response(request.id, await self.handlers.answer(request))
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
            del self._serving[request.id]
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
            await self._send(payload)


@contextlib.asynccontextmanager
async def open_client_session(
    send_channel: trio.abc.SendChannel[JSONValue],
    receive_channel: trio.abc.ReceiveChannel[JSONValue | ProtocolError],
    **client: Unpack[ClientArgs],
) -> AsyncIterator[ClientSession]:
    """Run a ``ClientSession`` over two channels; on exit close them and stop its tasks.

    ``client`` takes the keyword arguments of ``ClientSession`` (see ``ClientArgs``).
    The session is connected but not initialized.
    """
    session = ClientSession(send_channel, receive_channel, **client)
    with unwrap_single_errors():
        async with trio.open_nursery() as nursery:
            session._nursery = nursery
            await nursery.start(session._read)
            try:
                yield session
            finally:
                # Shielded: a checkpoint here must not replace the body's own exception.
                with trio.CancelScope(shield=True):
                    await session.aclose()
                nursery.cancel_scope.cancel("the client session was closed")
