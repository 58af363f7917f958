"""SSE event logs shared by replicas: ``RedisEventStore`` against a real redis-server.

Two stores with clients of their own on one Redis and one prefix stand for two replicas.
"""

from __future__ import annotations

import contextlib
import gc
import warnings
from collections.abc import AsyncIterator

import coredis
import pytest
import trio
import trio.testing

from mcpactor.runtime.http import StoreUnavailable
from mcpactor.runtime.http._event_store import Replay, StreamLease
from mcpactor.runtime.http._follow import LOST
from mcpactor.store import RedisEventStore
from mcpactor.store._events import MAX_EVENT_ID_LENGTH

from ..runtime.test_replica_lifecycle import Silent
from ..runtime.test_replicas import _tool, cluster, initialized, on
from .conftest import free_port, needs_redis, running_redis

pytestmark = needs_redis


@pytest.fixture
async def other(redis_socket: str) -> AsyncIterator[coredis.Redis[bytes]]:
    """A second client of the module's redis-server: another replica's."""
    client: coredis.Redis[bytes] = coredis.Redis(unix_socket_path=redis_socket)
    async with client:
        yield client


async def test_an_event_appended_on_one_replica_is_replayed_on_another(
    redis: coredis.Redis[bytes], other: coredis.Redis[bytes]
) -> None:
    a = RedisEventStore(redis)
    b = RedisEventStore(other)
    first = await a.append("s1", "7", b"")
    second = await a.append("s1", "7", b'{"n":1}')
    third = await a.append("s1", "7", b'{"n":2}')
    replay = await b.replay_after("s1", first)
    assert replay is not None
    assert replay.stream_id == "7"
    assert replay.events == [(second, b'{"n":1}'), (third, b'{"n":2}')]
    after_last = await b.replay_after("s1", third)
    assert after_last is not None
    assert after_last.events == []
    # Ids are distinct and each names its stream.
    assert len({first, second, third}) == 3
    assert all(event_id.startswith("7.") for event_id in (first, second, third))
    assert a.statistics().appends == 3
    assert b.statistics().replays == 2
    assert b.statistics().operations == 2


async def test_a_stream_keeps_its_newest_events_and_expires_after_its_ttl(
    redis: coredis.Redis[bytes],
) -> None:
    store = RedisEventStore(redis, prefix="p", max_events_per_stream=3, ttl=60.0)
    ids = [await store.append("s", "1", b"%d" % n) for n in range(10)]
    key = "p:events:s:1"
    assert await redis.xlen(key) == 3
    assert 0 < await redis.pttl(key) <= 60_000
    assert 0 < await redis.pttl("p:event-streams:s") <= 60_000
    replay = await store.replay_after("s", ids[7])
    assert replay is not None
    assert replay.events == [(ids[8], b"8"), (ids[9], b"9")]
    # Trimmed away: the client is told its id is unknown, not handed a log with a hole.
    assert await store.replay_after("s", ids[6]) is None
    assert await store.replay_after("s", ids[0]) is None


@pytest.mark.parametrize(
    "forged",
    [
        "",
        "garbage",
        "1.2.3",
        "...",
        "1..",
        "1.0-0.",
        "1." + "9" * 30 + "-0.tag",
        "1.01-0.{tag}",
        "1.١-0.{tag}",
        "1.99999999999999-0.{tag}",
        "2.{entry}.{tag}",
        "1.{entry}.{tag}" + "x",
        "x" * (MAX_EVENT_ID_LENGTH + 1),
        "1.{entry}.{tag}" + "\u0000" * MAX_EVENT_ID_LENGTH,
    ],
)
async def test_a_forged_event_id_is_unknown(redis: coredis.Redis[bytes], forged: str) -> None:
    store = RedisEventStore(redis)
    real = await store.append("s", "1", b"x")
    await store.append("s", "1", b"y")
    _, entry, tag = real.split(".")
    assert await store.replay_after("s", real) is not None
    assert await store.replay_after("s", forged.format(entry=entry, tag=tag)) is None


async def test_another_sessions_event_id_is_unknown(redis: coredis.Redis[bytes]) -> None:
    store = RedisEventStore(redis)
    mine = await store.append("mine", "1", b"x")
    await store.append("theirs", "1", b"y")
    assert await store.replay_after("theirs", mine) is None
    assert await store.replay_after("mine", mine) is not None


