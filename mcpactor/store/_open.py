# Everything a replica shares through one Redis store, over one client.
#
# ``open_shared_store`` is what ``mcpactor serve --store URL`` runs around the server:
# it connects, checks that the store answers (a wrong URL stops the start with one
# line), starts the subscriptions of the task store and the change bus, and hands back
# the pieces the transports and hosts take. The session records and the relay need no
# task of their own here: the SessionManager runs the relay.

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, Final

import attrs
import coredis

from ..runtime import ChangeBus
from ..runtime.http import EventStore, Replicas, StoreUnavailable
from ._client import check_reachable, open_client, ping_problem, refuse_cluster
from ._tasks import RedisTaskStore, open_redis_task_store
from ._url import StoreURL

__all__ = ["READY_DEADLINE", "SharedStore", "open_shared_store"]

#: seconds the readiness check waits for the store's PING (a probe's usual timeout)
READY_DEADLINE: Final = 1.0


@attrs.frozen(kw_only=True)
class SharedStore:
    """The pieces of a store shared by the replicas, over one Redis client."""

    #: the session records and relay, for ``HttpOptions(replicas=)``
    replicas: Replicas
    #: resumable SSE events, for ``HttpOptions(event_store=)``
    event_store: EventStore
    #: task records, for ``TaskOptions(store=)``
    task_store: RedisTaskStore
    #: change events of every replica, for the 2026-07-28 host's listen streams
    bus: ChangeBus
    #: the client all of them use
    client: coredis.Redis[Any] = attrs.field(repr=False)
    #: where the store is, without its password
    location: str

    async def problem(self) -> str | None:
        """None when the store answers a PING within ``READY_DEADLINE``, else why not."""
        why = await ping_problem(self.client, deadline=READY_DEADLINE)
        return None if why is None else f"the store {self.location} is unreachable: {why}"


@contextlib.asynccontextmanager
async def open_shared_store(
    url: StoreURL, *, replica: str, prefix: str = "mcpactor"
) -> AsyncIterator[SharedStore]:
    """Connect to ``url`` and yield the shared pieces, as replica ``replica``.

    Raises:
        StoreUnavailable: the store does not answer a PING at the start, or it is a
            Redis Cluster node.
    """
    reached = False
    try:
        async with open_client(url) as client:
            await check_reachable(client, url)
            await refuse_cluster(client, url)
            reached = True
            # Imported once the store answers: a wrong URL is the first thing said.
            from ._bus import open_redis_bus
            from ._events import RedisEventStore
            from ._relay import RedisRelay
            from ._sessions import RedisSessionRecords

            async with (
                open_redis_task_store(client, replica=replica, prefix=prefix) as task_store,
                open_redis_bus(client, replica=replica, prefix=prefix) as bus,
            ):
                yield SharedStore(
                    replicas=Replicas(
                        RedisSessionRecords(client, prefix=prefix, wait=url.wait),
                        RedisRelay(client, replica_id=replica, prefix=prefix),
                        changes=bus,
                    ),
                    event_store=RedisEventStore(client, prefix=prefix),
                    task_store=task_store,
                    bus=bus,
                    client=client,
                    location=url.redacted(),
                )
    except (StoreUnavailable, BaseExceptionGroup) as exc:
        if reached:
            raise
        # The client's task group wraps the refusal; it is said alone, as raised here,
        # so that a start that fails names the store and not the client's internals.
        found = exc.split(StoreUnavailable)[0] if isinstance(exc, BaseExceptionGroup) else exc
        if found is None:
            raise
        while isinstance(found, BaseExceptionGroup):
            found = found.exceptions[0]
        raise StoreUnavailable(str(found)) from None
