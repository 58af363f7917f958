"""Tasks shared by replicas through Redis: ``RedisTaskStore`` against a real redis-server.

Each replica is a ``TaskRegistry`` (or a session's ``TaskManager``) with a store of its
own, named after it, on one Redis and one key prefix; the bus they share is an in-memory
one (sharing a bus is not the store's business). Time is real: Redis keeps the TTLs.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import coredis
import orjson
import pytest
import trio
import trio.testing
from coredis.tokens import PureToken

from mcpactor import Context, RequestError, Server, TaskOptions
from mcpactor.protocol import JSONObject
from mcpactor.runtime._bus import InMemoryBus
from mcpactor.runtime.tasks import REPLICA_STOPPED, TaskManager, TaskRecord, TaskRegistry
from mcpactor.server._execution import TaskMetadata
from mcpactor.server._tasks import decode_cursor
from mcpactor.store._tasks import RedisTaskStore, open_redis_task_store

from ..runtime.test_tasks_extension import SCHEMA, Client
from ..server.conftest import FakePeer, make_context
from .conftest import free_port, needs_redis, running_redis
from .test_sessions import ignoring_unclosed_buffers

pytestmark = needs_redis


@contextlib.asynccontextmanager
async def running(*managers: TaskManager) -> AsyncIterator[None]:
    """Run ``managers`` as their sessions do: their task actors in one nursery."""
    async with trio.open_nursery() as nursery:
        with contextlib.ExitStack() as stack:
            for manager in managers:
                stack.enter_context(manager.running(nursery))
            yield
        nursery.cancel_scope.cancel()


def gates_server(gates: dict[str, trio.Event], ended: dict[str, trio.Event]) -> Server:
    server = Server("gates")

    @server.tool(task_support="optional")
    async def wait_for(gate: str) -> str:
        """Wait until the test opens ``gate``."""
        try:
            await gates.setdefault(gate, trio.Event()).wait()
        finally:
            ended.setdefault(gate, trio.Event()).set()
        return f"passed {gate}"

    @server.tool(task_support="optional")
    async def ask(ctx: Context) -> str:
        """Ask the client once."""
        answer = await ctx.elicit("Go on?", SCHEMA)
        return f"{answer.action}: {answer.content}"

    return server


@attrs.define
class Replicas:
    a: Client
    b: Client
    a_store: RedisTaskStore
    b_store: RedisTaskStore
    gates: dict[str, trio.Event]
    ended: dict[str, trio.Event]
    a_scope: trio.CancelScope
    bus: InMemoryBus

    def open(self, gate: str) -> None:
        self.gates.setdefault(gate, trio.Event()).set()

    async def wait_ended(self, gate: str) -> None:
        """Wait until the handler waiting on ``gate`` ended, on whichever replica."""
        with trio.fail_after(5):
            await self.ended.setdefault(gate, trio.Event()).wait()


@asynccontextmanager
async def two_replicas(
    redis: coredis.Redis[bytes], *, lease: float = 5.0
) -> AsyncIterator[Replicas]:
    prefix = f"test-{secrets.token_hex(4)}"
    gates: dict[str, trio.Event] = {}
    ended: dict[str, trio.Event] = {}
    bus = InMemoryBus()
    server = gates_server(gates, ended)
    async with (
        open_redis_task_store(redis, replica="b", prefix=prefix, lease=lease) as b_store,
        trio.open_nursery() as b_nursery,
    ):
        b = Client(server, TaskRegistry(b_nursery, bus=bus, options=TaskOptions(store=b_store)))
        # Replica a runs in a task of its own, so that it can stop while the test goes on.
        a_scope = trio.CancelScope()

        async def run_a(*, task_status: trio.TaskStatus[tuple[Client, RedisTaskStore]]) -> None:
            with a_scope:
                async with (
                    open_redis_task_store(redis, replica="a", prefix=prefix, lease=lease) as store,
                    trio.open_nursery() as a_nursery,
                ):
                    registry = TaskRegistry(a_nursery, bus=bus, options=TaskOptions(store=store))
                    task_status.started((Client(server, registry), store))
                    await trio.sleep_forever()

        a, a_store = await b_nursery.start(run_a)
        yield Replicas(a, b, a_store, b_store, gates, ended, a_scope, bus)
        a_scope.cancel()
        b_nursery.cancel_scope.cancel()


async def eventually(client: Client, store: RedisTaskStore, task_id: str, status: str) -> Any:
    """Ask ``tasks/get`` at each change of the task (once a lease at least) until ``status``."""
    with trio.fail_after(5), store.watch(task_id) as watch:
        while True:
            got = await client.get(task_id)
            if got["status"] == status:
                return got
            with trio.move_on_after(store.lease):
                await watch.wait()


async def test_a_task_created_on_one_replica_completes_for_another(
    redis: coredis.Redis[bytes],
) -> None:
    async with two_replicas(redis) as replicas:
        created = await replicas.a.create("wait_for", {"gate": "g"})
        task_id = created["taskId"]
        got = await replicas.b.get(task_id)
        assert got["status"] == "working"
        assert got["createdAt"] == created["createdAt"]
        assert got["ttlMs"] == 3_600_000
        pttl = await redis.pttl(f"{replicas.a_store._prefix}:task:{task_id}")
        assert 3_500_000 < pttl <= 3_600_000
        replicas.open("g")
        done = await eventually(replicas.b, replicas.b_store, task_id, "completed")
        assert done["result"]["content"] == [{"type": "text", "text": "passed g"}]
        assert done == await replicas.a.get(task_id)


async def test_cancel_on_another_replica_reaches_the_owner_through_redis(
    redis: coredis.Redis[bytes],
) -> None:
    async with two_replicas(redis) as replicas:
        task_id = (await replicas.a.create("wait_for", {"gate": "never"}))["taskId"]
        ack = await replicas.b.send("tasks/cancel", {"taskId": task_id})
        assert ack["resultType"] == "complete"
        assert (await replicas.b.get(task_id))["status"] == "cancelled"
        await replicas.wait_ended("never")
        got = await replicas.a.get(task_id)
        assert got["status"] == "cancelled"
        assert got["statusMessage"] == "The task was cancelled by request."


async def test_an_answer_on_another_replica_resumes_the_owners_task(
    redis: coredis.Redis[bytes],
) -> None:
    async with two_replicas(redis) as replicas:
        task_id = (await replicas.a.create("ask"))["taskId"]
        parked = await eventually(replicas.b, replicas.b_store, task_id, "input_required")
        [key] = parked["inputRequests"]
        answer = {"action": "accept", "content": {"ok": True}}
        await replicas.b.send("tasks/update", {"taskId": task_id, "inputResponses": {key: answer}})
        done = await eventually(replicas.b, replicas.b_store, task_id, "completed")
        assert done["result"]["content"][0]["text"] == "accept: {'ok': True}"


async def test_a_task_of_a_stopped_replica_fails_once_its_lease_lapses(
    redis: coredis.Redis[bytes],
) -> None:
    # A lease long enough that a busy machine still renews it in time.
    async with two_replicas(redis, lease=1.0) as replicas:
        task_id = (await replicas.a.create("wait_for", {"gate": "never"}))["taskId"]
        lease_key = f"{replicas.a_store._prefix}:task-lease:{task_id}"
        assert await redis.get(lease_key) == b"a"
        # The owner renews its lease: past several leases the task still works.
        await trio.sleep(2.5)
        assert (await replicas.b.get(task_id))["status"] == "working"
        replicas.a_scope.cancel()  # the replica stops; its actor ends without a word
        await replicas.wait_ended("never")
        with replicas.bus.listen() as listener:
            failed = await eventually(replicas.b, replicas.b_store, task_id, "failed")
            notice = await listener.next()
        assert notice.payload is not None
        assert notice.payload["status"] == "failed"
        assert failed["statusMessage"] == REPLICA_STOPPED
        assert failed["error"]["code"] == -32603
        await replicas.b.send("tasks/cancel", {"taskId": task_id})
        assert (await replicas.b.get(task_id))["status"] == "failed"


async def test_a_malformed_command_or_record_is_ignored(redis: coredis.Redis[bytes]) -> None:
    async with two_replicas(redis) as replicas:
        prefix = replicas.a_store._prefix
        task_id = (await replicas.a.create("wait_for", {"gate": "g"}))["taskId"]
        await redis.publish(f"{prefix}:task-commands:a", b"{not json")
        await redis.publish(f"{prefix}:task-commands:a", orjson.dumps({"kind": "rm"}))
        await redis.publish(f"{prefix}:task-commands:a", b"x" * (2 << 20))
        # The subscription survived them: a cancel still reaches the owner.
        await replicas.b.send("tasks/cancel", {"taskId": task_id})
        await replicas.wait_ended("g")
        await redis.hset(f"{prefix}:task:forged", {"status": "working", "record": "[1]"})
        await redis.hset(f"{prefix}:task:forged", {"number": "1"})
        error = await replicas.b.fails("tasks/get", {"taskId": "forged"})
        assert error.code == -32602


# --- the session era --------------------------------------------------------------------


@attrs.define(eq=False)
class SessionPeer(FakePeer):
    session_id: str | None = "session-1"


async def test_a_sessions_tasks_are_listed_awaited_and_cancelled_from_another_replica(
    redis: coredis.Redis[bytes],
) -> None:
    prefix = f"test-{secrets.token_hex(4)}"
    release = trio.Event()
    ended: list[trio.Event] = []

    async def work(ctx: Context) -> JSONObject:
        done = trio.Event()
        ended.append(done)
        try:
            await release.wait()
        finally:
            done.set()
        return {"content": [{"type": "text", "text": "released"}]}

    async with (
        open_redis_task_store(redis, replica="a", prefix=prefix) as a_store,
        open_redis_task_store(redis, replica="b", prefix=prefix) as b_store,
    ):
        peer_a, peer_b = SessionPeer(), SessionPeer()
        a = TaskManager(peer_a, TaskOptions(store=a_store, page_size=2))
        b = TaskManager(peer_b, TaskOptions(store=b_store, page_size=2))
        async with running(a, b):
            ctx = make_context("2025-11-25", peer=peer_a)
            created = [
                (await a.create(work, ctx, TaskMetadata(ttl_ms=60_000)))["task"] for _ in range(3)
            ]
            ids = [task["taskId"] for task in created]
            first = await b.page(0)
            assert [task["taskId"] for task in first["tasks"]] == ids[:2]
            rest = await b.page(decode_cursor(first["nextCursor"]))
            assert [task["taskId"] for task in rest["tasks"]] == ids[2:]
            assert await redis.pttl(f"{prefix}:tasks-of:session-1") > 59_000

            cancelled = await b.cancel(ids[1])
            assert cancelled["status"] == "cancelled"
            with pytest.raises(RequestError, match="was cancelled"):
                await b.result(ids[1], request_id=5)

            async with trio.open_nursery() as nursery:
                answers: list[JSONObject] = []

                async def wait_result() -> None:
                    answers.append(await b.result(ids[0], request_id=6))

                nursery.start_soon(wait_result)
                # Until it waits: on its way there it reads Redis, and a task blocked on
                # a socket counts as blocked too, so one look is not enough.
                with trio.fail_after(5):
                    while b.statistics().waiting != 1:
                        await trio.testing.wait_all_tasks_blocked()
                release.set()
            assert answers[0]["content"] == [{"type": "text", "text": "released"}]
            # The owner's actor ended when the cancel reached it, before the release.
            assert ended[1].is_set()
            assert (await a.get(ids[1]))["status"] == "cancelled"


async def test_a_record_survives_the_round_trip_through_redis(redis: coredis.Redis[bytes]) -> None:
    async with open_redis_task_store(redis, replica="a", prefix=secrets.token_hex(4)) as store:
        record = TaskRecord(
            task_id="t1",
            status="input_required",
            created_at=1.5,
            updated_at=2.5,
            ttl_ms=10_000,
            principal="alice",
            input_requests={"q": {"method": "elicitation/create", "params": {}}},
            result=None,
            replica="a",
        )
        stored = await store.create(record)
        assert stored.number >= 1
        assert await store.load("t1") == stored
        assert await store.load("missing") is None
        done = attrs.evolve(
            stored, status="completed", result={"content": []}, input_requests=None
        )
        assert await store.save(done) == done
        # Terminal is final: a later state does not overwrite it.
        assert await store.save(attrs.evolve(done, status="working")) == done
        assert await store.cancel("t1", "late", 3.0) == done


# --- when the subscription breaks -------------------------------------------------------------


async def test_after_redis_restarts_cancels_and_changes_cross_the_replicas_again() -> None:
    port = free_port()
    arguments = ("--port", str(port), "--bind", "127.0.0.1")
    client: coredis.Redis[bytes] = coredis.Redis(host="127.0.0.1", port=port, connect_timeout=1)
    with ignoring_unclosed_buffers(), contextlib.ExitStack() as server:
        server.enter_context(running_redis(*arguments))
        async with client, two_replicas(client) as replicas:
            stores = (replicas.a_store, replicas.b_store)
            server.close()  # Redis restarts, empty
            with trio.fail_after(10):
                while not all(store.subscription.reconnects for store in stores):  # noqa: ASYNC110
                    await trio.sleep(0.05)
            server.enter_context(running_redis(*arguments))
            with trio.fail_after(10):
                while not all(store.subscription.resubscribed for store in stores):  # noqa: ASYNC110
                    await trio.sleep(0.05)
            # A cancel through the other replica stops the owner's handler...
            task_id = (await replicas.a.create("wait_for", {"gate": "cancel me"}))["taskId"]
            await replicas.b.send("tasks/cancel", {"taskId": task_id})
            await replicas.wait_ended("cancel me")
            # ...and the other replica hears a task change at once, not a lease later.
            task_id = (await replicas.a.create("wait_for", {"gate": "finish"}))["taskId"]
            replicas.open("finish")
            done = await eventually(replicas.b, replicas.b_store, task_id, "completed")
            assert done["result"]["content"] == [{"type": "text", "text": "passed finish"}]


async def test_a_cancel_sent_while_the_owner_was_not_subscribed_is_caught_up(
    redis: coredis.Redis[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with two_replicas(redis) as replicas:
        owner = replicas.a_store.subscription
        task_id = (await replicas.a.create("wait_for", {"gate": "missed"}))["taskId"]
        with ignoring_unclosed_buffers():
            # The owner's subscription breaks and cannot come back for now.
            away: coredis.Redis[bytes] = coredis.Redis(unix_socket_path="/nonexistent")
            monkeypatch.setattr(owner, "_client", away)
            await redis.client_kill(type_=PureToken.PUBSUB)
            with trio.fail_after(10):
                while owner.reconnects < 2:  # noqa: ASYNC110 (it tried again, and failed)
                    await trio.sleep(0.02)
            # The cancel's message reaches nobody; the store holds the outcome.
            await replicas.b.send("tasks/cancel", {"taskId": task_id})
            assert not replicas.ended.get("missed")
            monkeypatch.setattr(owner, "_client", redis)
            # Subscribed again, the owner finds its task cancelled in the store.
            await replicas.wait_ended("missed")
        assert owner.resubscribed == 1
