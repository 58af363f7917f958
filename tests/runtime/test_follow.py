"""Following a stream in an event store: the in-memory store's waits, and what ends a stream."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from mcpactor.runtime.http import MemoryEventStore
from mcpactor.runtime.http._event_store import Replay
from mcpactor.runtime.http._follow import Followers, ends_stream


async def test_a_wait_ends_at_the_next_append() -> None:
    store = MemoryEventStore()
    first = await store.append("s", "2", b"")
    waited: list[Replay | None] = []

    async def wait() -> None:
        waited.append(await store.wait_after("s", first, 10.0))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        assert waited == []
        second = await store.append("s", "2", b'{"id":1,"result":{}}')
    assert waited == [Replay("2", [(second, b'{"id":1,"result":{}}')])]


async def test_a_wait_with_nothing_appended_ends_empty_after_its_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = MemoryEventStore()
    first = await store.append("s", "2", b"")
    started = trio.current_time()
    assert await store.wait_after("s", first, 7.0) == Replay("2", [])
    assert trio.current_time() - started == pytest.approx(7.0)


async def test_a_wait_on_a_stream_forgotten_meanwhile_ends_with_none() -> None:
    store = MemoryEventStore()
    first = await store.append("s", "2", b"")
    waited: list[Replay | None] = [Replay("2", [])]

    async def wait() -> None:
        waited[0] = await store.wait_after("s", first, 10.0)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        await store.forget_session("s")
    assert waited == [None]
    assert await store.wait_after("s", "nope", 1.0) is None


@pytest.mark.parametrize(
    ("data", "ends"),
    [
        (b"", False),  # a priming event
        (b'{"jsonrpc":"2.0","method":"notifications/progress","params":{}}', False),
        (b'{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{}}', False),
        (b'{"jsonrpc":"2.0","id":1,"result":{}}', True),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}', True),
        (b'[{"jsonrpc":"2.0","id":1,"result":{}}]', True),
        (b"{not json", False),
        (b'"text"', False),
    ],
)
def test_only_an_answer_ends_a_followed_stream(data: bytes, ends: bool) -> None:
    assert ends_stream(data) is ends


def test_followers_are_counted_up_to_their_limit() -> None:
    followers = Followers(limit=2)
    assert followers.take()
    assert followers.take()
    assert not followers.take()
    assert followers.active == 2
