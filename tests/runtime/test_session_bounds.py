"""What one session keeps for the client has a count and a byte bound (issue 43, item 17).

A session lives as long as its client wants, idle or not: everything the client can make
it hold — subscriptions, what it declared at initialize, the hooks its notifications
start — is bounded, and a refusal has the one shape of every limit: -32602 (or the
code named), a message naming the limit, ``data: {"limit": …}``.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from mcpactor import Context, Server
from mcpactor.protocol import (
    MAX_RESOURCE_SUBSCRIPTIONS,
    MAX_SUBSCRIPTION_BYTES,
    MAX_URI_BYTES,
)
from mcpactor.protocol._session import MAX_CLIENT_DECLARATION_BYTES
from mcpactor.runtime import SessionOptions, TaskOptions
from mcpactor.runtime.http import EventStoreStatistics, MemoryEventStore

from .conftest import SessionHarness, assert_idle, open_session


def template_server() -> Server:
    server = Server("subscribable")

    @server.resource("mem://{name}")
    async def item(name: str) -> str:
        """Any name is a resource."""
        return name

    return server


async def subscribe(h: SessionHarness, uri: str) -> dict[str, object]:
    """The error of subscribing to ``uri``, or {} when it was taken."""
    response = await h.response(await h.send_request("resources/subscribe", {"uri": uri}))
    error: dict[str, object] = response.get("error", {})
    return error


async def test_the_issues_case_a_few_huge_uris_are_refused_and_not_kept() -> None:
    # 40 URIs of 2 MB each were kept for the session's life (+78 MB).
    async with open_session(template_server()) as h:
        await h.initialize()
        for n in range(40):
            error = await subscribe(h, f"mem://{n}" + "x" * (2 * 1024 * 1024))
            assert error == {
                "code": -32602,
                "message": f"a resource URI longer than {MAX_URI_BYTES} bytes (UTF-8) "
                "cannot be subscribed to",
                "data": {"limit": MAX_URI_BYTES},
            }
        assert h.actor.statistics().subscriptions == 0


async def test_a_uri_is_measured_in_utf8_bytes_not_characters() -> None:
    async with open_session(template_server()) as h:
        await h.initialize()
        # 4 100 characters, 8 198 bytes: under the limit in characters, over it in bytes.
        wide = "mem://" + "é" * 4096
        assert len(wide) <= MAX_URI_BYTES < len(wide.encode())
        assert (await subscribe(h, wide))["data"] == {"limit": MAX_URI_BYTES}
        exact = "mem://" + "é" * ((MAX_URI_BYTES - 6) // 2)
        assert len(exact.encode()) == MAX_URI_BYTES
        assert await subscribe(h, exact) == {}
        assert h.actor.statistics().subscriptions == 1


async def test_subscriptions_are_capped_in_count_and_freed_by_unsubscribe() -> None:
    async with open_session(template_server()) as h:
        await h.initialize()
        for n in range(MAX_RESOURCE_SUBSCRIPTIONS):
            assert await subscribe(h, f"mem://{n}") == {}
        # Subscribing again to a URI held costs nothing and is no error.
        assert await subscribe(h, "mem://0") == {}
        error = await subscribe(h, "mem://one-more")
        assert error == {
            "code": -32602,
            "message": f"too many resource subscriptions: {MAX_RESOURCE_SUBSCRIPTIONS + 1}, "
            f"at most {MAX_RESOURCE_SUBSCRIPTIONS}",
            "data": {"limit": MAX_RESOURCE_SUBSCRIPTIONS},
        }
        assert h.actor.statistics().subscriptions == MAX_RESOURCE_SUBSCRIPTIONS
        assert await h.request("resources/unsubscribe", {"uri": "mem://0"}) == {}
        assert await subscribe(h, "mem://one-more") == {}
        assert h.actor.statistics().subscriptions == MAX_RESOURCE_SUBSCRIPTIONS


async def test_subscriptions_are_capped_in_total_bytes() -> None:
    async with open_session(template_server()) as h:
        await h.initialize()
        count = MAX_SUBSCRIPTION_BYTES // MAX_URI_BYTES
        for n in range(count):
            uri = f"mem://{n:04}-"
            assert await subscribe(h, uri + "x" * (MAX_URI_BYTES - len(uri))) == {}
        table = h.actor.peer.subscriptions
        assert table is not None
        assert table.size == MAX_SUBSCRIPTION_BYTES
        error = await subscribe(h, "mem://small")
        assert error["code"] == -32602
        assert error["data"] == {"limit": MAX_SUBSCRIPTION_BYTES}
        assert len(table) == count
        # Unsubscribing gives the bytes back.
        first = "mem://0000-"
        await h.request("resources/unsubscribe", {"uri": first + "x" * (MAX_URI_BYTES - 11)})
        assert table.size == MAX_SUBSCRIPTION_BYTES - MAX_URI_BYTES
        assert await subscribe(h, "mem://small") == {}


async def test_a_huge_client_declaration_is_refused_at_initialize() -> None:
    async with open_session(template_server()) as h:
        padding = {"x-padding": "p" * MAX_CLIENT_DECLARATION_BYTES}
        request_id = await h.send_request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"experimental": padding},
                "clientInfo": {"name": "big", "version": "1"},
            },
        )
        error = await h.error_of(request_id)
        assert error["code"] == -32602
        assert error["data"] == {"limit": MAX_CLIENT_DECLARATION_BYTES}
        assert h.actor.core.negotiated is None
        # Nothing was kept: the session can still be opened properly.
        await h.initialize()


async def test_roots_changed_in_a_loop_runs_one_round_of_hooks_at_a_time() -> None:
    server = Server("rooted")
    rounds: list[list[str]] = []

    @server.on_roots_changed
    async def refresh(ctx: Context) -> None:
        rounds.append([root.uri for root in await ctx.list_roots()])

    async with open_session(server, outbox_size=1024) as h:
        await h.initialize(capabilities={"roots": {"listChanged": True}})
        for _ in range(500):
            await h.notify("notifications/roots/list_changed")
        await trio.testing.wait_all_tasks_blocked()
        # One roots/list asked, not 500; the rest are owed one more round.
        asked = [i for i in await h.pending() if i.payload.get("method") == "roots/list"]
        assert len(asked) == 1
        assert h.actor.statistics().client_requests_pending == 1
        await h.answer(asked[0].payload, {"roots": [{"uri": "file:///a"}]})
        second = await h.server_request("roots/list")
        await h.answer(second, {"roots": [{"uri": "file:///b"}]})
        await trio.testing.wait_all_tasks_blocked()
        assert rounds == [["file:///a"], ["file:///b"]]
        await h.expect_nothing()
        assert_idle(h.actor)


async def test_a_streams_replay_buffer_is_bounded_in_bytes_as_well_as_events() -> None:
    store = MemoryEventStore(max_events_per_stream=1000, max_bytes_per_stream=100)
    first = await store.append("s", "1", b"x" * 10)
    for n in range(19):
        await store.append("s", "1", b"%09d\n" % n)
    held = store.statistics()
    assert (held.events, held.bytes) == (10, 100)
    replay = await store.replay_after("s", first)
    assert replay is not None
    assert [data for _, data in replay.events][-1] == b"000000018\n"
    assert len(replay.events) == 10
    # The newest event is kept whatever its size, alone.
    await store.append("s", "1", b"y" * 500)
    held = store.statistics()
    assert (held.events, held.bytes) == (1, 500)
    # Count and bytes agree when the event limit drops the oldest first.
    small = MemoryEventStore(max_events_per_stream=2, max_bytes_per_stream=100)
    for size in (10, 20, 30):
        await small.append("s", "1", b"z" * size)
    held = small.statistics()
    assert (held.events, held.bytes) == (2, 50)
    await small.forget_session("s")
    assert small.statistics() == EventStoreStatistics(streams=0, events=0, bytes=0)


async def test_a_sessions_replay_buffers_are_bounded_together() -> None:
    # Each stream under its own limit, many streams over the session's: the oldest
    # events of the oldest streams go first, each stream's newest stays.
    store = MemoryEventStore(max_bytes_per_stream=100, max_bytes_per_session=250)
    firsts = [await store.append("s", str(n), b"a" * 40) for n in range(5)]
    for n in range(5):
        await store.append("s", str(n), b"b" * 40)
    held = store.statistics()
    assert held.bytes <= 250
    assert (held.streams, held.events) == (5, 6)
    for n, first in enumerate(firsts):
        replay = await store.replay_after("s", first.replace(".1", ".0"))
        assert replay is not None
        assert replay.events[-1] == (f"{n}.2", b"b" * 40)
    # Another session is held to its own share, not to this one's.
    await store.append("t", "1", b"c" * 200)
    assert store.statistics().bytes == held.bytes + 200
    # Only newest events left: the session keeps them, past its limit.
    for n in range(10):
        await store.append("u", str(n), b"d" * 100)
    assert (await store.replay_after("u", "9.0")) is not None
    await store.forget_session("s")
    await store.forget_session("t")
    await store.forget_session("u")
    assert store.statistics() == EventStoreStatistics(streams=0, events=0, bytes=0)


async def test_all_replay_buffers_are_bounded_and_the_largest_give_way() -> None:
    store = MemoryEventStore(max_bytes_per_session=10_000, max_bytes=1000)
    for _ in range(8):
        await store.append("small", "1", b"s" * 10)
    for _ in range(20):
        await store.append("large", "1", b"l" * 50)
    held = store.statistics()
    assert held.bytes <= 1000
    # The large session gave way: the small one keeps all its events.
    replay = await store.replay_after("small", "1.0")
    assert replay is not None
    assert len(replay.events) == 8
    # Newest events only, past the limit: kept, and not looked through at every append.
    crowd = MemoryEventStore(max_bytes=100)
    for n in range(50):
        await crowd.append(str(n), "1", b"x" * 10)
    assert crowd.statistics().bytes == 500
    await crowd.forget_stream(str(0), "1")
    assert crowd.statistics().bytes == 490


def test_replay_buffer_limits_are_checked() -> None:
    for name in ("max_bytes_per_session", "max_bytes"):
        with pytest.raises(ValueError, match=name):
            MemoryEventStore(**{name: 0})


async def test_a_finished_tasks_result_is_held_to_the_message_limit() -> None:
    # A finished task keeps its result until its TTL passes (an hour by default, 1024
    # tasks a session): a result over the limit fails the task instead of being kept.
    server = Server("tasks")

    @server.tool(task_support="optional")
    async def text(count: int) -> str:
        """Answer with ``count`` characters."""
        return "x" * count

    options = SessionOptions(tasks=TaskOptions(max_result_bytes=1024))
    async with open_session(server, options) as h:
        await h.initialize("2025-11-25")
        created = await h.request(
            "tools/call", {"name": "text", "arguments": {"count": 5000}, "task": {}}
        )
        task_id = created["task"]["taskId"]
        error = await h.error_of(await h.send_request("tasks/result", {"taskId": task_id}))
        assert error["code"] == -32603
        assert error["data"] == {"limit": 1024}
        assert "over the 1024-byte message limit" in error["message"]
        status = await h.request("tasks/get", {"taskId": task_id})
        assert status["status"] == "failed"
        small = await h.request(
            "tools/call", {"name": "text", "arguments": {"count": 10}, "task": {}}
        )
        result = await h.request("tasks/result", {"taskId": small["task"]["taskId"]})
        assert result["content"][0]["text"] == "x" * 10


def test_transports_hold_tasks_results_to_their_message_limit() -> None:
    assert SessionOptions().with_message_limit(4096).tasks.max_result_bytes == 4096
    assert SessionOptions().with_message_limit(None).tasks.max_result_bytes is None
    own = SessionOptions(tasks=TaskOptions(max_result_bytes=10))
    assert own.with_message_limit(4096) is own
