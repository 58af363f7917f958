"""The Redis event store's bounds, as MemoryEventStore's, against a real redis-server.

After each step what the byte counts say is checked against what the streams in Redis
hold, read back from the streams themselves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

import coredis
import pytest
import trio

from mcpactor.store import RedisEventStore

from .conftest import needs_redis

pytestmark = needs_redis


async def _held(redis: coredis.Redis[bytes], prefix: str = "p") -> dict[str, int]:
    # The bytes of events each session holds, read from its streams, checked against
    # the counts the store keeps.
    held: dict[str, int] = {}
    for key in await redis.keys(f"{prefix}:events:*"):
        session = key.decode().split(":")[2]
        entries = await redis.xrange(key)
        size = sum(len(entry.field_values[b"d"]) for entry in entries)
        held[session] = held.get(session, 0) + size
    held = {session: size for session, size in held.items() if size}
    scores = await redis.zrange(f"{prefix}:event-sessions", 0, -1, withscores=True)
    assert {m.member.decode(): int(m.score) for m in scores} == held  # type: ignore[union-attr]
    for session, size in held.items():
        streams = await redis.hgetall(f"{prefix}:event-bytes:{session}")
        assert sum(int(n) for n in streams.values()) == size
    total = await redis.hget(f"{prefix}:event-total", "bytes")
    assert int(total or 0) == sum(held.values())
    return held


async def _events(redis: coredis.Redis[bytes], session: str, stream: str) -> list[bytes]:
    entries = await redis.xrange(f"p:events:{session}:{stream}")
    # A client that does not decode responses hands back bytes.
    return [cast(bytes, entry.field_values[b"d"]) for entry in entries]


async def _expired(redis: coredis.Redis[bytes], session: str) -> None:
    # Redis expires keys on its own clock: looked at until it has (bounded).
    with trio.fail_after(10):
        while True:
            if not await redis.exists([f"p:event-bytes:{session}", f"p:events:{session}:1"]):
                return
            await trio.sleep(0.02)


@pytest.fixture
async def other(redis_socket: str) -> AsyncIterator[coredis.Redis[bytes]]:
    """A second client of the module's redis-server: another replica's."""
    client: coredis.Redis[bytes] = coredis.Redis(unix_socket_path=redis_socket)
    async with client:
        yield client


async def test_a_stream_is_bounded_in_bytes_as_well_as_events(
    redis: coredis.Redis[bytes],
) -> None:
    store = RedisEventStore(
        redis, prefix="p", max_events_per_stream=1000, max_bytes_per_stream=100
    )
    first = await store.append("s", "1", b"x" * 10)
    for n in range(19):
        await store.append("s", "1", b"%09d\n" % n)
    events = await _events(redis, "s", "1")
    assert (len(events), sum(map(len, events))) == (10, 100)
    assert events[-1] == b"000000018\n"
    assert await _held(redis) == {"s": 100}
    # Dropped: a client resuming from it is told so.
    assert await store.replay_after("s", first) is None
    # The newest event is kept whatever its size, alone.
    await store.append("s", "1", b"y" * 500)
    assert await _events(redis, "s", "1") == [b"y" * 500]
    assert await _held(redis) == {"s": 500}
    # Count and bytes agree when the event limit drops the oldest first.
    small = RedisEventStore(redis, prefix="p", max_events_per_stream=2, max_bytes_per_stream=100)
    for size in (10, 20, 30):
        await small.append("t", "1", b"z" * size)
    assert await _events(redis, "t", "1") == [b"z" * 20, b"z" * 30]
    assert await _held(redis) == {"s": 500, "t": 50}
    await small.forget_session("s")
    await small.forget_stream("t", "1")
    assert await _held(redis) == {}
    assert not await redis.keys("p:*")


async def test_a_sessions_streams_are_bounded_together(
    redis: coredis.Redis[bytes], other: coredis.Redis[bytes]
) -> None:
    # Each stream under its own limit, many streams over the session's: the oldest events
    # of the oldest streams go first, each stream's newest stays. Two replicas append to
    # the one session, and are held to one limit.
    bounds = {"prefix": "p", "max_bytes_per_stream": 100, "max_bytes_per_session": 250}
    replicas = [RedisEventStore(redis, **bounds), RedisEventStore(other, **bounds)]  # type: ignore[arg-type]
    for n in range(5):
        await replicas[n % 2].append("s", str(n), b"a" * 40)
    for n in range(5):
        await replicas[n % 2].append("s", str(n), b"b" * 40)
    assert await _held(redis) == {"s": 240}
    kept = [await _events(redis, "s", str(n)) for n in range(5)]
    assert kept == [[b"b" * 40]] * 4 + [[b"a" * 40, b"b" * 40]]
    # Another session is held to its own share, not to this one's.
    await replicas[0].append("t", "1", b"c" * 200)
    assert await _held(redis) == {"s": 240, "t": 200}
    # Only newest events left: the session keeps them, past its limit.
    for n in range(10):
        await replicas[1].append("u", str(n), b"d" * 100)
    assert await _held(redis) == {"s": 240, "t": 200, "u": 1000}
    for session in "stu":
        await replicas[0].forget_session(session)
    assert not await redis.keys("p:*")


async def test_all_sessions_are_bounded_and_the_largest_give_way(
    redis: coredis.Redis[bytes],
) -> None:
    store = RedisEventStore(redis, prefix="p", max_bytes_per_session=10_000, max_bytes=1000)
    for _ in range(8):
        await store.append("small", "1", b"s" * 10)
    for _ in range(20):
        await store.append("large", "1", b"l" * 50)
    held = await _held(redis)
    assert sum(held.values()) <= 1000
    # The large session gave way: the small one keeps all its events.
    assert held["small"] == 80
    assert len(await _events(redis, "small", "1")) == 8
    await store.forget_session("small")
    await store.forget_session("large")
    # Newest events only, past the limit: kept, and not looked through at every append.
    crowd = RedisEventStore(redis, prefix="p", max_bytes=100)
    for n in range(50):
        await crowd.append(str(n), "1", b"x" * 10)
    assert sum((await _held(redis)).values()) == 500
    assert await redis.hget("p:event-total", "shrink-at") == b"500"
    await crowd.forget_stream("0", "1")
    assert sum((await _held(redis)).values()) == 490
    for n in range(1, 50):
        await crowd.forget_session(str(n))
    assert not await redis.keys("p:*")


async def test_bytes_of_keys_redis_expired_leave_the_counts(redis: coredis.Redis[bytes]) -> None:
    store = RedisEventStore(redis, prefix="p", max_bytes_per_session=250, max_bytes=1000)
    # A stream that expired while its session lived: found by its next append...
    await store.append("s", "1", b"a" * 100)
    await store.append("s", "2", b"b" * 100)
    await redis.delete(["p:events:s:1"])
    await store.append("s", "1", b"c" * 10)
    assert await _held(redis) == {"s": 110}
    # ...or by a shrink of its session, before any event that is still held goes.
    await redis.delete(["p:events:s:2"])
    await store.append("s", "3", b"d" * 100)
    await store.append("s", "3", b"e" * 100)
    assert await _held(redis) == {"s": 210}
    assert len(await _events(redis, "s", "3")) == 2
    await store.forget_session("s")
    # A session whose keys all expired: its bytes leave the total at a later append.
    short = RedisEventStore(redis, prefix="p", ttl=0.05)
    await short.append("gone", "1", b"g" * 300)
    await _expired(redis, "gone")
    await store.append("new", "1", b"n" * 20)
    assert await _held(redis) == {"new": 20}
    assert await redis.zrange("p:event-expiry", 0, -1) == (b"new",)
    # And one the total's shrink meets first: its bytes go, no event that is held does.
    await short.append("gone", "1", b"g" * 900)
    await _expired(redis, "gone")
    await redis.zrem("p:event-expiry", ["gone"])
    await store.append("new", "1", b"n" * 100)
    assert await _held(redis) == {"new": 120}
    await store.forget_session("new")
    assert not await redis.keys("p:*")


def test_the_bounds_are_checked() -> None:
    for name in (
        "max_events_per_stream",
        "max_bytes_per_stream",
        "max_bytes_per_session",
        "max_bytes",
    ):
        with pytest.raises(ValueError, match=name):
            RedisEventStore(coredis.Redis(), **{name: 0})  # type: ignore[arg-type]


async def test_a_session_of_many_streams_is_forgotten_whole(redis: coredis.Redis[bytes]) -> None:
    # More keys than one Lua call may be handed at once.
    store = RedisEventStore(redis, prefix="p")
    for n in range(3000):
        await store.append("s", str(n), b"x")
    assert await _held(redis) == {"s": 3000}
    await store.forget_session("s")
    assert not await redis.keys("p:*")
