# The change bus of several replicas, over Redis pub/sub (runtime/_bus.py has the rules).
#
# ``publish`` stays what the ChangeBus promises: it never waits. The event goes to this
# process's listeners at once (an InMemoryBus underneath) and into a bounded queue; a
# sender task PUBLISHes what is queued on ``{prefix}:changes``, tagged with this
# replica's name, and a receiver task hands other replicas' events to the local
# listeners (its own come back too, and are skipped: they were delivered already).
# ``listen_remote`` hears only the other replicas' events: what a replica's session
# copies need, as they hear their own Server directly.
#
# When Redis is away the sender retries the event at hand with a growing pause and the
# queue fills; what does not fit is dropped and counted, with one warning per outage.
# The receiver subscribes again by itself (_subscription.py). Listeners lose detail then,
# as a slow listener does: pub/sub keeps nothing for a replica that was not subscribed.
# Everything read off the channel is bounded and validated before it becomes a
# ChangeEvent.

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractContextManager
from typing import Any, Final

import attrs
import coredis
import orjson
import trio

from ..protocol import describe_error
from ..runtime import DEFAULT_BUFFER, ChangeEvent, InMemoryBus, Listener
from ._client import store_location
from ._subscription import RedisSubscription

__all__ = [
    "MAX_CHANGE_BYTES",
    "RedisBus",
    "RedisBusStatistics",
    "decode_change",
    "encode_change",
    "open_redis_bus",
]

_log = logging.getLogger("mcpactor.store")

#: the largest encoded change read off the channel (a task notice's payload)
MAX_CHANGE_BYTES: Final = 256 * 1024
#: the longest replica name, URI or task id a decoded change may hold
_MAX_TEXT: Final = 8192
#: events waiting for the sender before new ones are dropped
DEFAULT_QUEUE: Final = 1024
_KINDS: Final = frozenset({"tools", "prompts", "resources", "resource_updated", "task"})
_FIRST_PAUSE: Final = 0.05
_LONGEST_PAUSE: Final = 5.0


def encode_change(replica: str, event: ChangeEvent) -> bytes:
    """The bytes of ``event`` on the channel, tagged with the replica that published it."""
    message: dict[str, Any] = {"r": replica, "k": event.kind}
    if event.uri is not None:
        message["u"] = event.uri
    if event.task_id is not None:
        message["t"] = event.task_id
    if event.payload is not None:
        message["p"] = event.payload
    return orjson.dumps(message)


def _short(message: Mapping[str, Any], key: str) -> str | None:
    value = message.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > _MAX_TEXT:
        raise ValueError(f"a change's {key!r} must be a short string")
    return value


def decode_change(data: bytes | str) -> tuple[str, ChangeEvent]:
    """The replica and event of one message off the channel; ValueError if damaged."""
    if len(data) > MAX_CHANGE_BYTES:
        raise ValueError(f"a change of {len(data)} bytes is over {MAX_CHANGE_BYTES}")
    message = orjson.loads(data)
    if not isinstance(message, dict):
        raise ValueError("a change must be a JSON object")
    replica = _short(message, "r")
    if not replica:
        raise ValueError("a change must name its replica")
    kind = message.get("k")
    if kind not in _KINDS:
        raise ValueError("a change has an unknown kind")
    payload = message.get("p")
    if payload is not None and not isinstance(payload, dict):
        raise ValueError("a change's payload must be a JSON object")
    uri = _short(message, "u")
    task_id = _short(message, "t")
    if kind == "resource_updated" and uri is None:
        raise ValueError("a resource change must name its resource")
    if kind == "task" and task_id is None:
        raise ValueError("a task change must name its task")
    return replica, ChangeEvent(kind, uri=uri, task_id=task_id, payload=payload)


@attrs.frozen
class RedisBusStatistics:
    """What a RedisBus has carried since it opened."""

    #: events published here
    published: int
    #: of those, sent to Redis
    sent: int
    #: of those, dropped because the queue to Redis was full (or the bus closed)
    dropped: int
    #: events of other replicas delivered here
    received: int
    #: messages off the channel that were not a change and were dropped
    rejected: int
    #: times the connection to Redis was lost and sought again
    reconnects: int
    #: events waiting for the sender now
    queued: int


