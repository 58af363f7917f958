"""A session actor that rests between periods (how HTTP sessions hibernate).

The owner feeds a resting actor with ``receive`` (the one way in: at rest, the core
settles what it answers alone), runs it for a period with
``run(..., rest=...)`` when something needs it, and closes the inbox to end the period;
the actor keeps its state in between.
"""

from __future__ import annotations

import functools
from typing import Any

import trio
import trio.testing

from mcpactor import ProtocolError, RemoteProtocolError, Server
from mcpactor.protocol import LATEST, JSONValue, Phase, RequestReceived
from mcpactor.runtime import Outbound, Received, SessionActor

from .conftest import live_tasks


def rest_server() -> Server:
    server = Server("rest")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return server


async def _extra() -> str:
    """An extra tool."""
    return "extra"


def initialize(request_id: int = 0) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST.version,
            "capabilities": {},
            "clientInfo": {"name": "owner", "version": "1"},
        },
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(request_id: int, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments or {}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def at_rest(actor: SessionActor, item: Any) -> tuple[list[Outbound], list[Any]]:
    """Hand ``item`` to a resting actor: (replies to send now, backlog for a run)."""
    received = actor.receive(item)
    assert received.taken  # at rest, the actor always takes it
    return list(received.replies), list(received.backlog)


class Period:
    """One period of a resting actor: its channels and what it sent."""

    def __init__(self) -> None:
        self.inbox, self._inbox_receive = trio.open_memory_channel[JSONValue | ProtocolError](8)
        self._outbox_send, self.outbox = trio.open_memory_channel[Outbound](8)

    def run(self, actor: SessionActor, backlog: Any = (), *, rest: bool = True) -> Any:
        return functools.partial(
            actor.run,
            self._inbox_receive,
            outbox=self._outbox_send,
            backlog=backlog,
            rest=lambda: rest,
        )


async def test_the_core_answers_alone_while_the_actor_rests() -> None:
    actor = SessionActor(rest_server(), None)
    before = live_tasks()
    replies, backlog = at_rest(actor, initialize())
    assert backlog == []
    assert [reply.related_request_id for reply in replies] == [0]
    assert replies[0].payload["result"]["protocolVersion"] == LATEST.version
    assert at_rest(actor, INITIALIZED) == ([], [])
    assert actor.receive(INITIALIZED) == Received(True)  # nothing to send, nothing left
    assert actor.core.phase is Phase.OPERATING
    replies, backlog = at_rest(actor, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert [reply.payload for reply in replies] == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    # Bad input is answered too, and a framing error has its error response ready.
    replies, _ = at_rest(actor, {"jsonrpc": "2.0", "id": 2})
    assert replies[0].payload["error"]["code"] == -32600
    replies, _ = at_rest(actor, RemoteProtocolError("not JSON", code=-32700))
    assert replies[0].payload == {
        "jsonrpc": "2.0",
        "error": {"code": -32700, "message": "not JSON"},
    }
    assert live_tasks() == before
    assert actor.resting()


async def test_a_request_is_left_for_the_next_period_which_rests_with_its_state() -> None:
    server = rest_server()
    actor = SessionActor(server, None)
    actor.register()
    at_rest(actor, initialize())
    at_rest(actor, INITIALIZED)
    replies, backlog = at_rest(actor, call(1, "add", {"a": 2, "b": 3}))
    assert replies == []
    assert [type(event) for event in backlog] == [RequestReceived]

    period = Period()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(period.run(actor, backlog))
        answer = await period.outbox.receive()
        assert answer.payload["result"]["structuredContent"] == {"result": 5}
        await trio.testing.wait_all_tasks_blocked()
        assert actor.resting()
        period.inbox.close()
    # Rested: the core is as it was, the outbox of the period closed behind it.
    assert actor.core.phase is Phase.OPERATING
    assert [item async for item in period.outbox] == []

    # A change while it rests is kept (coalesced) and sent when it next runs.
    server.add_tool(_extra, name="extra_a")
    server.add_tool(_extra, name="extra_b")
    second = Period()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(second.run(actor, rest=False))
        notice = await second.outbox.receive()
        assert notice.payload["method"] == "notifications/tools/list_changed"
        await second.inbox.send(call(2, "add", {"a": 1, "b": 1}))
        assert (await second.outbox.receive()).payload["result"]["structuredContent"] == {
            "result": 2
        }
        second.inbox.close()
    # Without a rest the period was the last: the session is over.
    assert actor.core.phase is Phase.CLOSED
    assert [item async for item in second.outbox] == []
    server.add_tool(_extra, name="extra_c")  # nobody listens any more


async def test_a_period_that_was_asked_to_rest_still_ends_everything_it_started() -> None:
    # If the owner closes the inbox while something runs (it should not), the actor
    # does not lose it: the period ends only once its nursery is empty.
    server = rest_server()
    release = trio.Event()

    @server.tool()
    async def wait() -> str:
        """Wait for the test."""
        await release.wait()
        return "waited"

    actor = SessionActor(server, None)
    at_rest(actor, initialize())
    at_rest(actor, INITIALIZED)
    _, backlog = at_rest(actor, call(1, "wait"))
    period = Period()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(period.run(actor, backlog))
        await trio.testing.wait_all_tasks_blocked()
        assert not actor.resting()
        period.inbox.close()
        await trio.testing.wait_all_tasks_blocked()
        release.set()
        answer = await period.outbox.receive()
        assert answer.payload["result"]["content"][0]["text"] == "waited"
    assert actor.resting()
    assert actor.core.phase is Phase.OPERATING


async def test_receive_acts_in_the_callers_task_while_the_actor_idles() -> None:
    actor = SessionActor(rest_server(), None)
    at_rest(actor, initialize())
    at_rest(actor, INITIALIZED)
    period = Period()
    async with trio.open_nursery() as nursery:
        await nursery.start(period.run(actor))
        await trio.testing.wait_all_tasks_blocked()
        assert actor.receive(call(1, "add", {"a": 2, "b": 3})) == Received(True)
        # The request started without the message passing through the inbox.
        assert actor.requests_in_flight == 1
        reply = await period.outbox.receive()
        assert reply.related_request_id == 1
        assert reply.payload["result"]["structuredContent"] == {"result": 5}
        # What the core answers comes back for the caller to send, in order.
        received = actor.receive({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert received.taken
        assert [r.payload for r in received.replies] == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
        period.inbox.close()


async def test_receive_never_overtakes_what_was_queued_before_the_period() -> None:
    server = rest_server()
    started = trio.Event()

    @server.tool()
    async def wait() -> str:
        """Wait until cancelled."""
        started.set()
        await trio.sleep_forever()
        return "never"

    actor = SessionActor(server, None)
    at_rest(actor, initialize())
    at_rest(actor, INITIALIZED)
    period = Period()
    # Queued while no actor ran: the period must act on it before anything handed over.
    period.inbox.send_nowait(call(1, "wait"))
    async with trio.open_nursery() as nursery:
        await nursery.start(period.run(actor))
        assert actor.requests_in_flight == 1
        assert actor.receive(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        ).taken
        await trio.testing.wait_all_tasks_blocked()
        # Cancelled, not left running: the cancellation found the request it names.
        assert started.is_set()
        assert actor.requests_in_flight == 0
        assert period.outbox.statistics().current_buffer_used == 0
        period.inbox.close()


async def test_receive_declines_while_the_actor_is_acting_or_about_to_run() -> None:
    actor = SessionActor(rest_server(), None)
    actor.expect_run()
    # A run is on its way: the message must queue behind its backlog.
    assert actor.receive(initialize()) == Received(False)
    assert actor.core.phase is Phase.AWAITING_INITIALIZE  # declined before the core saw it
    # An outbox with no room: the actor stays mid-message, waiting to queue a reply.
    inbox, inbox_receive = trio.open_memory_channel[JSONValue | ProtocolError](8)
    outbox_send, outbox = trio.open_memory_channel[Outbound](0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            functools.partial(actor.run, inbox_receive, outbox=outbox_send, rest=lambda: True)
        )
        await inbox.send(initialize())
        assert "result" in (await outbox.receive()).payload
        await inbox.send(INITIALIZED)
        await inbox.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        await trio.testing.wait_all_tasks_blocked()
        assert not actor.receive({"jsonrpc": "2.0", "id": 2, "method": "ping"}).taken
        assert (await outbox.receive()).payload["id"] == 1
        await trio.testing.wait_all_tasks_blocked()
        # Idle again: the answer comes back for the caller to send.
        received = actor.receive({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert received.taken
        assert [r.payload["id"] for r in received.replies] == [3]
        inbox.close()
