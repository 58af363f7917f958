"""Session records shared by replicas through Redis: ``RedisSessionRecords``, real server."""

from __future__ import annotations

import gc
import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import coredis
import pytest
import trio

from mcpactor.runtime.http import SessionRecord, StoreUnavailable
from mcpactor.runtime.http._session_records import MAX_RECORD_BYTES
from mcpactor.store import RedisSessionRecords

from .conftest import free_port, needs_redis, running_redis

pytestmark = needs_redis


def _record(session_id: str = "s1", **fields: object) -> SessionRecord:
    return SessionRecord(
        id=session_id,
        protocol_version="2025-11-25",
        client_capabilities={"sampling": {}},
        client_info={"name": "test", "version": "1"},
        subscriptions=frozenset({"mem://a", "mem://b"}),
        principal="str:someone",
        owner="a",
        touched_by="b",
        last_active=1234.5,
        **fields,  # type: ignore[arg-type]
    )


async def test_a_record_round_trips_under_its_key_with_its_ttl(
    redis: coredis.Redis[bytes],
) -> None:
    records = RedisSessionRecords(redis, prefix="t")
    record = _record(log_level="debug")
    await records.put(record, ttl=30)
    assert await records.get("s1") == record
    # The key the other replicas (and an operator) find, and the TTL Redis keeps.
    assert await redis.get("t:session:s1") == record.encode()
    ttl_ms = await redis.pttl("t:session:s1")
    assert 29_000 < ttl_ms <= 30_000
    assert await records.get("s2") is None
    # Another prefix is another deployment.
    assert await RedisSessionRecords(redis, prefix="u").get("s1") is None
    assert records.operations == 3


async def test_a_write_replaces_the_record_and_renews_its_ttl(
    redis: coredis.Redis[bytes],
) -> None:
    records = RedisSessionRecords(redis)
    await records.put(_record(), ttl=5)
    newer = _record(log_level="error")
    await records.put(newer, ttl=60)
    assert await records.get("s1") == newer
    assert await redis.pttl("mcpactor:session:s1") > 5_000


async def test_a_record_expires_with_its_ttl(redis: coredis.Redis[bytes]) -> None:
    records = RedisSessionRecords(redis)
    await records.put(_record(), ttl=0.2)
    assert await records.get("s1") is not None
    # Redis expires it on its own clock, which no event here follows: poll, bounded.
    with trio.fail_after(5):
        while await records.get("s1") is not None:  # noqa: ASYNC110
            await trio.sleep(0.05)
    assert await redis.exists(["mcpactor:session:s1"]) == 0


async def test_remove_says_whether_there_was_a_record(redis: coredis.Redis[bytes]) -> None:
    records = RedisSessionRecords(redis)
    await records.put(_record(), ttl=30)
    assert await records.remove("s1") is True
    assert await records.get("s1") is None
    assert await records.remove("s1") is False


async def test_a_nonpositive_ttl_is_refused(redis: coredis.Redis[bytes]) -> None:
    with pytest.raises(ValueError, match="positive"):
        await RedisSessionRecords(redis).put(_record(), ttl=0)


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[]",
        b'{"id": "s1"}',
        # A readable record, but of another session: not this one's.
        _record("other").encode(),
        b"\xff\xfe",
    ],
)
async def test_a_damaged_record_is_absent_and_logged(
    redis: coredis.Redis[bytes], raw: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    await redis.set("mcpactor:session:s1", raw)
    with caplog.at_level(logging.WARNING, logger="mcpactor.store"):
        assert await RedisSessionRecords(redis).get("s1") is None
    assert any("s1" in r.getMessage() for r in caplog.records)


async def test_an_oversized_record_is_absent_and_not_parsed(
    redis: coredis.Redis[bytes], caplog: pytest.LogCaptureFixture
) -> None:
    # Valid JSON start, then too much: refused for its size alone.
    raw = b'{"id": "s1", "pad": "' + b"x" * MAX_RECORD_BYTES + b'"}'
    await redis.set("mcpactor:session:s1", raw)
    with caplog.at_level(logging.WARNING, logger="mcpactor.store"):
        assert await RedisSessionRecords(redis).get("s1") is None
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"{len(raw)} bytes" in m for m in messages)
    # The log names the size, never the record itself.
    assert all(len(m) < 1000 for m in messages)


async def test_every_operation_is_store_unavailable_when_the_server_is_gone() -> None:
    with ignoring_unclosed_buffers():
        await _calls_with_the_server_gone()


@contextmanager
def ignoring_unclosed_buffers() -> Iterator[None]:
    """Let coredis drop what it leaves of connections it could not open, without warnings.

    It leaves their buffers unclosed for the collector (its own leak, harmless), which
    the warnings-are-errors of the tests would report as this code's failure.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        yield
        gc.collect()


async def _calls_with_the_server_gone() -> None:
    port = free_port()
    client: coredis.Redis[bytes] = coredis.Redis(
        host="127.0.0.1", port=port, connect_timeout=1, stream_timeout=1
    )
    records = RedisSessionRecords(client)
    async with client:
        with running_redis("--port", str(port), "--bind", "127.0.0.1"):
            await records.put(_record(), ttl=30)
            assert await records.get("s1") is not None
        # The server stopped (the block ended): each call fails clearly, naming the store.
        with trio.fail_after(10):
            with pytest.raises(StoreUnavailable) as put:
                await records.put(_record(), ttl=30)
            with pytest.raises(StoreUnavailable) as get:
                await records.get("s1")
            with pytest.raises(StoreUnavailable) as remove:
                await records.remove("s1")
    for raised in (put, get, remove):
        message = str(raised.value)
        assert message.startswith(f"the session store at 127.0.0.1:{port} cannot be reached")
        assert len(message) < 1000