class RedisBus:
    """A ChangeBus shared by every replica that names the same Redis prefix.

    Made by ``open_redis_bus``, which runs its sender and receiver.
    """

    def __init__(
        self,
        client: coredis.Redis[Any],
        *,
        replica: str,
        prefix: str = "mcpactor",
        queue: int = DEFAULT_QUEUE,
        buffer: int = DEFAULT_BUFFER,
    ) -> None:
        if not replica:
            raise ValueError("a replica needs a name")
        if queue < 1:
            raise ValueError(f"the queue to Redis holds at least one event, got {queue}")
        self.replica = replica
        self.channel = f"{prefix}:changes"
        self._client = client
        self._local = InMemoryBus(buffer=buffer)
        # Only other replicas' events: for the sessions, which hear their own Server.
        self._remote = InMemoryBus(buffer=buffer)
        self._send, self._queue = trio.open_memory_channel[ChangeEvent](queue)
        self._published = 0
        self._sent = 0
        self._dropped = 0
        self._dropped_reported = 0
        self._received = 0
        self._rejected = 0
        self._reconnects = 0
        self._subscription = RedisSubscription(
            client,
            [self.channel],
            self._dispatch,
            name="change bus",
            location=store_location(client),
        )

    @property
    def listeners(self) -> int:
        """How many listeners are attached in this process right now."""
        return self._local.listeners

    def publish(self, event: ChangeEvent) -> None:
        """Hand ``event`` to this process's listeners now and queue it for the others."""
        self._published += 1
        self._local.publish(event)
        try:
            self._send.send_nowait(event)
        except (trio.WouldBlock, trio.ClosedResourceError):
            if self._dropped == self._dropped_reported:
                _log.warning("the change bus is behind Redis: other replicas miss changes")
            self._dropped += 1

    def listen(self) -> AbstractContextManager[Listener]:
        """Listen for events published from now on, here or on another replica."""
        return self._local.listen()

    def listen_remote(self) -> AbstractContextManager[Listener]:
        """Listen for events other replicas publish from now on."""
        return self._remote.listen()

    def statistics(self) -> RedisBusStatistics:
        """Return the counts so far and what waits for the sender."""
        return RedisBusStatistics(
            published=self._published,
            sent=self._sent,
            dropped=self._dropped,
            received=self._received,
            rejected=self._rejected,
            reconnects=self._reconnects + self._subscription.reconnects,
            queued=self._send.statistics().current_buffer_used,
        )

    # --- the tasks --------------------------------------------------------------------

    async def _pause(self, pause: float, exc: BaseException, what: str) -> float:
        # One warning per outage (the first failure), then quiet retries.
        if pause == _FIRST_PAUSE:
            self._reconnects += 1
            _log.warning("the change bus cannot %s: %s; retrying", what, describe_error(exc))
        await trio.sleep(pause)
        return min(pause * 2, _LONGEST_PAUSE)

    async def send_queued(self) -> None:
        """Publish what is queued on the channel until cancelled, retrying through outages."""
        async with self._queue:
            async for event in self._queue:
                data = encode_change(self.replica, event)
                pause = _FIRST_PAUSE
                while True:
                    try:
                        await self._client.publish(self.channel, data)
                        break
                    except Exception as exc:
                        # Whatever the client raises: this task must outlive any outage.
                        pause = await self._pause(pause, exc, "publish")
                self._sent += 1
                if self._dropped != self._dropped_reported:
                    _log.warning(
                        "the change bus reached Redis again; %d changes were dropped",
                        self._dropped - self._dropped_reported,
                    )
                    self._dropped_reported = self._dropped

    async def receive(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Deliver other replicas' changes here until cancelled (ready once subscribed)."""
        await self._subscription.run(task_status=task_status)

    def _dispatch(self, message: Mapping[str, Any]) -> None:
        if message.get("type") != "message":
            return
        data = message.get("data")
        if not isinstance(data, (bytes, str)):
            return
        try:
            replica, event = decode_change(data)
        except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
            self._rejected += 1
            _log.warning("an unreadable change was dropped: %s", describe_error(exc))
            return
        if replica == self.replica:
            return
        self._received += 1
        self._local.publish(event)
        self._remote.publish(event)


@contextlib.asynccontextmanager
async def open_redis_bus(
    client: coredis.Redis[Any],
    *,
    replica: str,
    prefix: str = "mcpactor",
    queue: int = DEFAULT_QUEUE,
    buffer: int = DEFAULT_BUFFER,
) -> AsyncIterator[RedisBus]:
    """A ``RedisBus`` with its sender and receiver running until the block ends.

    Entering waits until the receiver has subscribed (retrying while Redis is away), so
    that every change published after it began is heard.
    """
    bus = RedisBus(client, replica=replica, prefix=prefix, queue=queue, buffer=buffer)
    async with trio.open_nursery() as nursery:
        await nursery.start(bus.receive)
        nursery.start_soon(bus.send_queued)
        try:
            yield bus
        finally:
            nursery.cancel_scope.cancel("the change bus is closing")
