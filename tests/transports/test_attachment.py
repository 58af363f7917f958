"""The queue between a session's routing and one HTTP connection's writer, and the one
route: a request's final answer (JSON or SSE) is routed in its own task, not the router's."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from mcpactor.runtime import Outbox
from mcpactor.runtime.http import COALESCE_SECONDS
from mcpactor.runtime.http._later import TICK as _TICK
from mcpactor.runtime.http._streams import _CAPACITY, Attachment, Item, Stream
from mcpactor.transports import EventStore, HttpOptions, McpHttpApp, MemoryEventStore
from mcpactor.transports.http import Replay

from ._http_client import McpClient, SseEvent
from ._http_server import Probe, asgi_client, initialized, make_server


def attachment() -> Attachment:
    # The queue never looks at its stream.
    return Attachment(Stream("1"))


async def test_items_come_out_in_order_and_end_after_the_last() -> None:
    queue = attachment()
    queue.put_nowait(("1", b"a", False))
    queue.put_nowait((None, b"b", True))
    queue.end()
    assert await queue.get() == ("1", b"a", False)
    assert queue.get_nowait() == (None, b"b", True)
    with pytest.raises(trio.EndOfChannel):
        await queue.get()
    with pytest.raises(trio.ClosedResourceError):
        queue.put_nowait((None, b"late", True))


async def test_a_reader_watching_its_client_wakes_for_an_item_the_end_or_the_client() -> None:
    # One task waits for both: the next item ends the wait for the client leaving.
    queue = attachment()
    left = trio.Event()
    watched: list[str] = []

    async def gone() -> None:
        watched.append("watching")
        await left.wait()

    got: list[Any] = []

    async def read() -> None:
        while True:
            try:
                item = await queue.get_or_gone(gone)
            except trio.EndOfChannel:
                got.append("end")
                return
            got.append(item)
            if item is None:
                return

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.BusyResourceError):
            await queue.get_or_gone(gone)
        queue.put_nowait((None, b"x", False))
        queue.put_nowait((None, b"y", False))
        await trio.testing.wait_all_tasks_blocked()
        assert got == [(None, b"x", False), (None, b"y", False)]
        assert watched == ["watching", "watching"]
        queue.end()
    assert got[-1] == "end"

    # The client leaving, with nothing queued: None, and the queue is the writer's to drop.
    queue = attachment()
    got.clear()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await trio.testing.wait_all_tasks_blocked()
        left.set()
    assert got == [None]
    queue.abandon()
    with pytest.raises(trio.BrokenResourceError):
        queue.put_nowait((None, b"late", False))


async def test_a_waiting_reader_wakes_for_an_item_and_for_the_end() -> None:
    queue = attachment()
    got: list[Any] = []

    async def read() -> None:
        async for item in queue:
            got.append(item)
        got.append("end")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await trio.testing.wait_all_tasks_blocked()
        assert got == []
        with pytest.raises(trio.WouldBlock):
            queue.get_nowait()
        queue.put_nowait((None, b"x", False))
        await trio.testing.wait_all_tasks_blocked()
        assert got == [(None, b"x", False)]
        queue.end()
    assert got == [(None, b"x", False), "end"]


async def test_a_waiting_reader_can_be_cancelled_and_read_again() -> None:
    queue = attachment()
    with trio.move_on_after(1) as waited:
        await queue.get()
    assert waited.cancelled_caught
    queue.put_nowait((None, b"x", True))
    assert await queue.get() == (None, b"x", True)


async def test_only_one_task_reads_at_a_time() -> None:
    queue = attachment()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(queue.get)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.BusyResourceError):
            await queue.get()
        nursery.cancel_scope.cancel()


async def test_a_nudge_with_the_newest_ticket_ends_a_wait_unless_nudged() -> None:
    queue = attachment()
    got: list[Item | None] = []

    async def read_unless_nudged() -> None:
        got.append(await queue.get_unless_nudged())

    async def read() -> None:
        got.append(await queue.get())

    stale = queue.arm_nudge()
    ticket = queue.arm_nudge()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(read_unless_nudged)
        await trio.testing.wait_all_tasks_blocked()
        queue.nudge(stale)  # an older wait's nudge: spent
        await trio.testing.wait_all_tasks_blocked()
        assert got == []
        queue.nudge(ticket)
    assert got == [None]
    # A nudge counts until the next ticket, waiting or not; an item queued comes first.
    queue.put_nowait(("1", b"y", False))
    assert await queue.get_unless_nudged() == ("1", b"y", False)
    assert await queue.get_unless_nudged() is None
    ticket = queue.arm_nudge()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await trio.testing.wait_all_tasks_blocked()
        queue.nudge(ticket)  # a plain get waits on
        await trio.testing.wait_all_tasks_blocked()
        assert got == [None]
        queue.put_nowait((None, b"x", True))
    assert got == [None, (None, b"x", True)]
    assert await queue.get_unless_nudged() is None


async def test_a_nudge_timer_nudges_each_wait_once_its_delay_is_over(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with asgi_client(make_server(Probe())) as (app, _):
        timer = app.manager.coalescing
        start = trio.current_time()
        ended: dict[str, tuple[float, Item | None]] = {}

        async def hold_back(name: str, queue: Attachment, after: float) -> None:
            await trio.sleep(after)
            timer.nudge_later(queue)
            got = await queue.get_unless_nudged()
            ended[name] = (trio.current_time() - start, got)

        answered = attachment()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(hold_back, "first", attachment(), 0)
            # Due within a tick of the first: nudged with it, a little early.
            nursery.start_soon(hold_back, "close behind", attachment(), _TICK / 2)
            nursery.start_soon(hold_back, "later", attachment(), 2 * _TICK)
            nursery.start_soon(hold_back, "answered", answered, 0)
            await trio.sleep(COALESCE_SECONDS / 2)
            answered.put_nowait((None, b"answer", True))
        assert ended == {
            "first": (COALESCE_SECONDS, None),
            "close behind": (COALESCE_SECONDS, None),
            "later": (2 * _TICK + COALESCE_SECONDS, None),
            "answered": (COALESCE_SECONDS / 2, (None, b"answer", True)),
        }
        app.manager.stop()


async def test_a_full_queue_refuses_and_a_sender_waits_for_room() -> None:
    queue = attachment()
    for number in range(_CAPACITY):
        queue.put_nowait((None, b"%d" % number, False))
    with pytest.raises(trio.WouldBlock):
        queue.put_nowait((None, b"more", False))
    sent = trio.Event()

    async def put_more() -> None:
        await queue.put((None, b"more", False))
        sent.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(put_more)
        await trio.testing.wait_all_tasks_blocked()
        assert not sent.is_set()
        assert queue.get_nowait() == (None, b"0", False)
        await sent.wait()
    rest = [queue.get_nowait()[1] for _ in range(_CAPACITY)]
    assert rest[-1] == b"more"


async def test_senders_waiting_for_room_hear_of_the_end_and_of_a_reader_gone() -> None:
    endings = (
        (Attachment.end, trio.ClosedResourceError),
        (Attachment.abandon, trio.BrokenResourceError),
    )
    for finish, error in endings:
        queue = attachment()
        for _ in range(_CAPACITY):
            queue.put_nowait((None, b"x", False))
        failures: list[BaseException] = []

        async def put_more(
            queue: Attachment = queue, failures: list[BaseException] = failures
        ) -> None:
            try:
                await queue.put((None, b"more", False))
            except (trio.ClosedResourceError, trio.BrokenResourceError) as exc:
                failures.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(put_more)
            await trio.testing.wait_all_tasks_blocked()
            finish(queue)
        assert [type(failure) for failure in failures] == [error]


async def test_an_abandoned_queue_drops_what_it_held_and_refuses_more() -> None:
    queue = attachment()
    queue.put_nowait((None, b"x", False))
    queue.abandon()
    with pytest.raises(trio.BrokenResourceError):
        queue.put_nowait((None, b"y", False))
    queue.end()
    with pytest.raises(trio.EndOfChannel):
        queue.get_nowait()


# --- the shortcut -------------------------------------------------------------------------


class RouterCalls:
    """Counts the turns in which queued messages were routed (not by their own sender)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        drain = Outbox._drain

        async def counted(outbox: Outbox) -> None:
            self.count += 1
            await drain(outbox)

        monkeypatch.setattr(Outbox, "_drain", counted)


