"""Messages between replicas through Redis pub/sub: ``RedisRelay`` on a real redis-server."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import attrs
import coredis
import pytest
import trio

from mcpactor.runtime.http import MAX_RELAYED_BYTES, Relayed, RelayKind, StoreUnavailable
from mcpactor.store import RedisRelay

from .conftest import free_port, needs_redis, running_redis
from .test_sessions import ignoring_unclosed_buffers

pytestmark = needs_redis

TIMEOUT = 10


@attrs.define
class Inbox:
    """What one replica's relay delivered, in order."""

    relay: RedisRelay
    send: trio.MemorySendChannel[Relayed]
    receive: trio.MemoryReceiveChannel[Relayed]

    async def deliver(self, message: Relayed) -> None:
        await self.send.send(message)

    async def next(self) -> Relayed:
        with trio.fail_after(TIMEOUT):
            return await self.receive.receive()


@asynccontextmanager
async def serving(
    client: coredis.Redis[bytes], *names: str, **options: int
) -> AsyncIterator[list[Inbox]]:
    """A relay per name on ``client``, each served (subscribed) until the block ends."""
    async with trio.open_nursery() as nursery:
        inboxes = []
        for name in names:
            send, receive = trio.open_memory_channel[Relayed](100)
            inbox = Inbox(
                RedisRelay(client, replica_id=name, prefix="t", **options), send, receive
            )
            await nursery.start(inbox.relay.serve, inbox.deliver)
            inboxes.append(inbox)
        yield inboxes
        nursery.cancel_scope.cancel()


def _message(origin: str, session: str = "s1", target: str | None = None) -> Relayed:
    return Relayed(RelayKind.CLIENT, session, origin, b'{"jsonrpc":"2.0"}', target)


async def test_a_broadcast_reaches_every_other_replica_and_a_targeted_one_its_target(
    redis: coredis.Redis[bytes],
) -> None:
    async with serving(redis, "a", "b", "c") as (a, b, c):
        everyone = _message("a", "s1")
        await a.relay.send(everyone)
        assert await b.next() == everyone
        assert await c.next() == everyone
        just_c = _message("a", "s2", target="c")
        await a.relay.send(just_c)
        assert await c.next() == just_c
        # What each hears next is a later message: a never heard its own broadcast, and
        # b never heard what was for c.
        for inbox in (a, b):
            fence = _message("c", "fence", target=inbox.relay.replica_id)
            await c.relay.send(fence)
            assert await inbox.next() == fence
        assert a.relay.sent[RelayKind.CLIENT] == 2


async def test_messages_arrive_in_the_order_they_were_sent(redis: coredis.Redis[bytes]) -> None:
    async with serving(redis, "a", "b") as (a, b):
        sent = [
            Relayed(RelayKind.STATE, f"s{n}", "a", target="b" if n % 2 else None)
            for n in range(50)
        ]
        for message in sent:
            await a.relay.send(message)
        assert [await b.next() for _ in sent] == sent


async def test_a_message_sent_once_serve_started_is_received(redis: coredis.Redis[bytes]) -> None:
    # Each round starts a fresh subscription and sends at once, before any checkpoint.
    for round_ in range(5):
        async with serving(redis, f"r{round_}") as (inbox,):
            await RedisRelay(redis, replica_id="other", prefix="t").send(_message("other"))
            assert (await inbox.next()).origin == "other"


async def test_damaged_and_oversized_messages_are_dropped_with_a_bounded_warning(
    redis: coredis.Redis[bytes], caplog: pytest.LogCaptureFixture
) -> None:
    async with serving(redis, "a") as (a,):
        with caplog.at_level(logging.WARNING, logger="mcpactor.store"):
            await redis.publish("t:relay", b"no header line" * 1000)
            await redis.publish("t:relay:a", b'{"k": "nonsense", "s": "s", "o": "b"}\n')
            await redis.publish("t:relay", b"x" * (MAX_RELAYED_BYTES + 1))
            good = _message("b")
            await redis.publish("t:relay", good.encode())
            assert await a.next() == good
        assert a.relay.dropped == 3
        warnings = [r.getMessage() for r in caplog.records if r.name == "mcpactor.store"]
        assert len(warnings) == 3
        assert f"{MAX_RELAYED_BYTES + 1} bytes" in warnings[2]
        assert all(len(w) < 1000 for w in warnings)


