"""A session actor that rests between runs (how HTTP sessions hibernate).

Every message goes to the actor's one inbox, and only the actor's task acts on it. An
owner that lets the session rest passes ``rest`` to ``run``: the actor asks it when it
has acted and finds nothing queued or running, and when its inbox closes; a yes ends the
run and the object keeps its state for the next one.
"""

from __future__ import annotations

import functools
from typing import Any

import trio
import trio.testing

from mcpactor import Context, ProtocolError, RemoteProtocolError, Server
from mcpactor.protocol import LATEST, JSONValue, Phase
from mcpactor.runtime import Outbound, SessionActor

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


class Period:
    """One run of a resting actor: its channels, what it sent, and whether it rested."""

    def __init__(self, *, rest: bool = True) -> None:
        self.inbox, self._inbox_receive = trio.open_memory_channel[JSONValue | ProtocolError](8)
        self._outbox_send, self.outbox = trio.open_memory_channel[Outbound](8)
        self.rest = rest
        self.asked = 0

    def _rest(self) -> bool:
        self.asked += 1
        return self.rest

    def run(self, actor: SessionActor) -> Any:
        return functools.partial(
            actor.run, self._inbox_receive, outbox=self._outbox_send, rest=self._rest
        )


async def one_run(actor: SessionActor, *items: Any) -> list[Outbound]:
    """Queue ``items``, run the actor until it rests, and return what it sent."""
    period = Period()
    for item in items:
        period.inbox.send_nowait(item)
    await period.run(actor)()
    return [item async for item in period.outbox]


