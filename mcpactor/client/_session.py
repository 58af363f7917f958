# The client side of one MCP session, over a pair of message channels.
#
# Theory of operation
# -------------------
# A ``ClientSession`` sends JSON values on one channel and reads the server's JSON values
# from another; how they reach the server (memory, a subprocess's pipes) is the
# connection's business (see _connect.py). One reader task (``_read``) owns the receive
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
    INVALID_REQUEST,
    ProtocolError,
    RemoteProtocolError,
    RequestError,
    TransportBroken,
    TransportClosed,
    TransportError,
)
from .._version import __version__
from ..protocol import (
    LATEST,
    REVISIONS,
    SESSION_REVISIONS,
    ErrorResponse,
    JSONObject,
    JSONValue,
    Notification,
    Request,
    RequestId,
    Response,
    Revision,
    classify,
    clip,
    describe,
    describe_error,
)
from ._errors import RequestCancelled, unwrap_single_errors
from ._handlers import (
    ClientHandlers,
    ElicitationHandler,
    ProgressHandler,
    RootsSource,
    SamplingHandler,
    ServerMessageHook,
)
from ._methods import ClientMethods
from ._notifications import NotificationLog, NotificationPredicate
from ._pending import Pending, is_id, report_progress

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
    request_timeout: float | None
    max_notifications: int


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
class ClientSession(ClientMethods):
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
        request_timeout: float | None = None,
        max_notifications: int = _DEFAULT_LOG_SIZE,
    ) -> None:
        self._send_channel = send_channel
        self._receive_channel = receive_channel
        #: what answers the server's requests (sampling, elicitation, roots)
        self.handlers = ClientHandlers(sampling_handler, elicitation_handler, roots)
        self.client_info: JSONObject = client_info or {"name": "mcpactor", "version": __version__}
        self.on_server_message = on_server_message
        #: seconds a request waits for its response unless the call says otherwise
        self.request_timeout = request_timeout
        #: the ``initialize`` result, once initialized
        self.initialize_result: JSONObject | None = None
        self._next_id = 0
        self._pending: dict[RequestId, Pending] = {}
        self._progress: dict[RequestId, Pending] = {}
        self._serving: dict[RequestId, trio.CancelScope] = {}
        self._log = NotificationLog(max_notifications)
        self._lost: TransportError | None = None
        self._nursery: trio.Nursery | None = None

    # --- what initialize told us ------------------------------------------------

    @property
    def protocol_version(self) -> str | None:
        """The revision the server chose, or None before ``initialize``."""
        if self.initialize_result is None:
            return None
        version: str = self.initialize_result["protocolVersion"]
        return version

    @property
    def server_capabilities(self) -> JSONObject:
        """The capabilities the server declared (empty before ``initialize``)."""
        if self.initialize_result is None:
            return {}
        capabilities: JSONObject = self.initialize_result.get("capabilities") or {}
        return capabilities

    @property
    def server_info(self) -> JSONObject | None:
        """The server's ``serverInfo``, or None before ``initialize``."""
        if self.initialize_result is None:
            return None
        info: JSONObject | None = self.initialize_result.get("serverInfo")
        return info

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
        result = await self.request(
            "initialize",
            {
                "protocolVersion": protocol_version,
                "capabilities": declared,
                "clientInfo": client_info or self.client_info,
            },
        )
        chosen = result.get("protocolVersion")
        if not isinstance(chosen, str) or chosen not in SESSION_REVISIONS:
            raise RemoteProtocolError(
                f"the server chose protocol revision {describe(chosen)}; this client supports "
                f"{', '.join(SESSION_REVISIONS)}",
                data={"protocolVersion": chosen},
            )
        self.initialize_result = result
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

        Raises:
            RequestError: the server answered with a JSON-RPC error.
            RequestCancelled: ``cancel`` was called for this request.
            trio.TooSlowError: no response within ``timeout`` (or ``request_timeout``)
                seconds; the server is told the request is cancelled.
            TransportError: the connection closed before the response arrived.
        """
        self._check_open()
        self._next_id += 1
        request_id: RequestId = self._next_id
        message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        token: RequestId | None = None
        if progress_handler is not None:
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            token = meta.setdefault("progressToken", request_id)
            params["_meta"] = meta
        if params is not None:
            message["params"] = params
        slot = Pending(method, progress=progress_handler is not None)
        self._pending[request_id] = slot
        if token is not None:
            self._progress[token] = slot
        if timeout is None:
            timeout = self.request_timeout
        sent = False
        reason = "the caller stopped waiting"
        try:
            with trio.fail_after(math.inf if timeout is None else timeout):
                await self._send(message)
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
            if token is not None:
                self._progress.pop(token, None)
            # The spec forbids cancelling initialize.
            if sent and not slot.done.is_set() and method != "initialize":
                await self._send_cancelled(request_id, reason)
        if slot.error is not None:
            raise slot.error
        assert slot.result is not None
        return slot.result

    async def notify(self, method: str, params: JSONObject | None = None) -> None:
        """Send a notification."""
        message: JSONObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)

    async def cancel(self, request_id: RequestId, reason: str | None = None) -> bool:
        """Cancel one of our pending requests; its caller gets ``RequestCancelled``.

        Returns False (and sends nothing) if the request is not pending any more.
        """
        slot = self._pending.get(request_id)
        if slot is None or slot.done.is_set():
            return False
        slot.finish(None, RequestCancelled(request_id, reason))
        await self._send_cancelled(request_id, reason)
        return True

    async def _send_cancelled(self, request_id: RequestId, reason: str | None) -> None:
        params: JSONObject = {"requestId": request_id}
        if reason is not None:
            params["reason"] = reason
        # Runs on the way out of a cancelled caller: shielded, but bounded.
        with (
            trio.CancelScope(shield=True),
            trio.move_on_after(_CANCEL_NOTICE_TIMEOUT),
            contextlib.suppress(TransportError),
        ):
            await self.notify("notifications/cancelled", params)

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
            self.on_server_message(value, self._method_answered(value))
        try:
            message = classify(value)
        except RemoteProtocolError as exc:
            _log.warning("invalid message from the server: %s: %s", exc, describe(value))
            if type(value) is dict and "method" in value and exc.request_id is not None:
                self._start(self._reply, ErrorResponse(exc.request_id, exc.code, exc.message))
            return
        kind = type(message)
        if kind is Response:
            assert isinstance(message, Response)
            self._resolve(message.id, message.result, None)
        elif kind is ErrorResponse:
            assert isinstance(message, ErrorResponse)
            if message.id is None:
                _log.warning("the server could not read a request: %s", clip(message.message))
                return
            error = RequestError(message.code, message.message, message.data)
            self._resolve(message.id, None, error)
        elif kind is Notification:
            assert isinstance(message, Notification)
            self._notification(message)
        else:
            assert isinstance(message, Request)
            if message.id in self._serving:
                reply = ErrorResponse(
                    message.id,
                    INVALID_REQUEST,
                    f"request id {describe(message.id)} is already in use",
                )
                self._start(self._reply, reply)
                return
            # Registered here, not in the task, so a cancellation right behind the
            # request finds it.
            scope = trio.CancelScope()
            self._serving[message.id] = scope
            self._start(self._serve, message, scope)

    def _method_answered(self, value: JSONValue) -> str | None:
        if type(value) is dict and "method" not in value:
            request_id = value.get("id")
            if is_id(request_id):
                slot = self._pending.get(request_id)
                if slot is not None:
                    return slot.method
        return None

    def _resolve(
        self, request_id: RequestId, result: JSONObject | None, error: Exception | None
    ) -> None:
        slot = self._pending.get(request_id)
        if slot is None:
            # Late answers to requests we cancelled or gave up on are ignored (spec).
            _log.debug(
                "ignored a response to request %s, which is not pending", describe(request_id)
            )
            return
        slot.finish(result, error)

    def _notification(self, notification: Notification) -> None:
        params = notification.params or {}
        if notification.method == "notifications/progress":
            token = params.get("progressToken")
            slot = self._progress.get(token) if is_id(token) else None
            if slot is not None and slot.progress_send is not None:
                # A caller that cannot keep up loses updates, never the reader's time.
                with contextlib.suppress(
                    trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError
                ):
                    slot.progress_send.send_nowait(params)
        elif notification.method == "notifications/cancelled":
            request_id = params.get("requestId")
            scope = self._serving.get(request_id) if is_id(request_id) else None
            if scope is not None:
                reason = params.get("reason")
                scope.cancel(
                    clip(reason) if isinstance(reason, str) else "cancelled by the server"
                )
        self._log.append(notification)

    def _connection_lost(self, error: TransportError) -> None:
        if self._lost is None:
            self._lost = error
        for slot in list(self._pending.values()):
            slot.finish(None, self._lost_error())
        self._log.fail_waiters(self._lost_error)
        for scope in self._serving.values():
            scope.cancel("the connection closed")

    def _start(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        assert self._nursery is not None, "the reader runs inside open_client_session"
        self._nursery.start_soon(fn, *args)

    # --- server→client requests -------------------------------------------------

    async def _serve(self, request: Request, scope: trio.CancelScope) -> None:
        reply: Response | ErrorResponse | None = None
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
        # A handler that finished without a checkpoint never saw its cancellation; the
        # server still gets no answer to a request it cancelled.
        if reply is not None and not scope.cancel_called:
            await self._reply(reply)

    async def _reply(self, reply: Response | ErrorResponse) -> None:
        with contextlib.suppress(TransportError):
            await self._send(reply.to_json())


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
