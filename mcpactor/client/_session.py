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
# received is fed to it. The trio half is in three pieces the session holds:
#
# - ``Requests`` (_requests.py): the callers waiting for our requests' responses, the
#   channel they write to, cancelling and timing out;
# - ``Reader`` (_reader.py): the one task that reads the server's messages, feeds them
#   to the core and acts on its events, and the answering of the server's requests;
# - ``NotificationLog`` (_notifications.py): every notification, for the inbox.
#
# The session itself is the public face: the lifecycle, ``request`` and ``notify``, the
# typed MCP methods (``list_tools``, ``call_tool`` …, inherited from _methods.py) and
# the stateless revision's discovery and listen streams (inherited from _stateless.py).
# Three attributes group the rest by feature: ``server`` (what the server said of
# itself and the revision agreed, _server_view.py), ``notifications`` (the inbox,
# _notifications.py) and ``tasks`` (the tasks extension, _tasks.py).
# At a revision without sessions there is no handshake and no server→client request:
# every request carries the envelope (the core stamps it), and a request the server may
# answer ``input_required`` is run in rounds (``run_rounds``, _stateless.py).

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator
from typing import Final, TypedDict, Unpack, final

import attrs
import trio

from .._exceptions import ProtocolError, TransportClosed
from .._version import __version__
from ..protocol import (
    LATEST,
    REVISIONS,
    ClientSessionCore,
    JSONObject,
    JSONValue,
    RequestId,
)
from ._errors import unwrap_single_errors
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
from ._notifications import NotificationInbox, NotificationLog
from ._reader import Reader
from ._requests import Requests
from ._results import ToolOutputs
from ._server_view import ServerView
from ._stateless import DEFAULT_MAX_INPUT_ROUNDS, StatelessMethods, run_rounds
from ._tasks import ClientTasks

__all__ = ["ClientArgs", "ClientSession", "ClientStatistics", "open_client_session"]

_DEFAULT_LOG_SIZE: Final = 1000


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

    #: our requests still waiting for a response: the method of each, by id
    requests_pending: dict[RequestId, str]
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
        #: what answers the server's requests (sampling, elicitation, roots)
        self.handlers = ClientHandlers(sampling_handler, elicitation_handler, roots)
        self.client_info: JSONObject = client_info or {"name": "mcpactor", "version": __version__}
        #: sees every message from the server, with the method of the request it answers
        self.on_server_message = on_server_message
        #: sees every message this client sends, before it leaves (a validator's hook)
        self.on_client_message = on_client_message
        #: seconds a request waits for its response unless the call says otherwise
        self.request_timeout = request_timeout
        #: input_required rounds one request may take (stateless revisions)
        self.max_input_rounds = max_input_rounds
        self._core = ClientSessionCore()
        self._requests = Requests(self._core, send_channel, self)
        self._log = NotificationLog(max_notifications)
        self._reader = Reader(
            receive_channel, self._core, self._requests, self.handlers, self._log, self
        )
        self._tools = ToolOutputs()
        #: what the server said of itself, and the revision in use
        self.server = ServerView(self._core)
        #: the notifications received, and waiting for one
        self.notifications = NotificationInbox(self._log, self._requests.check_open)
        #: the tasks extension: tool calls run as tasks, followed and cancelled
        self.tasks = ClientTasks(self, self._tools)

    def statistics(self) -> ClientStatistics:
        """Return how busy the client is right now."""
        return ClientStatistics(
            requests_pending={
                request_id: slot.method for request_id, slot in self._requests.pending.items()
            },
            requests_serving=len(self._reader.serving),
            notifications_logged=len(self._log),
        )

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
        declared = self.handlers.capabilities(REVISIONS.get(protocol_version, LATEST))
        declared.update(capabilities or {})
        self._requests.check_open()
        request = self._core.initialize(
            protocol_version, declared, client_info or self.client_info
        )
        result = await self._requests.call(request, None, None)
        await self.notify("notifications/initialized")
        return result

    async def aclose(self) -> None:
        """Close the connection to the server; requests still waiting fail."""
        self._reader.connection_lost(TransportClosed("the client session was closed"))
        await self._requests.aclose()

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
        requests = self._requests
        requests.check_open()
        core = self._core
        revision = core.revision
        if core.stateless and revision is not None and method in revision.input_required_methods:
            return await run_rounds(
                requests,
                self.handlers,
                functools.partial(self.list_all, "tools/list", "tools"),
                revision,
                method,
                params,
                max_rounds=self.max_input_rounds,
                timeout=timeout,
                progress_handler=progress_handler,
            )
        request = core.send_request(method, params, progress=progress_handler is not None)
        return await requests.call(request, timeout, progress_handler)

    async def notify(self, method: str, params: JSONObject | None = None) -> None:
        """Send a notification."""
        await self._requests.send(self._core.notification(method, params).to_json())

    async def cancel(self, request_id: RequestId, reason: str | None = None) -> bool:
        """Cancel one of our pending requests; its caller gets ``RequestCancelled``.

        Returns False (and sends nothing) if the request is not pending any more.
        """
        return await self._requests.cancel(request_id, reason)


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
            session._reader.nursery = nursery
            await nursery.start(session._reader._read)
            try:
                yield session
            finally:
                # Shielded: a checkpoint here must not replace the body's own exception.
                with trio.CancelScope(shield=True):
                    await session.aclose()
                nursery.cancel_scope.cancel("the client session was closed")