async def test_the_core_answers_alone_in_a_run_that_rests_at_once() -> None:
    actor = SessionActor(rest_server(), None)
    before = live_tasks()
    replies = await one_run(actor, initialize())
    assert [reply.related_request_id for reply in replies] == [0]
    assert replies[0].payload["result"]["protocolVersion"] == LATEST.version
    assert await one_run(actor, INITIALIZED) == []
    assert actor.core.phase is Phase.OPERATING
    replies = await one_run(actor, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert [reply.payload for reply in replies] == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    # Bad input is answered too, and a framing error has its error response ready.
    replies = await one_run(actor, {"jsonrpc": "2.0", "id": 2})
    assert replies[0].payload["error"]["code"] == -32600
    replies = await one_run(actor, RemoteProtocolError("not JSON", code=-32700))
    assert replies[0].payload == {
        "jsonrpc": "2.0",
        "error": {"code": -32700, "message": "not JSON"},
    }
    # Between runs: nothing running, no task left.
    assert live_tasks() == before
    assert actor.resting()


async def test_a_run_with_a_request_rests_only_when_its_inbox_closes() -> None:
    server = rest_server()
    actor = SessionActor(server, None)
    actor.register()
    await one_run(actor, initialize(), INITIALIZED)
    period = Period()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(period.run(actor))
        await period.inbox.send(call(1, "add", {"a": 2, "b": 3}))
        answer = await period.outbox.receive()
        assert answer.payload["result"]["structuredContent"] == {"result": 5}
        await trio.testing.wait_all_tasks_blocked()
        # Never asked: the request was running when the actor found its inbox empty,
        # and the actor waits on its inbox now.
        assert actor.resting()
        assert period.asked == 0
        period.inbox.close()
    # Rested: the core is as it was, the outbox of the run closed behind it.
    assert actor.core.phase is Phase.OPERATING
    assert [item async for item in period.outbox] == []

    # A change while it rests is kept (coalesced) and sent when it next runs.
    server.add_tool(_extra, name="extra_a")
    server.add_tool(_extra, name="extra_b")
    second = Period(rest=False)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(second.run(actor))
        notice = await second.outbox.receive()
        assert notice.payload["method"] == "notifications/tools/list_changed"
        await second.inbox.send(call(2, "add", {"a": 1, "b": 1}))
        assert (await second.outbox.receive()).payload["result"]["structuredContent"] == {
            "result": 2
        }
        second.inbox.close()
    # Without a rest the run was the last: the session is over.
    assert actor.core.phase is Phase.CLOSED
    assert [item async for item in second.outbox] == []
    server.add_tool(_extra, name="extra_c")  # nobody listens any more


async def test_the_server_tells_the_actors_listener_and_handlers_talk_to_its_peer() -> None:
    server = rest_server()
    peers: list[object] = []

    @server.tool()
    async def whose(ctx: Context) -> str:
        """Record the Peer this call's Context talks to."""
        peers.append(ctx._peer)
        return "ok"

    actor = SessionActor(server, None)
    actor.register()
    # The listener is the actor's collaborator, not the actor.
    assert server.listeners == {actor.changes}
    await one_run(actor, initialize(), INITIALIZED)
    period = Period()
    period.inbox.send_nowait(call(1, "whose"))
    period.inbox.close()
    await period.run(actor)()
    assert [item.payload["result"]["content"][0]["text"] async for item in period.outbox] == ["ok"]
    assert peers == [actor.peer]
    assert actor.tasks is actor.peer.tasks
    actor.close()
    assert server.listeners == set()


async def test_a_run_that_was_asked_to_rest_still_ends_everything_it_started() -> None:
    # If the owner closes the inbox while something runs (it should not), the actor
    # does not lose it: the run ends only once its nursery is empty.
    server = rest_server()
    release = trio.Event()

    @server.tool()
    async def wait() -> str:
        """Wait for the test."""
        await release.wait()
        return "waited"

    actor = SessionActor(server, None)
    await one_run(actor, initialize(), INITIALIZED)
    period = Period()
    period.inbox.send_nowait(call(1, "wait"))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(period.run(actor))
        await trio.testing.wait_all_tasks_blocked()
        assert not actor.resting()
        period.inbox.close()
        await trio.testing.wait_all_tasks_blocked()
        release.set()
        answer = await period.outbox.receive()
        assert answer.payload["result"]["content"][0]["text"] == "waited"
    assert actor.resting()
    assert actor.core.phase is Phase.OPERATING


async def test_messages_are_acted_on_in_order_by_the_actors_task_only() -> None:
    server = rest_server()
    started = trio.Event()

    @server.tool()
    async def wait() -> str:
        """Wait until cancelled."""
        started.set()
        await trio.sleep_forever()
        return "never"

    actor = SessionActor(server, None)
    await one_run(actor, initialize(), INITIALIZED)
    period = Period(rest=False)
    # Queued before the run and at once after a request: the cancel finds its request.
    period.inbox.send_nowait(call(1, "wait"))
    period.inbox.send_nowait(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    )
    # Nothing is acted on before the actor's task runs.
    assert actor.requests_in_flight == 0
    async with trio.open_nursery() as nursery:
        await nursery.start(period.run(actor))
        await trio.testing.wait_all_tasks_blocked()
        assert actor.requests_in_flight == 0
        assert period.outbox.statistics().current_buffer_used == 0
        await period.inbox.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert (await period.outbox.receive()).payload == {"jsonrpc": "2.0", "id": 2, "result": {}}
        period.inbox.close()


async def test_a_full_outbox_holds_the_actor_mid_message() -> None:
    actor = SessionActor(rest_server(), None)
    inbox, inbox_receive = trio.open_memory_channel[JSONValue | ProtocolError](8)
    outbox_send, outbox = trio.open_memory_channel[Outbound](0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            functools.partial(actor.run, inbox_receive, outbox=outbox_send, rest=lambda: False)
        )
        await inbox.send(initialize())
        assert "result" in (await outbox.receive()).payload
        await inbox.send(INITIALIZED)
        await inbox.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        await inbox.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        await trio.testing.wait_all_tasks_blocked()
        # The second ping waits in the inbox while the first answer waits for room.
        assert inbox.statistics().current_buffer_used == 1
        assert (await outbox.receive()).payload["id"] == 1
        assert (await outbox.receive()).payload["id"] == 2
        inbox.close()