async def test_forgetting_a_stream_or_a_session_deletes_its_keys(
    redis: coredis.Redis[bytes],
) -> None:
    store = RedisEventStore(redis, prefix="p")
    one = await store.append("s", "1", b"a")
    two = await store.append("s", "2", b"b")
    await store.append("s", "3", b"c")
    kept = await store.append("t", "1", b"d")
    await store.forget_stream("s", "1")
    assert await store.replay_after("s", one) is None
    assert await redis.smembers("p:event-streams:s") == {b"2", b"3"}
    await store.forget_session("s")
    assert await store.replay_after("s", two) is None
    # What is left is t's, and the byte counts (_event_scripts.py) say t's one byte.
    assert sorted(await redis.keys("p:*")) == [
        b"p:event-bytes:t",
        b"p:event-expiry",
        b"p:event-sessions",
        b"p:event-streams:t",
        b"p:event-total",
        b"p:events:t:1",
    ]
    assert await redis.hget("p:event-total", "bytes") == b"1"
    assert await store.replay_after("t", kept) is not None
    await store.forget_session("t")
    assert not await redis.keys("p:*")


async def test_a_wait_ends_at_the_next_append_of_another_replica(
    redis: coredis.Redis[bytes], other: coredis.Redis[bytes]
) -> None:
    a = RedisEventStore(redis)
    b = RedisEventStore(other)
    first = await a.append("s1", "3", b"")
    async with trio.open_nursery() as nursery:
        waited: list[object] = []

        async def wait() -> None:
            waited.append(await b.wait_after("s1", first, 4.0))

        nursery.start_soon(wait)
        # Until it is in its XREAD, after the replay that found nothing (an XREAD that
        # reaches Redis after the append returns the entry at once: the order is no race).
        with trio.fail_after(5):
            while b.statistics().operations < 2:
                await trio.testing.wait_all_tasks_blocked()
        second = await a.append("s1", "3", b'{"n":1}')
    assert waited == [Replay("3", [(second, b'{"n":1}')])]
    # Events already there come back without waiting; an unknown id is None.
    assert await b.wait_after("s1", first, 4.0) == Replay("3", [(second, b'{"n":1}')])
    assert await b.wait_after("s1", "3.1-0.xxxxxxxx", 1.0) is None


async def test_a_wait_with_nothing_appended_ends_empty_and_a_stream_forgotten_is_none(
    redis: coredis.Redis[bytes],
) -> None:
    store = RedisEventStore(redis)
    only = await store.append("s2", "4", b"")
    with trio.fail_after(5):
        replay = await store.wait_after("s2", only, 0.2)
    assert replay is not None
    assert replay.events == []
    await store.forget_stream("s2", "4")
    assert await store.wait_after("s2", only, 0.2) is None


async def test_bad_stream_ids_and_limits_are_refused() -> None:
    store = RedisEventStore(coredis.Redis(unix_socket_path="/nonexistent"))
    with pytest.raises(ValueError, match="stream id"):
        await store.append("s", "1.2", b"x")
    with pytest.raises(ValueError, match="at least 1"):
        RedisEventStore(coredis.Redis(), max_events_per_stream=0)


async def test_with_redis_down_every_operation_is_store_unavailable() -> None:
    port = free_port()
    # coredis leaves the memory streams of connections it could not open unclosed (its
    # own harmless leak): they are collected here, and their ResourceWarning ignored.
    with warnings.catch_warnings(), contextlib.ExitStack() as server:
        warnings.simplefilter("ignore", ResourceWarning)
        server.enter_context(running_redis("--port", str(port), "--bind", "127.0.0.1"))
        client: coredis.Redis[bytes] = coredis.Redis(host="127.0.0.1", port=port)
        async with client:
            store = RedisEventStore(client)
            event_id = await store.append("s", "1", b"x")
            server.close()
            with pytest.raises(StoreUnavailable, match="append"):
                await store.append("s", "1", b"y")
            with pytest.raises(StoreUnavailable, match="replay"):
                await store.replay_after("s", event_id)
            with pytest.raises(StoreUnavailable):
                await store.wait_after("s", event_id, 1.0)
            with pytest.raises(StoreUnavailable):
                await store.forget_stream("s", "1")
            with pytest.raises(StoreUnavailable):
                await store.forget_session("s")
            assert store.statistics().failures == 5
        gc.collect()


async def test_a_stream_resumed_on_another_replica_replays_it_from_redis(
    redis: coredis.Redis[bytes],
) -> None:
    # The HTTP layer over the Redis store: a request's SSE stream, cut by the tool and
    # resumed on the other replica, which has no copy of the stream, only the store.
    async with cluster(event_store=RedisEventStore(redis)) as c:
        client = await initialized(c, 0)
        call = _tool(client, "reconnect")
        response = await client.post(call)
        assert response.content_type == "text/event-stream"
        seen = await response.events()
        last_id = seen[-1].id
        assert last_id is not None
        with trio.fail_after(10):
            await c.probe.started.wait()
        # Resumed on the other replica while the request runs: it follows the stream
        # in Redis (XREAD BLOCK) and writes what replica 0 stores, up to the answer.
        followed = await on(client, c, 1).get(last_event_id=last_id)
        assert followed.status == 200
        c.probe.release.set()
        with trio.fail_after(10):
            followed_messages = await followed.messages()
        assert followed_messages[0]["params"]["data"] == "after the stream closed"
        assert followed_messages[-1]["id"] == call["id"]
        # On the replica running the request the stream is live: it ends with the answer,
        # which was stored before it was sent.
        live = await on(client, c, 0).get(last_event_id=last_id)
        live_messages = await live.messages()
        assert live_messages == followed_messages
        resumed = await on(client, c, 1).get(last_event_id=last_id)
        assert resumed.status == 200
        assert await resumed.messages() == live_messages
        assert live_messages[-1]["result"]["content"][0]["text"] == "answered after reconnecting"
        unknown = await client.get(last_event_id="12345.1")
        assert unknown.status == 400


