"""The history the replicas share through Redis: what one writes the others read, the
lists hold their bound, entries are bounded both ways, and an outage fails nothing."""

from __future__ import annotations

from typing import Any

import coredis
import orjson
import pytest
import trio

from mcpactor.runtime import METRICS, Observatory
from mcpactor.store import RedisSharedHistory
from mcpactor.store._history import MAX_ENTRY_BYTES

from .conftest import free_port, redis, redis_socket  # noqa: F401
from .test_sessions import ignoring_unclosed_buffers


def _ended(at: float, request: int, outcome: str = "ok", **more: Any) -> dict[str, Any]:
    return {
        "at": at,
        "method": "tools/call",
        "name": "echo",
        "outcome": outcome,
        "seconds": 0.01,
        "error": None,
        "detail": None,
        "session": "s-1",
        "request": request,
        "client": "c 1.0",
        "principal": None,
        "cancelled_by": None,
        "trace_id": None,
        **more,
    }


async def test_what_one_replica_writes_another_reads(
    redis: coredis.Redis[bytes],  # noqa: F811
) -> None:
    one = RedisSharedHistory(redis, replica="one")
    two = RedisSharedHistory(redis, replica="two")
    await one.write([_ended(1.0, 1), _ended(2.0, 2, "error", detail="boom")])
    action = {"at": 2.5, "action": "cancel-request", "target": {"session": "s-1"}}
    await two.write([_ended(3.0, 3)], [action])
    read = await one.read()
    assert read is not None
    ended, audit = read
    # The newest first, each naming the replica that wrote it.
    assert [(e["replica"], e["request"]) for e in ended] == [("two", 3), ("one", 2), ("one", 1)]
    assert ended[1]["detail"] == "boom"
    assert audit == [{**action, "replica": "two"}]
    assert not one.unavailable
    # Writing nothing sends nothing.
    await one.write([], [])
    assert await redis.llen("mcpactor:admin-history") == 3


async def test_the_lists_hold_their_bound_and_entries_theirs(
    redis: coredis.Redis[bytes],  # noqa: F811
) -> None:
    writer = RedisSharedHistory(redis, replica="w", size=10, audit_size=3)
    for batch in range(5):
        await writer.write(
            [_ended(batch * 10 + i, batch * 10 + i) for i in range(7)],
            [{"at": batch + i / 10, "action": "a", "target": {}} for i in range(2)],
        )
    assert await redis.llen("mcpactor:admin-history") == 10
    assert await redis.llen("mcpactor:admin-audit") == 3
    read = await writer.read()
    assert read is not None
    ended, audit = read
    # The latest kept: the last batch's seven and the three newest of the one before.
    assert [e["request"] for e in ended] == [46, 45, 44, 43, 42, 41, 40, 36, 35, 34]
    assert [a["at"] for a in audit] == [4.1, 4.0, 3.1]
    assert 0 < await redis.pttl("mcpactor:admin-history") <= 24 * 3600 * 1000
    # A long error text is dropped rather than the entry; every entry fits the bound.
    await writer.write([_ended(99.0, 99, "error", detail="x" * (2 * MAX_ENTRY_BYTES))])
    stored = await redis.lrange("mcpactor:admin-history", 0, -1)
    assert all(len(value) <= MAX_ENTRY_BYTES for value in stored)
    assert orjson.loads(stored[0])["request"] == 99
    assert orjson.loads(stored[0])["detail"] is None


async def test_damaged_entries_are_skipped(
    redis: coredis.Redis[bytes],  # noqa: F811
) -> None:
    reader = RedisSharedHistory(redis, replica="r")
    bad = [
        b"{nope",
        b"[1, 2]",
        orjson.dumps({"at": 1.0}),  # no replica
        orjson.dumps({"replica": "x", "at": "yesterday"}),
        orjson.dumps({"replica": "x", "at": 1.0, "pad": "x" * MAX_ENTRY_BYTES}),
    ]
    await redis.lpush("mcpactor:admin-history", bad)
    await reader.write([_ended(5.0, 5)])
    read = await reader.read()
    assert read is not None
    assert [e["request"] for e in read[0]] == [5]


async def test_the_writer_sends_what_the_ring_gained(
    redis: coredis.Redis[bytes],  # noqa: F811
) -> None:
    observatory = Observatory(replica="writer")
    observatory.install()
    writer = RedisSharedHistory(redis, replica="writer")
    trail: list[dict[str, Any]] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run, observatory, lambda: trail, 0.01)
        history = METRICS.history
        assert history is not None, "the writer keeps the history while it runs"
        for request in range(3):
            history.append((100.0 + request, "tools/call", "echo", "ok", 0.001, None, None,
                            ("s-9", request, "tools/call"), None, None))  # fmt: skip
        trail.append({"at": 103.0, "action": "cancel-request", "target": {"request": 1}})
        with trio.fail_after(10):
            while await redis.llen("mcpactor:admin-history") < 3:  # noqa: ASYNC110
                await trio.sleep(0.01)
        history.append((104.0, "tools/call", "echo", "cancelled", 0.001, None, None,
                        ("s-9", 3, "tools/call"), None, None))  # fmt: skip
        with trio.fail_after(10):
            while await redis.llen("mcpactor:admin-history") < 4:  # noqa: ASYNC110
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert METRICS.history is None, "and lets it go when it stops"
    read = await writer.read()
    assert read is not None
    ended, audit = read
    # Each entry once, as the page shows it, naming its replica.
    assert [(e["request"], e["outcome"]) for e in ended] == [
        (3, "cancelled"),
        (2, "ok"),
        (1, "ok"),
        (0, "ok"),
    ]
    assert {e["replica"] for e in ended} == {"writer"}
    assert ended[0]["session"] == "s-9"
    assert [a["action"] for a in audit] == ["cancel-request"]


async def test_a_store_out_of_reach_fails_neither_writer_nor_reader(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with ignoring_unclosed_buffers():
        client: coredis.Redis[bytes] = coredis.Redis(
            host="127.0.0.1", port=free_port(), connect_timeout=1, stream_timeout=1
        )
        shared = RedisSharedHistory(client, replica="alone")
        observatory = Observatory(replica="alone")
        observatory.install()
        async with client:
            with trio.fail_after(10):
                assert await shared.read() is None
            assert shared.unavailable
            async with trio.open_nursery() as nursery:
                await nursery.start(shared.run, observatory, None, 0.01)
                history = METRICS.history
                assert history is not None
                history.append((1.0, "tools/call", "echo", "ok", 0.001, None, None,
                                ("s", 1, "tools/call"), None, None))  # fmt: skip
                # The writer tries, says so once, and goes on writing (not raising).
                with trio.fail_after(10):
                    while "not shared" not in caplog.text:  # noqa: ASYNC110
                        await trio.sleep(0.01)
                nursery.cancel_scope.cancel()
    assert caplog.text.count("this replica's history is not shared") == 1
