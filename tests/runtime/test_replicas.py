"""Sessions served by several replicas that share session records and a relay.

Two or three apps run in one trio run, joined by a MemoryHub (the in-memory store and
relay), and one MCP client sends each request to whichever replica a test names, as a
load balancer without stickiness would.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import attrs
import orjson
import pytest
import trio
import trio.testing

from mcpactor.runtime.http import (
    MAX_RELAYED_BYTES,
    HttpSession,
    MemoryEventStore,
    MemoryHub,
    MemorySessionRecords,
    Relayed,
    RelayKind,
    Replicas,
    SessionManager,
    SessionRecord,
    StoreUnavailable,
    principal_identity,
)
from mcpactor.runtime.http._session_records import MAX_RECORD_BYTES
from mcpactor.transports import HttpOptions, open_http_app

from ..transports._http_client import AsgiClient, McpClient, read_reply, start_post
from ..transports._http_server import Probe, make_server

TIMEOUT = 10


@attrs.define
class Cluster:
    """Replicas of one server, each with an in-process client, and the hub between them."""

    hub: MemoryHub
    probe: Probe
    clients: list[AsgiClient]

    def manager(self, replica: int) -> SessionManager:
        return self.clients[replica].app.manager

    def copy(self, replica: int, session_id: str | None) -> HttpSession | None:
        assert session_id is not None
        return self.manager(replica).sessions.get(session_id)

    def client(self, replica: int = 0) -> McpClient:
        return McpClient(self.clients[replica])


def _principal(headers: Mapping[str, str]) -> object:
    return headers.get("x-user", "someone")


class Outage:
    """Records and a relay that fail with StoreUnavailable while ``down`` is set."""

    def __init__(self, replicas: Replicas) -> None:
        self.records = replicas.records
        self.relay = replicas.relay
        self.replica_id = replicas.replica_id
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailable("connection refused")

    async def put(self, record: SessionRecord, *, ttl: float) -> None:
        self._check()
        await self.records.put(record, ttl=ttl)

    async def get(self, session_id: str) -> SessionRecord | None:
        self._check()
        return await self.records.get(session_id)

    async def remove(self, session_id: str) -> bool:
        self._check()
        return await self.records.remove(session_id)

    async def send(self, message: Relayed) -> None:
        self._check()
        await self.relay.send(message)

    async def serve(
        self,
        deliver: Callable[[Relayed], Awaitable[None]],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        await self.relay.serve(deliver, task_status=task_status)


@contextlib.asynccontextmanager
async def cluster(
    count: int = 2, outages: list[Outage] | None = None, **options: Any
) -> AsyncIterator[Cluster]:
    hub = MemoryHub()
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
                replicas = hub.replica(name)
                if outages is not None:
                    outage = Outage(replicas)
                    outages.append(outage)
                    replicas = Replicas(outage, outage)
                app = await stack.enter_async_context(
                    open_http_app(
                        server,
                        options=HttpOptions(replicas=replicas, authenticate=_principal, **options),
                    )
                )
                clients.append(AsgiClient(app, nursery))
            yield Cluster(hub, probe, clients)
        nursery.cancel_scope.cancel()


def on(client: McpClient, cluster: Cluster, replica: int) -> McpClient:
    """Send ``client``'s next requests to ``replica``."""
    client.http = cluster.clients[replica]
    return client


async def initialized(cluster: Cluster, replica: int = 0, **capabilities: Any) -> McpClient:
    client = cluster.client(replica)
    await client.initialize(capabilities=capabilities or {"sampling": {}})
    return client


def _sum(reply: dict[str, Any]) -> Any:
    # What the test server's ``add`` answered.
    return orjson.loads(reply["result"]["content"][0]["text"])["result"]


def _tool(client: McpClient, name: str, **arguments: Any) -> dict[str, Any]:
    return client.request("tools/call", {"name": name, "arguments": arguments})


async def first_message(stream: Any) -> Any:
    """The first message with data on an SSE ``stream`` (priming events have none)."""
    with trio.fail_after(TIMEOUT):
        while True:
            event = await stream.next_event()
            assert event is not None
            if event.data:
                return event.message()