# --- leases of the requests a stream answers ------------------------------------------------


async def _lapsed(store: RedisEventStore, session: str, stream: str) -> None:
    # Redis expires the lease on its own clock: looked at until it has (bounded).
    with trio.fail_after(10):
        while True:
            lease = await store.lease(session, stream)
            assert lease is not None
            if not lease.held:
                return
            await trio.sleep(0.02)


async def test_a_lease_taken_with_a_first_event_is_renewed_dropped_and_lapses(
    redis: coredis.Redis[bytes], other: coredis.Redis[bytes]
) -> None:
    owner = RedisEventStore(redis, prefix="p")
    follower = RedisEventStore(other, prefix="p")
    first = await owner.append_leased("s", "1", b"", [3, "four"], 30.0)
    assert first.startswith("1.")
    await owner.append_leased("s", "2", b"", [5], 30.0)
    # One transaction with the event: the lease and the ids it owes.
    assert owner.statistics().operations == 2
    assert await follower.lease("s", "1") == StreamLease((3, "four"), held=True)
    assert 0 < await redis.pttl("p:event-lease:s:1") <= 30_000
    # The ids it owes live as long as the stream's events.
    assert await redis.pttl("p:event-owed:s:1") > 3_000_000
    # One pipeline renews one and drops the other.
    await owner.renew_leases([("s", "1")], [("s", "2")], 0.3)
    assert 0 < await redis.pttl("p:event-lease:s:1") <= 300
    assert await follower.lease("s", "2") == StreamLease((5,), held=False)
    await _lapsed(follower, "s", "1")
    # A lease that lapsed stays lapsed: its followers may have said so already.
    await owner.renew_leases([("s", "1")], (), 30.0)
    assert await follower.lease("s", "1") == StreamLease((3, "four"), held=False)
    # A stream appended without a lease has none.
    await owner.append("s", "3", b"")
    assert await follower.lease("s", "3") is None


async def test_forgetting_a_leased_stream_or_session_deletes_its_lease_keys(
    redis: coredis.Redis[bytes],
) -> None:
    store = RedisEventStore(redis, prefix="p")
    await store.append_leased("s", "1", b"", [1], 30.0)
    await store.append_leased("s", "2", b"", [2], 30.0)
    await store.forget_stream("s", "1")
    assert await store.lease("s", "1") is None
    assert sorted(await redis.keys("p:*")) == [
        b"p:event-lease:s:2",
        b"p:event-owed:s:2",
        b"p:event-streams:s",
        b"p:events:s:2",
    ]
    await store.forget_session("s")
    assert not await redis.keys("p:*")


@pytest.mark.parametrize(
    "stored",
    [b"not json", b'{"a":1}', b"[true]", b"[1.5]", b"[[1]]", b"[" + b"1," * 40000 + b"1]"],
)
async def test_damaged_request_ids_are_no_lease(
    redis: coredis.Redis[bytes], stored: bytes
) -> None:
    store = RedisEventStore(redis, prefix="p")
    await store.append_leased("s", "1", b"", [1], 30.0)
    await redis.set("p:event-owed:s:1", stored)
    assert await store.lease("s", "1") is None


async def test_a_stream_of_a_request_that_died_ends_with_its_error_on_another_replica(
    redis: coredis.Redis[bytes],
) -> None:
    # The HTTP layer over Redis: replica 0 stops renewing its leases (as if it died) while
    # the client follows its call from replica 1; the follower ends with an error.
    async with cluster(event_store=RedisEventStore(redis)) as c:
        keeper = c.manager(0).leases
        assert keeper is not None
        keeper.seconds = 0.5
        c.manager(1).followers.step = 0.2
        client = await initialized(c, 0)
        call = _tool(client, "reconnect")
        response = await client.post(call)
        last_id = (await response.events())[-1].id
        assert last_id is not None
        with trio.fail_after(10):
            await c.probe.started.wait()
        keeper.store = Silent()
        followed = await on(client, c, 1).get(last_event_id=last_id)
        with trio.fail_after(10):
            messages = await followed.messages()
        assert messages == [
            {"jsonrpc": "2.0", "id": call["id"], "error": {"code": -32603, "message": LOST}}
        ]
