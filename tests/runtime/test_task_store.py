"""Tasks shared by replicas through a TaskStore, in one process.

Each replica is a task table of its own (a ``TaskRegistry`` in its own nursery, or a
session's ``TaskManager``); they share one ``InMemoryTaskStore`` as replicas share
Redis, and one change bus as they would share a Redis bus. A replica "dies" when its
nursery is cancelled: its actors end without a word, its leases stop being renewed.
Time is virtual, so the lease's expiry is exact.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from mcpactor import Context, RequestError, TaskOptions
from mcpactor.protocol import JSONObject
from mcpactor.runtime._bus import InMemoryBus
from mcpactor.runtime.tasks import (
    REPLICA_STOPPED,
    InMemoryTaskStore,
    TaskCommand,
    TaskManager,
    TaskRecord,
    TaskRegistry,
)
from mcpactor.server._execution import TaskMetadata

from ..server.conftest import FakePeer, make_context
from .test_tasks_extension import Client, jobs_server

LEASE = 15.0


@asynccontextmanager
async def replica(
    store: InMemoryTaskStore, bus: Any, log: list[str] | None = None
) -> AsyncIterator[tuple[Client, TaskRegistry, trio.CancelScope]]:
    """One replica of the tasks extension: its registry in a nursery of its own."""
    async with trio.open_nursery() as nursery:
        registry = TaskRegistry(nursery, bus=bus, options=TaskOptions(store=store))
        yield (
            Client(jobs_server([] if log is None else log), registry),
            registry,
            (nursery.cancel_scope),
        )
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def two_replicas(
    log: list[str] | None = None,
) -> AsyncIterator[tuple[Client, Client, InMemoryTaskStore, InMemoryBus]]:
    store = InMemoryTaskStore(lease=LEASE)
    bus = InMemoryBus()
    async with replica(store, bus, log) as (a, _, _), replica(store, bus, log) as (b, _, _):
        yield a, b, store, bus


@contextlib.asynccontextmanager
async def running(*managers: TaskManager) -> AsyncIterator[None]:
    """Run ``managers`` as their sessions do: their task actors in one nursery."""
    async with trio.open_nursery() as nursery:
        with contextlib.ExitStack() as stack:
            for manager in managers:
                stack.enter_context(manager.running(nursery))
            yield
        nursery.cancel_scope.cancel()


async def test_a_task_created_on_one_replica_is_polled_on_another(autojump_clock: Any) -> None:
    async with two_replicas() as (a, b, store, _bus):
        created = await a.create("slow_compute", {"seconds": 30, "label": "x"})
        task_id = created["taskId"]
        got = await b.get(task_id)
        assert got["status"] == "working"
        assert got["createdAt"] == created["createdAt"]
        assert got["ttlMs"] == created["ttlMs"]
        # Past one lease: the owner renewed it, so the task is still working.
        await trio.sleep(LEASE * 1.5)
        assert (await b.get(task_id))["status"] == "working"
        await trio.sleep(20)
        done = await b.get(task_id)
        assert done["status"] == "completed"
        assert done["result"]["content"] == [{"type": "text", "text": "computed x"}]
        assert done == await a.get(task_id)
        assert len(store) == 1


async def test_cancel_on_another_replica_reaches_the_owners_actor(autojump_clock: Any) -> None:
    log: list[str] = []
    async with two_replicas(log) as (a, b, _store, bus):
        task_id = (await a.create("slow_compute", {"seconds": 60, "label": "c"}))["taskId"]
        await trio.sleep(3)
        with bus.listen() as listener:
            ack = await b.send("tasks/cancel", {"taskId": task_id})
            assert ack["resultType"] == "complete"
            await trio.testing.wait_all_tasks_blocked()
            # The handler's scope was cancelled at once, on the replica that runs it.
            assert log == ["slow_compute c ended at 3"]
            event = await listener.next()
            assert event.task_id == task_id
            assert event.payload is not None
            assert event.payload["status"] == "cancelled"
            # One notice: the owner does not announce what the canceller did.
            with trio.move_on_after(100):
                await listener.next()
                pytest.fail("the cancel was announced twice")
        for replica_client in (a, b):
            got = await replica_client.get(task_id)
            assert got["status"] == "cancelled"
            assert got["statusMessage"] == "The task was cancelled by request."


async def test_an_answer_given_on_another_replica_resumes_the_parked_task(
    autojump_clock: Any,
) -> None:
    async with two_replicas() as (a, b, _store, _bus):
        task_id = (await a.create("confirm_delete", {"filename": "f"}))["taskId"]
        await trio.testing.wait_all_tasks_blocked()
        parked = await b.get(task_id)
        assert parked["status"] == "input_required"
        [key] = parked["inputRequests"]
        answer = {"action": "accept", "content": {"ok": True}}
        ack = await b.send("tasks/update", {"taskId": task_id, "inputResponses": {key: answer}})
        assert ack["resultType"] == "complete"
        await trio.testing.wait_all_tasks_blocked()
        done = await b.get(task_id)
        assert done["status"] == "completed"
        assert done["result"]["content"][0]["text"] == "accept: {'ok': True}"


async def test_a_task_whose_replica_stopped_fails_when_its_lease_lapses(
    autojump_clock: Any,
) -> None:
    log: list[str] = []
    store = InMemoryTaskStore(lease=LEASE)
    bus = InMemoryBus()
    async with replica(store, bus) as (b, _, _):
        async with replica(store, bus, log) as (a, _, a_scope):
            task_id = (await a.create("slow_compute", {"seconds": 600, "label": "d"}))["taskId"]
            await trio.sleep(9)
            a_scope.cancel()  # the replica stops; its actor ends without a word
        assert log == ["slow_compute d ended at 9"]
        # The lease was last renewed at 5 s (a third of its length), so it lapses at 20 s.
        await trio.sleep(20 - trio.current_time() - 0.001)
        assert (await b.get(task_id))["status"] == "working"
        await trio.sleep(0.001)
        with bus.listen() as listener:
            failed = await b.get(task_id)
            # The replica whose read failed it announces it, once.
            notice = await listener.next()
            assert notice.payload is not None
            assert notice.payload["status"] == "failed"
            assert notice.payload["error"] == failed["error"]
            await b.get(task_id)
            with trio.move_on_after(100):
                await listener.next()
                pytest.fail("the failure was announced twice")
        assert failed["status"] == "failed"
        assert failed["statusMessage"] == REPLICA_STOPPED
        assert failed["error"]["code"] == -32603
        assert REPLICA_STOPPED in failed["error"]["message"]
        # And it stays failed: a cancel now changes nothing.
        await b.send("tasks/cancel", {"taskId": task_id})
        assert (await b.get(task_id))["status"] == "failed"


async def test_another_principals_task_is_not_found_on_any_replica(autojump_clock: Any) -> None:
    async with two_replicas() as (a, b, _store, _bus):
        task_id = (await a.create("slow_compute", {"seconds": 5}))["taskId"]
        for method, params in (
            ("tasks/get", {}),
            ("tasks/cancel", {}),
            ("tasks/update", {"inputResponses": {}}),
        ):
            error = await b.fails(method, {"taskId": task_id, **params}, principal="mallory")
            assert error.code == -32602
        assert (await b.get(task_id))["status"] == "working"
        assert (await b.fails("tasks/get", {"taskId": "no-such-task"})).code == -32602


async def test_a_listen_stream_on_another_replica_knows_the_task(autojump_clock: Any) -> None:
    store = InMemoryTaskStore(lease=LEASE)
    bus = InMemoryBus()
    async with replica(store, bus) as (a, _, _), replica(store, bus) as (_, b_registry, _):
        mine = (await a.create("slow_compute", {"seconds": 5}))["taskId"]
        theirs = (
            await a.send(
                "tools/call",
                {"name": "slow_compute", "arguments": {"seconds": 5}},
                principal="mallory",
            )
        )["taskId"]
        known = await b_registry.known_tasks([mine, theirs, "unknown"])
        assert known == {mine}
        assert not b_registry.known(mine)
        assert await b_registry.known_tasks([mine, theirs], principal="mallory") == {theirs}


async def test_a_task_expires_from_the_store_with_its_ttl(autojump_clock: Any) -> None:
    options = TaskOptions(default_ttl=10.0)
    store = InMemoryTaskStore(lease=LEASE)
    async with trio.open_nursery() as nursery:
        a = Client(
            jobs_server([]), TaskRegistry(nursery, options=attrs.evolve(options, store=store))
        )
        b = Client(
            jobs_server([]), TaskRegistry(nursery, options=attrs.evolve(options, store=store))
        )
        task_id = (await a.create("slow_compute", {"seconds": 1}))["taskId"]
        await trio.sleep(9.9)
        assert (await b.get(task_id))["status"] == "completed"
        await trio.sleep(0.2)
        assert (await b.fails("tasks/get", {"taskId": task_id})).code == -32602
        assert len(store) == 0
        nursery.cancel_scope.cancel()


class LossyStore(InMemoryTaskStore):
    """A store whose commands never reach the owner (its subscription dropped)."""

    async def send(self, record: TaskRecord, command: TaskCommand) -> None:
        await trio.lowlevel.checkpoint()


async def test_a_cancel_the_owner_missed_stands_when_its_task_next_changes(
    autojump_clock: Any,
) -> None:
    store = LossyStore(lease=LEASE)
    bus = InMemoryBus()
    async with replica(store, bus) as (a, _, _), replica(store, bus) as (b, _, _):
        task_id = (await a.create("slow_compute", {"seconds": 5}))["taskId"]
        with bus.listen() as listener:
            await b.send("tasks/cancel", {"taskId": task_id})
            assert (await listener.next()).payload["status"] == "cancelled"  # type: ignore[index]
            await trio.sleep(6)
            # The work finished on the owner, after the cancel: the cancel stands,
            # and the owner announces nothing of its own.
            for client in (a, b):
                assert (await client.get(task_id))["status"] == "cancelled"
            with trio.move_on_after(100):
                await listener.next()
                pytest.fail("the owner announced an outcome over the cancel")


class BrokenStore(InMemoryTaskStore):
    """A store whose server went away."""

    async def create(self, record: TaskRecord) -> TaskRecord:
        raise ConnectionError("connection refused")

    async def load(self, task_id: str) -> TaskRecord | None:
        raise ConnectionError("connection refused")


async def test_an_unreachable_store_refuses_new_tasks_with_a_clear_error() -> None:
    async with trio.open_nursery() as nursery:
        registry = TaskRegistry(nursery, options=TaskOptions(store=BrokenStore()))
        client = Client(jobs_server([]), registry)
        with pytest.raises(RequestError) as info:
            await client.send("tools/call", {"name": "slow_compute", "arguments": {"seconds": 1}})
        assert info.value.code == -32603
        assert "the task store is unavailable" in str(info.value)
        assert "connection refused" in str(info.value)
        assert registry.statistics() == type(registry.statistics())(0, 0, 0)
        error = await client.fails("tasks/get", {"taskId": "abc"})
        assert error.code == -32603
        nursery.cancel_scope.cancel()


# --- the session era (2025-11-25) -------------------------------------------------------


@attrs.define(eq=False)
class SessionPeer(FakePeer):
    """The peer of one HTTP session, as each replica that adopted it has one."""

    session_id: str | None = "session-1"


def task_context(peer: SessionPeer) -> Context:
    return make_context("2025-11-25", peer=peer)


async def sleeper(ctx: Context) -> JSONObject:
    await trio.sleep(30)
    return {"content": [{"type": "text", "text": "slept"}]}


async def test_a_sessions_task_is_answered_by_another_replica_of_the_session(
    autojump_clock: Any,
) -> None:
    store = InMemoryTaskStore(lease=LEASE)
    options = TaskOptions(store=store, page_size=2)
    peer_a, peer_b = SessionPeer(), SessionPeer()
    a, b = TaskManager(peer_a, options), TaskManager(peer_b, options)
    async with running(a, b):
        created = [
            (await a.create(sleeper, task_context(peer_a), TaskMetadata(ttl_ms=60_000)))["task"]
            for _ in range(3)
        ]
        task_id = created[0]["taskId"]
        got = await b.get(task_id)
        assert got == created[0]
        first = await b.page(0)
        assert [task["taskId"] for task in first["tasks"]] == [t["taskId"] for t in created[:2]]
        from mcpactor.server._tasks import decode_cursor

        rest = await b.page(decode_cursor(first["nextCursor"]))
        assert [task["taskId"] for task in rest["tasks"]] == [created[2]["taskId"]]
        assert "nextCursor" not in rest

        cancelled = await b.cancel(created[1]["taskId"])
        assert cancelled["status"] == "cancelled"
        assert peer_b.notifications[-1][0] == "notifications/tasks/status"
        with pytest.raises(RequestError) as info:
            await b.result(created[1]["taskId"], request_id=9)
        assert "was cancelled" in info.value.message
        with pytest.raises(RequestError) as info:
            await b.cancel(created[1]["taskId"])
        assert info.value.code == -32602

        start = trio.current_time()
        answer = await b.result(task_id, request_id=7)
        assert trio.current_time() - start == pytest.approx(30)
        assert answer["content"] == [{"type": "text", "text": "slept"}]
        assert answer["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        # The owner's actors end right after their last state is stored.
        with trio.fail_after(1):
            await a.wait_idle()
        assert a.statistics().running == 0
        # The owner's actor of the cancelled task ended when the cancel reached it.
        assert (await a.get(created[1]["taskId"]))["status"] == "cancelled"


async def test_another_sessions_task_is_not_found_in_the_store(autojump_clock: Any) -> None:
    store = InMemoryTaskStore(lease=LEASE)
    options = TaskOptions(store=store)
    peer_a, other = SessionPeer(), SessionPeer(session_id="session-2")
    a, b = TaskManager(peer_a, options), TaskManager(other, options)
    async with running(a, b):
        task_id = (await a.create(sleeper, task_context(peer_a), TaskMetadata()))["task"]["taskId"]
        with pytest.raises(RequestError) as info:
            await b.get(task_id)
        assert info.value.code == -32602
        assert (await b.page(0))["tasks"] == []


async def test_tasks_result_on_another_replica_ends_when_the_owner_stops(
    autojump_clock: Any,
) -> None:
    store = InMemoryTaskStore(lease=LEASE)
    options = TaskOptions(store=store)
    peer_a, peer_b = SessionPeer(), SessionPeer()
    a, b = TaskManager(peer_a, options), TaskManager(peer_b, options)
    async with running(b):
        with trio.CancelScope() as a_scope:
            async with running(a):
                task_id = (await a.create(sleeper, task_context(peer_a), TaskMetadata()))["task"][
                    "taskId"
                ]
                await trio.sleep(1)
                a_scope.cancel()
        with trio.fail_after(3 * LEASE), pytest.raises(RequestError) as info:
            await b.result(task_id, request_id=3)
        assert REPLICA_STOPPED in info.value.message
        assert (await b.get(task_id))["status"] == "failed"


async def test_a_session_without_an_id_keeps_its_tasks_to_itself(autojump_clock: Any) -> None:
    store = InMemoryTaskStore(lease=LEASE)
    peer = SessionPeer(session_id=None)
    manager = TaskManager(peer, TaskOptions(store=store))
    async with running(manager):
        await manager.create(sleeper, task_context(peer), TaskMetadata())
        assert len(store) == 0


# --- the records and commands -------------------------------------------------------------


def test_a_record_round_trips_through_json() -> None:
    record = TaskRecord(
        task_id="t1",
        number=3,
        status="input_required",
        status_message="waiting",
        created_at=1.5,
        updated_at=2.0,
        ttl_ms=1000,
        poll_interval_ms=500,
        principal="alice",
        input_requests={"k": {"method": "elicitation/create"}},
        replica="r1",
    )
    assert TaskRecord.from_json(record.to_json()) == record
    command = TaskCommand("update", "t1", {"k": {"action": "accept"}})
    assert TaskCommand.from_json(command.to_json()) == command


@pytest.mark.parametrize(
    "value",
    [
        None,
        [],
        {"taskId": "t"},
        {
            "taskId": 1,
            "number": 1,
            "status": "working",
            "createdAt": 1,
            "updatedAt": 1,
            "replica": "r",
        },
        {
            "taskId": "t",
            "number": 1,
            "status": "sleeping",
            "createdAt": 1,
            "updatedAt": 1,
            "replica": "r",
        },
        {
            "taskId": "t",
            "number": True,
            "status": "working",
            "createdAt": 1,
            "updatedAt": 1,
            "replica": "r",
        },
        {
            "taskId": "t",
            "number": 1,
            "status": "working",
            "createdAt": 1,
            "updatedAt": 1,
            "replica": "r",
            "result": "text",
        },
    ],
)
def test_a_malformed_record_is_a_value_error(value: object) -> None:
    with pytest.raises(ValueError, match="task record"):
        TaskRecord.from_json(value)


@pytest.mark.parametrize(
    "value",
    [None, {"kind": "kill", "taskId": "t"}, {"kind": "update", "taskId": "t", "responses": [1]}],
)
def test_a_malformed_command_is_a_value_error(value: object) -> None:
    with pytest.raises(ValueError, match="task command"):
        TaskCommand.from_json(value)
