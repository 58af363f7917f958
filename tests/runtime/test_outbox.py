"""The one Outbox: a queue to the writer, or senders that deliver one at a time."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from mcpactor.runtime import Outbound, OutboundKind, Outbox


def reply(n: int) -> Outbound:
    return Outbound(OutboundKind.RESPONSE, {"jsonrpc": "2.0", "id": n, "result": {}}, n)


async def test_a_free_outbox_is_delivered_by_its_sender_a_busy_one_queues() -> None:
    delivered: list[tuple[int, str]] = []
    gate = trio.Event()

    async def deliver(item: Outbound) -> None:
        if item.payload["id"] == 1:
            await gate.wait()
        delivered.append((item.payload["id"], trio.lowlevel.current_task().name))

    outbox = Outbox(None, deliver=deliver)
    async with trio.open_nursery() as nursery:
        outbox.attach(nursery)
        nursery.start_soon(outbox.send, reply(1), name="first")
        await trio.testing.wait_all_tasks_blocked()
        assert not outbox.idle
        # The first sender delivers and is held: what comes meanwhile queues, and its
        # senders go on at once.
        await outbox.send(reply(2))
        outbox.send_nowait(reply(3))
        assert delivered == []
        assert outbox.queued == 2
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        # The sender that held the outbox delivered the rest too, in order.
        assert delivered == [(1, "first"), (2, "first"), (3, "first")]
        assert outbox.queued == 0
        assert outbox.idle
        # Free again: the sender delivers in its own task.
        await outbox.send(reply(4))
        assert delivered[-1] == (4, trio.lowlevel.current_task().name)
        # Queued while nobody delivers: a task of the attached nursery delivers it.
        outbox.send_nowait(reply(5))
        assert outbox.queued == 1
        await trio.testing.wait_all_tasks_blocked()
        assert delivered[-1][0] == 5
        assert outbox.idle
        outbox.close()
        with pytest.raises(trio.ClosedResourceError):
            await outbox.send(reply(6))


async def test_without_a_nursery_an_idle_outbox_cannot_queue_for_later() -> None:
    async def deliver(item: Outbound) -> None:
        raise AssertionError("nothing is delivered")

    outbox = Outbox(None, deliver=deliver)
    with pytest.raises(trio.WouldBlock):
        outbox.send_nowait(reply(1))
    assert outbox.idle


async def test_a_full_delivering_outbox_holds_its_senders_until_there_is_room() -> None:
    delivered: list[int] = []
    gate = trio.Event()

    async def deliver(item: Outbound) -> None:
        if item.payload["id"] == 1:
            await gate.wait()
        delivered.append(item.payload["id"])

    outbox = Outbox(None, deliver=deliver, limit=2)
    sent: list[int] = []

    async def send(n: int) -> None:
        await outbox.send(reply(n))
        sent.append(n)

    async with trio.open_nursery() as nursery:
        outbox.attach(nursery)
        for n in range(1, 5):
            nursery.start_soon(send, n)
            await trio.testing.wait_all_tasks_blocked()
        # 1 is being delivered, 2 and 3 fill the queue: 4 waits for room.
        assert sent == [2, 3]
        with pytest.raises(trio.WouldBlock):
            outbox.send_nowait(reply(5))
        gate.set()
    assert delivered == [1, 2, 3, 4]
    assert sorted(sent) == [1, 2, 3, 4]


async def test_a_cancelled_deliverer_hands_what_is_queued_to_a_task_of_its_own() -> None:
    delivered: list[int] = []

    async def deliver(item: Outbound) -> None:
        if item.payload["id"] == 1:
            await trio.sleep_forever()
        delivered.append(item.payload["id"])

    outbox = Outbox(None, deliver=deliver)
    async with trio.open_nursery() as nursery:
        outbox.attach(nursery)
        async with trio.open_nursery() as senders:
            senders.start_soon(outbox.send, reply(1))
            await trio.testing.wait_all_tasks_blocked()
            await outbox.send(reply(2))
            await outbox.send(reply(3))
            assert delivered == []
            # The deliverer is cancelled holding 1: what others queued still goes out.
            senders.cancel_scope.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert delivered == [2, 3]
        assert outbox.idle


async def test_a_bare_channel_becomes_an_outbox() -> None:
    send, receive = trio.open_memory_channel[Outbound](1)
    outbox = Outbox.of(send)
    assert Outbox.of(outbox) is outbox
    await outbox.send(reply(1))
    with pytest.raises(trio.WouldBlock):
        outbox.send_nowait(reply(2))
    assert receive.receive_nowait().payload["id"] == 1
    async with outbox:
        pass
    with pytest.raises(trio.EndOfChannel):
        receive.receive_nowait()
