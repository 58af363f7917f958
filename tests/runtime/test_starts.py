"""The start gate: HTTP intake waits while request actors wait for their first step."""

from __future__ import annotations

import trio
import trio.testing

from mcpactor import Server
from mcpactor.runtime import SessionActor, StartGate
from mcpactor.runtime._session_actor import _GATE

from ..protocol.helpers import initialize, notification, request


async def test_intake_goes_on_while_few_request_actors_wait() -> None:
    gate = StartGate(limit=2)
    gate.spawned()
    # Already cancelled: a wait that parked would end in Cancelled.
    with trio.CancelScope() as scope:
        scope.cancel()
        await gate.wait_turn()
    assert not scope.cancelled_caught
    assert gate.statistics() == (1, 0)


async def queue_intakes(
    nursery: trio.Nursery, gate: StartGate, count: int, *, each_starts_one: bool
) -> list[int]:
    """Start ``count`` intakes one after another; the list fills as they go on, in order."""
    went: list[int] = []

    async def intake(number: int) -> None:
        await gate.wait_turn()
        went.append(number)
        if each_starts_one:
            gate.spawned()  # a request; otherwise a notification or a GET: none

    for number in range(count):
        nursery.start_soon(intake, number)
        await trio.testing.wait_all_tasks_blocked()
    return went


async def test_at_the_limit_intakes_wait_and_each_start_lets_one_go_in_order() -> None:
    gate = StartGate(limit=2)
    gate.spawned()
    gate.spawned()
    async with trio.open_nursery() as nursery:
        went = await queue_intakes(nursery, gate, 3, each_starts_one=True)
        assert gate.statistics() == (2, 3)
        gate.started()
        await trio.testing.wait_all_tasks_blocked()
        # One start, one intake: it spawned again, so the gate is full once more.
        assert went == [0]
        assert gate.statistics() == (2, 2)
        for _ in range(2):
            gate.started()
            await trio.testing.wait_all_tasks_blocked()
        assert went == [0, 1, 2]


async def test_an_intake_that_starts_nothing_passes_its_turn_on() -> None:
    gate = StartGate(limit=1)
    gate.spawned()
    async with trio.open_nursery() as nursery:
        went = await queue_intakes(nursery, gate, 4, each_starts_one=False)
        assert gate.statistics() == (1, 4)
        # One start, then nothing else ever starts: every intake still goes on.
        gate.started()
    assert went == [0, 1, 2, 3]
    assert gate.statistics() == (0, 0)


async def test_a_session_counts_its_request_actors_until_their_first_step() -> None:
    server = Server("starts")

    @server.tool()
    async def wait() -> str:
        """Wait until cancelled."""
        await trio.sleep_forever()
        return "never"

    class NotingGate(StartGate):
        # What ``waiting`` was right after each spawn.
        noted: list[int] = []  # noqa: RUF012

        def spawned(self) -> None:
            super().spawned()
            self.noted.append(self.waiting)

    gate = NotingGate()
    _GATE.set(gate)
    actor = SessionActor(server, None)
    inbox_send, inbox_receive = trio.open_memory_channel[object](8)
    outbox_send, outbox_receive = trio.open_memory_channel[object](8)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: actor.run(inbox_receive, outbox=outbox_send)  # type: ignore[arg-type]
        )
        await inbox_send.send(initialize(1))
        answered = await outbox_receive.receive()
        assert answered.related_request_id == 1  # type: ignore[attr-defined]
        await inbox_send.send(notification("notifications/initialized"))
        await inbox_send.send(request(2, "tools/call", {"name": "wait"}))
        await trio.testing.wait_all_tasks_blocked()
        # Counted when spawned, until its first step.
        assert gate.noted == [1]
        assert gate.waiting == 0
        assert gate.in_flight == actor.requests_in_flight == 1
        await inbox_send.send(notification("notifications/cancelled", {"requestId": 2}))
        await trio.testing.wait_all_tasks_blocked()
        assert gate.in_flight == actor.requests_in_flight == 0
        nursery.cancel_scope.cancel()