async def test_a_final_json_answer_is_routed_by_its_sender(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = RouterCalls(monkeypatch)
    async with asgi_client(make_server(Probe())) as (app, http):
        client = await initialized(http)
        before = calls.count
        for a in range(3):
            arguments = {"a": a, "b": 1}
            reply = await client.call("tools/call", {"name": "add", "arguments": arguments})
            assert reply["result"]["structuredContent"] == {"result": a + 1}
        assert calls.count == before
        # The streams of answered POSTs are gone; nothing is left in flight.
        await trio.testing.wait_all_tasks_blocked()
        session = app.manager.get(client.session_id or "")
        assert session is not None
        assert session.runs.may_sleep()
        app.manager.stop()


async def test_an_answer_behind_a_notification_keeps_its_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Progress first makes the stream SSE: the answer must follow it on the stream.
    options = HttpOptions(response_mode="sse")
    async with asgi_client(make_server(Probe()), options=options) as (app, http):
        client = await initialized(http)
        request = client.request("tools/call", {"name": "count", "arguments": {"steps": 3}})
        request["params"]["_meta"] = {"progressToken": "p"}
        response = await client.post(request)
        messages = await response.messages()
        assert [message.get("method") for message in messages] == [
            "notifications/progress",
            "notifications/progress",
            "notifications/progress",
            None,
        ]
        assert messages[-1]["result"]["content"][0]["text"] == "counted 3"
        app.manager.stop()


async def test_an_answer_whose_client_left_is_forgotten() -> None:
    probe = Probe()
    async with asgi_client(make_server(probe)) as (app, http):
        client = await initialized(http)
        session = app.manager.get(client.session_id or "")
        assert session is not None
        request = client.request("tools/call", {"name": "hold_quietly", "arguments": {}})
        attachment = await session.post(request, [request["id"]], sse=False)
        assert attachment is not None
        await probe.started.wait()
        # The connection goes away before the answer.
        await session.release(attachment)
        probe.release.set()
        await trio.testing.wait_all_tasks_blocked()
        assert session.runs.may_sleep()
        # Only the standalone stream is left: the answered one was forgotten.
        assert list(session.routing.streams) == ["0"]
        app.manager.stop()


@contextlib.asynccontextmanager
async def sse_client(
    monkeypatch: pytest.MonkeyPatch, store: EventStore | None = None
) -> AsyncIterator[tuple[McpHttpApp, McpClient, RouterCalls]]:
    """An initialized client of an app answering in SSE, and the router's calls counted.

    Its tests run on a clock that stands still: a priming event's wait for the answer
    behind it never runs out however slowly the machine runs, so the two always go out
    together.
    """
    calls = RouterCalls(monkeypatch)
    options = HttpOptions(response_mode="sse", event_store=store)
    async with asgi_client(make_server(Probe()), options=options) as (app, http):
        yield app, await initialized(http), calls
        app.manager.stop()


async def add_over_sse(client: McpClient, a: int) -> list[SseEvent]:
    """Call ``add`` and check its answer: a priming event, then the result."""
    response = await client.post(
        client.request("tools/call", {"name": "add", "arguments": {"a": a, "b": 1}})
    )
    assert response.content_type == "text/event-stream"
    events = await response.events()
    assert [event.data == "" for event in events] == [True, False]
    assert events[1].message()["result"]["structuredContent"] == {"result": a + 1}
    # Priming event and answer in one complete response.
    assert "content-length" in response.headers
    return events


async def resumed_messages(client: McpClient, last_event_id: str | None) -> list[Any]:
    """The messages a GET resuming after ``last_event_id`` replays."""
    resumed = await client.get(last_event_id=last_event_id or "")
    return [event.message() for event in await resumed.events() if event.data]


async def test_a_final_answer_on_an_sse_stream_is_routed_by_its_sender(
    monkeypatch: pytest.MonkeyPatch, mock_clock: trio.testing.MockClock
) -> None:
    async with sse_client(monkeypatch) as (_, client, calls):
        before = calls.count
        for a in range(3):
            events = await add_over_sse(client, a)
        assert calls.count == before
        # The answer went to the event store all the same: resuming replays it.
        assert await resumed_messages(client, events[0].id) == [events[1].message()]


class AwaitedStore(EventStore):
    """An event store that must be awaited, as one shared between processes is."""

    def __init__(self) -> None:
        self.memory = MemoryEventStore()
        self.forgotten: list[str] = []

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        await trio.lowlevel.checkpoint()
        return await self.memory.append(session_id, stream_id, data)

    async def replay_after(self, session_id: str, event_id: str) -> Replay | None:
        await trio.lowlevel.checkpoint()
        return await self.memory.replay_after(session_id, event_id)

    async def forget_stream(self, session_id: str, stream_id: str) -> None:
        await trio.lowlevel.checkpoint()
        self.forgotten.append(stream_id)
        await self.memory.forget_stream(session_id, stream_id)

    async def forget_session(self, session_id: str) -> None:
        await trio.lowlevel.checkpoint()
        await self.memory.forget_session(session_id)


async def test_answers_are_routed_by_their_requests_when_the_store_must_be_awaited(
    monkeypatch: pytest.MonkeyPatch, mock_clock: trio.testing.MockClock
) -> None:
    store = AwaitedStore()
    async with sse_client(monkeypatch, store) as (_, client, calls):
        before = calls.count
        answers = 20  # more than a session retains finished streams of
        for a in range(answers):
            events = await add_over_sse(client, a)
        assert calls.count == before
        await trio.testing.wait_all_tasks_blocked()
        # Only the newest 16 finished streams are kept (initialize's was the first): the
        # rest were forgotten, awaited.
        assert store.forgotten == [str(stream) for stream in range(1, answers + 1 - 16 + 1)]
        held = store.memory.statistics()
        assert (held.streams, held.events) == (16, 32)
        assert await resumed_messages(client, events[0].id) == [events[1].message()]
