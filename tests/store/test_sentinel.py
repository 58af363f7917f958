"""The store behind Sentinel: failover to the promoted replica, WAIT, and Cluster refused.

A real primary, replica and Sentinel (``sentinel.py``). The primary is killed while a
replica of mcpactor writes session records: every write made during the switch ends
within a bound (it fails with StoreUnavailable or succeeds, never hangs), writes succeed
again once the Sentinel has promoted the replica, and every record whose write was
acknowledged by the replica (``?wait=1``: WAIT after each write) before the kill is
read back from the new primary.
"""

from __future__ import annotations

import gc
import logging
import time
from pathlib import Path

import pytest
import trio

from mcpactor.runtime.http import SessionRecord, StoreUnavailable
from mcpactor.store import RedisSessionRecords, open_shared_store, parse_store_url
from mcpactor.store._client import CONNECT_TIMEOUT, READ_TIMEOUT

from .conftest import PortTaken, free_cluster_port, needs_redis, running_redis
from .sentinel import Sentinelled, primary_port, sentinelled, watched

# coredis leaves the memory streams of each connection that never opened (to the Sentinel
# nobody runs, to the killed primary during the switch) unclosed; they are collected in
# the test that made them, and their ResourceWarning is not ours (as in test_client.py).
pytestmark = [
    needs_redis,
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

_log = logging.getLogger(__name__)

#: the longest one write may take during the switch: a connection's and an answer's
#: timeouts, with room for a loaded machine; past it, the write hangs
WRITE_BOUND = CONNECT_TIMEOUT + READ_TIMEOUT + 5
#: the longest the Sentinel may take to promote the replica and mcpactor to find it
RECOVERY_BOUND = 45.0


def _record(session_id: str) -> SessionRecord:
    return SessionRecord(
        id=session_id,
        protocol_version="2025-11-25",
        client_capabilities={},
        client_info={"name": "test", "version": "1"},
        subscriptions=frozenset(),
        principal=None,
        owner="a",
        touched_by="a",
        last_active=1.0,
    )


class _Attempts:
    """Writes made during the switch: each ends within WRITE_BOUND, or the test fails."""

    def __init__(self, records: RedisSessionRecords) -> None:
        self.records = records
        self.failed = 0
        self.longest = 0.0
        self.written: list[str] = []

    async def read(self, session_id: str) -> SessionRecord | None:
        while True:
            try:
                with trio.fail_after(WRITE_BOUND):
                    return await self.records.get(session_id)
            except StoreUnavailable:
                await trio.sleep(0.1)

    async def write(self) -> None:
        session_id = f"during-{self.failed}"
        began = time.monotonic()
        try:
            with trio.fail_after(WRITE_BOUND):
                await self.records.put(_record(session_id), ttl=300)
        except StoreUnavailable:
            self.failed += 1
            await trio.sleep(0.1)
        else:
            self.written.append(session_id)
        self.longest = max(self.longest, time.monotonic() - began)


@pytest.fixture
def setup() -> Sentinelled:  # type: ignore[misc]
    with sentinelled() as running:
        yield running


async def test_a_sentinel_url_reaches_the_primary_through_a_list_of_nodes(
    setup: Sentinelled,
) -> None:
    await watched(setup)
    url = parse_store_url(setup.url())
    async with open_shared_store(url, replica="a", prefix="s") as shared:
        assert shared.location == url.redacted()
        records = shared.replicas.records
        await records.put(_record("one"), ttl=60)
        assert await records.get("one") == _record("one")
        assert await shared.problem() is None
    gc.collect()


async def test_the_primary_killed_the_promoted_replica_serves_and_acknowledged_records_stay(
    setup: Sentinelled,
) -> None:
    await watched(setup)
    url = parse_store_url(setup.url("wait=1"))
    async with open_shared_store(url, replica="a", prefix="s") as shared:
        records = shared.replicas.records
        assert isinstance(records, RedisSessionRecords)
        assert records.wait == 1
        # Acknowledged by the replica (WAIT 1) before the failure.
        acknowledged = [f"before-{n}" for n in range(50)]
        for session_id in acknowledged:
            await records.put(_record(session_id), ttl=300)
        setup.kill_primary()
        killed = time.monotonic()
        attempts = _Attempts(records)
        with trio.fail_after(RECOVERY_BOUND):
            # Until the Sentinel promotes the replica, writes fail: nothing answers at
            # the old address, or (promoted, with no replica left) nothing acknowledges.
            while await primary_port(setup) != setup.replica_port:
                await attempts.write()
            promoted = time.monotonic() - killed
            # Reads need no acknowledgement: the promoted replica serves them already.
            assert await attempts.read("before-0") == _record("before-0")
            # The crashed node comes back; the Sentinel makes it the new primary's replica,
            # and writes are acknowledged again.
            setup.restart_primary()
            while not attempts.written:
                await attempts.write()
        recovered = time.monotonic() - killed
        _log.warning(
            "failover: replica promoted %.1f s after the kill, writes acknowledged again "
            "%.1f s after it; %d writes failed meanwhile, the longest took %.2f s",
            promoted,
            recovered,
            attempts.failed,
            attempts.longest,
        )
        written_after = attempts.written
        assert await primary_port(setup) == setup.replica_port
        # Every acknowledged record is on the new primary, and so is the new one.
        for session_id in [*acknowledged, *written_after]:
            assert await records.get(session_id) == _record(session_id), session_id
        assert await shared.problem() is None
    # A replica of mcpactor started after the failover finds the new primary too.
    async with open_shared_store(url, replica="b", prefix="s") as late:
        for session_id in acknowledged:
            assert await late.replicas.records.get(session_id) is not None
    gc.collect()


async def test_a_primary_that_hangs_holds_no_write_past_the_bound(setup: Sentinelled) -> None:
    # Frozen, not dead: connections stay open and unanswered, as when a host hangs or a
    # network drops packets. A write then waits for the store's timeouts, not forever.
    await watched(setup)
    # Written before the freeze and acknowledged by the replica (``?wait=1``): replication
    # is asynchronous, and a write just before a freeze may not have reached it otherwise.
    acknowledged = parse_store_url(setup.url("wait=1"))
    async with open_shared_store(acknowledged, replica="a", prefix="h") as shared:
        await shared.replicas.records.put(_record("before"), ttl=300)
    # The writes during the freeze wait for no replica: the promoted one has none.
    url = parse_store_url(setup.url())
    async with open_shared_store(url, replica="a", prefix="h") as shared:
        records = shared.replicas.records
        assert isinstance(records, RedisSessionRecords)
        setup.freeze_primary()
        frozen = time.monotonic()
        attempts = _Attempts(records)
        with trio.fail_after(RECOVERY_BOUND):
            while not attempts.written:
                await attempts.write()
        _log.warning(
            "frozen primary: writes again %.1f s after it froze; %d writes failed "
            "meanwhile, the longest took %.2f s",
            time.monotonic() - frozen,
            attempts.failed,
            attempts.longest,
        )
        assert await primary_port(setup) == setup.replica_port
        # Written before the freeze and acknowledged by the replica: kept.
        assert await records.get("before") == _record("before")
    gc.collect()


async def test_a_write_no_replica_acknowledges_is_refused_within_the_bound(
    redis_port: int,
) -> None:
    url = parse_store_url(f"redis://127.0.0.1:{redis_port}?wait=1")
    async with open_shared_store(url, replica="a", prefix="w") as shared:
        began = time.monotonic()
        with pytest.raises(StoreUnavailable, match="did not replicate to 1 replicas"):
            await shared.replicas.records.put(_record("lonely"), ttl=60)
        assert time.monotonic() - began < 5


async def test_a_redis_cluster_node_is_refused_at_the_start(tmp_path: Path) -> None:
    for attempt in range(3):
        # A free port may be taken by another process before the server binds it; a
        # cluster node also needs its bus port, 10 000 higher, so the port stays below 55 536.
        port = free_cluster_port()
        nodes = str(tmp_path / f"nodes-{attempt}.conf")
        arguments = ("--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes")
        try:
            with running_redis(*arguments, "--cluster-config-file", nodes):
                url = parse_store_url(f"redis://127.0.0.1:{port}")
                with pytest.raises(
                    StoreUnavailable, match="is a Redis Cluster node: Redis Cluster is not"
                ):
                    async with open_shared_store(url, replica="a"):
                        pass
            return
        except PortTaken:
            continue
    pytest.fail("three free ports were taken before redis-server could bind them")
