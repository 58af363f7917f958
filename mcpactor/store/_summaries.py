# Every replica's summary in the shared store, so that one admin page lists them all.
#
# Each replica publishes its counts (no sessions, no requests, nothing from a client) as
# ``{p}:admin-replica:{id}``, orjson bytes expiring after ``ttl`` (``SET ... PX``), and
# notes its id with that expiry time in a sorted set ``{p}:admin-replicas``, so that listing
# reads the set and one MGET, never a SCAN. The key's expiry is the truth: an id in the
# set whose key has gone is a replica that stopped without saying so, and is dropped
# from the set by the next publish. A replica that stops cleanly takes its entry away.
#
# What is read back is bounded before it is parsed: at most ``MAX_REPLICAS`` ids, ids of
# at most ``MAX_ID`` bytes, entries of at most ``MAX_ENTRY_BYTES``; a damaged entry is
# skipped, and a store that cannot be reached gives an empty listing marked unavailable.

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import coredis
import orjson
import trio
from coredis.tokens import PureToken

from ..protocol import describe_error
from ..runtime.http import StoreUnavailable
from ._client import reach, store_location

if TYPE_CHECKING:
    from ..runtime import Observatory

__all__ = [
    "MAX_ENTRY_BYTES",
    "MAX_REPLICAS",
    "SUMMARY_INTERVAL",
    "SUMMARY_TTL",
    "RedisReplicaSummaries",
    "replica_summary",
]

_log = logging.getLogger("mcpactor.store")

#: the most replicas a listing holds
MAX_REPLICAS: Final = 256
#: the largest entry read back, in bytes
MAX_ENTRY_BYTES: Final = 64 * 1024
#: the longest replica id listed, in bytes
MAX_ID: Final = 200
#: seconds between two summaries of a replica
SUMMARY_INTERVAL: Final = 2.0
#: seconds a summary lives unless renewed
SUMMARY_TTL: Final = 10.0
# The counts a summary carries (the Observatory's names); anything else is left out.
_COUNTS: Final = (
    "sessions",
    "awake",
    "requests",
    "stateless",
    "tasks_running",
    "tasks_stored",
    "streams",
    "connections",
    "listens",
)
_MAX_TEXT: Final = 200


def _text(value: object) -> str | None:
    return value[:_MAX_TEXT] if isinstance(value, str) else None


def replica_summary(observatory: Observatory, *, admin_url: str | None = None) -> dict[str, Any]:
    """This replica's summary for the store: its counts and where it runs, nothing more."""
    snapshot = observatory.snapshot(limit=0)
    counts = snapshot.get("counts", {})
    return {
        "replica": _text(observatory.replica),
        "host": socket.gethostname()[:_MAX_TEXT],
        "pid": os.getpid(),
        "started": round(observatory.started_wall, 3),
        "admin": _text(admin_url),
        "counts": {name: int(counts.get(name, 0)) for name in _COUNTS},
    }


