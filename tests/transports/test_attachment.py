"""The queue between a session's router and one HTTP connection's writer, and the
shortcut that routes a request's final JSON answer without the router."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from mcpactor.transports import HttpOptions
from mcpactor.transports._attachment import _CAPACITY, Attachment
from mcpactor.transports._http_sessions import HttpSession

from ._http_server import Probe, asgi_client, initialized, make_server


def attachment() -> Attachment:
    # The queue never looks at its stream.
    return Attachment(None)  # type: ignore[arg-type]


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
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        route = HttpSession._route

        async def counted(session: HttpSession, payload: Any, related: Any) -> None:
            self.count += 1
            await route(session, payload, related)

        monkeypatch.setattr(HttpSession, "_route", counted)


async def test_a_final_json_answer_skips_the_router(monkeypatch: pytest.MonkeyPatch) -> None:
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
        assert session.may_sleep()
        app.manager.stop()


async def test_an_answer_behind_a_notification_keeps_its_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Progress first makes the stream SSE: the answer must go through the router, after it.
    calls = RouterCalls(monkeypatch)
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
        assert calls.count >= 4
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
        assert session.may_sleep()
        # Only the standalone stream is left: the answered one was forgotten.
        assert list(session._streams) == ["0"]
        app.manager.stop()