def sampling_answer(request_id: Any, text: str, model: str = "test-model") -> dict[str, Any]:
    """A client's answer to the server's ``sampling/createMessage`` request ``request_id``."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {
            "role": "assistant",
            "content": {"type": "text", "text": text},
            "model": model,
        },
    }


async def test_a_session_opened_on_one_replica_serves_a_request_on_another() -> None:
    async with cluster() as c:
        client = await initialized(c, 0, sampling={}, elicitation={})
        level = await client.call("logging/setLevel", {"level": "debug"})
        assert level["result"] == {}
        assert c.copy(1, client.session_id) is None
        reply = await on(client, c, 1).call(
            "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}
        )
        assert _sum(reply) == 5
        opened, adopted = c.copy(0, client.session_id), c.copy(1, client.session_id)
        assert opened is not None
        assert adopted is not None
        assert adopted.revision is opened.revision
        assert adopted.revision is not None
        assert adopted.revision.version == client.protocol_version
        negotiated = adopted.actor.core.negotiated
        assert negotiated is not None
        assert negotiated.client_capabilities == {"sampling": {}, "elicitation": {}}
        assert negotiated.client_info == {"name": "test", "version": "1"}
        assert adopted.actor.core.log_level == "debug"
        assert adopted.principal == "someone"


async def test_another_principal_gets_404_on_a_replica_that_never_saw_the_session() -> None:
    async with cluster() as c:
        client = await initialized(c, 0)
        response = await on(client, c, 1).post(_tool(client, "add", a=1, b=1), x_user="mallory")
        assert response.status == 404
        assert c.copy(1, client.session_id) is None
        # The caller who opened it still reaches it there.
        reply = await client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        assert _sum(reply) == 2
        # And, now that a copy is there, another principal still gets 404.
        response = await client.post(_tool(client, "add", a=1, b=1), x_user="mallory")
        assert response.status == 404


async def test_an_unknown_session_id_is_404_on_every_replica() -> None:
    async with cluster() as c:
        client = await initialized(c, 0)
        client.session_id = "x" * 32
        for replica in (0, 1):
            response = await on(client, c, replica).post(_tool(client, "add", a=1, b=1))
            assert response.status == 404
        client.session_id = "x" * 10_000
        response = await client.post(_tool(client, "add", a=1, b=1))
        assert response.status == 404
        # The put of initialize, one get on each replica; none for the overlong id.
        assert c.hub.records.operations == 3


async def test_a_cancel_posted_to_one_replica_cancels_the_request_running_on_another() -> None:
    async with cluster() as c:
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
        accepted = await on(client, c, 1).post(cancel)
        assert accepted.status == 202
        with trio.fail_after(TIMEOUT):
            await c.probe.cancelled.wait()
        assert not c.probe.release.is_set()
        response = await later.wait()
        # Cancelled: no answer (the spec), the stream just ends.
        assert [m for m in await response.messages() if "id" in m] == []


async def test_a_cancel_for_a_request_running_here_is_not_relayed() -> None:
    async with cluster() as c:
        client = await initialized(c, 0)
        call = _tool(client, "hold_quietly")
        later = start_post(client, call)
        with trio.fail_after(TIMEOUT):
            await c.probe.started.wait()
        before = c.hub.sent[RelayKind.CLIENT]
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": call["id"]},
        }
        assert (await client.post(cancel)).status == 202
        with trio.fail_after(TIMEOUT):
            await c.probe.cancelled.wait()
        assert c.hub.sent[RelayKind.CLIENT] == before
        await later.wait()


async def test_a_client_answer_posted_to_another_replica_reaches_the_waiting_request() -> None:
    async with cluster() as c:
        client = await initialized(c, 0)
        call = _tool(client, "ask", prompt="hello")
        response = await client.post(call)
        assert response.status == 200
        assert response.content_type == "text/event-stream"
        request = await first_message(response)
        assert request["method"] == "sampling/createMessage"
        # The id is from this copy's own range, far from other copies' ids.
        assert request["id"] > 1
        answer = sampling_answer(request["id"], "hi there")
        assert (await on(client, c, 1).post(answer)).status == 202
        replies = [m for m in await response.messages() if "id" in m]
        assert len(replies) == 1
        assert replies[0]["id"] == call["id"]
        assert replies[0]["result"]["content"][0]["text"] == "model said: hi there"


async def test_an_answer_to_no_request_of_any_replica_is_dropped() -> None:
    async with cluster() as c:
        client = await initialized(c, 0)
        answer = {"jsonrpc": "2.0", "id": 12345, "result": {}}
        assert (await on(client, c, 1).post(answer)).status == 202
        await trio.testing.wait_all_tasks_blocked()
        # Both copies still serve.
        for replica in (0, 1):
            reply = await on(client, c, replica).call(
                "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}
            )
            assert _sum(reply) == 3


async def test_a_notification_raised_on_one_replica_reaches_the_get_stream_on_another() -> None:
    async with cluster(response_mode="json") as c:
        client = await initialized(c, 0)
        stream = await on(client, c, 1).get()
        assert stream.status == 200
        # JSON answers: the call's progress goes to the GET stream, which is on replica 1.
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
        assert [m["method"] for m in progress] == ["notifications/progress"] * 2
        assert [m["params"]["progress"] for m in progress] == [1, 2]
        assert c.hub.sent[RelayKind.STANDALONE] == 2
        await stream.disconnect()


async def test_a_server_request_on_a_get_stream_elsewhere_is_answered_on_a_third() -> None:
    async with cluster(3, response_mode="json") as c:
        client = await initialized(c, 0)
        stream = await on(client, c, 1).get()
        call = _tool(client, "ask", prompt="hello")
        later = start_post(on(client, c, 0), call)
        request = await first_message(stream)
        assert request["method"] == "sampling/createMessage"
        answer = sampling_answer(request["id"], "yo", model="m")
        assert (await on(client, c, 2).post(answer)).status == 202
        reply = await read_reply(await later.wait())
        assert reply["result"]["content"][0]["text"] == "model said: yo"
        await stream.disconnect()


async def _reconnected(c: Cluster) -> tuple[McpClient, dict[str, Any], str]:
    # A call on replica 0 whose stream the tool closed; the id of its last event.
    client = await initialized(c, 0)
    call = _tool(client, "reconnect")
    response = await client.post(call)
    assert response.content_type == "text/event-stream"
    seen = await response.events()  # the tool closes the stream, then goes on
    last_id = seen[-1].id
    assert last_id is not None
    assert [e.message()["params"]["data"] for e in seen if e.data] == ["before the stream closes"]
    with trio.fail_after(TIMEOUT):
        await c.probe.started.wait()
    return client, call, last_id


async def test_a_stream_resumed_on_another_replica_follows_the_call_to_its_answer() -> None:
    async with cluster(event_store=MemoryEventStore()) as c:
        client, call, last_id = await _reconnected(c)
        # Resumed on replica 1 while the request still runs on replica 0: what is stored
        # so far (nothing yet), then what replica 0 stores, up to the answer.
        resumed = await on(client, c, 1).get(last_event_id=last_id)
        assert resumed.status == 200
        await trio.testing.wait_all_tasks_blocked()
        assert c.manager(1).followers.active == 1
        c.probe.release.set()
        with trio.fail_after(TIMEOUT):
            messages = await resumed.messages()
        assert messages[0]["params"]["data"] == "after the stream closed"
        assert messages[-1]["id"] == call["id"]
        assert messages[-1]["result"]["content"][0]["text"] == "answered after reconnecting"
        assert c.manager(1).followers.active == 0
        # Once the answer is stored, a resumption elsewhere replays it and ends at once.
        again = await on(client, c, 1).get(last_event_id=last_id)
        assert (await again.messages())[-1]["id"] == call["id"]
        # An id no store knows is still refused.
        unknown = await client.get(last_event_id="12345.1")
        assert unknown.status == 400


async def test_a_follower_stops_when_its_client_leaves() -> None:
    async with cluster(event_store=MemoryEventStore()) as c:
        client, call, last_id = await _reconnected(c)
        resumed = await on(client, c, 1).get(last_event_id=last_id)
        await trio.testing.wait_all_tasks_blocked()
        assert c.manager(1).followers.active == 1
        await resumed.disconnect()
        # The follower notices at the next event (or its next look at the store).
        c.probe.release.set()
        with trio.fail_after(TIMEOUT):
            while c.manager(1).followers.active:
                await trio.testing.wait_all_tasks_blocked()
        # The answer is not lost: it is stored, and replica 0 still holds the stream.
        rest = await client.get(last_event_id=last_id)
        assert (await rest.messages())[-1]["id"] == call["id"]


async def test_a_followed_stream_with_nothing_new_ends_and_can_be_resumed_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with cluster(event_store=MemoryEventStore()) as c:
        client, _call, last_id = await _reconnected(c)
        # Shorter than the test client's own timeout for the next event.
        quiet = c.manager(1).followers.quiet = 3.0
        resumed = await on(client, c, 1).get(last_event_id=last_id)
        started = trio.current_time()
        # Nothing is stored while the tool waits: the response ends after the quiet time.
        assert await resumed.messages() == []
        assert trio.current_time() - started >= quiet
        assert c.manager(1).followers.active == 0
        c.probe.release.set()
        again = await on(client, c, 1).get(last_event_id=last_id)
        messages = await again.messages()
        assert messages[-1]["result"]["content"][0]["text"] == "answered after reconnecting"


async def test_past_the_follower_limit_a_resumption_gets_what_is_stored() -> None:
    async with cluster(event_store=MemoryEventStore()) as c:
        client, call, last_id = await _reconnected(c)
        c.manager(1).followers.limit = 0
        early = await on(client, c, 1).get(last_event_id=last_id)
        assert early.status == 200
        assert await early.messages() == []
        c.probe.release.set()
        await trio.testing.wait_all_tasks_blocked()
        resumed = await on(client, c, 1).get(last_event_id=last_id)
        assert (await resumed.messages())[-1]["id"] == call["id"]


async def test_a_delete_on_one_replica_ends_the_session_on_every_replica() -> None:
    async with cluster(3) as c:
        client = await initialized(c, 0)
        await on(client, c, 1).call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        assert c.copy(1, client.session_id) is not None
        deleted = await on(client, c, 2).delete()
        assert deleted.status == 204
        with trio.fail_after(TIMEOUT):
            while any(c.copy(r, client.session_id) is not None for r in range(3)):
                await trio.testing.wait_all_tasks_blocked()
        assert await c.hub.records.get(client.session_id or "") is None
        for replica in range(3):
            response = await on(client, c, replica).post(_tool(client, "add", a=1, b=1))
            assert response.status == 404
            assert c.manager(replica).statistics().named_sessions == 0


async def test_a_session_idle_everywhere_expires_and_one_served_elsewhere_lives_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with cluster(session_idle_timeout=100.0) as c:
        client = await initialized(c, 0)
        start = trio.current_time()
        # The client goes on with replica 1 only, for longer than the idle timeout.
        on(client, c, 1)
        for _ in range(6):
            await trio.sleep(40)
            reply = await client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
            assert _sum(reply) == 2
        # Replica 0's copy went idle and was dropped; the session lives on in replica 1
        # (its initialize's unconfirmed timeout did not end it either).
        assert c.copy(0, client.session_id) is None
        assert c.copy(1, client.session_id) is not None
        assert await c.hub.records.get(client.session_id or "") is not None
        # Replica 0 adopts it again when named.
        reply = await on(client, c, 0).call(
            "tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}}
        )
        assert _sum(reply) == 4
        assert c.copy(0, client.session_id) is not None
        # Now idle everywhere: it ends everywhere, an idle timeout after the last request.
        await trio.sleep(99)
        await trio.testing.wait_all_tasks_blocked()
        assert c.copy(0, client.session_id) is not None
        await trio.sleep(2)
        await trio.testing.wait_all_tasks_blocked()
        assert c.copy(0, client.session_id) is None
        assert c.copy(1, client.session_id) is None
        assert trio.current_time() - start > 240
        assert await c.hub.records.get(client.session_id or "") is None
        for replica in (0, 1):
            response = await on(client, c, replica).post(_tool(client, "add", a=1, b=1))
            assert response.status == 404


async def test_a_session_opened_and_never_named_again_expires_as_unconfirmed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with cluster(unconfirmed_session_timeout=60.0) as c:
        client = c.client(0)
        response = await client.post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
            }
        )
        session_id = response.headers["mcp-session-id"]
        await response.body()
        assert await c.hub.records.get(session_id) is not None
        await trio.sleep(61)
        assert c.copy(0, session_id) is None
        assert await c.hub.records.get(session_id) is None


async def test_a_log_level_set_on_one_replica_reaches_the_other_copies() -> None:
    async with cluster() as c:
        client = await initialized(c, 0)
        await on(client, c, 1).call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        await on(client, c, 1).call("logging/setLevel", {"level": "error"})
        copy = c.copy(0, client.session_id)
        assert copy is not None
        with trio.fail_after(TIMEOUT):
            while copy.actor.core.log_level != "error":
                await trio.testing.wait_all_tasks_blocked()
        record = await c.hub.records.get(client.session_id or "")
        assert record is not None
        assert record.log_level == "error"
        assert record.touched_by == "b"


async def test_a_subscription_made_on_one_replica_reaches_the_other_copies() -> None:
    async with cluster() as c:
        client = await initialized(c, 0)
        on(client, c, 1)
        assert (await client.call("resources/subscribe", {"uri": "mem://doc"}))["result"] == {}
        # The next request there writes the record at once (not a touch interval later).
        assert (
            _sum(await client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}))
            == 2
        )
        await trio.testing.wait_all_tasks_blocked()
        record = await c.hub.records.get(client.session_id or "")
        assert record is not None
        assert record.subscriptions == {"mem://doc"}
        opened = c.copy(0, client.session_id)
        assert opened is not None
        assert opened.actor.statistics().subscriptions == 1
        assert (await client.call("resources/unsubscribe", {"uri": "mem://doc"}))["result"] == {}
        await client.call("ping")
        await trio.testing.wait_all_tasks_blocked()
        assert opened.actor.statistics().subscriptions == 0


async def test_initialized_posted_to_another_replica_reaches_the_copy_that_opened_it() -> None:
    async with cluster() as c:
        client = c.client(0)
        response = await client.post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
            }
        )
        client.session_id = response.headers["mcp-session-id"]
        client.protocol_version = "2025-11-25"
        await response.body()
        opened = c.copy(0, client.session_id)
        assert opened is not None
        assert opened.actor.core.phase.name == "AWAITING_INITIALIZED"
        accepted = await on(client, c, 1).post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        assert accepted.status == 202
        with trio.fail_after(TIMEOUT):
            while opened.actor.core.phase.name != "OPERATING":
                await trio.testing.wait_all_tasks_blocked()


async def test_with_the_store_down_requests_that_need_it_fail_clearly_and_others_go_on() -> None:
    outages: list[Outage] = []
    async with cluster(outages=outages) as c:
        client = await initialized(c, 0)
        for outage in outages:
            outage.down = True
        # Opening a session needs its record: a clear error, the process stays up.
        other = c.client(0)
        response = await other.post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
            }
        )
        error = await read_reply(response)
        assert error["error"]["code"] == -32603
        assert "session store is unavailable" in error["error"]["message"]
        # A replica without a copy cannot find the session: 503, not 404 (which would
        # tell the client that its session is gone).
        refused = await on(client, c, 1).post(_tool(client, "add", a=1, b=1))
        assert refused.status == 503
        assert b"session store is unavailable" in await refused.body()
        # The replica holding a copy serves it; a cancel it cannot relay is lost, quietly.
        assert (
            _sum(
                await on(client, c, 0).call(
                    "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}
                )
            )
            == 3
        )
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 99},
        }
        assert (await client.post(cancel)).status == 202
        # Back up: the other replica adopts the session.
        for outage in outages:
            outage.down = False
        assert (
            _sum(
                await on(client, c, 1).call(
                    "tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}}
                )
            )
            == 4
        )


async def test_one_process_without_replicas_writes_no_record() -> None:
    # The default: nothing is shared, nothing is relayed.
    probe = Probe()
    async with trio.open_nursery() as nursery, open_http_app(make_server(probe)) as app:
        client = McpClient(AsgiClient(app, nursery))
        await client.initialize()
        session = app.manager.sessions.get(client.session_id or "")
        assert session is not None
        assert session.replicas is None
        assert session.record() is None
        assert app.manager.replicas is None
        nursery.cancel_scope.cancel()


# --- the records and relay messages themselves --------------------------------------------


def test_a_session_record_round_trips_through_its_encoding() -> None:
    record = SessionRecord(
        id="abc",
        protocol_version="2025-06-18",
        client_capabilities={"sampling": {}},
        client_info={"name": "c", "version": "1"},
        log_level="debug",
        subscriptions=frozenset({"file:///a", "file:///b"}),
        principal=principal_identity("someone"),
        owner="a",
        touched_by="b",
        last_active=1.5,
    )
    assert SessionRecord.decode(record.encode()) == record


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[]",
        b'{"id": "a"}',
        orjson.dumps(
            {
                "id": "a",
                "protocolVersion": "2025-06-18",
                "clientCapabilities": [],
                "clientInfo": None,
                "logLevel": "info",
                "subscriptions": [],
                "principal": None,
                "owner": "a",
                "touchedBy": "a",
                "lastActive": 0,
            }
        ),
        b" " * (MAX_RECORD_BYTES + 1),
    ],
)
def test_a_damaged_session_record_is_a_value_error(raw: bytes) -> None:
    with pytest.raises(ValueError, match="session record"):
        SessionRecord.decode(raw)


def test_the_largest_record_a_session_can_write_is_read_back() -> None:
    # Subscriptions at every limit, each URI written with the longest JSON escapes, and
    # the client's declaration at its limit: another replica must still read it.
    from mcpactor.protocol import MAX_SUBSCRIPTION_BYTES, MAX_URI_BYTES
    from mcpactor.protocol._session import MAX_CLIENT_DECLARATION_BYTES

    uris = frozenset(
        f"{n:05}" + "\x01" * (MAX_URI_BYTES - 5)
        for n in range(MAX_SUBSCRIPTION_BYTES // MAX_URI_BYTES)
    )
    padding = "p" * (MAX_CLIENT_DECLARATION_BYTES - 100)
    record = SessionRecord(
        id="\x01" * 4096,
        protocol_version="2025-06-18",
        client_capabilities={"experimental": {"x": padding}},
        client_info={"name": "c", "version": "1"},
        subscriptions=uris,
        owner="\x01" * 4096,
        touched_by="\x01" * 4096,
    )
    raw = record.encode()
    assert len(raw) > 6 * MAX_SUBSCRIPTION_BYTES
    assert SessionRecord.decode(raw) == record


def test_a_record_holding_more_than_a_session_may_is_refused() -> None:
    from mcpactor.protocol import MAX_RESOURCE_SUBSCRIPTIONS, MAX_URI_BYTES

    for subscriptions in (
        [f"u{n}" for n in range(MAX_RESOURCE_SUBSCRIPTIONS + 1)],
        ["u" * (MAX_URI_BYTES + 1)],
        [1],
    ):
        raw = SessionRecord(id="a", protocol_version="2025-06-18").encode()
        value = orjson.loads(raw)
        value["subscriptions"] = subscriptions
        with pytest.raises(ValueError, match="subscriptions"):
            SessionRecord.decode(orjson.dumps(value))


def test_principal_identities() -> None:
    from mcpactor.auth import Principal

    assert principal_identity(None) is None
    assert principal_identity("x") == "str:x"
    assert principal_identity(7) == "int:7"
    one = Principal("sub", issuer="https://issuer", client_id="c", scopes={"a"})
    other = Principal("sub", issuer="https://issuer", client_id="c", scopes={"b"})
    assert principal_identity(one) == principal_identity(other)
    assert principal_identity(one) != principal_identity(
        Principal("sub2", issuer="https://issuer")
    )


def test_a_relayed_message_round_trips_and_damage_is_a_value_error() -> None:
    message = Relayed(RelayKind.CLIENT, "s", "a", b'{"jsonrpc":"2.0"}\n', target="b")
    assert Relayed.decode(message.encode()) == message
    for raw in (b"", b"{}\n", b'{"k":"nope","s":"s","o":"a","t":null}\n', b"[1]\n", b"x\n"):
        with pytest.raises(ValueError, match="relayed message"):
            Relayed.decode(raw)


async def test_memory_records_expire_by_the_trio_clock(
    autojump_clock: trio.testing.MockClock,
) -> None:
    records = MemorySessionRecords()
    record = SessionRecord(id="s", protocol_version="2025-06-18")
    await records.put(record, ttl=10)
    await trio.sleep(9)
    assert await records.get("s") == record
    await trio.sleep(1)
    assert await records.get("s") is None
    await records.put(record, ttl=10)
    assert await records.remove("s") is True
    assert await records.remove("s") is False


async def _ignore(message: Relayed) -> None:
    await trio.lowlevel.checkpoint()


async def test_a_hub_relays_to_every_replica_but_the_sender_or_to_its_target() -> None:
    hub = MemoryHub()
    got: dict[str, list[Relayed]] = {"a": [], "b": [], "c": []}
    async with trio.open_nursery() as nursery:
        relays = {}
        for name in got:
            replicas = hub.replica(name)
            relays[name] = replicas.relay

            async def deliver(message: Relayed, name: str = name) -> None:
                got[name].append(message)

            await nursery.start(replicas.relay.serve, deliver)
        await relays["a"].send(Relayed(RelayKind.CLOSED, "s", "a"))
        await relays["b"].send(Relayed(RelayKind.STATE, "s", "b", target="c"))
        await trio.testing.wait_all_tasks_blocked()
        assert [m.kind for m in got["a"]] == []
        assert [m.kind for m in got["b"]] == [RelayKind.CLOSED]
        assert [m.kind for m in got["c"]] == [RelayKind.CLOSED, RelayKind.STATE]
        with pytest.raises(RuntimeError, match="served already"):
            await relays["a"].serve(_ignore)
        nursery.cancel_scope.cancel()


def test_a_core_adopted_with_capabilities_numbers_its_requests_from_its_range() -> None:
    from mcpactor.protocol import ServerSession

    core = ServerSession(
        server_info=lambda revision: {"name": "s", "version": "1"},
        capabilities=lambda revision: {},
    )
    negotiated = core.adopt("2025-06-18", {"name": "c", "version": "1"}, {"sampling": {}})
    assert negotiated.client_has("sampling")
    core.number_requests_from(2**40 + 1)
    request = core.send_request("sampling/createMessage", {})
    assert request.id == 2**40 + 1
    assert core.expects(request.id)
    assert not core.expects(1)
    core.receive({"jsonrpc": "2.0", "id": request.id, "result": {}})
    assert not core.expects(request.id)


async def test_a_message_too_large_to_relay_is_dropped_and_the_session_goes_on() -> None:
    async with cluster() as c:
        client = await initialized(c, 0)
        copy = c.copy(0, client.session_id)
        assert copy is not None
        before = dict(c.hub.sent)
        assert copy.shared is not None
        await copy.shared.relay(RelayKind.STANDALONE, b"x" * MAX_RELAYED_BYTES)
        assert c.hub.sent == before
        reply = await client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        assert _sum(reply) == 2


async def test_a_burst_of_requests_on_a_replica_new_to_a_session_reads_its_record_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with cluster(3) as c:
        client = await initialized(c, 0)
        session_id = client.session_id
        assert session_id is not None
        records = c.hub.records
        reads = []
        read = records.get

        async def counted(wanted: str) -> SessionRecord | None:
            reads.append(wanted)
            return await read(wanted)

        monkeypatch.setattr(records, "get", counted)
        found: list[HttpSession | None] = []

        async def find() -> None:
            found.append(await c.manager(1).find(session_id, "someone"))

        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(find)
        assert reads == [session_id]
        assert len(found) == 8
        assert found[0] is not None
        assert all(session is found[0] for session in found)
        # Someone else naming it on a third replica reads the record, and is refused.
        assert await c.manager(2).find(session_id, "intruder") is None
        assert reads == [session_id, session_id]
