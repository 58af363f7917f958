"""The one Outbox: a queue to the writer, with the write-through shortcut."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from mcpactor.runtime import Outbound, OutboundKind, Outbox


def reply(n: int) -> Outbound:
    return Outbound(OutboundKind.RESPONSE, {"jsonrpc": "2.0", "id": n, "result": {}}, n)


async def test_the_shortcut_is_offered_only_while_nothing_is_queued() -> None:
    taken: list[Outbound] = []
    accept = True

    def through(item: Outbound) -> bool:
        if accept:
            taken.append(item)
        return accept

    send, receive = trio.open_memory_channel[Outbound](8)
    outbox = Outbox(send, through=through)
    outbox.send_nowait(reply(1))
    assert [item.payload["id"] for item in taken] == [1]
    assert outbox.queued == 0
    accept = False
    await outbox.send(reply(2))  # refused: queued for the writer
    assert outbox.queued == 1
    accept = True
    outbox.send_nowait(reply(3))  # behind 2: not offered, so order is kept
    assert [item.payload["id"] for item in taken] == [1]
    assert [receive.receive_nowait().payload["id"] for _ in range(2)] == [2, 3]
    outbox.done(2)
    outbox.send_nowait(reply(4))
    assert [item.payload["id"] for item in taken] == [1, 4]
    outbox.close()
    with pytest.raises(trio.ClosedResourceError):
        outbox.send_nowait(reply(5))
    with pytest.raises(trio.ClosedResourceError):
        await outbox.send(reply(5))


async def test_without_a_channel_the_senders_deliver_in_order() -> None:
    delivered: list[int] = []
    gate = trio.Event()

    async def deliver(item: Outbound) -> None:
        await gate.wait()
        delivered.append(item.payload["id"])

    outbox = Outbox(None, through=lambda item: False, deliver=deliver)
    with pytest.raises(trio.WouldBlock):
        outbox.send_nowait(reply(1))
    async with trio.open_nursery() as nursery:
        for n in range(1, 4):
            nursery.start_soon(outbox.send, reply(n))
            await trio.testing.wait_all_tasks_blocked()
        # The first sender found it free and delivers; the others wait their turn.
        assert outbox.queued == 2
        gate.set()
    assert delivered == [1, 2, 3]
    assert outbox.queued == 0


async def test_a_free_outbox_is_delivered_by_its_sender_a_busy_one_queues() -> None:
    delivered: list[tuple[int, str]] = []
    gate = trio.Event()

    async def deliver(item: Outbound) -> None:
        if item.payload["id"] == 1:
            await gate.wait()
        delivered.append((item.payload["id"], trio.lowlevel.current_task().name))

    send, receive = trio.open_memory_channel[Outbound](8)
    outbox = Outbox(send, deliver=deliver)

    async def drain() -> None:
        async for item in receive:
            await outbox.deliver_queued(item)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain, name="drain")
        nursery.start_soon(outbox.send, reply(1), name="first")
        await trio.testing.wait_all_tasks_blocked()
        # The first sender delivers and is held: what comes meanwhile queues for the
        # drain task, which waits for its turn.
        await outbox.send(reply(2))
        outbox.send_nowait(reply(3))
        await trio.testing.wait_all_tasks_blocked()
        assert delivered == []
        assert outbox.queued == 2
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert [n for n, _ in delivered] == [1, 2, 3]
        assert [who for _, who in delivered] == ["first", "drain", "drain"]
        assert outbox.queued == 0
        # Free again: the sender delivers in its own task.
        await outbox.send(reply(4))
        assert delivered[-1][0] == 4
        assert delivered[-1][1] != "drain"
        outbox.close()


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
