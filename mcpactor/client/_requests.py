# Our requests in flight: the trio half of the core's table of pending requests.
#
# The core (``ClientSessionCore``) keeps each request's id, method and progress token;
# this keeps the caller waiting for it: a one-shot slot (_pending.py) that the reader
# fills with the response, and, for a listen stream, its ``Subscription``. A caller
# whose scope is cancelled (or whose timeout expires) while waiting sends
# ``notifications/cancelled`` for its request on the way out, shielded and bounded; the
# late response, if any, is then ignored. Once the connection is lost every waiting
# caller fails, and so does every later send.

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator
from typing import Final, Protocol

import trio

from .._exceptions import TransportBroken, TransportClosed, TransportError
from ..protocol import ClientSessionCore, JSONObject, JSONValue, Notification, Request, RequestId
from ._errors import RequestCancelled
from ._handlers import ClientMessageHook, ProgressHandler
from ._pending import Pending, report_progress
from ._subscription import Subscription

__all__ = ["RequestSettings", "Requests"]

# How long a cancelled caller may spend telling the server so.
_CANCEL_NOTICE_TIMEOUT: Final = 5.0


class RequestSettings(Protocol):
    """What the session's owner may change while it runs (read at each request)."""

    #: seconds a request waits for its response unless the call says otherwise
    request_timeout: float | None
    #: sees every message the client sends, before it leaves
    on_client_message: ClientMessageHook | None


class Requests:
    """The callers waiting for our requests' responses, and the channel they write to."""

    def __init__(
        self,
        core: ClientSessionCore,
        send_channel: trio.abc.SendChannel[JSONValue],
        settings: RequestSettings,
    ) -> None:
        #: the protocol state these requests are part of
        self.core = core
        self._send_channel = send_channel
        self._settings = settings
        #: the waiting caller of each of our requests (the core keeps the protocol's side)
        self.pending: dict[RequestId, Pending] = {}
        #: the listen streams open, by the id of their ``subscriptions/listen``
        self.subscriptions: dict[RequestId, Subscription] = {}
        #: why the connection is gone, once it is
        self.lost: TransportError | None = None

    def lost_error(self) -> TransportError:
        """A fresh exception saying the connection is gone."""
        # One shared instance would collect every raiser's traceback.
        assert self.lost is not None
        return type(self.lost)(str(self.lost))

    def check_open(self) -> None:
        """Raise the connection's loss, if it is lost."""
        if self.lost is not None:
            raise self.lost_error()

    async def send(self, message: JSONValue) -> None:
        """Write one message to the server as it is."""
        self.check_open()
        hook = self._settings.on_client_message
        if hook is not None:
            hook(message)
        try:
            await self._send_channel.send(message)
        except trio.ClosedResourceError:
            raise TransportClosed("the client session was closed") from None
        except trio.BrokenResourceError:
            raise TransportBroken("the server closed the connection") from None

    async def aclose(self) -> None:
        """Close the channel to the server."""
        await self._send_channel.aclose()

    async def call(
        self, request: Request, timeout: float | None, progress_handler: ProgressHandler | None
    ) -> JSONObject:
        """Send a request the core built and wait for its result."""
        request_id = request.id
        slot = Pending(request.method, progress=progress_handler is not None)
        self.pending[request_id] = slot
        if timeout is None:
            timeout = self._settings.request_timeout
        sent = False
        reason = "the caller stopped waiting"
        try:
            with trio.fail_after(math.inf if timeout is None else timeout):
                await self.send(request.to_json())
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
            del self.pending[request_id]
            # None for initialize, which the spec forbids cancelling.
            notice = (
                self.core.cancel(request_id, reason) if sent and not slot.done.is_set() else None
            )
            self.core.forget(request_id)
            if notice is not None:
                await self.send_notice(notice)
        if slot.error is not None:
            raise slot.error
        assert slot.result is not None
        return slot.result

    @contextlib.asynccontextmanager
    async def listen(
        self, wanted: JSONObject, timeout: float | None
    ) -> AsyncIterator[Subscription]:
        """Open a listen stream for ``wanted``; yield it once acknowledged, end it on exit."""
        self.check_open()
        request = self.core.listen(wanted)
        request_id = request.id
        slot = Pending(request.method, progress=False)
        subscription = Subscription(request_id)
        self.pending[request_id] = slot
        self.subscriptions[request_id] = subscription
        if timeout is None:
            timeout = self._settings.request_timeout
        sent = False
        try:
            with trio.fail_after(math.inf if timeout is None else timeout):
                await self.send(request.to_json())
                sent = True
                await subscription.wait_acknowledged()
            yield subscription
        finally:
            del self.pending[request_id]
            del self.subscriptions[request_id]
            notice = (
                self.core.cancel(request_id, "the client stopped listening")
                if sent and not slot.done.is_set()
                else None
            )
            self.core.forget(request_id)
            subscription.end(slot.result or {}, None)
            if notice is not None:
                await self.send_notice(notice)

    async def cancel(self, request_id: RequestId, reason: str | None) -> bool:
        """Fail a waiting caller with ``RequestCancelled`` and tell the server."""
        slot = self.pending.get(request_id)
        if slot is None or slot.done.is_set():
            return False
        slot.finish(None, RequestCancelled(request_id, reason))
        notice = self.core.cancel(request_id, reason)
        if notice is not None:
            await self.send_notice(notice)
        return True

    async def send_notice(self, notice: Notification) -> None:
        """Send a cancellation notice on the way out of a cancelled caller."""
        # Shielded, but bounded.
        with (
            trio.CancelScope(shield=True),
            trio.move_on_after(_CANCEL_NOTICE_TIMEOUT),
            contextlib.suppress(TransportError),
        ):
            await self.send(notice.to_json())

    def resolve(
        self, request_id: RequestId, result: JSONObject | None, error: Exception | None
    ) -> None:
        """Hand a response (or its error) to the caller waiting for it, if any."""
        slot = self.pending.get(request_id)
        if slot is not None:
            slot.finish(result, error)
        subscription = self.subscriptions.get(request_id)
        if subscription is not None:
            subscription.end(result, error)

    def fail_all(self, error: TransportError) -> None:
        """The connection is gone: every waiting caller and listen stream fails."""
        if self.lost is None:
            self.lost = error
        for slot in list(self.pending.values()):
            slot.finish(None, self.lost_error())
        for subscription in list(self.subscriptions.values()):
            subscription.end(None, self.lost_error())
