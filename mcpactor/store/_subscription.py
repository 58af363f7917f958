# One pub/sub subscription to the store that comes back by itself: what every subscriber
# of this package (the relay, the change bus, the task store) listens through.
#
# A subscription breaks when Redis restarts, goes away or stops answering, and coredis
# says so in one of two ways: it raises (inside exception groups), or its iteration just
# ends, quietly, as if nothing more would ever come. Either way ``RedisSubscription.run``
# subscribes again with a growing pause (``FIRST_RETRY`` doubling up to ``MAX_RETRY``),
# for as long as it runs; coredis's own retries are off, so that this loop sees every
# break. An outage is logged once when it starts and once when it ends, not once per
# attempt. Pub/sub keeps nothing for a subscriber that is away, so once subscribed again
# ``on_resubscribed`` lets the owner catch up with what it may have missed. A message
# that its owner fails on is logged and dropped: it never ends the subscription.

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import coredis
import coredis.exceptions
import trio
from coredis.retry import NoRetryPolicy

from ..protocol import describe_error

__all__ = ["FIRST_RETRY", "MAX_RETRY", "RedisSubscription"]

_log = logging.getLogger("mcpactor.store")

#: the first pause before subscribing again after the subscription broke, and the longest
FIRST_RETRY: Final = 0.1
MAX_RETRY: Final = 5.0


def _leaf(exc: BaseException) -> BaseException:
    # coredis raises inside (nested) exception groups: the first failure says what broke.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class RedisSubscription:
    """A subscription to ``channels`` that is made again whenever it breaks.

    ``deliver`` takes each message (coredis's dict) in the subscribing task, without
    waiting; ``on_resubscribed`` runs after each subscription but the first.
    """

    def __init__(
        self,
        client: coredis.Redis[Any],
        channels: Sequence[str],
        deliver: Callable[[Mapping[str, Any]], None],
        *,
        name: str,
        location: str,
        on_resubscribed: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        if not channels:
            raise ValueError("a subscription needs a channel")
        self.channels = tuple(channels)
        self.name = name
        self.location = location
        self._client = client
        self._deliver = deliver
        self._on_resubscribed = on_resubscribed
        #: times the subscription broke, or could not be made, and was sought again
        self.reconnects = 0
        #: times it was made again after breaking
        self.resubscribed = 0

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Hand every message to ``deliver`` until cancelled, subscribing again after breaks.

        Reports started once first subscribed, so that messages published from then on
        are delivered; while the store is away it keeps trying and reports nothing.
        """
        started = False
        delay = FIRST_RETRY
        down = False
        while True:
            try:
                async with self._client.pubsub(
                    channels=list(self.channels),
                    ignore_subscribe_messages=True,
                    retry_policy=NoRetryPolicy(),
                ) as pubsub:
                    if down:
                        _log.warning("the %s at %s is reachable again", self.name, self.location)
                        down = False
                    delay = FIRST_RETRY
                    if not started:
                        task_status.started()
                        started = True
                    else:
                        self.resubscribed += 1
                        await self._caught_up()
                    async for message in pubsub:
                        self._take(message)
                # coredis ends the iteration when the connection drops (or the server
                # unsubscribed this client): a break like any other.
                raise coredis.exceptions.ConnectionError("the subscription ended")
            except Exception as exc:
                # Redis lost, refused or restarting: the owner goes on without messages
                # until it is back.
                self.reconnects += 1
                if not down:
                    _log.warning(
                        "the %s at %s cannot be reached, subscribing again until it can: %s",
                        self.name,
                        self.location,
                        describe_error(_leaf(exc)),
                    )
                    down = True
            await trio.sleep(delay)
            delay = min(delay * 2, MAX_RETRY)

    def _take(self, message: Mapping[str, Any]) -> None:
        try:
            self._deliver(message)
        except Exception:
            _log.exception("the %s dropped a message it failed on", self.name)

    async def _caught_up(self) -> None:
        if self._on_resubscribed is None:
            return
        try:
            await self._on_resubscribed()
        except Exception as exc:
            # What it would have caught up with, it learns later (a lease, a next change).
            _log.warning(
                "the %s could not catch up after subscribing again: %s",
                self.name,
                describe_error(_leaf(exc)),
            )