class RedisReplicaSummaries:
    """The replicas' summaries in Redis: this replica publishes, any replica lists."""

    def __init__(
        self,
        client: coredis.Redis[Any],
        *,
        replica: str,
        prefix: str = "mcpactor",
        ttl: float = SUMMARY_TTL,
    ) -> None:
        if not replica or len(replica.encode()) > MAX_ID:
            raise ValueError(f"a replica id is 1 to {MAX_ID} bytes, got {replica[:MAX_ID]!r}")
        if ttl <= 0:
            raise ValueError("the summaries' ttl must be positive")
        self._client = client
        self.replica = replica
        self._prefix = prefix
        self._ttl_ms = max(1, int(ttl * 1000))
        self._index = f"{prefix}:admin-replicas"
        self._location = store_location(client)
        #: whether the last listing could not reach the store
        self.unavailable = False

    def _key(self, replica: str) -> str:
        return f"{self._prefix}:admin-replica:{replica}"

    async def publish(self, summary: dict[str, Any]) -> None:
        """Store ``summary`` as this replica's, for ``ttl`` seconds.

        Raises:
            StoreUnavailable: the store cannot be reached.
        """
        now_ms = int(time.time() * 1000)
        data = orjson.dumps({**summary, "replica": self.replica, "published": now_ms / 1000})
        if len(data) > MAX_ENTRY_BYTES:
            raise ValueError(f"a summary is at most {MAX_ENTRY_BYTES} bytes, got {len(data)}")

        async def send() -> None:
            # One round trip: the entry, its note in the index, and the index's old notes
            # (replicas that stopped without saying so) dropped.
            async with self._client.pipeline(transaction=False) as pipeline:
                pipeline.set(self._key(self.replica), data, px=self._ttl_ms)
                pipeline.zadd(self._index, {self.replica: now_ms + self._ttl_ms})
                pipeline.zremrangebyscore(self._index, 0, now_ms)
                # The index outlives the longest-lived entry, whatever each one's ttl.
                pipeline.pexpire(self._index, self._ttl_ms, PureToken.NX)
                pipeline.pexpire(self._index, self._ttl_ms, PureToken.GT)

        await reach("replica summaries", self._location, send())

    async def withdraw(self) -> None:
        """Take this replica's entry away (it stops).

        Raises:
            StoreUnavailable: the store cannot be reached.
        """

        async def send() -> None:
            async with self._client.pipeline(transaction=False) as pipeline:
                pipeline.delete([self._key(self.replica)])
                pipeline.zrem(self._index, [self.replica])

        await reach("replica summaries", self._location, send())

    async def replicas(self) -> list[dict[str, Any]]:
        """The live replicas' summaries, by replica id, each with its ``age`` in seconds.

        Empty, with ``unavailable`` set, when the store cannot be reached.
        """
        now = time.time()
        try:
            names = await reach(
                "replica summaries",
                self._location,
                self._client.zrange(
                    self._index,
                    int(now * 1000),
                    "+inf",
                    sortby=PureToken.BYSCORE,
                    offset=0,
                    count=MAX_REPLICAS,
                ),
            )
            wanted = [
                name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
                for name in names
                if len(name) <= MAX_ID
            ]
            values = (
                await reach(
                    "replica summaries",
                    self._location,
                    self._client.mget([self._key(name) for name in wanted]),
                )
                if wanted
                else ()
            )
        except StoreUnavailable as exc:
            if not self.unavailable:
                _log.warning("%s", str(exc)[:400])
            self.unavailable = True
            return []
        self.unavailable = False
        found = []
        for name, value in zip(wanted, values, strict=False):
            entry = _parse(name, value, now)
            if entry is not None:
                found.append(entry)
        found.sort(key=lambda entry: entry["replica"])
        return found

    async def listing(self) -> dict[str, Any]:
        """What the admin page shows: the replicas, this one's id, and the store's state."""
        found = await self.replicas()
        return {
            "shared": True,
            "unavailable": self.unavailable,
            "self": self.replica,
            "replicas": found,
        }

    async def run(
        self,
        summary: Callable[[], dict[str, Any]],
        interval: float = SUMMARY_INTERVAL,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Publish ``summary()`` every ``interval`` seconds until cancelled, then withdraw.

        An outage costs the summaries made during it (one warning each time it starts),
        never the server.
        """
        failing = False
        started = False
        try:
            while True:
                try:
                    await self.publish(summary())
                    failing = False
                except StoreUnavailable as exc:
                    if not failing:
                        _log.warning("this replica's summary is not shared: %s", str(exc)[:400])
                    failing = True
                if not started:
                    started = True
                    task_status.started()
                await trio.sleep(interval)
        finally:
            # Cleanly stopped: the others stop listing it now, not when the ttl ends.
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                try:
                    await self.withdraw()
                except StoreUnavailable as exc:
                    _log.debug("the summary stays until it expires: %s", describe_error(exc))


def _parse(name: str, value: object, now: float) -> dict[str, Any] | None:
    # An entry is trusted no more than the wire: bounded, a JSON object, its own name.
    if not isinstance(value, bytes | str) or len(value) > MAX_ENTRY_BYTES:
        return None
    try:
        entry = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    if type(entry) is not dict or entry.get("replica") != name:
        return None
    published = entry.get("published")
    if isinstance(published, bool) or not isinstance(published, int | float):
        return None
    entry["age"] = round(max(0.0, now - published), 3)
    return entry
