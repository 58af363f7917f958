"""The change bus of several replicas: ``open_redis_bus`` against a real redis-server."""

from __future__ import annotations

import contextlib
import gc
import warnings

import coredis
import orjson
import pytest
import trio

from mcpactor.runtime._bus import ChangeEvent, Listener
from mcpactor.store import open_redis_bus
from mcpactor.store._bus import MAX_CHANGE_BYTES, RedisBus, decode_change, encode_change

from .conftest import free_port, needs_redis, running_redis

pytestmark = needs_redis

TIMEOUT = 10


async def _next(listener: Listener) -> ChangeEvent:
    with trio.fail_after(TIMEOUT):
        return await listener.next()


async def test_a_change_published_on_one_replica_reaches_every_listener_once(
    redis: coredis.Redis[bytes], redis_socket: str
) -> None:
    other: coredis.Redis[bytes] = coredis.Redis(unix_socket_path=redis_socket)
    async with (
        other,
        open_redis_bus(redis, replica="a") as a,
        open_redis_bus(other, replica="b") as b,
    ):
        with a.listen() as here, b.listen() as there:
            task = ChangeEvent("task", task_id="t1", payload={"status": "working"})
            a.publish(task)
            assert await _next(here) == task
            assert await _next(there) == task
            # The next thing each hears is the next change: no echo, no duplicate.
            marker = ChangeEvent("resource_updated", uri="mem://marker")
            b.publish(marker)
            assert await _next(here) == marker
            assert await _next(there) == marker
        assert a.statistics().published == 1
        assert a.statistics().received == 1
        assert b.statistics().received == 1


async def test_the_bus_carries_changes_again_after_redis_restarts() -> None:
    port = free_port()
    arguments = ("--port", str(port), "--bind", "127.0.0.1")
    # coredis leaves the memory streams of connections it could not open unclosed (its
    # own harmless leak): they are collected here, and their ResourceWarning ignored.
    with warnings.catch_warnings(), contextlib.ExitStack() as server:
        warnings.simplefilter("ignore", ResourceWarning)
        server.enter_context(running_redis(*arguments))
        one: coredis.Redis[bytes] = coredis.Redis(host="127.0.0.1", port=port)
        two: coredis.Redis[bytes] = coredis.Redis(host="127.0.0.1", port=port)
        async with (
            one,
            two,
            open_redis_bus(one, replica="a") as a,
            open_redis_bus(two, replica="b") as b,
        ):
            with b.listen() as there:
                a.publish(ChangeEvent("tools"))
                assert await _next(there) == ChangeEvent("tools")
                server.close()
                # While Redis is away the change is still published here, and waits.
                a.publish(ChangeEvent("prompts"))
                server.enter_context(running_redis(*arguments))
                # Pub/sub keeps nothing for a replica not yet subscribed again: publish
                # until one arrives; each attempt waits for delivery, not for time.
                with trio.fail_after(30):
                    while True:
                        a.publish(ChangeEvent("resource_updated", uri="mem://again"))
                        with trio.move_on_after(0.5):
                            event = await there.next()
                            if event.uri == "mem://again":
                                break
            assert a.statistics().sent >= 3
        gc.collect()


async def test_a_full_queue_drops_and_counts_but_local_listeners_hear_everything() -> None:
    # Nothing sends from this bus (its tasks are not running): the queue fills.
    bus = RedisBus(coredis.Redis(unix_socket_path="/nonexistent"), replica="a", queue=2)
    with bus.listen() as here:
        for n in range(5):
            bus.publish(ChangeEvent("resource_updated", uri=f"mem://{n}"))
        assert [(await _next(here)).uri for _ in range(5)] == [f"mem://{n}" for n in range(5)]
    stats = bus.statistics()
    assert (stats.published, stats.dropped, stats.queued) == (5, 3, 2)


def test_a_change_round_trips_through_its_encoding() -> None:
    event = ChangeEvent("task", task_id="t", payload={"taskId": "t", "status": "completed"})
    assert decode_change(encode_change("r1", event)) == ("r1", event)
    assert decode_change(encode_change("r1", ChangeEvent("tools"))) == ("r1", ChangeEvent("tools"))


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"garbage",
        b"[]",
        b'{"k": "tools"}',
        b'{"r": "", "k": "tools"}',
        b'{"r": 1, "k": "tools"}',
        b'{"r": "a", "k": "everything"}',
        b'{"r": "a", "k": "resource_updated"}',
        b'{"r": "a", "k": "task"}',
        b'{"r": "a", "k": "task", "t": "t", "p": [1]}',
        b'{"r": "a", "k": "resource_updated", "u": "' + b"x" * 10_000 + b'"}',
        orjson.dumps({"r": "a", "k": "task", "t": "t", "p": {"x": "y" * MAX_CHANGE_BYTES}}),
    ],
)
def test_a_damaged_change_is_a_value_error(raw: bytes) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - every damage is the one ValueError
        decode_change(raw)


async def test_an_unreadable_message_on_the_channel_is_dropped_and_counted(
    redis: coredis.Redis[bytes],
) -> None:
    async with open_redis_bus(redis, replica="a") as a:
        with a.listen() as here:
            await redis.publish(a.channel, b"not a change")
            await redis.publish(a.channel, encode_change("b", ChangeEvent("tools")))
            assert await _next(here) == ChangeEvent("tools")
        assert a.statistics().rejected == 1
