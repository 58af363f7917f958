# One ``subscriptions/listen`` stream, as the caller sees it.
#
# The reader hands each notification of the stream to ``deliver`` (never waiting: a
# caller that falls ``buffer`` notifications behind loses the newest, with a warning)
# and ends it with ``end``: the server's response (a graceful end) or an error. The
# caller iterates; the iteration stops after the last notification delivered, and
# raises what ended the stream if that was a failure. Leaving the ``listen`` block is
# the cancellation (ClientSession does that part).

from __future__ import annotations

import logging
import math
from typing import Final, final

import trio

from ..protocol import JSONObject, Notification, RequestId, describe

__all__ = ["Subscription"]

_log = logging.getLogger("mcpactor.client")

_BUFFER: Final = 256


@final
class Subscription:
    """An open listen stream: iterate it for its notifications (``async for``)."""

    def __init__(self, subscription_id: RequestId, buffer: int = _BUFFER) -> None:
        #: the id of the ``subscriptions/listen`` request, which tags the stream
        self.id = subscription_id
        #: the filter the server acknowledged it honours (empty before the acknowledgment)
        self.notifications: JSONObject = {}
        #: the server's response, once it ended the stream gracefully
        self.result: JSONObject | None = None
        self._ready = trio.Event()
        self._acknowledged = False
        self._error: Exception | None = None
        self._send, self._receive = trio.open_memory_channel[Notification](
            math.inf if buffer < 0 else buffer
        )

    @property
    def acknowledged(self) -> bool:
        """Whether the server acknowledged the stream."""
        return self._acknowledged

    @property
    def ended(self) -> bool:
        """Whether the server ended the stream (gracefully or not)."""
        return self.result is not None or self._error is not None

    # --- the reader's side ------------------------------------------------------------

    def acknowledge(self, notifications: JSONObject) -> None:
        self.notifications = notifications
        self._acknowledged = True
        self._ready.set()

    def deliver(self, notification: Notification) -> None:
        try:
            self._send.send_nowait(notification)
        except trio.WouldBlock:
            _log.warning(
                "dropped %s on subscription %s: the listener is behind",
                describe(notification.method),
                describe(self.id),
            )
        except trio.ClosedResourceError:
            pass

    def end(self, result: JSONObject | None, error: Exception | None) -> None:
        if self.ended:
            return
        self.result = result
        self._error = error
        self._send.close()
        self._ready.set()

    # --- the caller's side ------------------------------------------------------------

    async def wait_acknowledged(self) -> None:
        """Wait for the acknowledgment; raise what ended the stream before it came."""
        await self._ready.wait()
        if not self._acknowledged and self._error is not None:
            raise self._error

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Notification:
        try:
            return await self._receive.receive()
        except trio.EndOfChannel:
            if self._error is not None:
                raise self._error from None
            raise StopAsyncIteration from None

    async def next(self, method: str | None = None) -> Notification:
        """Return the next notification (of ``method``, skipping others).

        Raises:
            StopAsyncIteration: the stream ended first.
        """
        while True:
            notification = await self.__anext__()
            if method is None or notification.method == method:
                return notification