async def test_while_delivery_lags_messages_past_the_buffer_are_dropped(
    redis: coredis.Redis[bytes], caplog: pytest.LogCaptureFixture
) -> None:
    size = len(_message("b").encode())
    release = trio.Event()
    delivered: list[str] = []

    async def slow(message: Relayed) -> None:
        delivered.append(message.session_id)
        await release.wait()

    relay = RedisRelay(redis, replica_id="a", prefix="t", buffer_bytes=2 * size)
    sender = RedisRelay(redis, replica_id="b", prefix="t")
    with caplog.at_level(logging.WARNING, logger="mcpactor.store"):
        async with trio.open_nursery() as nursery:
            await nursery.start(relay.serve, slow)
            for n in range(6):
                await sender.send(_message("b", f"s{n}"))
            # s0 is being delivered, s1 and s2 wait; the rest find the buffer full.
            with trio.fail_after(TIMEOUT):
                while relay.dropped < 3:  # noqa: ASYNC110 (they arrive over the socket)
                    await trio.sleep(0.01)
            release.set()
            await sender.send(_message("b", "after"))
            with trio.fail_after(TIMEOUT):
                while delivered[-1:] != ["after"]:  # noqa: ASYNC110
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert delivered == ["s0", "s1", "s2", "after"]
    # One warning for the whole overflow, not one per message.
    assert sum("dropped" in r.getMessage() for r in caplog.records) == 1


async def test_send_is_store_unavailable_when_the_server_is_gone() -> None:
    with ignoring_unclosed_buffers():
        port = free_port()
        client: coredis.Redis[bytes] = coredis.Redis(
            host="127.0.0.1", port=port, connect_timeout=1, stream_timeout=1
        )
        relay = RedisRelay(client, replica_id="a")
        async with client:
            with running_redis("--port", str(port), "--bind", "127.0.0.1"):
                await relay.send(_message("a"))
            with trio.fail_after(TIMEOUT), pytest.raises(StoreUnavailable) as raised:
                await relay.send(_message("a"))
    assert str(raised.value).startswith(f"the relay at 127.0.0.1:{port} cannot be reached")


async def _until_heard(sender: RedisRelay, inbox: Inbox) -> Relayed:
    # A subscription being made again hears nothing sent before it is made: send until
    # one is heard (what the replicas' next messages would do).
    with trio.fail_after(TIMEOUT):
        while True:
            with suppress(StoreUnavailable):
                await sender.send(_message(sender.replica_id))
            with trio.move_on_after(0.1):
                return await inbox.receive.receive()


def _outage_logs(caplog: pytest.LogCaptureFixture) -> tuple[int, int]:
    messages = [r.getMessage() for r in caplog.records if r.name == "mcpactor.store"]
    return (
        sum("cannot be reached" in m for m in messages),
        sum("reachable again" in m for m in messages),
    )


async def test_the_relay_subscribes_again_after_a_redis_restart(
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = free_port()
    arguments = ("--port", str(port), "--bind", "127.0.0.1")
    client: coredis.Redis[bytes] = coredis.Redis(host="127.0.0.1", port=port, connect_timeout=1)
    send, receive = trio.open_memory_channel[Relayed](100)
    a = Inbox(RedisRelay(client, replica_id="a", prefix="t"), send, receive)
    sender = RedisRelay(client, replica_id="b", prefix="t")
    with ignoring_unclosed_buffers(), caplog.at_level(logging.WARNING, logger="mcpactor.store"):
        async with client, trio.open_nursery() as nursery:
            with running_redis(*arguments):
                await nursery.start(a.relay.serve, a.deliver)
                await sender.send(_message("b"))
                assert (await a.next()).origin == "b"
            # The server is gone: the relay notices, says so, and keeps trying.
            with trio.fail_after(TIMEOUT):
                while _outage_logs(caplog)[0] == 0:  # noqa: ASYNC110
                    await trio.sleep(0.05)
            # Long enough for several attempts (0.1 s, then 0.2 s, then 0.4 s).
            await trio.sleep(0.8)
            with running_redis(*arguments):
                heard = await _until_heard(sender, a)
                assert heard.origin == "b"
            nursery.cancel_scope.cancel()
    # One outage: said once when it began and once when it ended, whatever the attempts.
    assert _outage_logs(caplog) == (1, 1)


async def test_serve_started_with_redis_down_waits_for_it_and_then_reports_started(
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = free_port()
    client: coredis.Redis[bytes] = coredis.Redis(host="127.0.0.1", port=port, connect_timeout=1)
    send, receive = trio.open_memory_channel[Relayed](100)
    a = Inbox(RedisRelay(client, replica_id="a", prefix="t"), send, receive)
    sender = RedisRelay(client, replica_id="b", prefix="t")
    started = trio.Event()

    async def serve() -> None:
        await nursery.start(a.relay.serve, a.deliver)
        started.set()

    with ignoring_unclosed_buffers(), caplog.at_level(logging.WARNING, logger="mcpactor.store"):
        async with client, trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            # Nothing to subscribe to: serve says so once, keeps trying, reports nothing.
            with trio.fail_after(TIMEOUT):
                while _outage_logs(caplog)[0] == 0:  # noqa: ASYNC110
                    await trio.sleep(0.05)
            assert not started.is_set()
            with running_redis("--port", str(port), "--bind", "127.0.0.1"):
                with trio.fail_after(TIMEOUT):
                    await started.wait()
                # Started means subscribed: the first message sent is heard.
                await sender.send(_message("b"))
                assert (await a.next()).origin == "b"
                nursery.cancel_scope.cancel()
    assert _outage_logs(caplog) == (1, 1)
