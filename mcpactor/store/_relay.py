# The relay between replicas (runtime/http/_relay.py) over Redis pub/sub.
#
# Channels, under a prefix (``mcpactor`` by default): ``{p}:relay`` carries what every
# other replica hears (a session's end, its changed record, a client's notification),
# and ``{p}:relay:{replica}`` what one replica is meant to hear (``Relayed.target``).
# Each message is ``Relayed.encode()``; a replica drops its own from the shared channel.
#
# Pub/sub keeps nothing for a subscriber that is away: what is published while a
# replica's subscription is down is lost to it, as it would be were the replica
# restarting. The session records hold all state that matters (a copy reads its record
# again when it is next used), so a lost message costs a notification or a cancel,
# never a session. The subscription comes back by itself, with backoff (_subscription.py),
# and an outage is logged when it starts and when it ends, not once per attempt.
#
# coredis reads pub/sub messages into unbounded buffers as they come, whatever the
# reader does, so this relay takes them from there at once and holds at most
# ``buffer_bytes`` of them for ``deliver``; past that, while deliver lags, messages are
# dropped with a warning (Redis itself would disconnect a subscriber that lagged).

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import coredis
import trio

from ..protocol import describe, describe_error
from ..runtime.http import MAX_RELAYED_BYTES, Relayed, RelayKind
from ._client import reach, store_location
from ._subscription import RedisSubscription

__all__ = ["RedisRelay"]

_log = logging.getLogger("mcpactor.store")

#: how many bytes of received messages wait for ``deliver`` before more are dropped
DEFAULT_BUFFER_BYTES: Final = 32 * 1024 * 1024
_MAX_NAME: Final = 256


def _bytes(value: object) -> bytes | None:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return None


class RedisRelay:
    """A Relay over Redis pub/sub, joining every replica that names the same prefix."""

    def __init__(
        self,
        client: coredis.Redis[Any],
        *,
        replica_id: str,
        prefix: str = "mcpactor",
        buffer_bytes: int = DEFAULT_BUFFER_BYTES,
    ) -> None:
        if not replica_id or len(replica_id) > _MAX_NAME:
            raise ValueError(f"a replica needs a name of 1 to {_MAX_NAME} characters")
        if buffer_bytes < 1:
            raise ValueError(
                f"the relay's buffer holds a positive number of bytes, got {buffer_bytes!r}"
            )
        self.replica_id = replica_id
        self.buffer_bytes = buffer_bytes
        self._client = client
        self._prefix = prefix
        self._shared = f"{prefix}:relay"
        self._own = self._channel(replica_id)
        self._location = store_location(client)
        #: messages sent so far, by kind (tests and benchmarks count relay traffic)
        self.sent: dict[RelayKind, int] = dict.fromkeys(RelayKind, 0)
        #: messages received and dropped: damaged, or the buffer was full
        self.dropped = 0
        self._queued = 0
        self._overflowing = False
        #: the subscription of the running ``serve`` (tests count its reconnects)
        self.subscription: RedisSubscription | None = None

    def _channel(self, replica_id: str) -> str:
        return f"{self._prefix}:relay:{replica_id}"

    async def send(self, message: Relayed) -> None:
        """Publish ``message`` on its target's channel, or on the one every replica hears."""
        channel = self._shared if message.target is None else self._channel(message.target)
        await reach("relay", self._location, self._client.publish(channel, message.encode()))
        self.sent[message.kind] += 1

    async def serve(
        self,
        deliver: Callable[[Relayed], Awaitable[None]],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``deliver`` with each message for this replica, in order, until cancelled.

        Reports started once subscribed, so that messages sent from then on are received;
        a subscription that breaks is made again, with backoff, for as long as this runs.
        """
        # Unbounded in count, bounded in bytes by ``_take``.
        inbox, outbox = trio.open_memory_channel[tuple[Relayed, int]](math.inf)
        self._queued = 0
        subscription = self.subscription = RedisSubscription(
            self._client,
            [self._shared, self._own],
            lambda message: self._take(message, inbox),
            name="relay",
            location=self._location,
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._deliver, outbox, deliver)
            await subscription.run(task_status=task_status)

    async def _deliver(
        self,
        outbox: trio.MemoryReceiveChannel[tuple[Relayed, int]],
        deliver: Callable[[Relayed], Awaitable[None]],
    ) -> None:
        async with outbox:
            async for message, size in outbox:
                self._queued -= size
                await deliver(message)

    def _take(
        self, message: Mapping[str, Any], inbox: trio.MemorySendChannel[tuple[Relayed, int]]
    ) -> None:
        if message.get("type") != "message":
            return
        data = _bytes(message.get("data"))
        if data is None:
            return
        if len(data) > MAX_RELAYED_BYTES:
            self.dropped += 1
            _log.warning("a relayed message of %d bytes was dropped", len(data))
            return
        try:
            relayed = Relayed.decode(data)
        except ValueError as exc:
            self.dropped += 1
            _log.warning("an unreadable relayed message was dropped: %s", describe_error(exc))
            return
        if relayed.origin == self.replica_id:
            return  # this replica's own broadcast, back from the shared channel
        if relayed.target is not None and relayed.target != self.replica_id:
            return
        size = len(data)
        if self._queued + size > self.buffer_bytes:
            self.dropped += 1
            if not self._overflowing:
                _log.warning(
                    "relayed messages are dropped: %d bytes wait for delivery (session %s)",
                    self._queued,
                    describe(relayed.session_id),
                )
                self._overflowing = True
            return
        self._overflowing = False
        self._queued += size
        inbox.send_nowait((relayed, size))
