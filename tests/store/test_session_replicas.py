"""Sessions served by several replicas that share records and a relay in Redis.

The replicas of tests/runtime/test_replicas.py, each with its own ``RedisSessionRecords``
and ``RedisRelay`` on one real redis-server instead of a MemoryHub. Messages go through
the server's sockets, so a test waits for their effect by polling (bounded), where the
in-memory tests wait for every task to block.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import coredis
import trio

from mcpactor.runtime.http import RelayKind, Replicas
from mcpactor.store import RedisRelay, RedisSessionRecords
from mcpactor.transports import HttpOptions, open_http_app

from ..runtime.test_replicas import (
    TIMEOUT,
    Cluster,
    _principal,
    _sum,
    _tool,
    first_message,
    initialized,
    on,
    sampling_answer,
)
from ..transports._http_client import AsgiClient, read_reply, start_post
from ..transports._http_server import Probe, make_server
from .conftest import free_port, needs_redis, running_redis
from .test_sessions import ignoring_unclosed_buffers

pytestmark = needs_redis


@attrs.define
class RedisHub:
    """What the replicas share in Redis, seen the way the tests see a MemoryHub."""

    records: RedisSessionRecords
    relays: list[RedisRelay] = attrs.field(factory=list)

    @property
    def sent(self) -> dict[RelayKind, int]:
        """Messages the replicas sent so far, by kind."""
        return {kind: sum(relay.sent[kind] for relay in self.relays) for kind in RelayKind}


@contextlib.asynccontextmanager
async def redis_cluster(
    client: coredis.Redis[bytes], count: int = 2, **options: Any
) -> AsyncIterator[Cluster]:
    """``count`` replicas of the test server, sharing records and a relay through Redis."""
    hub = RedisHub(RedisSessionRecords(client, prefix="replicas"))
    probe = Probe()
    server = make_server(probe)

    @server.resource("mem://doc")
    async def doc() -> str:
        """A document."""
        return "text"

    async with trio.open_nursery() as nursery:
        async with contextlib.AsyncExitStack() as stack:
            clients = []
            for name in "abc"[:count]:
                relay = RedisRelay(client, replica_id=name, prefix="replicas")
                hub.relays.append(relay)
                replicas = Replicas(RedisSessionRecords(client, prefix="replicas"), relay)
                app = await stack.enter_async_context(
                    open_http_app(
                        server,
                        options=HttpOptions(replicas=replicas, authenticate=_principal, **options),
                    )
                )
                clients.append(AsgiClient(app, nursery))
            yield Cluster(hub, probe, clients)  # type: ignore[arg-type]
        nursery.cancel_scope.cancel()


async def until(condition: Callable[[], bool]) -> None:
    """Wait until ``condition`` holds: what another replica does arrives over Redis."""
    with trio.fail_after(TIMEOUT):
        while not condition():  # noqa: ASYNC110 (no event marks a message's arrival)
            await trio.sleep(0.01)


async def test_a_session_opened_on_one_replica_serves_a_request_on_another(
    redis: coredis.Redis[bytes],
) -> None:
    async with redis_cluster(redis) as c:
        client = await initialized(c, 0, sampling={}, elicitation={})
        assert (await client.call("logging/setLevel", {"level": "debug"}))["result"] == {}
        assert c.copy(1, client.session_id) is None
        reply = await on(client, c, 1).call(
            "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}
        )
        assert _sum(reply) == 5
        adopted = c.copy(1, client.session_id)
        assert adopted is not None
        negotiated = adopted.actor.core.negotiated
        assert negotiated is not None
        assert negotiated.client_capabilities == {"sampling": {}, "elicitation": {}}
        assert adopted.actor.core.log_level == "debug"
        assert adopted.principal == "someone"
        # The record is in Redis, under the deployment's prefix.
        assert await redis.exists([f"replicas:session:{client.session_id}"]) == 1


async def test_another_principal_gets_404_on_a_replica_that_never_saw_the_session(
    redis: coredis.Redis[bytes],
) -> None:
    async with redis_cluster(redis) as c:
        client = await initialized(c, 0)
        response = await on(client, c, 1).post(_tool(client, "add", a=1, b=1), x_user="mallory")
        assert response.status == 404
        assert c.copy(1, client.session_id) is None


async def test_a_cancel_posted_to_one_replica_cancels_the_request_running_on_another(
    redis: coredis.Redis[bytes],
) -> None:
    async with redis_cluster(redis) as c:
        client = await initialized(c, 0)
        call = _tool(client, "hold_quietly")
        later = start_post(client, call)
        with trio.fail_after(TIMEOUT):
            await c.probe.started.wait()
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": call["id"], "reason": "changed my mind"},
        }
        assert (await on(client, c, 1).post(cancel)).status == 202
        with trio.fail_after(TIMEOUT):
            await c.probe.cancelled.wait()
        assert not c.probe.release.is_set()
        response = await later.wait()
        assert [m for m in await response.messages() if "id" in m] == []
        assert c.hub.sent[RelayKind.CLIENT] >= 1


async def test_a_client_answer_posted_to_another_replica_reaches_the_waiting_request(
    redis: coredis.Redis[bytes],
) -> None:
    async with redis_cluster(redis) as c:
        client = await initialized(c, 0)
        call = _tool(client, "ask", prompt="hello")
        response = await client.post(call)
        assert response.content_type == "text/event-stream"
        request = await first_message(response)
        assert request["method"] == "sampling/createMessage"
        answer = sampling_answer(request["id"], "hi there")
        assert (await on(client, c, 1).post(answer)).status == 202
        replies = [m for m in await response.messages() if "id" in m]
        assert [r["id"] for r in replies] == [call["id"]]
        assert replies[0]["result"]["content"][0]["text"] == "model said: hi there"


async def test_a_notification_raised_on_one_replica_reaches_the_get_stream_on_another(
    redis: coredis.Redis[bytes],
) -> None:
    async with redis_cluster(redis, response_mode="json") as c:
        client = await initialized(c, 0)
        stream = await on(client, c, 1).get()
        assert stream.status == 200
        call = _tool(client, "count", steps=2)
        call["params"]["_meta"] = {"progressToken": "p"}
        reply = await read_reply(await on(client, c, 0).post(call))
        assert reply["result"]["content"][0]["text"] == "counted 2"
        progress: list[dict[str, Any]] = []
        with trio.fail_after(TIMEOUT):
            while len(progress) < 2:
                event = await stream.next_event()
                assert event is not None
                if event.data:
                    progress.append(event.message())
        assert [m["params"]["progress"] for m in progress] == [1, 2]
        assert c.hub.sent[RelayKind.STANDALONE] == 2
        await stream.disconnect()


async def test_a_delete_on_one_replica_ends_the_session_on_every_replica(
    redis: coredis.Redis[bytes],
) -> None:
    async with redis_cluster(redis, 3) as c:
        client = await initialized(c, 0)
        await on(client, c, 1).call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        assert c.copy(1, client.session_id) is not None
        assert (await on(client, c, 2).delete()).status == 204
        await until(lambda: all(c.copy(r, client.session_id) is None for r in range(3)))
        assert await c.hub.records.get(client.session_id or "") is None
        for replica in range(3):
            response = await on(client, c, replica).post(_tool(client, "add", a=1, b=1))
            assert response.status == 404


async def test_a_log_level_set_on_one_replica_reaches_the_other_copies(
    redis: coredis.Redis[bytes],
) -> None:
    async with redis_cluster(redis) as c:
        client = await initialized(c, 0)
        await on(client, c, 1).call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        await on(client, c, 1).call("logging/setLevel", {"level": "error"})
        copy = c.copy(0, client.session_id)
        assert copy is not None
        await until(lambda: copy.actor.core.log_level == "error")
        record = await c.hub.records.get(client.session_id or "")
        assert record is not None
        assert record.log_level == "error"
        assert record.touched_by == "b"


async def test_with_redis_gone_only_a_replica_with_a_copy_serves_the_session() -> None:
    with ignoring_unclosed_buffers():
        await _serving_with_redis_gone()


async def _serving_with_redis_gone() -> None:
    port = free_port()
    client: coredis.Redis[bytes] = coredis.Redis(host="127.0.0.1", port=port, connect_timeout=1)
    async with client:
        with running_redis("--port", str(port), "--bind", "127.0.0.1"):
            stack = contextlib.AsyncExitStack()
            c = await stack.enter_async_context(redis_cluster(client))
            mcp = await initialized(c, 0)
        async with stack:
            # A replica without a copy cannot find the session: 503, not 404 (which
            # would tell the client that its session is gone).
            refused = await on(mcp, c, 1).post(_tool(mcp, "add", a=1, b=1))
            assert refused.status == 503
            assert b"session store is unavailable" in await refused.body()
            # The replica holding a copy goes on serving it.
            reply = await on(mcp, c, 0).call(
                "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}
            )
            assert _sum(reply) == 3


@contextlib.asynccontextmanager
async def separate_replicas(
    client: coredis.Redis[bytes],
) -> AsyncIterator[tuple[Cluster, list[Any]]]:
    """Two replicas, each with a Server of its own, sharing records, relay and changes.

    As separate processes are: a change one Server raises reaches the other replica
    only through the shared bus.
    """
    from mcpactor.runtime._bus import BusFeed
    from mcpactor.store import open_redis_bus

    hub = RedisHub(RedisSessionRecords(client, prefix="separate"))
    probe = Probe()
    servers: list[Any] = []
    async with trio.open_nursery() as nursery:
        async with contextlib.AsyncExitStack() as stack:
            clients = []
            for name in "ab":
                server = make_server(probe)

                @server.resource("mem://doc")
                async def doc() -> str:
                    """A document."""
                    return "text"

                bus = await stack.enter_async_context(
                    open_redis_bus(client, replica=name, prefix="separate")
                )
                feed = BusFeed(bus)
                feed.attach()
                server.listeners.add(feed)
                relay = RedisRelay(client, replica_id=name, prefix="separate")
                hub.relays.append(relay)
                replicas = Replicas(
                    RedisSessionRecords(client, prefix="separate"), relay, changes=bus
                )
                app = await stack.enter_async_context(
                    open_http_app(
                        server,
                        options=HttpOptions(
                            replicas=replicas, authenticate=_principal, response_mode="json"
                        ),
                    )
                )
                clients.append(AsgiClient(app, nursery))
                servers.append(server)
            yield Cluster(hub, probe, clients), servers  # type: ignore[arg-type]
        nursery.cancel_scope.cancel()


async def next_message(stream: Any) -> dict[str, Any]:
    with trio.fail_after(TIMEOUT):
        while True:
            event = await stream.next_event()
            assert event is not None, "the stream ended"
            if event.data:
                message: dict[str, Any] = event.message()
                return message


async def test_a_change_raised_on_one_replica_reaches_the_get_stream_on_another_once(
    redis: coredis.Redis[bytes],
) -> None:
    async with separate_replicas(redis) as (c, servers):
        client = await initialized(c, 0)
        # Subscribed on replica 0: the record says so before the answer leaves, so the
        # copy that replica 1 adopts for the GET has the subscription.
        subscribed = await on(client, c, 0).call("resources/subscribe", {"uri": "mem://doc"})
        assert subscribed["result"] == {}
        stream = await on(client, c, 1).get()
        assert stream.status == 200
        # Raised on replica 0, whose copy has no GET: it drops the notice, and replica 1
        # hears the change on the bus and sends it on its GET.
        servers[0].notify_resource_updated("mem://doc")
        updated = await next_message(stream)
        assert updated["method"] == "notifications/resources/updated"
        assert updated["params"] == {"uri": "mem://doc"}

        @servers[0].tool()
        async def later() -> str:
            """A tool added on replica 0 only."""
            return "later"

        changed = await next_message(stream)
        assert changed["method"] == "notifications/tools/list_changed"
        # Nothing was relayed: each notice reached the GET once, through the bus.
        assert c.hub.sent[RelayKind.STANDALONE] == 0
        # Unsubscribed on replica 0: replica 1's copy hears of it through the record.
        await on(client, c, 0).call("resources/unsubscribe", {"uri": "mem://doc"})
        copy = c.copy(1, client.session_id)
        assert copy is not None
        await until(lambda: not copy.actor.peer.subscriptions)
        await stream.disconnect()
